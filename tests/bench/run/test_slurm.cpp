// Slurm (issue 12): the job metadata entries, the tasks-per-node count, the refusal of N one-rank
// worlds in an N-task step, and the report's Slurm line.
#include <gtest/gtest.h>

#include "bench/render/report.hpp"
#include "bench/results/metadata.hpp"
#include "bench/run/launch_check.hpp"

namespace pipebench::bench {
namespace {

TEST(SlurmMetadata, JobArrayTaskBindingAndRestarts) {
  MetadataInput in;
  in.hosts = {"n1", "n1", "n1", "n2", "n2", "n2"};
  const auto m = collect_metadata(in,
                                  {"SLURM_JOB_ID=81", "SLURM_JOB_NODELIST=n[1-2]", "SLURM_JOB_PARTITION=batch",
                                   "SLURM_ARRAY_JOB_ID=80", "SLURM_ARRAY_TASK_ID=1", "SLURM_NTASKS=6",
                                   "SLURM_TASKS_PER_NODE=1(x2)", "SLURM_CPU_BIND=quiet,cores", "SLURM_RESTART_COUNT=2"},
                                  "");
  EXPECT_EQ(m.at("slurm_job_id"), "81");
  EXPECT_EQ(m.at("slurm_array_job_id"), "80");
  EXPECT_EQ(m.at("slurm_array_task_id"), "1");
  EXPECT_EQ(m.at("slurm_ntasks"), "6");
  EXPECT_EQ(m.at("slurm_tasks_per_node"), "3(x2)");  // from the ranks' hosts, not hydra's proxy step
  EXPECT_EQ(m.at("slurm_cpu_bind"), "quiet,cores");
  EXPECT_EQ(m.at("slurm_restart_count"), "2");
  EXPECT_EQ(slurm_summary(m),
            "job 81 (array 80_1), partition batch, nodes n[1-2], tasks 6, tasks per node 3(x2), cpu bind quiet,cores, "
            "restarts 2");
}

TEST(SlurmMetadata, FirstStartAndOutsideSlurm) {
  MetadataInput in;
  in.hosts = {"a"};
  const auto first = collect_metadata(in, {"SLURM_JOB_ID=5"}, "");
  EXPECT_EQ(first.at("slurm_restart_count"), "0");
  EXPECT_EQ(slurm_summary(first), "job 5, tasks per node 1, restarts 0");
  const auto none = collect_metadata(in, {"PBS_JOBID=9"}, "");
  EXPECT_EQ(none.count("slurm_restart_count"), 0u);
  EXPECT_EQ(none.count("slurm_tasks_per_node"), 0u);
  EXPECT_EQ(slurm_summary(none), "");
}

TEST(SlurmMetadata, TasksPerNodeInSlurmNotation) {
  EXPECT_EQ(tasks_per_node({"a", "a", "b", "b"}), "2(x2)");
  EXPECT_EQ(tasks_per_node({"a", "a", "a", "b"}), "3,1");
  EXPECT_EQ(tasks_per_node({"a", "b", "a", "c", "c", "d"}), "2,1,2,1");
  EXPECT_EQ(tasks_per_node({"a", "b", "c", "d", "d"}), "1(x3),2");
  EXPECT_EQ(tasks_per_node({}), "");
}

TEST(SlurmLaunch, OneRankWorldInAMultiTaskStepIsRefused) {
  // srun --mpi=none -n 4: four singletons, each sees the step's 4 tasks and no PMI.
  const std::string msg = launch_mismatch(1, {"SLURM_STEP_NUM_TASKS=4", "SLURM_PROCID=2"});
  EXPECT_NE(msg.find("the MPI world has 1 rank, but Slurm started this job step with 4 tasks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("srun --mpi=pmi2"), std::string::npos);
  // srun --mpi=pmi2 told the library 4, and it still made a world of 1 (another MPI's library).
  EXPECT_NE(launch_mismatch(1, {"SLURM_STEP_NUM_TASKS=4", "PMI_SIZE=4"}).find("PMI_SIZE=4"), std::string::npos);
}

TEST(SlurmLaunch, ConsistentLaunchesPass) {
  EXPECT_EQ(launch_mismatch(4, {"SLURM_STEP_NUM_TASKS=4", "PMI_SIZE=4"}), "");   // srun --mpi=pmi2
  EXPECT_EQ(launch_mismatch(4, {"SLURM_STEP_NUM_TASKS=1", "PMI_SIZE=4"}), "");   // mpiexec in a job
  EXPECT_EQ(launch_mismatch(1, {"SLURM_STEP_NUM_TASKS=2", "PMI_SIZE=1"}), "");   // mpiexec -n 1, 2 proxies
  EXPECT_EQ(launch_mismatch(1, {"SLURM_NTASKS=4"}), "");                         // the batch shell itself
  EXPECT_EQ(launch_mismatch(1, {"SLURM_STEP_NUM_TASKS=1"}), "");                 // srun -n 1
  EXPECT_EQ(launch_mismatch(1, {}), "");                                         // no launcher at all
  EXPECT_EQ(launch_mismatch(1, {"SLURM_STEP_NUM_TASKS=x"}), "");
}

}  // namespace
}  // namespace pipebench::bench
