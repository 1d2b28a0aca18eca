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

// The lines printed under a transformer run's row: the figures a model run adds to the table.
std::string workload_notes(const RunResult& run) {
  const auto& x = run.summary.extra;
  auto get = [&x](const char* k) { return x.count(k) ? x.at(k) : 0.0; };
  char buf[256];
  std::string s;
  std::snprintf(buf, sizeof buf, "#   loss %.6f, MFU %.1f %% (%.2f GFLOP/step of model work against %.1f GFLOP/s of BLAS), achieved %.1f GFLOP/s\n",
                get("loss"), 100 * get("mfu"), get("model_flops") * 1e-9, get("blas_flop_rate") * 1e-9, get("flop_rate") * 1e-9);
  s += buf;
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
  if (x.count("main_weight_bytes")) {
    std::snprintf(buf, sizeof buf, "\n#   fp32 main weights, largest per rank (MiB): %.3f", get("main_weight_bytes") / 1048576.0);
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
    const auto flat = std::find_if(sw.plans.begin(), sw.plans.end(), [](const Plan& pl) { return pl.mapping.d == 1; });
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

// After a stop (bench/run/stop.hpp), rank 0 says where the sweep stopped and how to complete it.
void report_stop(const RunSettings& rs, const Sweep& sw, int signal, int at, bool abandoned, int written) {
  const int n = static_cast<int>(sw.plans.size());
  int missing = 0;
  for (int k = at; k < n; ++k) missing += sw.done[k] ? 0 : 1;
  std::fprintf(stderr,
               "pipebench: stopped by %s %s configuration %d of %d%s: %d configuration(s) written to %s by this "
               "sweep, %d missing; the same command with --append --resume runs exactly those (exit code %d)\n",
               signal_name(signal), abandoned ? "during" : "before", at + 1, n, abandoned ? " (abandoned, not written)" : "",
               written, rs.out.c_str(), missing, kStoppedExitCode);
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

// The configuration --repeats times, each with its own warm-up (after the job's, for the first one);
// rank 0 gets them combined and scored (bench/results/steps.hpp), with the simulated replay of the
// repeat whose records are kept.
std::optional<Measurement> run_repeats(const RunSettings& rs, const Plan& pl, SweepComms& sweep, bool first) {
  const double warm = first && rs.job_warmup > 0 ? job_warmup(rs, pl, sweep) : 0;
  std::vector<Measurement> all;
  for (int r = 0; r < rs.repeats; ++r) {
    std::optional<Measurement> m = run_configuration(rs, pl, sweep);
    if (m) all.push_back(std::move(*m));
  }
  if (all.empty()) return std::nullopt;
  std::optional<Measurement> out;
  if (all.size() == 1 && rs.scoring == kScoringMedian) {
    out = std::move(all[0]);
  } else {
    std::vector<RunResult> runs;
    for (auto& m : all) runs.push_back(std::move(m.run));
    int kept = 0;
    RunResult combined = combine_repeats(std::move(runs), rs.scoring, &kept);
    out = Measurement{std::move(combined), std::move(all[kept].simulation)};
  }
  if (warm > 0) out->run.metadata["job_warmup_seconds"] = fixed(warm, 3);
  return out;
}

// The traces and the SVG of configuration --trace-config, on rank 0.
void write_pictures(const RunSettings& rs, const Plan& pl, const Measurement& m) {
  if (!rs.trace.empty()) write_chrome_trace(m.run, rs.trace, rs.force);
  if (!rs.trace_kineto.empty()) write_kineto_traces(m.run, rs.trace_kineto, rs.force);
  if (!rs.trace_chakra.empty()) write_chakra_traces(m.run, rs.trace_chakra, rs.force);
  if (!rs.svg.empty()) write_measured_svg(rs.svg, rs.force, pl, m.simulation);
}

// Returns the signal that stopped the sweep, or 0 when it ran to the end.
int run_sweep(const RunSettings& rs, const Sweep& sw, Job& job) {
  SweepComms sweep(rs, sw.plans, job.world(), job.roll());
  comm::Communicator* const world = &job.world();
  const bool root = world->rank() == 0;
  const int n = static_cast<int>(sw.plans.size());
  const bool transformer = rs.workload == WorkloadKind::transformer;
  // Rank 0 writes the output; with --json or --csv, stdout holds only those and the notes go to stderr.
  const std::unique_ptr<Sink> sink = root ? make_sink(rs.format, std::cout, std::cerr) : nullptr;
  if (root) {
    sink->note("# pipebench run: " + std::to_string(world->size()) + " ranks, " + std::to_string(n) +
               " configuration(s), workload " + workload_name(rs.workload) +
               (transformer ? "" : rs.synthetic.spin ? " (spin)" : " (sleep)") + ", " + std::to_string(rs.warmup) +
               " warm-up + " + std::to_string(rs.steps) + " timed steps" +
               (rs.repeats > 1 ? ", " + std::to_string(rs.repeats) + " repeats each (scoring " + rs.scoring + ")" : "") +
               ", figures are medians over timed steps\n" +
               "# results: " + rs.out + "\n");
    sink->begin_table(runs_table(), false);
  }
  const auto start = std::chrono::steady_clock::now();
  int ran = 0, written = 0, stopped = 0;
  std::set<std::string> shown_placements;
  for (int k = 0; k < n; ++k) {
    const Plan& pl = sw.plans[k];
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (root) {
      std::fprintf(stderr, "# [%d/%d] %s", k + 1, n, pl.label.c_str());
      if (sw.done[k]) std::fprintf(stderr, ": already in %s, skipped (--resume)", rs.out.c_str());
      if (ran > 0) std::fprintf(stderr, "  elapsed %.1f s, about %.0f s left", elapsed, elapsed / ran * (n - k));
      std::fprintf(stderr, "\n");
    }
    const ConfigurationStart go = start_configuration(sweep, pl, sw.done[k] != 0);
    if (go.stop != 0) {
      stopped = go.stop;
      if (root) report_stop(rs, sw, stopped, k, false, written);
      break;
    }
    if (go.skip) continue;
    std::optional<Measurement> measured;
    try {
      measured = run_repeats(rs, pl, sweep, ran == 0);
    } catch (const SweepStopped& e) {
      stopped = e.signal;
      if (root) report_stop(rs, sw, stopped, k, true, written);
      break;
    }
    ++ran;
    if (!measured) continue;
    for (const auto& [key, value] : rs.system) measured->run.metadata["system." + key] = value;
    const RunResult& run = measured->run;
    const int id = append_run(rs.out, run);
    ++written;
    Record rec;
    rec.cells = run_row(id, run);
    rec.objects.push_back(run_json(id, run, true));
    rec.lines = transformer ? workload_notes(run) : "";
    // Where the groups sit, once per distinct placement.
    const std::string& placement = run.metadata.at("group_placement");
    if (shown_placements.insert(placement).second)
      rec.lines += "#   placement " + to_string(pl.mapping) + ": " + placement + '\n';
    sink->record(rec);
    if (pl.index == rs.pick) write_pictures(rs, pl, *measured);
  }
  finish_sweep(sweep);
  if (!root) return stopped;
  sink->end_table();
  if (!stopped) {
    std::string legend = "# bubble: measured, simulated with the measured op times, analytic formula; diff = measured - simulated\n";
    if (!rs.trace.empty()) legend += "# trace of configuration " + std::to_string(rs.pick) + ": " + rs.trace + '\n';
    if (!rs.trace_kineto.empty())
      legend += "# Kineto traces of configuration " + std::to_string(rs.pick) + ": " + rs.trace_kineto + ".<rank>.json\n";
    if (!rs.trace_chakra.empty())
      legend += "# Chakra traces of configuration " + std::to_string(rs.pick) + ": " + rs.trace_chakra + ".<rank>.et\n";
    if (!rs.svg.empty()) legend += "# timeline of configuration " + std::to_string(rs.pick) + ": " + rs.svg + '\n';
    sink->legend(legend);
  }
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
    kernels::set_precision(rs->model, rs->precision);
    rs->model.loss_scaling = rs->loss_scaling;
    rs->model.grad_reduce_bf16 = rs->grad_reduce_bf16;
    check_repeat_flags(*rs);
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
