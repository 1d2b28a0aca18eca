// `pipebench comm`: nccl-tests-style collectives and OSU-style point-to-point tests over the tensor-,
// pipeline- and data-parallel groups of a t x p x d mapping, every group of the chosen kind at once
// (or only rank 0's, --one-group), on the communicator layer of `run` (docs/comm-bench.md). Rank 0
// prints nccl-tests' (or OSU's) table, the latency-bandwidth fit, and appends the results to the HDF5
// results file as /comm/NNNNNN. Launch it with mpiexec/srun.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/cmd/comm_settings.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/render/comm_text.hpp"
#include "bench/results/comm_results.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/metadata.hpp"
#include "bench/results/store.hpp"
#include "bench/run/job.hpp"
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

using comm::DType;
using comm::bench::GroupChoice;

// Who runs where, for nccl-tests' header (device -1: host memory).
struct RankInfo {
  int pid = 0;
  char host[64] = {};
  int device = -1;
  char pci_bus[16] = {};
  char device_name[96] = {};
};

void run_comm(CommSettings& s) {
  Resolved r = resolve_flags(s);  // UsageError: every rank, before MPI starts
  Job job(false);
  const int world = job.size(), me = job.rank();
  job.check("", [&] { resolve_world(s, r, world); });  // every rank finds the same: no traffic
  comm::CommOptions world_opts;
  world_opts.wait.poll_interval = std::chrono::microseconds(std::max(s.poll_us, 50));
  world_opts.wait.max_poll_interval = std::max(world_opts.wait.poll_interval, std::chrono::microseconds(1000));
  world_opts.wait.timeout = std::chrono::duration<double>(s.timeout.value);
  // The measured groups poll without sleeping unless asked (--poll-us), as nccl-tests and OSU wait.
  comm::CommOptions bench_opts = world_opts;
  bench_opts.wait.poll_interval = bench_opts.wait.max_poll_interval = std::chrono::microseconds(s.poll_us);
  job.open_world(world_opts);
  // Rank 0's checks of the results file; the verdict reaches every rank before any traffic.
  job.check("the check of the flags", [&] {
    if (me == 0) claim_results_file(s.out, s.append);
  });
  comm::Communicator* const world_comm = &job.world();
  comm::Roll* const roll = &job.roll();

  CommResult result;
  std::int64_t total_wrong = 0;
  job.guarded([&] {
    const topology::Grid grid = comm_grid(s, r.mapping);
    std::unique_ptr<topology::MpiGrid> mgrid;
    std::unique_ptr<comm::Communicator> group;
    {
      Watchdog dog("rank " + std::to_string(me) + ": the communicators were not built " + roll->within() +
                       " (a rank stopped or died inside MPI_Comm_split)",
                   me == 0 ? world_opts.wait.timeout : roll->root_limit());
      if (r.group == GroupChoice::world) {
        group = comm::make_communicator(s.backend, MPI_COMM_WORLD, "world", bench_opts);
      } else {
        const topology::GroupKind kind = comm::bench::group_kind(r.group);  // its communicator alone
        mgrid = std::make_unique<topology::MpiGrid>(grid, MPI_COMM_WORLD, std::vector<topology::GroupKind>{kind});
        group = comm::make_communicator(s.backend, mgrid->comm(kind).get(), s.group, bench_opts);
      }
    }
    std::vector<std::vector<int>> groups;
    if (r.group == GroupChoice::world) {
      groups.emplace_back(world);
      for (int i = 0; i < world; ++i) groups.back()[static_cast<std::size_t>(i)] = i;
    } else {
      groups = grid.groups(comm::bench::group_kind(r.group));
    }
    const bool takes_part = !s.one_group || r.group == GroupChoice::world ||
                            grid.group_index(comm::bench::group_kind(r.group), me) ==
                                grid.group_index(comm::bench::group_kind(r.group), 0);
    comm::bench::Spec spec;
    spec.op = r.op;
    spec.group = r.group;
    spec.dtype = r.dtype;
    spec.redop = r.redop;
    spec.root = s.root;
    spec.iters = s.iters;
    spec.warmup = s.warmup;
    spec.check = s.check != 0;
    // --poll-us 0: MPI's blocking collectives, as OSU times them; each size then runs under a watchdog.
    spec.blocking = s.poll_us == 0 && s.backend == "mpi";
    // Blocking collectives have no timeout of their own: a watchdog ends the job when no operation of
    // this rank completes within --timeout.
    std::unique_ptr<ProgressWatchdog> dog;
    if (spec.blocking && takes_part) {
      dog = std::make_unique<ProgressWatchdog>(me, world_opts.wait.timeout);
      spec.progress = &dog->counter;
    }
    std::unique_ptr<comm::bench::Harness> h;
    int short_of_memory = 0;
    try {
      h = std::make_unique<comm::bench::Harness>(*group, *world_comm, spec, takes_part, r.sizes.back());
    } catch (const std::exception& e) {
      short_of_memory = 1;
      std::fprintf(stderr, "pipebench: error: rank %d: %s\n", me, e.what());
    } catch (...) {
      short_of_memory = 1;
    }
    if (roll->meet("the allocation of the buffers", short_of_memory)) throw Error("buffers of " + std::to_string(r.sizes.back()) + " bytes could not be allocated on every rank");

    // Who runs where, as nccl-tests' header says it.
    RankInfo mine;
    mine.pid = static_cast<int>(getpid());
    std::snprintf(mine.host, sizeof mine.host, "%s", host_name().c_str());
#ifdef PIPEBENCH_HAVE_NCCL
    if (s.backend == "nccl") {
      // The device the group's NCCL communicator chose (it is built above).
      const comm::CudaDevice d = comm::current_cuda_device();
      mine.device = d.index;
      std::snprintf(mine.pci_bus, sizeof mine.pci_bus, "%s", d.pci_bus.c_str());
      std::snprintf(mine.device_name, sizeof mine.device_name, "%s", d.name.c_str());
    }
#endif
    std::vector<RankInfo> ranks(static_cast<std::size_t>(world));
    {
      comm::Request q = world_comm->iallgather(&mine, ranks.data(), sizeof(RankInfo));
      world_comm->wait(q);
    }
    const comm::bench::OpRow& op = comm::bench::op_row(r.op);
    result.op = op.name;
    result.group = comm::bench::group_choice_name(r.group);
    result.backend = s.backend;
    result.mapping = to_string(r.mapping);
    result.group_size = r.group_size;
    result.one_group = s.one_group ? 1 : 0;
    result.config = config_of(s, r);
    result.groups = s.one_group ? 1 : static_cast<std::int64_t>(groups.size());
    std::ostream& head = s.json ? std::cerr : std::cout;
    if (me == 0) {
      head << "# pipebench comm " << result.op << ": backend " << s.backend << ", mapping " << result.mapping
           << (s.cp > 1 ? " cp=" + std::to_string(s.cp) : "") << (s.ep > 1 ? " ep=" + std::to_string(s.ep) : "") << " (order "
           << s.order << "), group " << result.group << ": " << groups.size() << " group(s) of " << r.group_size
           << " rank(s), " << (s.one_group && groups.size() > 1 ? "only rank 0's runs (--one-group)" : "all at once") << "\n";
      head << "# minBytes " << s.min_bytes << " maxBytes " << s.max_bytes << " step: "
           << (s.increment ? std::to_string(s.increment) + "(bytes)" : std::to_string(s.factor) + "(factor)")
           << " warmup iters: " << s.warmup << " iters: " << s.iters << " validation: " << s.check
           << (op.window ? " window: " + std::to_string(op.window) : "") << "\n#\n# Using devices\n";
      std::vector<RankPlace> places;
      for (int i = 0; i < world; ++i) {
        const RankInfo& ri = ranks[static_cast<std::size_t>(i)];
        const int gi = r.group == GroupChoice::world ? 0 : grid.group_index(comm::bench::group_kind(r.group), i);
        places.push_back({i, gi, ri.pid, ri.host, ri.device, ri.pci_bus, ri.device_name});
      }
      head << comm_device_lines(places);
      head << "# results: " << s.out << "\n#\n";
      if (!s.json) std::cout << comm_table_head(result) << std::flush;
    }
    std::int64_t ran = 0;
    for (std::uint64_t size : r.sizes) {
      if (spec.blocking && dog) dog->watch("size " + std::to_string(size));
      const auto sample = h->run(size);
      if (dog) dog->watch("");
      const auto all = comm::bench::gather_samples(*world_comm, sample);
      if (me != 0) continue;
      const CommBenchRow oop = make_row(r, size, all, 0, groups, spec.check, ran);
      result.rows.push_back(oop);
      if (op.in_place) result.rows.push_back(make_row(r, size, all, 1, groups, spec.check, ran));
      if (!s.json) std::cout << comm_row_text(result, oop, op.in_place ? &result.rows.back() : nullptr) << std::flush;
    }
    if (me == 0) {
      result.groups = std::max<std::int64_t>(ran, 1);
      std::vector<std::uint64_t> bytes;
      std::vector<double> secs;
      for (const auto& row : result.rows)
        if (!row.in_place) bytes.push_back(static_cast<std::uint64_t>(row.bytes)), secs.push_back(row.time_us * 1e-6);
      const auto f = comm::bench::fit_alpha_beta(bytes, secs);
      result.fit = {f.alpha_s, f.beta_Bps, f.max_rel_error, f.points};
      std::vector<std::string> hosts;
      for (const auto& ri : ranks) hosts.emplace_back(ri.host);
      MetadataInput meta;
      meta.command_line = s.command_line;
      meta.hosts = hosts;
      meta.warmup_steps = s.warmup;
      meta.timed_steps = s.iters;
      meta.statistic = "time of one operation: mean over the timed iterations, largest over a group's ranks, slowest group";
      result.metadata = collect_metadata(meta);
      for (const auto& row : result.rows) total_wrong += std::max<std::int64_t>(row.wrong, 0);
      const int id = append_comm(s.out, result);
      if (s.json) {
        std::cout << comm_rows_json(result).dump(2) << '\n';
        std::cerr << comm_fit_line(result);
      } else {
        std::cout << comm_footer(result) << "# stored as /comm/" << run_name(id) << " in " << s.out << "\n" << std::flush;
      }
    }
    roll->meet("the end of the benchmark");
    h.reset();
    group.reset();
    mgrid.reset();
  });
  job.finish("the end of the benchmark");
  if (total_wrong > 0) {
    std::fprintf(stderr, "pipebench: error: %lld wrong element(s) in the data check (-c 1): see the #wrong column\n",
                 static_cast<long long>(total_wrong));
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
  watched.emplace_back("-d", add(*cmd, {"-d,--datatype", "Data type: float, double, half, bfloat16, int32"}, s.dtype));
  add(*cmd, {"-o,--op", "Reduction: sum, max, min"}, s.redop);
  add(*cmd, {"-r,--root", "Root of broadcast and reduce (a rank within the group)", 0}, s.root);
  add(*cmd, {"--p2p", "activation: size point-to-point traffic as one activation, s*b*h elements of --precision"}, s.p2p);
  watched.emplace_back("--seq", add(*cmd, flag::seq, s.seq));
  watched.emplace_back("--micro-batch-size", add(*cmd, flag::micro_batch_size, s.micro_batch));
  watched.emplace_back("--hidden", add(*cmd, flag::hidden, s.hidden));
  watched.emplace_back("--precision",
                       add(*cmd, {"--precision", "Element type of --p2p activation: fp32, fp64, bf16, fp16"}, s.precision));
  add(*cmd, {"--out", "Results file (default results/pipebench-<UTC time>.h5); never replaced"}, s.out);
  add(*cmd, {"--append", "Add the results to an existing results file (of runs or comm results)"}, s.append);
  add(*cmd, flag::json, s.json)->description("Print the rows as a JSON list instead of the table");
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
