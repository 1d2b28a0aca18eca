// `pipebench rerun FILE.h5 --run N [-o OUT]` (under mpiexec or srun): runs configuration N of a
// results file again, with the settings stored with it, through the same code as `pipebench run`, and
// says which parts of the environment differ from the original run's (commit, libraries, rank count,
// hosts), compared metadata entry by metadata entry. docs/slurm.md ("Reruns").
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/cmd/rerun_arguments.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/results/store.hpp"
#include "bench/run/job.hpp"

namespace pipebench::bench {

namespace {

struct RerunSettings {
  std::string file;
  int run = 0;
  std::string out;
  bool dry_run = false;
};

std::string get(const std::map<std::string, std::string>& m, const std::string& k) {
  const auto it = m.find(k);
  return it == m.end() ? "" : it->second;
}

// The entries that say which build, libraries and machine a run had, by what they are.
const std::pair<const char*, std::vector<const char*>> kCompared[] = {
    {"commit", {"pipebench_commit", "pipebench_version"}},
    {"libraries", {"compiler", "build_type", "mpi", "hdf5", "kokkos", "kokkos_backend", "kokkoskernels", "blas", "nccl", "cuda"}},
    {"rank count", {"ranks"}},
    {"hosts", {"nodes", "placement"}},
    {"hardware", {"cpu", "gpu"}},
};

// "commit: pipebench_commit 'abc' -> 'def'" lines; none when everything compared is equal.
std::vector<std::string> differences(const std::map<std::string, std::string>& was, const std::map<std::string, std::string>& now) {
  std::vector<std::string> out;
  for (const auto& [what, keys] : kCompared)
    for (const char* k : keys)
      if (get(was, k) != get(now, k))
        out.push_back(std::string(what) + ": " + k + " " + quoted(get(was, k), 120) + " -> " + quoted(get(now, k), 120));
  return out;
}

// "configuration: zero '3' -> ''" lines: a setting the rerun did not repeat (an automatic stage split that
// came out otherwise, a key this build no longer writes); none when it is the same configuration.
std::vector<std::string> config_differences(const std::map<std::string, std::string>& was,
                                            const std::map<std::string, std::string>& now) {
  std::map<std::string, std::string> keys = was;
  keys.insert(now.begin(), now.end());
  std::vector<std::string> out;
  for (const auto& [k, v] : keys)
    if (get(was, k) != get(now, k))
      out.push_back("configuration: " + k + " " + quoted(get(was, k), 120) + " -> " + quoted(get(now, k), 120));
  return out;
}

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += " " + (a.find_first_of(" '\"\\$") == std::string::npos && !a.empty() ? a : quoted(a));
  return s;
}

void rerun(const RerunSettings& o) {
  // Read on every rank before MPI starts: an id that is not a run is one line and exit 2, before any work.
  const RunResult original = read_run(o.file, o.run);
  std::string out = o.out;
  if (out.empty()) {
    const std::string stem = o.file.size() > 3 && o.file.compare(o.file.size() - 3, 3, ".h5") == 0
                                 ? o.file.substr(0, o.file.size() - 3) : o.file;
    out = stem + "-rerun.h5";
  }
  const RerunArguments ra = run_arguments(original.config);
  std::vector<std::string> args = ra.args;
  args.insert(args.end(), {"-o", out, "--append"});
  if (o.dry_run) {
    std::cout << "pipebench run" << joined(args) << '\n';
    return;
  }
  // The inner `run` below takes the job over (MPI is started here, so it finds it running) and ends it.
  Job job(false);
  const int rank = job.rank();
  const std::string ranks = get(original.metadata, "ranks");
  job.check("", [&] {
    if (!ranks.empty() && ranks != std::to_string(job.size()))
      throw UsageError("run " + std::to_string(o.run) + " of " + quoted(o.file, 200) + " ran on " + ranks +
                       " ranks and this job has " + std::to_string(job.size()) + ": start the rerun on " + ranks +
                       " ranks (differs: rank count)");
  });
  if (rank == 0) {
    std::cout << "# rerun of run " << o.run << " of " << o.file << ": pipebench run" << joined(args) << '\n';
    for (const std::string& k : ra.unrepeated)
      std::cout << "# rerun: the stored setting " << quoted(k, 80) << " is no flag of this pipebench's run: not repeated\n";
    std::cout << std::flush;
  }
  // The same code as `pipebench run`, given the stored settings as its flags.
  CLI::App inner{"pipebench", "pipebench"};
  add_run_command(inner);
  args.insert(args.begin(), "run");
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
  inner.parse(args);
  if (rank != 0) return;
  // The run just written is the last one of the output file.
  const RunListing now = list_runs(out);
  if (now.runs.empty()) throw Error("the rerun wrote no run to " + quoted(out, 200));
  const StoredRun& last = now.runs.back();
  auto diff = config_differences(original.config, last.run.config);
  for (auto& d : differences(original.metadata, last.run.metadata)) diff.push_back(std::move(d));
  std::cout << "# rerun written as run " << last.id << " of " << out << "; compared with run " << o.run << " of " << o.file;
  if (diff.empty()) {
    std::cout << ": same configuration, commit, libraries, rank count, hosts and hardware\n";
    return;
  }
  std::cout << ", " << diff.size() << " difference(s):\n";
  for (const auto& d : diff) std::cout << "#   differs: " << d << '\n';
}

}  // namespace

void add_rerun_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("rerun", "Run a stored run's configuration again (under mpiexec/srun) and say what differs");
  auto o = std::make_shared<RerunSettings>();
  cmd->add_option("file", o->file, "HDF5 results file holding the run")->required();
  add(*cmd, {"--run", "The run to repeat (an id >= 1)"}, o->run)->required();
  add(*cmd, flag::out, o->out)->description("Results file the rerun is appended to (default FILE-rerun.h5)");
  add(*cmd, {"--dry-run", "Print the `pipebench run` command that repeats the run, and run nothing"}, o->dry_run);
  cmd->callback([o] { rerun(*o); });
}

}  // namespace pipebench::bench
