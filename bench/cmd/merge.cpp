// `pipebench merge OUT.h5 IN.h5...`: one results file from several, e.g. the files of the tasks of a
// Slurm job array (jobs/slurm/sweep.sbatch). Every complete run is read back whole and appended with the
// same reader and writer `pipebench report` and `run` use, so it arrives with its configuration, its
// metadata and its records, and every field a later schema adds goes with it. The groups under /comm and
// /gemm (the communication and GEMM benchmarks) are read back and appended with append_comm and append_gemm.
// Nothing is merged when an input has another schema version, when one run (or /comm or /gemm group) would arrive twice, or when a file cannot be
// read; the output is built under a temporary name and appears (or is replaced, --append) only when
// complete, so a refusal or a failure leaves it as it was. docs/slurm.md ("Merging").
// --as-repeats: the inputs' runs of one configuration become the repeats of one run, combined as
// `run --repeats` combines its own (combine_repeats), for sweeps run one repeat per job, interleaved
// with another machine's (docs/netns.md, the rehearsal).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/results/gemm_results.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/steps.hpp"
#include "bench/results/store.hpp"

namespace pipebench::bench {

namespace {

struct MergeSettings {
  std::string out;
  std::vector<std::string> inputs;
  bool append = false;
  bool as_repeats = false;
};

// What makes a run this run and no other: its configuration and the whole of its metadata (date,
// writer host and pid, job id, command line, ...). Two runs of one configuration are different runs.
std::string identity(const RunResult& run) {
  std::string id = run.key;
  for (const auto& [k, v] : run.metadata) id += '\n' + k + '=' + v;
  return id;
}

// The config and metadata entries of a /comm or /gemm group, one line each: the part of its identity the
// two kinds share.
std::string settings_identity(const std::map<std::string, std::string>& config,
                              const std::map<std::string, std::string>& metadata) {
  std::string id;
  for (const auto& [k, v] : config) id += "config/" + k + '=' + v + '\n';
  for (const auto& [k, v] : metadata) id += "metadata/" + k + '=' + v + '\n';
  return id;
}

// What tells one invocation of `pipebench comm` from another: every attribute but complete, and the
// whole of its config and metadata.
std::string comm_identity(const CommResult& r) {
  std::string id = r.op + '\n' + r.group + '\n' + r.backend + '\n' + r.mapping + '\n' + std::to_string(r.groups) + '\n' +
                   std::to_string(r.group_size) + '\n' + std::to_string(r.one_group) + '\n';
  return id + settings_identity(r.config, r.metadata);
}

// What tells one `pipebench gemm` sweep from another: its precision, config, metadata and rows.
std::string gemm_identity(const GemmResult& r) {
  std::string id = "gemm\n" + r.precision + '\n' + std::to_string(r.rows.size()) + '\n';
  return id + settings_identity(r.config, r.metadata);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// A run or group as messages name it.
std::string where(const std::string& path, const char* what, const std::string& id) {
  return std::string(what) + " " + id + " of " + quoted(path, 200);
}

// What merge reads and judges before it writes anything.
struct MergeInputs {
  std::vector<std::string> files;  // [0] the existing output (--append), then the inputs
  std::vector<RunListing> listings;  // with their /comm groups
  std::vector<std::vector<StoredGemm>> gemms;  // each file's /gemm groups
  std::size_t first_input = 0;     // 1 when files[0] is the existing output
};

// A file's /gemm groups, refused (UsageError, nothing written) when damaged or already seen.
std::vector<StoredGemm> read_gemm_groups(const std::string& file, std::map<std::string, std::string>& seen) {
  std::vector<StoredGemm> gemms;
  try {
    gemms = read_gemms(file);
  } catch (const Error& e) {
    throw UsageError(quoted(file, 200) + ": its /gemm groups are damaged (" + std::string(e.what()) +
                     "): merge copies only sound files (nothing was written)");
  }
  for (const auto& g : gemms) {
    const auto [it, fresh] = seen.emplace(gemm_identity(g.result), where(file, "/gemm group", run_name(g.id)));
    if (!fresh)
      throw UsageError(where(file, "/gemm group", run_name(g.id)) + " is the same as " + it->second +
                       ": duplicates are refused (nothing was written)");
  }
  return gemms;
}

// Reads every file and refuses (UsageError, nothing written) other schema versions, damaged runs and
// runs or /comm groups that appear twice.
MergeInputs read_inputs(const MergeSettings& o, bool out_exists) {
  MergeInputs in;
  if (out_exists) in.files.push_back(o.out);
  in.first_input = out_exists ? 1 : 0;
  in.files.insert(in.files.end(), o.inputs.begin(), o.inputs.end());
  std::map<std::string, std::string> seen, seen_groups;  // identity -> where
  for (std::size_t f = 0; f < in.files.size(); ++f) {
    const std::string& file = in.files[f];
    ReadRequest req;
    req.records = true;
    req.comms = true;
    RunListing l = read_results(file, req);
    if (l.schema_version != kResultsSchemaVersion)
      throw UsageError(quoted(file, 200) + " has results schema version " + std::to_string(l.schema_version) +
                       ", and this pipebench writes version " + std::to_string(kResultsSchemaVersion) +
                       ": merge copies runs only between files of its own version (nothing was written)");
    for (const auto& d : l.damaged)
      throw UsageError(where(file, "run", std::to_string(d.id)) + " is damaged (" + d.reason +
                       "): merge copies only sound files (nothing was written)");
    for (const auto& r : l.runs) {
      const auto [it, fresh] = seen.emplace(identity(r.run), where(file, "run", std::to_string(r.id)));
      if (!fresh)
        throw UsageError(where(file, "run", std::to_string(r.id)) + " is the same run as " + it->second +
                         " (same configuration and metadata): duplicates are refused (nothing was written)");
    }
    for (const auto& d : l.damaged_comms)
      throw UsageError(where(file, "/comm group", d.id ? run_name(d.id) : "list") + " is damaged (" + d.reason +
                       "): merge copies only sound files (nothing was written)");
    for (const auto& c : l.comms) {
      const auto [it, fresh] = seen_groups.emplace(comm_identity(c.result), where(file, "/comm group", run_name(c.id)));
      if (!fresh)
        throw UsageError(where(file, "/comm group", run_name(c.id)) + " is the same as " + it->second +
                         ": duplicates are refused (nothing was written)");
    }
    in.listings.push_back(std::move(l));
    in.gemms.push_back(read_gemm_groups(file, seen_groups));
  }
  return in;
}

// Appends the inputs' complete runs to `tmp`; returns the report lines and adds the count to `total`.
std::string copy_runs(const std::string& tmp, const MergeInputs& in, int& total) {
  std::string lines;
  for (std::size_t f = in.first_input; f < in.files.size(); ++f) {
    std::vector<int> from, to;
    for (const auto& r : in.listings[f].runs) {
      from.push_back(r.id);
      to.push_back(append_run(tmp, r.run));
    }
    total += static_cast<int>(from.size());
    lines += "#   " + in.files[f] + ": " +
             (from.empty() ? std::string("no complete runs") : "runs " + id_ranges(from) + " -> " + id_ranges(to));
    if (!in.listings[f].incomplete.empty()) lines += " (incomplete runs " + id_ranges(in.listings[f].incomplete) + " skipped)";
    lines += '\n';
  }
  return lines;
}

// --as-repeats: the inputs' complete runs of one configuration (the same configuration key, the one
// `run --resume` matches), in input order, appended as one run whose repeats they are, in the order
// `run --repeats` stores them (combine_repeats: every repeat's steps, the median repeat's records and
// metadata, the median of the repeats' medians as the step time). A run that already holds repeats is
// refused (its other repeats' records are not stored, so it cannot be one repeat among others).
std::string copy_as_repeats(const std::string& tmp, const MergeInputs& in, int& total) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<std::size_t, const StoredRun*>>> by_key;
  for (std::size_t f = in.first_input; f < in.files.size(); ++f)
    for (const auto& r : in.listings[f].runs) {
      if (r.run.summary.repeats > 1)
        throw UsageError(where(in.files[f], "run", std::to_string(r.id)) + " holds " + std::to_string(r.run.summary.repeats) +
                         " repeats already: --as-repeats takes runs of one repeat each (nothing was written)");
      auto& runs = by_key[r.run.key];
      if (runs.empty()) order.push_back(r.run.key);
      runs.emplace_back(f, &r);
    }
  std::string lines;
  for (const auto& key : order) {
    std::vector<RunResult> repeats;
    std::string from;
    for (const auto& [f, r] : by_key[key]) {
      repeats.push_back(r->run);
      from += (from.empty() ? "" : ", ") + in.files[f] + " run " + std::to_string(r->id);
    }
    const std::size_t n = repeats.size();
    const int id = append_run(tmp, combine_repeats(std::move(repeats), kScoringMedian));
    total += static_cast<int>(n);
    lines += "#   " + from + " -> run " + std::to_string(id) + " (" + std::to_string(n) + " repeat(s))\n";
  }
  for (std::size_t f = in.first_input; f < in.files.size(); ++f)
    if (!in.listings[f].incomplete.empty())
      lines += "#   " + in.files[f] + ": incomplete runs " + id_ranges(in.listings[f].incomplete) + " skipped\n";
  return lines;
}

// Appends the inputs' /comm and /gemm groups to `tmp`, numbered after the ones it holds; returns the
// report lines and adds the counts to `copied` (by top group).
std::string copy_comm_groups(const std::string& tmp, const MergeInputs& in, std::map<std::string, int>& copied) {
  std::string lines;
  for (std::size_t f = in.first_input; f < in.files.size(); ++f) {
    for (const auto& c : in.listings[f].comms) {
      lines += "#   " + in.files[f] + ": /comm/" + run_name(c.id) + " -> /comm/" + run_name(append_comm(tmp, c.result)) + '\n';
      ++copied["comm"];
    }
    for (const auto& g : in.gemms[f]) {
      lines += "#   " + in.files[f] + ": /gemm/" + run_name(g.id) + " -> /gemm/" + run_name(append_gemm(tmp, g.result)) + '\n';
      ++copied["gemm"];
    }
  }
  return lines;
}

// The complete temporary file becomes the output: replacing it (--append) or, for a new one, linked so
// that an output another process made meanwhile is refused.
void publish(const std::string& tmp, const std::string& out, bool out_exists) {
  if (out_exists) {
    if (std::rename(tmp.c_str(), out.c_str()) != 0)
      throw Error("cannot replace " + quoted(out, 200) + ": " + std::strerror(errno));
    return;
  }
  if (::link(tmp.c_str(), out.c_str()) != 0)
    throw UsageError("cannot create " + quoted(out, 200) + ": " + std::strerror(errno));
  std::remove(tmp.c_str());
}

// The output is replaced by a file built beside it: both it (--append) and its directory must be
// writable, or the merge is refused before anything is read.
void check_writable(const std::string& out, bool out_exists) {
  if (out_exists && ::access(out.c_str(), W_OK) != 0)
    throw UsageError("output " + quoted(out, 200) + " is not writable: " + std::strerror(errno));
  const std::filesystem::path parent = std::filesystem::path(out).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError("the directory " + quoted(dir, 200) + " of output " + quoted(out, 200) +
                     " is not writable (merge builds the new file beside it): " + std::strerror(errno));
}

void merge(const MergeSettings& o) {
  // Held from the first read of the output to its replacement: a run --append or another merge
  // --append waits, then works on the new file (ResultsFileLock), instead of losing its runs.
  const ResultsFileLock lock(o.out);
  const bool out_exists = ::access(o.out.c_str(), F_OK) == 0;
  if (out_exists && !o.append)
    throw UsageError("output " + quoted(o.out, 200) + " already exists; pass --append to add the runs to it, or choose another name");
  for (const auto& in : o.inputs)
    if (in == o.out || same_file(in, o.out))
      throw UsageError("input " + quoted(in, 200) + " is also the output; name another output file");
  check_writable(o.out, out_exists);
  // Everything is read and judged before anything is written.
  const MergeInputs in = read_inputs(o, out_exists);
  // Built under a temporary name next to the output, which appears (or is replaced) only when complete.
  const std::string tmp = o.out + ".merge-" + std::to_string(getpid()) + ".tmp";
  std::remove(tmp.c_str());
  try {
    std::error_code ec;
    if (out_exists && !std::filesystem::copy_file(o.out, tmp, ec))
      throw UsageError("cannot copy " + quoted(o.out, 200) + " to " + quoted(tmp, 200) + " to append to it: " + ec.message());
    if (!out_exists)
      prepare_results_file(tmp, false);
    int total = 0;
    std::map<std::string, int> copied;
    std::string lines = o.as_repeats ? copy_as_repeats(tmp, in, total) : copy_runs(tmp, in, total);
    lines += copy_comm_groups(tmp, in, copied);
    publish(tmp, o.out, out_exists);
    std::string groups;
    for (const auto& [top, n] : copied) groups += " and " + std::to_string(n) + " /" + top + " group(s)";
    std::cout << "# merged " << total << " run(s)" << groups << " from " << (in.files.size() - in.first_input) << " file(s) into " << o.out << "\n" << lines;
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("merge", "Merge results files (e.g. a job array's) into one: runs copied with their metadata");
  auto o = std::make_shared<MergeSettings>();
  cmd->add_option("out", o->out, "The merged results file (new, unless --append)")->required();
  cmd->add_option("inputs", o->inputs, "Results files to copy the runs of, in this order")->required();
  add(*cmd, {"--append", "Add the runs to an existing OUT (whose runs count for duplicates too)"}, o->append);
  add(*cmd, {"--as-repeats", "The inputs' runs of one configuration become the repeats of one run, as run --repeats "
                             "stores them (each input run one repeat; median scoring)"}, o->as_repeats);
  cmd->callback([o] { merge(*o); });
}

}  // namespace pipebench::bench
