// `pipebench run`: executes schedules on the MPI ranks of this job over a sweep of configurations,
// measures each, sets it beside the simulator and the formula, appends it to the HDF5 results file and
// prints one table row per configuration (or JSON). Launch it with mpiexec/srun.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/render/output.hpp"
#include "bench/render/report.hpp"
#include "bench/render/sink.hpp"
#include "bench/render/svg.hpp"
#include "bench/render/chakra.hpp"
#include "bench/render/trace.hpp"
#include "bench/results/steps.hpp"
#include "bench/results/store.hpp"
#include "bench/cmd/run_balance.hpp"
#include "bench/cmd/run_flags.hpp"
#include "bench/cmd/run_system.hpp"
#include "bench/run/configuration.hpp"
#include "bench/run/device_check.hpp"
#include "bench/run/job.hpp"
#include "bench/run/plan.hpp"
#include "bench/run/repeat_order.hpp"
#include "bench/run/stop.hpp"
#include "kernels/device.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::bench {

namespace {

// Data-parallel bytes per step and ZeRO-3's gathers, measured against their formulas (bench/run/zero_formula.hpp).
std::string dp_notes(const RunResult& run) {
  const auto& x = run.summary.extra;
  auto get = [&x](const std::string& k) { return x.count(k) ? x.at(k) : 0.0; };
  char buf[256];
  std::string s, parts;
  for (const char* k : {"all_gathered", "reduce_scattered", "all_reduced"}) {
    const std::string key = std::string("dp_") + k + "_bytes";
    if (!x.count(key)) continue;
    std::snprintf(buf, sizeof buf, "%s %s %.4f/%.4f", parts.empty() ? "" : ",", k, get(key) / 1048576.0,
                  get(key + "_formula") / 1048576.0);
    parts += buf;
  }
  if (!parts.empty()) s += "\n#   data-parallel bytes per step, busiest rank, measured/formula (MiB):" + parts;
  if (x.count("gathered_peak_bytes")) {
    std::snprintf(buf, sizeof buf, "\n#   ZeRO-3 gathered weights held at most, measured/formula (MiB): %.4f/%.4f; exposed gather wait %.3f ms per step",
                  get("gathered_peak_bytes") / 1048576.0, get("gathered_peak_bytes_formula") / 1048576.0, get("gather_wait") * 1e3);
    s += buf;
  }
  return s;
}

// The expert exchanges' line under a run's row (bench/run/measure.cpp, add_ep_figures); empty without them.
std::string ep_notes(const RunResult& run) {
  const auto& x = run.summary.extra;
  if (!x.count("ep_exposed")) return "";
  auto get = [&x](const char* k) { return x.count(k) ? x.at(k) : 0.0; };
  const double time = get("ep_time"), exposed = get("ep_exposed");
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "#   expert all-to-all per step, busiest rank: %.0f exchanges, %.4f MiB, in flight %.3f ms, exposed a2a "
                "%.3f ms (hidden %.1f %%); %.3f GB/s per rank\n",
                get("ep_exchanges"), get("ep_bytes") / 1048576.0, time * 1e3, exposed * 1e3,
                time > 0 ? 100 * (1 - exposed / time) : 0.0, get("ep_bandwidth") * 1e-9);
  return buf;
}

// The lines printed under a transformer run's row: the figures a model run adds to the table.
std::string workload_notes(const RunResult& run) {
  const auto& x = run.summary.extra;
  auto get = [&x](const char* k) { return x.count(k) ? x.at(k) : 0.0; };
  char buf[256];
  std::string s;
  std::snprintf(buf, sizeof buf, "#   loss %.6f, MFU %.1f %% (%.2f GFLOP/step of model work against %.1f GFLOP/s of BLAS), achieved %.1f GFLOP/s\n",
                get("loss"), 100 * get("mfu"), get("model_flops") * 1e-9, get("blas_flop_rate") * 1e-9, get("flop_rate") * 1e-9);
  s += buf;
  if (x.count("moe_aux_loss")) {  // MoE: the aux loss beside the cross-entropy, and capacity's drops
    std::snprintf(buf, sizeof buf, "#   MoE aux loss %.6f per micro-batch, %.0f routes dropped by capacity\n", get("moe_aux_loss"),
                  get("moe_dropped_tokens"));
    s += buf;
  }
  s += "#   per stage F/backward (ms):";
  for (const auto& st : run.stages) {
    std::snprintf(buf, sizeof buf, " %d:%.2f/%.2f", st.stage, st.forward * 1e3, st.backward * 1e3);
    s += buf;
  }
  s += "\n#   peak activations per rank, measured/formula (MiB):";
  for (const auto& r : run.ranks) {
    std::snprintf(buf, sizeof buf, " %d:%.1f/%.1f", r.global_rank, static_cast<double>(r.peak_activation_bytes) / 1048576.0,
                  static_cast<double>(r.predicted_activation_bytes) / 1048576.0);
    s += buf;
  }
  if (x.count("optimizer_state_bytes")) {
    std::snprintf(buf, sizeof buf, "\n#   optimizer state, largest per rank, measured/formula (MiB): %.3f/%.3f",
                  get("optimizer_state_bytes") / 1048576.0, get("optimizer_state_bytes_formula") / 1048576.0);
    s += buf;
  }
  s += dp_notes(run);
  if (x.count("weight_bytes")) {
    std::snprintf(buf, sizeof buf, "\n#   held after the step, largest per rank, measured/formula (MiB): weights %.4f/%.4f, "
                                   "gradients %.4f/%.4f", get("weight_bytes") / 1048576.0, get("weight_bytes_formula") / 1048576.0,
                  get("gradient_bytes") / 1048576.0, get("gradient_bytes_formula") / 1048576.0);
    s += buf;
  }
  if (x.count("main_weight_bytes")) {
    // A 16-bit run's: its fp32 main weights, and the fp32 weights decoded for the actions (kernels/half_weights.hpp).
    std::snprintf(buf, sizeof buf, "\n#   fp32 main weights, largest per rank, measured/formula (MiB): %.4f/%.4f; "
                  "decoded weights held at most %.4f/%.4f", get("main_weight_bytes") / 1048576.0,
                  get("main_weight_bytes_formula") / 1048576.0, get("decoded_weight_bytes") / 1048576.0,
                  get("decoded_weight_bytes_formula") / 1048576.0);
    s += buf;
  }
  if (x.count("loss_scale")) {
    std::snprintf(buf, sizeof buf, "\n#   fp16 loss scale %.0f, steps skipped for an overflow %.0f", get("loss_scale"), get("skipped_steps"));
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

void write_measured_svg(const std::string& path, bool force, const Plan& pl, const Simulation& sim) {
  const analysis::Schedule& s = pl.schedule;
  SvgOptions opt;
  opt.time_unit = "s";
  opt.title = s.name + " measured  p=" + std::to_string(s.p) + " m=" + std::to_string(s.m) + " v=" +
              std::to_string(s.v()) + "  (first timed step, pipeline 0)";
  write_output(path, "--svg", [&](std::ostream& out) { write_svg(out, s, sim.first_step, opt); }, force);
}

// What every rank knows before the first configuration starts: the plans, and (--resume) which of
// them the results file already holds.
struct Sweep {
  std::vector<Plan> plans;
  std::vector<char> done;
};

// The checks of rank 0 that need no other rank: memory, every output path, and last the results file,
// which is created here (exclusively: a second sweep on the same new file is refused now, not after
// its first configuration). Returns what an existing file (--append) holds.
PreparedFile check_outputs(RunSettings& rs, const std::vector<Plan>& plans, int local_ranks, int world) {
  check_memory(plans, memory_per_rank_bytes(local_ranks));
  if (!rs.trace.empty()) check_output_path(rs.trace, "--trace", rs.force);
  for (int r = 0; r < world && !rs.trace_kineto.empty(); ++r)
    check_output_path(rank_trace_path(rs.trace_kineto, r, "json"), "--trace-kineto", rs.force);
  for (int r = 0; r < world && !rs.trace_chakra.empty(); ++r)
    check_output_path(rank_trace_path(rs.trace_chakra, r, "et"), "--trace-chakra", rs.force);
  if (!rs.svg.empty()) check_output_path(rs.svg, "--svg", rs.force);
  if (!rs.trace.empty() && rs.trace == rs.svg)
    throw UsageError("--trace and --svg name the same file " + quoted(rs.trace, 200) + "; give two names");
  if (!rs.out.empty() && (rs.out == rs.trace || rs.out == rs.svg))
    throw UsageError("--out " + quoted(rs.out, 200) + " is also the --trace or --svg file; give another name");
  return claim_results_file(rs.out, rs.append);
}

// Every rank plans the sweep; rank 0 alone checks memory and the files, and everyone learns its verdict.
Sweep prepare(RunSettings& rs, Job& job, const std::function<void()>& start_kokkos) {
  Sweep sw;
  PreparedFile file;
  const auto remove_made = [&] {
    if (file.created) std::remove(rs.out.c_str());  // made by this sweep, which does not run
  };
  // The first meeting tells rank 0 every rank's host: those on its node share its memory.
  job.roll().meet("the start of the checks");
  const int local = std::max(job.roll().members_on_root_host(), 1);
  std::vector<std::string> duplicates;
  // The plans and the device check come before Kokkos starts: Kokkos::initialize on a node without a
  // usable device stops the process with its own message (exit 1) instead of the refusal (exit 2).
  job.check("the check of the plans and the device", [&] {
    sw.plans = plan_sweep(rs, job.size(), &duplicates);
    // Memory before the calibration of --layers-per-stage auto, which runs a layer at the planned
    // micro-batch size (a micro-batch of 100000 aborted inside Kokkos there: issue 27); checked again
    // on the balanced plans below.
    if (job.rank() == 0) check_memory(sw.plans, memory_per_rank_bytes(local));
    if (job.rank() == 0) check_device(rs, local, job.size());
  });
  start_kokkos();
  job.check("the check of the sweep", [&] {
    balance_stages(rs, job.size(), sw.plans);  // --layers-per-stage auto: calibrates, plans again, prints
    if (job.rank() == 0 && !duplicates.empty()) {
      std::string list;
      for (const auto& d : duplicates) list += (list.empty() ? "" : ", ") + d;
      std::fprintf(stderr, "# %zu configuration(s) equal to an earlier one in the sweep, dropped: %s\n", duplicates.size(),
                   list.c_str());
    }
    check_tags(sw.plans);
    // ZeRO shards over the cp d ranks of a replica (dp-cp): nothing to shard only where both are 1.
    const auto flat = std::find_if(sw.plans.begin(), sw.plans.end(), [&rs](const Plan& pl) { return pl.mapping.d * rs.cp == 1; });
    if (job.rank() == 0 && rs.zero && flat != sw.plans.end())
      std::fprintf(stderr, "pipebench: warning: --zero %d with d = 1 (configuration %s): nothing to shard, the "
                           "optimizer state%s stay%s whole\n", rs.zero, flat->label.c_str(),
                   rs.zero == 1 ? "" : rs.zero == 2 ? " and gradients" : ", gradients and weights", rs.zero == 1 ? "s" : "");
    if (job.rank() == 0) file = check_outputs(rs, sw.plans, local, job.size());
  }, remove_made, std::chrono::duration<double>(kResultsReadLimit));
  // Rank 0 alone knows; each configuration's start meeting tells the others (start_configuration).
  sw.done.assign(sw.plans.size(), 0);
  if (job.rank() == 0) {
    for (const auto& d : file.listing.damaged)
      std::fprintf(stderr, "pipebench: warning: run %d of %s is damaged and is left as it is: %s\n", d.id,
                   quoted(rs.out, 200).c_str(), d.reason.c_str());
    if (rs.resume) {
      std::set<std::string> keys;
      for (const auto& r : file.listing.runs) keys.insert(r.run.key);
      for (std::size_t k = 0; k < sw.plans.size(); ++k) sw.done[k] = keys.count(sw.plans[k].key) ? 1 : 0;
    }
  }
  return sw;
}

// Where a sweep stands, on every rank: which configurations were skipped (--resume; every rank learns
// it at the configuration's first visit) and written, and on rank 0 the measured repeats that wait for
// the configuration's last one.
struct Progress {
  explicit Progress(int n) : skipped(n, 0), written(n, 0), pending(n) {}
  std::vector<char> skipped, written;
  std::vector<std::vector<Measurement>> pending;
  int visits_run = 0;
  int warmed = -1;       // the configuration the job warm-up ran before, -1: none yet
  double warm_seconds = 0;
};

// After a stop (bench/run/stop.hpp), rank 0 says where the sweep stopped and how to complete it.
void report_stop(const RunSettings& rs, const Sweep& sw, const Progress& pr, int signal, const Visit& at, bool abandoned) {
  const int n = static_cast<int>(sw.plans.size());
  int written = 0, missing = 0;
  for (int k = 0; k < n; ++k) {
    written += pr.written[k];
    missing += sw.done[k] || pr.written[k] ? 0 : 1;
  }
  const std::string repeat = rs.repeats > 1 ? ", repeat " + std::to_string(at.repeat + 1) + " of " + std::to_string(rs.repeats) : "";
  // A configuration is written with its last repeat: the repeats measured of the others are dropped.
  std::size_t dropped = 0;
  for (const auto& p : pr.pending) dropped += p.size();
  const std::string lost = dropped > 0 ? " (" + std::to_string(dropped) + " measured repeat(s) of them dropped: a configuration is written with its last repeat)" : "";
  std::fprintf(stderr,
               "pipebench: stopped by %s %s configuration %d of %d%s%s: %d configuration(s) written to %s by this "
               "sweep, %d missing%s; the same command with --append --resume runs exactly those (exit code %d)\n",
               signal_name(signal), abandoned ? "during" : "before", at.config + 1, n, repeat.c_str(),
               abandoned ? " (abandoned, not written)" : "", written, rs.out.c_str(), missing, lost.c_str(),
               kStoppedExitCode);
}

// The job's cold start (BLAS and OpenMP thread pools, first-touch page faults, MPI connections, the
// scheduler spreading the ranks) would otherwise fall on the first configuration's repeats alone: its
// --job-warmup steps and one more run untimed, and nothing of them is kept. Returns their wall time.
double job_warmup(const RunSettings& rs, const Plan& pl, SweepComms& sweep) {
  RunSettings warm = rs;
  warm.warmup = rs.job_warmup;
  warm.steps = 1;
  warm.fail_rank = -1;  // --inject-failure is for the measured steps
  if (sweep.world().rank() == 0)
    std::fprintf(stderr, "# job warm-up: %d + 1 untimed steps of configuration %d (--job-warmup)\n", rs.job_warmup, pl.index);
  const auto t0 = std::chrono::steady_clock::now();
  run_configuration(warm, pl, sweep);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Rank 0: a configuration's measured repeats (each with its own warm-up), combined and scored
// (bench/results/steps.hpp), with the simulated replay of the repeat whose records are kept.
Measurement combine_measurements(const RunSettings& rs, std::vector<Measurement> all) {
  if (all.size() == 1 && rs.scoring == kScoringMedian) return std::move(all[0]);
  std::vector<RunResult> runs;
  for (auto& m : all) runs.push_back(std::move(m.run));
  int kept = 0;
  RunResult combined = combine_repeats(std::move(runs), rs.scoring, &kept);
  return Measurement{std::move(combined), std::move(all[kept].simulation)};
}

// The traces and the SVG of configuration --trace-config, on rank 0.
void write_pictures(const RunSettings& rs, const Plan& pl, const Measurement& m) {
  if (!rs.trace.empty()) write_chrome_trace(m.run, rs.trace, rs.force);
  if (!rs.trace_kineto.empty()) write_kineto_traces(m.run, rs.trace_kineto, rs.force);
  if (!rs.trace_chakra.empty()) write_chakra_traces(m.run, rs.trace_chakra, rs.force);
  if (!rs.svg.empty()) write_measured_svg(rs.svg, rs.force, pl, m.simulation);
}

// Rank 0, after a configuration's last repeat: its repeats combined, appended to the file, one record to
// the sink, and its pictures.
void write_configuration(const RunSettings& rs, const Plan& pl, int k, Progress& pr, Sink& sink,
                         std::set<std::string>& shown_placements) {
  if (pr.pending[k].empty()) return;
  Measurement measured = combine_measurements(rs, std::move(pr.pending[k]));
  pr.pending[k].clear();
  if (k == pr.warmed && pr.warm_seconds > 0) measured.run.metadata["job_warmup_seconds"] = fixed(pr.warm_seconds, 3);
  if (rs.repeats > 1) measured.run.metadata["repeat_order"] = rs.repeat_order;
  for (const auto& [key, value] : rs.system) measured.run.metadata["system." + key] = value;
  const RunResult& run = measured.run;
  const int id = append_run(rs.out, run);
  pr.written[k] = 1;
  Record rec;
  rec.cells = run_row(id, run);
  rec.objects.push_back(run_json(id, run, true));
  rec.lines = (rs.workload == WorkloadKind::transformer ? workload_notes(run) : "") + ep_notes(run);
  // Where the groups sit, once per distinct placement.
  const std::string& placement = run.metadata.at("group_placement");
  if (shown_placements.insert(placement).second) rec.lines += "#   placement " + to_string(pl.mapping) + ": " + placement + '\n';
  sink.record(rec);
  if (pl.index == rs.pick) write_pictures(rs, pl, measured);
}

// Rank 0's progress line before a visit: "# [3/20] <configuration>, repeat 2/5  elapsed ..., about ... left".
void progress_line(const RunSettings& rs, const Sweep& sw, const std::vector<Visit>& visits, std::size_t i,
                   const Progress& pr, double elapsed) {
  const Visit& v = visits[i];
  std::fprintf(stderr, "# [%zu/%zu] %s", i + 1, visits.size(), sw.plans[v.config].label.c_str());
  if (rs.repeats > 1) std::fprintf(stderr, ", repeat %d/%d", v.repeat + 1, rs.repeats);
  if (sw.done[v.config]) std::fprintf(stderr, ": already in %s, skipped (--resume)", rs.out.c_str());
  if (pr.visits_run > 0) {
    std::size_t left = 0;
    for (std::size_t j = i; j < visits.size(); ++j) left += sw.done[visits[j].config] ? 0 : 1;
    std::fprintf(stderr, "  elapsed %.1f s, about %.0f s left", elapsed, elapsed / pr.visits_run * static_cast<double>(left));
  }
  std::fprintf(stderr, "\n");
}

std::string sweep_header(const RunSettings& rs, int ranks, int n) {
  const bool transformer = rs.workload == WorkloadKind::transformer;
  return "# pipebench run: " + std::to_string(ranks) + " ranks, " + std::to_string(n) + " configuration(s), workload " +
         workload_name(rs.workload) + (transformer ? "" : rs.synthetic.spin ? " (spin)" : " (sleep)") + ", " +
         std::to_string(rs.warmup) + " warm-up + " + std::to_string(rs.steps) + " timed steps" +
         (rs.repeats > 1 ? ", " + std::to_string(rs.repeats) + " repeats each (scoring " + rs.scoring + ", " + rs.repeat_order + ")" : "") +
         ", figures are medians over timed steps\n" + "# results: " + rs.out + "\n";
}

void sweep_legend(const RunSettings& rs, Sink& sink) {
  std::string legend = "# bubble: measured, simulated with the measured op times, analytic formula; diff = measured - simulated\n";
  if (!rs.trace.empty()) legend += "# trace of configuration " + std::to_string(rs.pick) + ": " + rs.trace + '\n';
  if (!rs.trace_kineto.empty())
    legend += "# Kineto traces of configuration " + std::to_string(rs.pick) + ": " + rs.trace_kineto + ".<rank>.json\n";
  if (!rs.trace_chakra.empty())
    legend += "# Chakra traces of configuration " + std::to_string(rs.pick) + ": " + rs.trace_chakra + ".<rank>.et\n";
  if (!rs.svg.empty()) legend += "# timeline of configuration " + std::to_string(rs.pick) + ": " + rs.svg + '\n';
  sink.legend(legend);
}

// Returns the signal that stopped the sweep, or 0 when it ran to the end. The visits follow
// --repeat-order (bench/run/repeat_order.hpp); a configuration is written after its last repeat.
int run_sweep(const RunSettings& rs, const Sweep& sw, Job& job) {
  SweepComms sweep(rs, sw.plans, job.world(), job.roll());
  const bool root = job.world().rank() == 0;
  const int n = static_cast<int>(sw.plans.size());
  // Rank 0 writes the output; with --json or --csv, stdout holds only those and the notes go to stderr.
  const std::unique_ptr<Sink> sink = root ? make_sink(rs.format, std::cout, std::cerr) : nullptr;
  if (root) {
    sink->note(sweep_header(rs, job.world().size(), n));
    sink->begin_table(runs_table(), false);
  }
  const std::vector<Visit> visits = visit_order(n, rs.repeats, rs.repeat_order);
  const auto start = std::chrono::steady_clock::now();
  Progress pr(n);
  int stopped = 0;
  std::set<std::string> shown_placements;
  for (std::size_t i = 0; i < visits.size() && !stopped; ++i) {
    const Visit& v = visits[i];
    const Plan& pl = sw.plans[v.config];
    if (pr.skipped[v.config]) continue;
    if (root) progress_line(rs, sw, visits, i, pr, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    const ConfigurationStart go = start_configuration(sweep, pl, sw.done[v.config] != 0, v.repeat);
    if (go.stop != 0) {
      stopped = go.stop;
      if (root) report_stop(rs, sw, pr, stopped, v, false);
      break;
    }
    if (go.skip) {
      pr.skipped[v.config] = 1;
      continue;
    }
    try {
      if (pr.warmed < 0 && rs.job_warmup > 0) pr.warm_seconds = job_warmup(rs, pl, sweep);
      if (pr.warmed < 0) pr.warmed = v.config;
      std::optional<Measurement> m = run_configuration(rs, pl, sweep);
      if (m) pr.pending[v.config].push_back(std::move(*m));
    } catch (const SweepStopped& e) {
      stopped = e.signal;
      if (root) report_stop(rs, sw, pr, stopped, v, true);
      break;
    }
    ++pr.visits_run;
    if (root && v.repeat == rs.repeats - 1) write_configuration(rs, pl, v.config, pr, *sink, shown_placements);
  }
  finish_sweep(sweep);
  if (!root) return stopped;
  sink->end_table();
  if (!stopped) sweep_legend(rs, *sink);
  sink->finish();
  return stopped;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Execute schedules on the MPI ranks of this job, measure, compare, write HDF5");
  auto rs = std::make_shared<RunSettings>();
  add_run_flags(*cmd, *rs);
  // --config FILE is read by the top-level app (bench/config_file.hpp), before or after `run`: `run` lets it through.
  cmd->fallthrough();
  cmd->callback([rs] {
    // SIGUSR1/SIGTERM (Slurm's warning before the time limit, preemption) stop the sweep at the next
    // meeting instead of killing it.
    rs->format = output_format(rs->json, rs->csv);  // before MPI starts: a usage error on every rank
    settle_run_flags(*rs);
    check_timeout(rs->timeout);
    if (!rs->system_file.empty()) rs->system = read_system_file(rs->system_file);
    Job job(true);
    // read when it fires: the results file as it is named once claimed (the default name comes later)
    arm_stop_deadline(rs->timeout.value, job.rank(), [rs] {
      return "the sweep reached no safe point within --timeout " + num(rs->timeout.value) +
             " s of it (a long action or wait); every configuration written before is in " + rs->out +
             ", and the same command with --append --resume runs the rest";
    });
    rs->command_line = command_line_text();
    job.open_world(comm_options(*rs));
    // In a device build the synthetic workload also needs Kokkos: its activation memory is device
    // memory and its spin a device kernel (kernels/device.hpp). It starts after the device check.
    const bool kokkos_needed = rs->workload == WorkloadKind::transformer || kernels::device_build();
    std::unique_ptr<kernels::KokkosSession> kokkos;
    const auto start_kokkos = [&] {
      if (kokkos_needed) kokkos = std::make_unique<kernels::KokkosSession>(rs->blas_threads);
    };
    Sweep sw;
    int stopped = 0;
    job.guarded([&] {
      sw = prepare(*rs, job, start_kokkos);
      stopped = run_sweep(*rs, sw, job);
    });
    job.finish("the end of the sweep", "; every run is in " + rs->out);
    // Every rank learnt the same verdict, so every rank exits with the same code.
    if (stopped) throw ExitCode{kStoppedExitCode};
  });
}

}  // namespace pipebench::bench
