// `pipebench run`: executes schedules on the MPI ranks of this job over a sweep of configurations,
// measures each, sets it beside the simulator and the formula, appends it to the HDF5 results file and
// prints one table row per configuration (or JSON). Launch it with mpiexec/srun.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "analysis/error.hpp"
#include "bench/render/svg.hpp"
#include "bench/commands.hpp"
#include "bench/run/measure.hpp"
#include "bench/parse.hpp"
#include "bench/render/report.hpp"
#include "bench/results/store.hpp"
#include "bench/run/plan.hpp"
#include "bench/render/json.hpp"
#include "bench/run/configuration.hpp"
#include "bench/render/trace.hpp"
#include "comm/factory.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::bench {

namespace {

// Flags as given; turned into a RunConfig by to_config() on every rank.
struct Flags {
  std::string schedules = "gpipe,1f1b,interleaved,zb-h1,zbv,dualpipev";
  std::string microbatches = "8,16";
  std::string mappings, vs, group, order = "tp-dp-pp", backend = "mpi", workload = "synthetic";
  std::string tf = "2ms", tb = "4ms", tw = "2ms", t_overlap, stage_cost, mode = "sleep";
  std::string activation_bytes = "1MiB", p2p_bytes = "64KiB", tp_bytes, dp_bytes, dp_buckets = "0";
  // Transformer model (--workload transformer).
  int layers = 8, hidden = 256, heads = 8, seq = 128, micro_batch = 1, vocab = 1024;
  std::string layers_per_stage, recompute = "none", precision = "fp32", lr = "0", seed = "1", blas_threads = "1";
  int warmup = 1, steps = 3;
  std::string timeout = "60s", poll_us = "50";
  std::string out, trace, svg, pick = "1", fail;
  bool append = false, resume = false, json = false;
};

double seconds(const std::string& text, const std::string& flag, bool zero_ok = false) {
  const Duration d = parse_duration(text, flag, zero_ok);
  if (!d.has_unit)
    throw UsageError(flag + " '" + text + "' needs a unit: s, ms, us or ns (e.g. 2ms)");
  return d.value;
}

std::uint64_t bytes_or_zero(const std::string& text, const std::string& flag) {
  return text.empty() || text == "0" ? 0 : parse_bytes(text, flag);
}

std::string default_out() {
  char buf[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(buf, sizeof buf, "results/pipebench-%Y%m%d-%H%M%S.h5", std::gmtime(&now));
  return buf;
}

RunConfig to_config(const Flags& f, const std::string& command_line) {
  RunConfig c;
  c.schedules = split_list(f.schedules, "--schedule");
  c.microbatches = parse_int_list(f.microbatches, "--microbatches");
  for (const auto& m : f.mappings.empty() ? std::vector<std::string>{} : split_list(f.mappings, "--mapping")) {
    int t = 0, p = 0, d = 0;
    char x1 = 0, x2 = 0, extra = 0;
    if (std::sscanf(m.c_str(), "%d%c%d%c%d%c", &t, &x1, &p, &x2, &d, &extra) != 5 || x1 != 'x' || x2 != 'x' || t < 1 ||
        p < 1 || d < 1)
      throw UsageError("--mapping '" + m + "' is not allowed: expected TxPxD with positive integers, e.g. 2x2x1");
    c.mappings.push_back({t, p, d});
  }
  if (!f.vs.empty()) c.vs = parse_int_list(f.vs, "-v");
  if (!f.group.empty()) c.group = parse_int(f.group, "--group");
  c.order = f.order;
  c.backend = f.backend;
  c.workload = f.workload;
  c.tf = seconds(f.tf, "--tf");
  c.tb = seconds(f.tb, "--tb");
  c.tw = seconds(f.tw, "--tw", true);
  if (!f.t_overlap.empty()) c.t_overlap = seconds(f.t_overlap, "--t-overlap");
  if (!f.stage_cost.empty()) c.stage_cost = parse_number_list(f.stage_cost, "--stage-cost");
  if (f.mode != "sleep" && f.mode != "spin")
    throw UsageError("--synthetic-mode '" + f.mode + "' is not allowed: sleep or spin");
  c.spin = f.mode == "spin";
  c.activation_bytes = bytes_or_zero(f.activation_bytes, "--activation-bytes");
  c.p2p_bytes = bytes_or_zero(f.p2p_bytes, "--p2p-bytes");
  c.tp_allreduce_bytes = bytes_or_zero(f.tp_bytes, "--tp-allreduce-bytes");
  c.dp_grad_bytes = bytes_or_zero(f.dp_bytes, "--dp-grad-bytes");
  c.dp_buckets = parse_int(f.dp_buckets, "--dp-buckets", 0);
  auto& md = c.model;
  md.layers = f.layers;
  md.hidden = f.hidden;
  md.heads = f.heads;
  md.seq = f.seq;
  md.micro_batch = f.micro_batch;
  md.vocab = f.vocab;
  if (!f.layers_per_stage.empty()) md.layers_per_stage = parse_int_list(f.layers_per_stage, "--layers-per-stage");
  md.recompute = kernels::parse_recompute(f.recompute);
  if (f.precision != "fp32" && f.precision != "fp64")
    throw UsageError("--precision '" + f.precision + "' is not allowed: fp32 or fp64");
  md.fp64 = f.precision == "fp64";
  md.lr = parse_number(f.lr, "--lr", true);
  md.seed = static_cast<std::uint64_t>(parse_int(f.seed, "--seed", 0));
  c.blas_threads = parse_int(f.blas_threads, "--blas-threads");
  c.warmup = f.warmup;
  c.steps = f.steps;
  c.timeout = seconds(f.timeout, "--timeout");
  c.poll_us = parse_int(f.poll_us, "--poll-us", 0);
  c.out = f.out.empty() ? default_out() : f.out;
  c.append = f.append;
  c.resume = f.resume;
  c.json = f.json;
  c.trace = f.trace;
  c.svg = f.svg;
  c.pick = parse_int(f.pick, "--trace-config");
  if (!f.fail.empty()) {  // RANK:CONFIG:STEP:exit|hang
    char mode[8] = {0};
    if (std::sscanf(f.fail.c_str(), "%d:%d:%d:%7s", &c.fail_rank, &c.fail_config, &c.fail_step, mode) != 4 ||
        (std::string(mode) != "exit" && std::string(mode) != "hang"))
      throw UsageError("--inject-failure '" + f.fail + "': expected RANK:CONFIG:STEP:exit|hang");
    c.fail_hang = std::string(mode) == "hang";
  }
  c.command_line = command_line;
  return c;
}

// What one rank learns about every configuration before the sweep starts.
struct Sweep {
  RunConfig cfg;
  std::vector<RunPoint> points;
  std::vector<char> done;  // --resume: configurations already complete in the file
};

// Median F and backward (B, or I + W) time of every stage, as the prediction was fed them: where a
// real model's imbalance shows (the embedding on the first stage, the vocabulary projection and loss
// on the last).
nlohmann::ordered_json stage_times_json(const Outcome& o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& st : o.pred.costs.stage) j.push_back({{"forward", st.f}, {"backward", st.b}});
  return j;
}

// The lines printed under a transformer run's row: the figures a model run adds to the table.
std::string workload_notes(const Outcome& o) {
  const auto& x = o.run.summary.extra;
  auto get = [&x](const char* k) { return x.count(k) ? x.at(k) : 0.0; };
  char buf[256];
  std::string s;
  std::snprintf(buf, sizeof buf, "#   loss %.6f, MFU %.1f %% (%.2f GFLOP/step of model work against %.1f GFLOP/s of BLAS), achieved %.1f GFLOP/s\n",
                get("loss"), 100 * get("mfu"), get("model_flops") * 1e-9, get("blas_flop_rate") * 1e-9, get("flop_rate") * 1e-9);
  s += buf;
  s += "#   per stage F/backward (ms):";
  const auto& t = o.pred.costs.stage;
  for (std::size_t st = 0; st < t.size(); ++st) {
    std::snprintf(buf, sizeof buf, " %zu:%.2f/%.2f", st, t[st].f * 1e3, t[st].b * 1e3);
    s += buf;
  }
  s += "\n#   peak activations per rank, measured/formula (MiB):";
  for (const auto& r : o.run.ranks) {
    std::snprintf(buf, sizeof buf, " %d:%.1f/%.1f", r.global_rank, static_cast<double>(r.peak_activation_bytes) / 1048576.0,
                  static_cast<double>(r.predicted_activation_bytes) / 1048576.0);
    s += buf;
  }
  s += "\n#   weight-gradient L2 norm per stage:";
  for (const auto& [k, v] : x)
    if (k.rfind("grad_norm.", 0) == 0) {
      std::snprintf(buf, sizeof buf, " %s:%.6g", k.substr(10).c_str(), v);
      s += buf;
    }
  return s + "\n";
}

nlohmann::ordered_json run_json_object(const Outcome& o, const RunPoint& pt, int id) {
  auto j = summary_json(o.schedule, o.pred.measured, &o.pred.analytic);
  j["t"] = pt.mapping.t;
  j["d"] = pt.mapping.d;
  j["run_id"] = id;
  j["step_time"] = o.run.summary.step_time;
  j["simulated_makespan"] = o.run.summary.simulated_makespan;
  j["simulated_bubble_fraction"] = o.run.summary.bubble_simulated;
  j["executor_overhead_per_action"] = o.pred.executor_overhead_per_action;
  j["p2p_time"] = o.pred.costs.p2p;
  for (auto& r : j["ranks"]) {
    const auto& rs = o.run.ranks[r["rank"].get<std::size_t>()];
    r["tp"] = rs.tp;
    r["pp"] = rs.pp;
    r["dp"] = rs.dp;
    r["predicted_peak_inflight"] = rs.predicted_peak_inflight;
    r["peak_activation_bytes"] = rs.peak_activation_bytes;
    r["predicted_activation_bytes"] = rs.predicted_activation_bytes;
    r["flop_rate"] = rs.flop_rate;
  }
  // Workload figures (loss, grad_norm.<stage>, mfu, ...: docs/json.md), null when not measured.
  for (const char* key : {"loss", "mfu", "model_flops", "flop_rate", "blas_flop_rate"}) {
    const auto it = o.run.summary.extra.find(key);
    j[key] = it == o.run.summary.extra.end() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(it->second);
  }
  nlohmann::ordered_json norms = nlohmann::ordered_json::object();
  for (const auto& [k, v] : o.run.summary.extra)
    if (k.rfind("grad_norm.", 0) == 0) norms[k.substr(10)] = v;
  j["grad_norms"] = norms;
  j["stage_times"] = stage_times_json(o);
  return j;
}

void write_svg(const std::string& path, const Outcome& o) {
  SvgOptions opt;
  opt.time_unit = "s";
  opt.title = o.schedule.name + " measured  p=" + std::to_string(o.schedule.p) + " m=" + std::to_string(o.schedule.m) +
              " v=" + std::to_string(o.schedule.v()) + "  (first timed step, pipeline 0)";
  std::ofstream f(path);
  f << render_svg(o.schedule, o.pred.first_step, opt);
  if (!f) throw Error("cannot write the timeline picture '" + path + "'");
}

// Every rank checks the sweep; rank 0 alone checks the results file, and everyone learns its verdict.
// Ranks sharing this node (they share its memory).
int ranks_on_node() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

void check_writable_dir(const std::string& file, const char* flag) {
  const auto slash = file.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
  if (access(dir.c_str(), W_OK) != 0)
    throw UsageError(std::string(flag) + " '" + file + "': directory '" + dir + "' does not exist or is not writable");
}

Sweep prepare(const Flags& f, const std::string& command_line, int world) {
  Sweep sw;
  int bad = 0;
  std::string msg;
  const int local = ranks_on_node();
  try {
    sw.cfg = to_config(f, command_line);
    validate(sw.cfg, world);
    sw.points = expand(sw.cfg, world);
    if (world_rank() == 0) {
      check_memory(sw.cfg, world, available_memory_bytes() / local);
      // The default file goes to results/, made here; a directory the user names must exist.
      if (f.out.empty()) std::filesystem::create_directories("results");
      check_results_file(sw.cfg.out, sw.cfg.append);
      if (!sw.cfg.trace.empty()) check_writable_dir(sw.cfg.trace, "--trace");
      if (!sw.cfg.svg.empty()) check_writable_dir(sw.cfg.svg, "--svg");
    }
  } catch (const UsageError& e) {
    bad = 1;
    msg = e.what();
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    if (world_rank() == 0) std::fprintf(stderr, "pipebench: error: %s\n", msg.empty() ? "see the other ranks" : msg.c_str());
    MPI_Finalize();
    throw ExitCode{2};
  }
  sw.done.assign(sw.points.size(), 0);
  if (sw.cfg.resume && world_rank() == 0)
    for (std::size_t k = 0; k < sw.points.size(); ++k) {
      const auto s = make_run_schedule(sw.cfg, sw.points[k]);
      sw.done[k] = has_complete_run(sw.cfg.out, config_key(config_map(sw.cfg, sw.points[k], s))) ? 1 : 0;
    }
  MPI_Bcast(sw.done.data(), static_cast<int>(sw.done.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  return sw;
}

void run_sweep(const Sweep& sw) {
  const RunConfig& c = sw.cfg;
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world", comm_options(c));
  const bool root = world->rank() == 0;
  const int n = static_cast<int>(sw.points.size());
  Table table = runs_table();
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  if (root && !c.json) {
    std::cout << "# pipebench run: " << world->size() << " ranks, " << n << " configuration(s), workload "
              << c.workload << (c.workload == "synthetic" ? (c.spin ? " (spin)" : " (sleep)") : "") << ", " << c.warmup << " warm-up + " << c.steps
              << " timed steps, figures are medians over timed steps\n# results: " << c.out << "\n"
              << table.header() << std::flush;
  }
  const auto start = std::chrono::steady_clock::now();
  int ran = 0;
  std::set<std::string> shown_placements;
  for (int k = 0; k < n; ++k) {
    const RunPoint& pt = sw.points[k];
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (root) {
      std::fprintf(stderr, "# [%d/%d] %s", k + 1, n, describe(pt).c_str());
      if (sw.done[k]) std::fprintf(stderr, ": already in %s, skipped (--resume)", c.out.c_str());
      if (ran > 0)
        std::fprintf(stderr, "  elapsed %.1f s, about %.0f s left", elapsed, elapsed / ran * (n - k));
      std::fprintf(stderr, "\n");
    }
    if (sw.done[k]) continue;
    Outcome o = run_configuration(c, pt, k + 1, *world);
    ++ran;
    if (!root) continue;
    const int id = append_run(c.out, o.run);
    if (c.json)
      json.push_back(run_json_object(o, pt, id));
    else
      std::cout << table.row(run_row(id, o.run)) << (c.workload == "transformer" ? workload_notes(o) : "");
    // Where the groups sit, once per distinct placement.
    const std::string& placement = o.run.metadata["group_placement"];
    if (!c.json && shown_placements.insert(placement).second)
      std::cout << "#   placement " << pt.mapping.t << "x" << pt.mapping.p << "x" << pt.mapping.d << ": " << placement << '\n';
    std::cout << std::flush;
    if (k + 1 == c.pick) {
      if (!c.trace.empty()) write_chrome_trace(o.run, c.trace);
      if (!c.svg.empty()) write_svg(c.svg, o);
    }
  }
  if (root && c.json) std::cout << json.dump(2) << '\n';
  if (root && !c.json) {
    std::cout << "# bubble: measured, simulated with the measured op times, analytic formula; diff = measured - simulated\n";
    if (!c.trace.empty()) std::cout << "# trace of configuration " << c.pick << ": " << c.trace << '\n';
    if (!c.svg.empty()) std::cout << "# timeline of configuration " << c.pick << ": " << c.svg << '\n';
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Execute schedules on the MPI ranks of this job, measure, compare, write HDF5");
  auto f = std::make_shared<Flags>();
  // A flag given twice (say in --config and on the command line) takes the last value.
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--schedule", f->schedules, "Comma list of schedules")->capture_default_str();
  cmd->add_option("-m,--microbatches", f->microbatches, "Comma list of micro-batch counts")->capture_default_str();
  cmd->add_option("--mapping", f->mappings, "Comma list of TxPxD rank mappings (default 1 x ranks x 1)");
  cmd->add_option("-v,--chunks", f->vs, "Comma list of chunks per rank (default: each schedule's)");
  cmd->add_option("--group", f->group, "Interleaved micro-batch group size (default p)");
  cmd->add_option("--order", f->order, "Rank order, fastest axis first (Megatron style)")->capture_default_str();
  cmd->add_option("--backend", f->backend, "Communication backend: mpi (nccl: not yet usable by run)")->capture_default_str();
  cmd->add_option("--workload", f->workload, "Stage workload: synthetic or transformer")->capture_default_str();
  cmd->add_option("--tf", f->tf, "Forward time of a rank's whole share (synthetic)")->capture_default_str();
  cmd->add_option("--tb", f->tb, "Full backward time of a rank's whole share")->capture_default_str();
  cmd->add_option("--tw", f->tw, "Weight part of the backward")->capture_default_str();
  cmd->add_option("--t-overlap", f->t_overlap, "Overlapped F&B pair time for the whole share (default tf+tb)");
  cmd->add_option("--stage-cost", f->stage_cost, "Comma list of per-stage cost multipliers (p*v entries)");
  cmd->add_option("--synthetic-mode", f->mode, "sleep or spin (busy-wait)")->capture_default_str();
  cmd->add_option("--activation-bytes", f->activation_bytes, "Activation memory per micro-batch, whole share")
      ->capture_default_str();
  cmd->add_option("--p2p-bytes", f->p2p_bytes, "Message size between stages per micro-batch")->capture_default_str();
  cmd->add_option("--tp-allreduce-bytes", f->tp_bytes, "Bytes of each of the 2 TP all-reduces in F and in B (t > 1)");
  cmd->add_option("--dp-grad-bytes", f->dp_bytes, "Weight-gradient bytes per rank all-reduced over DP (d > 1)");
  cmd->add_option("--dp-buckets", f->dp_buckets, "0: DP all-reduce after the flush; k: k buckets per chunk, overlapped")
      ->capture_default_str();
  const char* const model = "Transformer model (--workload transformer)";
  cmd->add_option("--layers", f->layers, "Transformer layers of the whole model")->capture_default_str()->group(model);
  cmd->add_option("--hidden", f->hidden, "Hidden size h")->capture_default_str()->group(model);
  cmd->add_option("--heads", f->heads, "Attention heads a (h % a == 0)")->capture_default_str()->group(model);
  cmd->add_option("--seq", f->seq, "Sequence length s")->capture_default_str()->group(model);
  cmd->add_option("--micro-batch-size", f->micro_batch, "Sequences per micro-batch b")->capture_default_str()->group(model);
  cmd->add_option("--vocab", f->vocab, "Vocabulary size V")->capture_default_str()->group(model);
  cmd->add_option("--layers-per-stage", f->layers_per_stage, "Comma list of layers per stage (p*v entries; default even)")
      ->group(model);
  cmd->add_option("--recompute", f->recompute, "Activation recomputation: none, selective or full")
      ->capture_default_str()->group(model);
  cmd->add_option("--precision", f->precision, "fp32 or fp64")->capture_default_str()->group(model);
  cmd->add_option("--lr", f->lr, "SGD learning rate after each step (0: weights fixed, identical steps)")
      ->capture_default_str()->group(model);
  cmd->add_option("--seed", f->seed, "Seed of weights and data")->capture_default_str()->group(model);
  cmd->add_option("--blas-threads", f->blas_threads, "Threads of the host BLAS per rank")->capture_default_str()->group(model);
  cmd->add_option("--warmup", f->warmup, "Warm-up steps (not recorded)")->capture_default_str();
  cmd->add_option("--steps", f->steps, "Timed steps")->capture_default_str();
  cmd->add_option("--timeout", f->timeout, "Longest wait for any message before the job is aborted")->capture_default_str();
  cmd->add_option("--poll-us", f->poll_us, "First sleep between polls of a pending message, microseconds")
      ->capture_default_str();
  cmd->add_option("-o,--out", f->out, "Results file (default results/pipebench-<UTC time>.h5)");
  cmd->add_flag("--append", f->append, "Add runs to an existing results file");
  cmd->add_flag("--resume", f->resume, "With --append: skip configurations already complete in the file");
  cmd->add_flag("--json", f->json, "Print the run summaries as JSON (docs/json.md) instead of a table");
  cmd->add_option("--trace", f->trace, "Write a Chrome trace (Perfetto) of configuration --trace-config");
  cmd->add_option("--svg", f->svg, "Write the measured timeline of configuration --trace-config as SVG");
  cmd->add_option("--trace-config", f->pick, "Which configuration of the sweep --trace and --svg show (1-based)")
      ->capture_default_str();
  cmd->add_option("--inject-failure", f->fail, "Testing: RANK:CONFIG:STEP:exit|hang")->group("");
  // --config FILE is read by the top-level app (CLI11 reads config files there); `run` lets it through.
  cmd->fallthrough();
  cmd->callback([f] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) MPI_Init(nullptr, nullptr);
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    const Sweep sw = prepare(*f, command_line_text(), world);
    try {
      const auto kokkos =
          sw.cfg.workload == "transformer" ? std::make_unique<kernels::KokkosSession>(sw.cfg.blas_threads) : nullptr;
      run_sweep(sw);
    } catch (const std::exception& e) {
      abort_job(e.what());
    }
    MPI_Finalize();
  });
}

}  // namespace pipebench::bench
