#include "bench/results/metadata.hpp"

#include <cstdlib>

#include <algorithm>

#include <sched.h>

#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "analysis/text.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/records.hpp"
#include "bench/version.hpp"
#include "comm/build_info.hpp"
#include "kernels/build_info.hpp"

extern char** environ;

namespace pipebench::bench {

namespace {

// "CUDA runtime 13.0, 1 device(s): NVIDIA H200" -> "NVIDIA H200"; no device -> "none".
std::string gpu_of(const std::string& cuda) {
  const std::string mark = "device(s): ";
  const auto at = cuda.find(mark);
  return at == std::string::npos ? "none" : cuda.substr(at + mark.size());
}

std::string read_file(const char* path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

std::string job_id(const std::vector<std::string>& environ_entries) {
  // Slurm, PBS/Torque, LSF, Grid Engine, Flux, in that order of preference.
  static const char* const kNames[] = {"SLURM_JOB_ID", "SLURM_JOBID", "PBS_JOBID", "LSB_JOBID", "JOB_ID", "FLUX_JOB_ID"};
  for (const char* name : kNames) {
    const std::string prefix = std::string(name) + "=";
    for (const auto& e : environ_entries)
      if (e.compare(0, prefix.size(), prefix) == 0 && e.size() > prefix.size()) return e.substr(prefix.size());
  }
  return "none";
}

bool environment_allowed(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {"SLURM_", "OMP_", "KOKKOS_", "NCCL_",
                                                   "CUDA_", "MPICH_", "MPIR_CVAR_", "OPENBLAS_"};
  for (auto p : kPrefixes)
    if (name.size() > p.size() && name.substr(0, p.size()) == p) return true;
  return false;
}

std::map<std::string, std::string> allowed_environment(const std::vector<std::string>& environ_entries) {
  std::map<std::string, std::string> out;
  for (const auto& e : environ_entries) {
    const auto eq = e.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = e.substr(0, eq);
    if (environment_allowed(name)) out[name] = e.substr(eq + 1);
  }
  return out;
}

std::string placement_summary(const std::vector<std::string>& hosts) {
  std::string s;
  for (std::size_t i = 0; i < hosts.size();) {
    std::size_t j = i;
    while (j + 1 < hosts.size() && hosts[j + 1] == hosts[i]) ++j;
    if (!s.empty()) s += ',';
    s += hosts[i] + ":" + std::to_string(i);
    if (j > i) s += "-" + std::to_string(j);
    i = j + 1;
  }
  return s;
}

std::string tasks_per_node(const std::vector<std::string>& hosts) {
  std::vector<std::string> order;
  std::map<std::string, int> count;
  for (const auto& h : hosts)
    if (count[h]++ == 0) order.push_back(h);
  std::string s;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && count[order[j + 1]] == count[order[i]]) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(count[order[i]]);
    if (j > i) s += "(x" + std::to_string(j - i + 1) + ")";
    i = j + 1;
  }
  return s;
}

std::string utc_iso8601(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpu_model(const std::string& cpuinfo) {
  std::map<std::string, std::string> first;  // first value of each field
  int processors = 0;
  std::istringstream in(cpuinfo);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    if (key == "processor") ++processors;
    first.try_emplace(key, trim(line.substr(colon + 1)));
  }
  std::string model;
  if (first.count("model name"))
    model = first["model name"];
  else if (first.count("Hardware"))
    model = first["Hardware"];
  else if (first.count("CPU part"))
    model = "implementer " + first["CPU implementer"] + ", part " + first["CPU part"];
  else
    model = "unknown";
  return processors > 0 ? model + " (x " + std::to_string(processors) + ")" : model;
}

std::string cpu_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "unknown";
  std::string list;
  int count = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int last = c;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    list += (list.empty() ? "" : ",") + std::to_string(c) + (last > c ? "-" + std::to_string(last) : "");
    count += last - c + 1;
    c = last;
  }
  const char* omp = std::getenv("OMP_NUM_THREADS");
  return "cpus " + list + " (" + std::to_string(count) + "), omp " + (omp && *omp ? omp : std::to_string(count));
}

std::string affinity_summary(const std::vector<std::string>& affinities) {
  if (affinities.empty()) return "";
  if (std::all_of(affinities.begin(), affinities.end(), [&](const std::string& a) { return a == affinities[0]; }))
    return "every rank: " + affinities[0];
  std::string s;
  for (std::size_t r = 0; r < affinities.size(); ++r) s += (r ? "; rank " : "rank ") + std::to_string(r) + ": " + affinities[r];
  return s;
}

std::map<std::string, std::string> collect_metadata(const MetadataInput& in, const std::vector<std::string>& environ_entries,
                                                     const std::string& cpuinfo) {
  const std::set<std::string> nodes(in.hosts.begin(), in.hosts.end());
  const std::string cuda = comm::cuda_runtime();
  std::map<std::string, std::string> m = {
      {"pipebench_version", version()},
      {"pipebench_commit", commit()},
      {"build_type", build_type()},
      {"build_flags", build_flags()},
      {"compiler", compiler()},
      {"date_utc", utc_iso8601(std::time(nullptr))},
      {"command_line", in.command_line},
      {"ranks", std::to_string(in.hosts.size())},
      {"nodes", std::to_string(nodes.size())},
      {"placement", placement_summary(in.hosts)},
      {"cpu", cpu_model(cpuinfo)},
      {"gpu", gpu_of(cuda)},
      {"cuda", cuda},
      {"mpi", comm::mpi_library_version()},
      {"nccl", comm::nccl_version()},
      {"kokkos", kernels::kokkos_version()},
      {"kokkos_backend", kernels::kokkos_backends()},
      {"kokkoskernels", kernels::kokkoskernels_version()},
      {"blas", kernels::blas_description()},
      {"hdf5", h5::library_description()},
      {"warmup_steps", std::to_string(in.warmup_steps)},
      {"timed_steps", std::to_string(in.timed_steps)},
      {"statistic", in.statistic},
  };
  if (!in.affinities.empty()) m["cpu_affinity"] = affinity_summary(in.affinities);
  const auto env = allowed_environment(environ_entries);
  // Slurm's own names first, then the older aliases it still sets.
  const std::pair<const char*, std::vector<const char*>> slurm[] = {
      {"slurm_job_id", {"SLURM_JOB_ID", "SLURM_JOBID"}},
      {"slurm_nodelist", {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}},
      {"slurm_partition", {"SLURM_JOB_PARTITION"}},
      {"slurm_array_job_id", {"SLURM_ARRAY_JOB_ID"}},
      {"slurm_array_task_id", {"SLURM_ARRAY_TASK_ID"}},
      {"slurm_ntasks", {"SLURM_NTASKS", "SLURM_NPROCS"}},
      {"slurm_cpu_bind", {"SLURM_CPU_BIND", "SLURM_CPU_BIND_TYPE"}},
      {"slurm_restart_count", {"SLURM_RESTART_COUNT"}},
  };
  for (const auto& [key, names] : slurm)
    for (const char* n : names)
      if (auto it = env.find(n); it != env.end()) {
        m[key] = it->second;
        break;
      }
  if (m.count("slurm_job_id")) {
    // Slurm sets SLURM_RESTART_COUNT only once a job was requeued: a job without it runs the first time.
    if (!m.count("slurm_restart_count")) m["slurm_restart_count"] = "0";
    // Counted from the ranks' hosts, in Slurm's notation: under mpiexec, SLURM_TASKS_PER_NODE of the
    // ranks describes hydra's proxy step (1 per node), not the ranks.
    m["slurm_tasks_per_node"] = tasks_per_node(in.hosts);
  }
  for (const auto& [name, value] : env) m["env." + name] = value;
  // Who wrote the run: the batch job, the host and the process, so that runs of two sweeps that met in
  // one file can be told apart.
  m["job_id"] = job_id(environ_entries);
  m["writer_host"] = host_name();
  m["writer_pid"] = std::to_string(getpid());
  // Environment values and the command line are bytes, not necessarily text: store them as UTF-8.
  for (auto& [key, value] : m) value = utf8_escaped(value);
  return m;
}

std::map<std::string, std::string> collect_metadata(const MetadataInput& in) {
  std::vector<std::string> entries;
  for (char** e = environ; e && *e; ++e) entries.emplace_back(*e);
  return collect_metadata(in, entries, read_file("/proc/cpuinfo"));
}

}  // namespace pipebench::bench
