#pragma once
// The launch mistake that fails silently: `srun` without a PMI the MPI library speaks (Debian's MPICH
// needs `srun --mpi=pmi2`; Slurm's MpiDefault is often `none`) starts N separate one-rank MPI jobs,
// each of which would run the whole sweep alone and write its own results. `pipebench run` refuses to
// start when its MPI world has 1 rank but the launcher says the job step has more (docs/slurm.md).
#include <string>
#include <vector>

namespace pipebench::bench {

// "" when the launch is consistent; else the message of the refusal. `environ_entries`: "NAME=value".
// The expected size is the PMI's (PMI_SIZE, set by hydra and by srun --mpi=pmi2; OMPI_COMM_WORLD_SIZE)
// when there is one, else Slurm's task count of the step (SLURM_STEP_NUM_TASKS, set by srun).
std::string launch_mismatch(int world, const std::vector<std::string>& environ_entries);
// The same with this process's environment.
std::string launch_mismatch(int world);

}  // namespace pipebench::bench
