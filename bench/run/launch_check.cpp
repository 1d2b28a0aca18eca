#include "bench/run/launch_check.hpp"

#include <cstdlib>

extern char** environ;

namespace pipebench::bench {

namespace {

std::string value_of(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=')
      return e.substr(name.size() + 1);
  return "";
}

long count_of(const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  return !text.empty() && end && *end == '\0' ? v : 0;
}

}  // namespace

std::string launch_mismatch(int world, const std::vector<std::string>& env) {
  if (world != 1) return "";
  for (const char* pmi : {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE"}) {
    const std::string v = value_of(env, pmi);
    if (v.empty()) continue;
    if (count_of(v) <= 1) return "";  // the launcher itself started one rank
    return "the MPI world has 1 rank, but the launcher says " + std::string(pmi) + "=" + v +
           ": the MPI library did not join the ranks; check that pipebench was built with the MPI of the launcher "
           "(docs/slurm.md)";
  }
  const std::string tasks = value_of(env, "SLURM_STEP_NUM_TASKS");
  if (count_of(tasks) <= 1) return "";
  return "the MPI world has 1 rank, but Slurm started this job step with " + tasks +
         " tasks (SLURM_STEP_NUM_TASKS): srun without a PMI that this MPI speaks starts " + tasks +
         " separate one-rank jobs; launch with `srun --mpi=pmi2` or `mpiexec` (docs/slurm.md)";
}

std::string launch_mismatch(int world) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return launch_mismatch(world, env);
}

}  // namespace pipebench::bench
