// `pipebench comm`: nccl-tests-style collectives and OSU-style point-to-point tests over the tensor-,
// pipeline- and data-parallel groups of a t x p x d mapping, every group of the chosen kind at once
// (or only rank 0's, --one-group), on the communicator layer of `run` (docs/comm-bench.md). Rank 0
// hands nccl-tests' (or OSU's) table, or its rows as JSON or CSV, and the latency-bandwidth fit to one
// Sink (bench/render/sink.hpp), and appends the results to the HDF5 results file as /comm/NNNNNN.
// Launch it with mpiexec/srun.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/cmd/comm_settings.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/render/comm_text.hpp"
#include "bench/render/sink.hpp"
#include "bench/results/comm_results.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/metadata.hpp"
#include "bench/results/store.hpp"
#include "bench/run/job.hpp"
#include "bench/run/plan.hpp"
#include "bench/run/stop.hpp"
#include "comm/bench_harness.hpp"
#include "comm/factory.hpp"
#ifdef PIPEBENCH_HAVE_NCCL
#include "comm/nccl_communicator.hpp"
#endif
#include "comm/roll.hpp"
#include "topology/grid.hpp"
#include "topology/mpi_grid.hpp"

namespace pipebench::bench {

namespace {

using comm::bench::GroupChoice;

// Who runs where, for nccl-tests' header (device -1: host memory); plain bytes, for one all-gather.
struct RankInfo {
  int pid = 0;
  char host[64] = {};
  int device = -1;
  char pci_bus[16] = {};
  char device_name[96] = {};
};

// The waits of the world communicator and of the measured groups.
struct Waits {
  comm::CommOptions world, bench;
};

Waits waits_of(const CommSettings& s) {
  Waits w;
  w.world.wait.poll_interval = std::chrono::microseconds(std::max(s.poll_us, 50));
  w.world.wait.max_poll_interval = std::max(w.world.wait.poll_interval, std::chrono::microseconds(1000));
  w.world.wait.timeout = std::chrono::duration<double>(s.timeout.value);
  // The measured groups poll without sleeping unless asked (--poll-us), as nccl-tests and OSU wait.
  w.bench = w.world;
  w.bench.wait.poll_interval = w.bench.wait.max_poll_interval = std::chrono::microseconds(s.poll_us);
  return w;
}

// What one rank measures with. The members are freed in reverse: the harness and its buffers before
// the communicator it runs on, that before the MPI communicator it was split from.
struct Bench {
  std::unique_ptr<topology::MpiGrid> mgrid;
  std::unique_ptr<comm::Communicator> group;
  std::unique_ptr<ProgressWatchdog> dog;  // of the blocking collectives
  std::unique_ptr<comm::bench::Harness> harness;
  comm::bench::Spec spec;
  std::vector<std::vector<int>> groups;  // every group of the measured kind, by world rank
  bool takes_part = true;                // false: waits while rank 0's group runs (--one-group)
};

// This rank's communicator of the measured kind, under a watchdog: a rank that stopped or died leaves
// the others inside MPI_Comm_split, which no timed wait covers.
void open_group(Bench& b, const CommSettings& s, const Resolved& r, const topology::Grid& grid, Job& job,
                const Waits& w) {
  Watchdog dog("rank " + std::to_string(job.rank()) + ": the communicators were not built " + job.roll().within() +
                   " (a rank stopped or died inside MPI_Comm_split)",
               job.roll().release_limit());
  if (r.group == GroupChoice::world) {
    b.group = comm::make_communicator(s.backend, MPI_COMM_WORLD, "world", w.bench);
    return;
  }
  const topology::GroupKind kind = comm::bench::group_kind(r.group);  // its communicator alone
  b.mgrid = std::make_unique<topology::MpiGrid>(grid, MPI_COMM_WORLD, std::vector<topology::GroupKind>{kind});
  b.group = comm::make_communicator(s.backend, b.mgrid->comm(kind).get(), s.group, w.bench);
}

// Every group of the measured kind, and whether this rank's takes part.
void place_groups(Bench& b, const CommSettings& s, const Resolved& r, const topology::Grid& grid, int me, int world) {
  if (r.group == GroupChoice::world) {
    b.groups.assign(1, std::vector<int>(static_cast<std::size_t>(world)));
    std::iota(b.groups[0].begin(), b.groups[0].end(), 0);
    return;
  }
  const topology::GroupKind kind = comm::bench::group_kind(r.group);
  b.groups = grid.groups(kind);
  b.takes_part = !s.one_group || grid.group_index(kind, me) == grid.group_index(kind, 0);
}

comm::bench::Spec bench_spec(const CommSettings& s, const Resolved& r) {
  comm::bench::Spec spec;
  spec.op = r.op;
  spec.group = r.group;
  spec.dtype = r.dtype;
  spec.redop = r.redop;
  spec.root = s.root;
  spec.imbalance = s.imbalance;
  spec.iters = s.iters;
  spec.warmup = s.warmup;
  spec.check = s.check != 0;
  spec.per_iter = s.per_iter != 0;
  // --poll-us 0: MPI's blocking collectives, as OSU times them; each size then runs under a watchdog.
  spec.blocking = s.poll_us == 0 && s.backend == "mpi";
  return spec;
}

// The harness, with its buffers for the largest size allocated on every rank before any traffic: a
// rank short of memory stops the job, on every rank, at the meeting that follows.
void make_harness(Bench& b, const CommSettings& s, const Resolved& r, Job& job, const Waits& w) {
  b.spec = bench_spec(s, r);
  // Blocking collectives have no timeout of their own: a watchdog ends the job when no operation of
  // this rank completes within --timeout.
  if (b.spec.blocking && b.takes_part) {
    b.dog = std::make_unique<ProgressWatchdog>(job.rank(), w.world.wait.timeout);
    b.spec.progress = &b.dog->counter;
  }
  int short_of_memory = 0;
  try {
    b.harness = std::make_unique<comm::bench::Harness>(*b.group, job.world(), b.spec, b.takes_part, r.sizes.back());
  } catch (const std::exception& e) {
    short_of_memory = 1;
    std::fprintf(stderr, "pipebench: error: rank %d: %s\n", job.rank(), e.what());
  } catch (...) {
    short_of_memory = 1;
  }
  if (job.roll().meet("the allocation of the buffers", short_of_memory))
    throw Error("buffers of " + std::to_string(r.sizes.back()) + " bytes could not be allocated on every rank");
}

// Who runs where, every rank's on every rank (one all-gather over the world).
std::vector<RankInfo> gather_ranks(const CommSettings& s, Job& job) {
  RankInfo mine;
  mine.pid = static_cast<int>(getpid());
  std::snprintf(mine.host, sizeof mine.host, "%s", host_name().c_str());
#ifdef PIPEBENCH_HAVE_NCCL
  if (s.backend == "nccl") {
    // The device the group's NCCL communicator chose (it is built before).
    const comm::CudaDevice d = comm::current_cuda_device();
    mine.device = d.index;
    std::snprintf(mine.pci_bus, sizeof mine.pci_bus, "%s", d.pci_bus.c_str());
    std::snprintf(mine.device_name, sizeof mine.device_name, "%s", d.name.c_str());
  }
#else
  (void)s;
#endif
  std::vector<RankInfo> ranks(static_cast<std::size_t>(job.size()));
  comm::Request q = job.world().iallgather(&mine, ranks.data(), sizeof(RankInfo));
  job.world().wait(q);
  return ranks;
}

// The result's identity, before its rows.
CommResult result_of(const CommSettings& s, const Resolved& r, const Bench& b) {
  CommResult result;
  result.op = comm::bench::op_row(r.op).name;
  result.group = comm::bench::group_choice_name(r.group);
  result.backend = s.backend;
  result.mapping = to_string(r.mapping);
  result.group_size = r.group_size;
  result.one_group = s.one_group ? 1 : 0;
  result.config = config_of(s, r);
  result.groups = s.one_group ? 1 : static_cast<std::int64_t>(b.groups.size());
  return result;
}

// nccl-tests' header: what runs over which groups, the sizes and loops, who runs where, the file.
std::string context_notes(const CommSettings& s, const Resolved& r, const CommResult& result, const Bench& b,
                          const topology::Grid& grid, const std::vector<RankInfo>& ranks) {
  std::ostringstream head;
  const std::size_t n = b.groups.size();
  head << "# pipebench comm " << result.op << ": backend " << s.backend << ", mapping " << result.mapping
       << (s.cp > 1 ? " cp=" + std::to_string(s.cp) : "") << (s.ep > 1 ? " ep=" + std::to_string(s.ep) : "") << " (order "
       << s.order << "), group " << result.group << ": " << n << " group(s) of " << r.group_size << " rank(s), "
       << (s.one_group && n > 1 ? "only rank 0's runs (--one-group)" : "all at once") << "\n";
  const int window = comm::bench::op_row(r.op).window;
  head << "# minBytes " << s.min_bytes << " maxBytes " << s.max_bytes << " step: "
       << (s.increment ? std::to_string(s.increment) + "(bytes)" : std::to_string(s.factor) + "(factor)")
       << " warmup iters: " << s.warmup << " iters: " << s.iters << " validation: " << s.check
       << (window ? " window: " + std::to_string(window) : "")
       << (comm::bench::op_row(r.op).uneven ? " imbalance: " + num(s.imbalance, 9) : "") << "\n";
  if (s.per_iter)
    head << "# Per-Iteration Report: host clock around each iteration, each waited for; i_* uses the slowest rank of "
            "each iteration\n";
  head << "#\n# Using devices\n";
  std::vector<RankPlace> places;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const RankInfo& ri = ranks[i];
    const int rank = static_cast<int>(i);
    const int gi = r.group == GroupChoice::world ? 0 : grid.group_index(comm::bench::group_kind(r.group), rank);
    places.push_back({rank, gi, ri.pid, ri.host, ri.device, ri.pci_bus, ri.device_name});
  }
  head << comm_device_lines(places) << "# results: " << s.out << "\n#\n";
  return head.str();
}

// Every size, collective over the world. Rank 0 (the one with a sink) adds each size's rows to
// `result` and hands them to the sink. Returns how many groups took part.
std::int64_t measure(Bench& b, const Resolved& r, comm::Communicator& world, CommResult& result, Sink* sink) {
  const bool in_place = comm::bench::op_row(r.op).in_place;
  std::int64_t ran = 0;
  for (std::uint64_t size : r.sizes) {
    if (b.dog) b.dog->watch("size " + std::to_string(size));
    const auto sample = b.harness->run(size);
    if (b.dog) b.dog->watch("");
    const auto all = comm::bench::gather_samples(world, sample);
    std::vector<std::vector<double>> iters;
    if (b.spec.per_iter) iters = comm::bench::gather_iterations(world, *b.harness, b.spec.iters);
    if (!sink) continue;
    const std::size_t first = result.rows.size();
    for (int v = 0; v < (in_place ? 2 : 1); ++v) {
      result.rows.push_back(make_row(r, size, all, v, b.groups, b.spec.check, ran));
      if (!b.spec.per_iter) continue;
      result.iter_us.emplace_back();
      for (double t : iters[v]) result.iter_us.back().push_back(t * 1e6);
    }
    sink->record(comm_record(result, result.rows[first], in_place ? &result.rows[first + 1] : nullptr));
  }
  return ran;
}

// Whether the measured groups span nodes: "none" (every group inside one node), "all" (every group over
// more than one) or "some"; what plan --calibrate tells the two tiers of links by.
// With --one-group only the group holding rank 0 counts.
std::string groups_span_nodes(const std::vector<std::vector<int>>& groups, const std::vector<RankInfo>& ranks,
                              bool one_group) {
  int inside = 0, across = 0;
  for (const auto& g : groups) {
    if (one_group && std::find(g.begin(), g.end(), 0) == g.end()) continue;
    std::set<std::string> hosts;
    for (int r : g) hosts.insert(ranks[static_cast<std::size_t>(r)].host);
    ++(hosts.size() > 1 ? across : inside);
  }
  return across == 0 ? "none" : inside == 0 ? "all" : "some";
}

// Rank 0, after the sizes: the fit and the metadata, the /comm group appended to the results file,
// and the footer. Returns the wrong elements of the data check.
std::int64_t store(Sink& sink, const CommSettings& s, CommResult& result, std::int64_t ran,
                   const std::vector<RankInfo>& ranks, const std::string& spans) {
  result.groups = std::max<std::int64_t>(ran, 1);
  std::vector<std::uint64_t> bytes;
  std::vector<double> secs;
  for (const auto& row : result.rows)
    if (!row.in_place) bytes.push_back(static_cast<std::uint64_t>(row.bytes)), secs.push_back(row.time_us * 1e-6);
  const auto f = comm::bench::fit_alpha_beta(bytes, secs);
  result.fit = {f.alpha_s, f.beta_Bps, f.max_rel_error, f.points};
  MetadataInput meta;
  meta.command_line = s.command_line;
  for (const auto& ri : ranks) meta.hosts.emplace_back(ri.host);
  meta.warmup_steps = s.warmup;
  meta.timed_steps = s.iters;
  meta.statistic = "time of one operation: mean over the timed iterations, largest over a group's ranks, slowest group";
  result.metadata = collect_metadata(meta);
  result.metadata["groups_span_nodes"] = spans;
  std::int64_t wrong = 0;
  for (const auto& row : result.rows) wrong += std::max<std::int64_t>(row.wrong, 0);
  const int id = append_comm(s.out, result);
  // The checks' summary and the group's id are the text's: JSON and CSV carry each row's wrong count,
  // and the notes named the file.
  sink.legend(comm_summary(result));
  sink.note(comm_fit_line(result));
  sink.legend("# stored as /comm/" + run_name(id) + " in " + s.out + "\n");
  sink.finish();
  return wrong;
}

// The benchmark on every rank, from the groups' communicators to the stored result; returns (on rank
// 0) the wrong elements of the data check.
std::int64_t benchmark(const CommSettings& s, const Resolved& r, Job& job, const Waits& w) {
  const topology::Grid grid = comm_grid(s, r.mapping);
  Bench b;
  open_group(b, s, r, grid, job, w);
  place_groups(b, s, r, grid, job.rank(), job.size());
  make_harness(b, s, r, job, w);
  const std::vector<RankInfo> ranks = gather_ranks(s, job);
  CommResult result = result_of(s, r, b);
  // Rank 0 writes the output; with --json or --csv, stdout holds only those and the notes go to stderr.
  const std::unique_ptr<Sink> sink = job.rank() == 0 ? make_sink(r.format, std::cout, std::cerr) : nullptr;
  if (sink) {
    sink->note(context_notes(s, r, result, b, grid, ranks));
    sink->begin_table(comm_columns(result), false, comm_table_head(result));
  }
  const std::int64_t ran = measure(b, r, job.world(), result, sink.get());
  std::int64_t wrong = 0;
  if (sink) {
    sink->end_table();
    wrong = store(*sink, s, result, ran, ranks, groups_span_nodes(b.groups, ranks, s.one_group));
  }
  job.roll().meet("the end of the benchmark");
  return wrong;
}

void run_comm(CommSettings& s) {
  Resolved r = resolve_flags(s);  // UsageError: every rank, before MPI starts
  // SIGUSR1, SIGTERM and SIGINT end the benchmark within --timeout, every rank with exit code 75 and
  // one line from rank 0, as they end `run` (bench/run/stop.hpp); its results are written at its end.
  Job job(true);
  const double limit = s.timeout.value;
  arm_stop_deadline(limit, job.rank(), [limit] {
    return "the communication benchmark ended within --timeout " + num(limit) +
           " s of it, before its end: nothing of it was written (comm writes its results when it ends)";
  });
  job.check("", [&] { resolve_world(s, r, job.size()); });  // every rank finds the same: no traffic
  const Waits waits = waits_of(s);
  job.open_world(waits.world);
  // Rank 0's checks of memory (the harness's buffers, under MemAvailable, memory.max and ulimit -v:
  // an allocation failing later is exit 1) and of the results file; the verdict reaches every rank
  // before any traffic.
  job.roll().meet("the start of the checks");  // tells rank 0 every rank's host: those on its node share its memory
  job.check("the check of the flags", [&] {
    if (job.rank() != 0) return;
    const double need = static_cast<double>(comm::bench::Harness::buffer_bytes(bench_spec(s, r), r.sizes.back(), r.group_size));
    check_fits("comm -e " + std::to_string(r.sizes.back()), need, "", memory_per_rank_bytes(std::max(job.roll().members_on_root_host(), 1)),
               "its send, receive and fill buffers; a smaller -e would fit");
    claim_results_file(s.out, s.append);
  }, {}, std::chrono::duration<double>(kResultsReadLimit));
  std::int64_t wrong = 0;
  job.guarded([&] { wrong = benchmark(s, r, job, waits); });
  job.finish("the end of the benchmark");
  if (wrong > 0) {
    std::fprintf(stderr, "pipebench: error: %lld wrong element(s) in the data check (-c 1): see the #wrong column\n",
                 static_cast<long long>(wrong));
    throw ExitCode{1};
  }
}

}  // namespace

void add_comm_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "comm", "Communication benchmarks of the 3D groups: nccl-tests collectives, OSU point-to-point (docs/comm-bench.md)");
  auto ss = std::make_shared<CommSettings>();
  CommSettings& s = *ss;
  cmd->add_option("op", s.op_text, op_help());
  add(*cmd, {"--group", "Groups that communicate, all at once: world, tp, pp, dp, pp-pairs (pipeline neighbours, both "
              "ways), cp, dp-cp, tp-cp, ep, expert-tp, expert-dp or tp-ep (docs/topology.md)"},
      s.group);
  const LayoutOptions layout = add_layout_flags(*cmd, s.mappings, s.order, s.cp, s.ep);
  layout.mapping->description("One TxPxD rank mapping (default 1 x ranks/cp x 1)");
  add(*cmd, flag::backend, s.backend)->description("Communication backend: mpi, or nccl on GPU builds (device buffers)");
  add(*cmd, {"--one-group", "Only the group holding rank 0 communicates; the others wait (compare with all at once)"},
      s.one_group);
  // The flags whose effect depends on --p2p, as users name them (CommSettings::given).
  std::vector<std::pair<std::string, CLI::Option*>> watched;
  watched.emplace_back("-b", add_parsed(*cmd, {"-b,--minbytes", "Smallest size in bytes (K, M, G: 2^10, 2^20, 2^30)"},
                                        [&s](const std::string& t) { s.min_bytes = parse_size(t, "--minbytes", false); },
                                        "8", "BYTES"));
  watched.emplace_back("-e", add_parsed(*cmd, {"-e,--maxbytes", "Largest size in bytes"},
                                        [&s](const std::string& t) { s.max_bytes = parse_size(t, "--maxbytes", false); },
                                        "32M", "BYTES"));
  watched.emplace_back("-f", add(*cmd, {"-f,--stepfactor", "Size factor from one size to the next (2 or more)"}, s.factor));
  watched.emplace_back("-i", add_parsed(*cmd, {"-i,--stepbytes", "Size increment instead of a factor (0: use -f)"},
                                        [&s](const std::string& t) { s.increment = parse_size(t, "--stepbytes", true); }, "0", "BYTES"));
  add(*cmd, {"-n,--iters", "Timed iterations per size"}, s.iters);
  add(*cmd, {"-w,--warmup_iters", "Warm-up iterations per size (not timed)", 0}, s.warmup);
  add(*cmd, {"-c,--check", "Check the results (1) or not (0)", 0, 1}, s.check);
  add(*cmd, {"-I,--per_iter_timing", "Time each iteration (1): nccl-tests' i_min, i_max, i_p99, i_cv% columns, raw times in --json", 0, 1},
      s.per_iter);
  watched.emplace_back("-d", add(*cmd, {"-d,--datatype", "Data type: float, double, half, bfloat16, int32"}, s.dtype));
  add(*cmd, {"-o,--op", "Reduction: sum, max, min"}, s.redop);
  add(*cmd, {"-r,--root", "Root of broadcast and reduce (a rank within the group)", 0}, s.root);
  add(*cmd, {"--imbalance", "alltoallv: member 0 receives X times the mean block, the others share the rest (1 <= X <= group size)"},
      s.imbalance);
  add(*cmd, {"--p2p", "activation: size point-to-point traffic as one activation, s*b*h elements of --precision"}, s.p2p);
  watched.emplace_back("--seq", add(*cmd, flag::seq, s.seq));
  watched.emplace_back("--micro-batch-size", add(*cmd, flag::micro_batch_size, s.micro_batch));
  watched.emplace_back("--hidden", add(*cmd, flag::hidden, s.hidden));
  watched.emplace_back("--precision",
                       add(*cmd, {"--precision", "Element type of --p2p activation: fp32, fp64, bf16, fp16"}, s.precision));
  add(*cmd, {"--out", "Results file (default results/pipebench-<UTC time>.h5); never replaced"}, s.out);
  add(*cmd, {"--append", "Add the results to an existing results file (of runs or comm results)"}, s.append);
  add(*cmd, flag::json, s.json)->description("Print the rows as a JSON list instead of the table");
  add(*cmd, flag::csv, s.csv)
      ->description("Print the rows as CSV instead of the table: a header line of the columns, a line per row");
  add(*cmd, {"--timeout", "Longest wait for any message before the job is aborted (with a unit)"}, s.timeout);
  add(*cmd, {"--poll-us", "Sleep between polls of a pending operation, microseconds (0: poll without sleeping)", 0, 1000000},
      s.poll_us);
  cmd->fallthrough();
  cmd->callback([ss, watched, layout] {
    ss->command_line = command_line_text();
    if (layout.order->count() == 0) ss->order = topology::default_order(ss->cp, ss->ep);
    for (const auto& [name, option] : watched)
      if (option->count() > 0) ss->given.push_back(name);
    run_comm(*ss);
  });
}

}  // namespace pipebench::bench
