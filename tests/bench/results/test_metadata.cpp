// Run metadata: the environment allow-list, the placement summary and the fields procurement needs.
#include <gtest/gtest.h>
#include <unistd.h>

#include "bench/results/metadata.hpp"
#include "bench/version.hpp"

namespace pipebench::bench {
namespace {

TEST(MetadataEnvironment, OnlyAllowListedPrefixesAreKept) {
  const std::vector<std::string> env = {
      "SLURM_JOB_ID=4242",  "OMP_NUM_THREADS=1",      "KOKKOS_NUM_THREADS=2", "NCCL_DEBUG=INFO",
      "CUDA_VISIBLE_DEVICES=0,1", "MPICH_ASYNC_PROGRESS=0", "MPIR_CVAR_CH4_NETMOD=ofi", "OPENBLAS_CORETYPE=HASWELL",
      "PATH=/usr/bin",      "HOME=/root",             "AWS_SECRET_ACCESS_KEY=x", "MY_SLURM_JOB=1",
      "SLURM=1",            "SLURM_=1",               "MPIR_OTHER=1",         "OMPI_MCA_x=1",
      "NOEQUALS",           "OMP_PLACES=a=b"};
  const std::map<std::string, std::string> expected = {
      {"SLURM_JOB_ID", "4242"},       {"OMP_NUM_THREADS", "1"},        {"KOKKOS_NUM_THREADS", "2"},
      {"NCCL_DEBUG", "INFO"},         {"CUDA_VISIBLE_DEVICES", "0,1"}, {"MPICH_ASYNC_PROGRESS", "0"},
      {"MPIR_CVAR_CH4_NETMOD", "ofi"}, {"OPENBLAS_CORETYPE", "HASWELL"}, {"OMP_PLACES", "a=b"}};
  EXPECT_EQ(allowed_environment(env), expected);
  EXPECT_FALSE(environment_allowed("LD_PRELOAD"));
  EXPECT_TRUE(environment_allowed("MPIR_CVAR_ASYNC_PROGRESS"));
}

TEST(MetadataPlacement, RunsOfRanksPerHost) {
  EXPECT_EQ(placement_summary({}), "");
  EXPECT_EQ(placement_summary({"node01", "node01", "node01", "node01", "node02", "node02", "node02", "node02"}),
            "node01:0-3,node02:4-7");
  EXPECT_EQ(placement_summary({"a"}), "a:0");
  EXPECT_EQ(placement_summary({"a", "b", "a", "a"}), "a:0,b:1,a:2-3");  // round-robin placement shows
}

TEST(MetadataText, DateAndCpu) {
  EXPECT_EQ(utc_iso8601(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(utc_iso8601(1714564800), "2024-05-01T12:00:00Z");
  const std::string x86 =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\n\n"
      "processor\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n";
  EXPECT_EQ(cpu_model(x86), "AMD EPYC 7763 64-Core Processor (x 2)");
  const std::string arm = "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n";
  EXPECT_EQ(cpu_model(arm), "implementer 0x41, part 0xd4f (x 1)");
  EXPECT_EQ(cpu_model(""), "unknown");
}

TEST(MetadataCollect, HoldsTheProcurementFields) {
  MetadataInput in;
  in.command_line = "pipebench run -p 4";
  in.hosts = {"n1", "n1", "n2", "n2"};
  in.warmup_steps = 2;
  in.timed_steps = 10;
  in.statistic = "median over timed steps";
  const auto m = collect_metadata(in, {"SLURM_JOB_ID=77", "SLURM_NODELIST=n[1-2]", "SLURM_JOB_PARTITION=gpu", "PATH=/bin"},
                                  "processor : 0\nmodel name : Test CPU\n");
  EXPECT_EQ(m.at("pipebench_version"), version());
  EXPECT_EQ(m.at("pipebench_commit"), commit());
  EXPECT_EQ(m.at("build_type"), build_type());
  EXPECT_EQ(m.at("command_line"), "pipebench run -p 4");
  EXPECT_EQ(m.at("ranks"), "4");
  EXPECT_EQ(m.at("nodes"), "2");
  EXPECT_EQ(m.at("placement"), "n1:0-1,n2:2-3");
  EXPECT_EQ(m.at("cpu"), "Test CPU (x 1)");
  EXPECT_EQ(m.at("warmup_steps"), "2");
  EXPECT_EQ(m.at("timed_steps"), "10");
  EXPECT_EQ(m.at("statistic"), "median over timed steps");
  EXPECT_EQ(m.at("slurm_job_id"), "77");
  EXPECT_EQ(m.at("slurm_nodelist"), "n[1-2]");  // the older alias, when SLURM_JOB_NODELIST is absent
  EXPECT_EQ(m.at("slurm_partition"), "gpu");
  EXPECT_EQ(m.at("env.SLURM_JOB_ID"), "77");
  EXPECT_EQ(m.count("env.PATH"), 0u);
  EXPECT_EQ(m.at("date_utc").size(), 20u);
  EXPECT_EQ(m.at("hdf5").rfind("HDF5 1.", 0), 0u);
  EXPECT_NE(m.at("mpi").find("MPI"), std::string::npos);
  for (const char* key : {"build_flags", "compiler", "gpu", "cuda", "nccl", "kokkos", "kokkos_backend", "kokkoskernels", "blas"})
    EXPECT_FALSE(m.at(key).empty()) << key;
}

// Issue 8 item 10: every run says which job, host and process wrote it; values that are not UTF-8 are
// stored escaped (item 8).
TEST(MetadataCollect, NamesTheWritingJobHostAndProcess) {
  const auto slurm = collect_metadata(MetadataInput{}, {"SLURM_JOB_ID=77", "PBS_JOBID=9.pbs"}, "");
  EXPECT_EQ(slurm.at("job_id"), "77");
  EXPECT_EQ(slurm.at("writer_pid"), std::to_string(getpid()));
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(slurm.at("writer_host"), host);
  EXPECT_EQ(collect_metadata(MetadataInput{}, {"PBS_JOBID=9.pbs"}, "").at("job_id"), "9.pbs");
  EXPECT_EQ(collect_metadata(MetadataInput{}, {"LSB_JOBID=5"}, "").at("job_id"), "5");
  EXPECT_EQ(collect_metadata(MetadataInput{}, {"HOME=/root"}, "").at("job_id"), "none");
  const auto odd = collect_metadata(MetadataInput{}, {"OMP_PLACES=\xff{0}"}, "");
  EXPECT_EQ(odd.at("env.OMP_PLACES"), "\\xFF{0}");
}

TEST(MetadataCollect, NoSlurmKeysOutsideSlurm) {
  const auto m = collect_metadata(MetadataInput{}, {"HOME=/root"}, "");
  EXPECT_EQ(m.count("slurm_job_id"), 0u);
  EXPECT_EQ(m.count("slurm_nodelist"), 0u);
  EXPECT_EQ(m.at("placement"), "");
}

}  // namespace
}  // namespace pipebench::bench

// Issue 26: the ranks' CPU affinity in one line, the same on every rank or rank by rank.
TEST(MetadataAffinity, OneLineForTheRanks) {
  EXPECT_EQ(pipebench::bench::affinity_summary({}), "");
  EXPECT_EQ(pipebench::bench::affinity_summary({"cpus 0-1 (2), omp 2", "cpus 0-1 (2), omp 2"}), "every rank: cpus 0-1 (2), omp 2");
  EXPECT_EQ(pipebench::bench::affinity_summary({"cpus 0 (1), omp 1", "cpus 1 (1), omp 1"}), "rank 0: cpus 0 (1), omp 1; rank 1: cpus 1 (1), omp 1");
  const std::string mine = pipebench::bench::cpu_affinity();
  EXPECT_EQ(mine.rfind("cpus ", 0), 0u) << mine;
  EXPECT_NE(mine.find("), omp "), std::string::npos) << mine;
}
