// The flags of `pipebench run`, bound to their RunSettings fields (docs/run.md lists them), in the
// order `pipebench run --help` shows them.
#include "bench/cmd/run_flags.hpp"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/cmd/run_balance.hpp"
#include "bench/flags.hpp"

namespace pipebench::bench {

namespace {

// --inject-failure RANK:CONFIG:STEP:exit|hang
void parse_failure(const std::string& text, RunSettings& rs) {
  const char* const allowed = "expected RANK:CONFIG:STEP:exit|hang (decimal integers)";
  std::vector<std::string> part;
  for (std::size_t from = 0;;) {
    const std::size_t colon = text.find(':', from);
    part.push_back(text.substr(from, colon == std::string::npos ? colon : colon - from));
    if (colon == std::string::npos || part.size() > 4) break;
    from = colon + 1;
  }
  if (part.size() != 4 || (part[3] != "exit" && part[3] != "hang"))
    throw UsageError("--inject-failure " + quoted(text) + " is not allowed: " + allowed);
  rs.fail_rank = parse_int(part[0], "--inject-failure", 0);
  rs.fail_config = parse_int(part[1], "--inject-failure", 0);
  rs.fail_step = parse_int(part[2], "--inject-failure", 0);
  rs.fail_hang = part[3] == "hang";
}

// What the sweep goes over: schedules, micro-batches, mappings, chunks, the backend and the workload.
void add_sweep_flags(CLI::App& cmd, RunSettings& r) {
  add(cmd, flag::schedule, r.schedules);
  add(cmd, flag::microbatches, r.microbatches);
  add_layout_flags(cmd, r.mappings, r.order, r.cp, r.ep);
  add(cmd, flag::chunks, r.vs);
  add(cmd, flag::group, r.group);
  add(cmd, flag::backend, r.backend);
  add(cmd, {"--workload", "Stage workload: synthetic or transformer"}, r.workload,
      {{workload_name(WorkloadKind::synthetic), WorkloadKind::synthetic},
       {workload_name(WorkloadKind::transformer), WorkloadKind::transformer}});
}

// The synthetic workload: stage times, sleep or spin, the bytes it holds and moves.
void add_synthetic_flags(CLI::App& cmd, RunSettings& r) {
  SyntheticSettings& y = r.synthetic;
  add_time_flags(cmd, y.times, false);
  add(cmd, {"--synthetic-mode", "Synthetic stages sleep or spin (busy-wait)"}, y.spin, {{"sleep", false}, {"spin", true}});
  add(cmd, {"--activation-bytes", "Synthetic: activation memory per micro-batch of a rank's whole share", 0},
      y.activation_bytes);
  add(cmd, {"--p2p-bytes", "Synthetic: message size between stages per micro-batch", 0}, y.p2p_bytes);
  add(cmd, {"--tp-allreduce-bytes", "Synthetic: bytes of each of the 2 TP all-reduces in F and in B (t > 1)", 0},
      y.tp_allreduce_bytes);
  add(cmd, {"--dp-grad-bytes", "Synthetic: weight-gradient bytes per rank all-reduced over DP (d > 1)", 0},
      y.dp_grad_bytes);
  add(cmd, {"--dp-buckets", "0: DP all-reduce after the flush; k: k buckets per chunk, overlapped", 0}, r.dp_buckets);
}

// The transformer workload: its shape, split over stages, recomputation, precision and optimizer.
void add_model_flags(CLI::App& cmd, RunSettings& r) {
  kernels::TransformerWorkloadConfig& md = r.model;
  const char* const model = "Transformer model (--workload transformer)";
  add(cmd, flag::layers, md.layers)->group(model);
  add(cmd, flag::hidden, md.hidden)->group(model);
  add(cmd, flag::heads, md.heads)->group(model);
  add(cmd, flag::seq, md.seq)->group(model);
  add(cmd, flag::micro_batch_size, md.micro_batch)->group(model);
  add(cmd, flag::vocab, md.vocab)->group(model);
  add_stage_split_flags(cmd, md, model);
  std::vector<std::pair<std::string, kernels::Recompute>> recompute;
  for (const auto mode : analysis::kRecomputes) recompute.emplace_back(analysis::recompute_name(mode), mode);
  add(cmd, flag::recompute, md.recompute, recompute)->group(model);
  std::vector<std::pair<std::string, kernels::Attention>> attention;
  for (const auto a : kernels::kAttentions) attention.emplace_back(kernels::attention_name(a), a);
  add(cmd, {"--attention", "Attention core: fused (flash attention's tiles, no s x s matrix) or unfused (batched "
                           "BLAS products, probabilities in memory); default: the faster on this build's backend"},
      md.attention, attention)
      ->group(model);
  add(cmd, flag::precision, md.fp64, {{"fp32", false}, {"fp64", true}})->group(model);
  add(cmd, {"--lr", "Learning rate after each step (SGD at 0: weights fixed, identical steps)", 0}, md.lr)->group(model);
  add(cmd, {"--optimizer", "sgd, or adam (AdamW: fp32 state, bias correction, decoupled weight decay)"}, md.optimizer,
      {{"sgd", kernels::Optimizer::sgd}, {"adam", kernels::Optimizer::adam}})
      ->group(model);
  add(cmd, {"--weight-decay", "Adam's decoupled weight decay of the weight matrices", 0}, md.weight_decay)->group(model);
  add(cmd, {"--zero", "1: ZeRO-1, gradients reduce-scattered and optimizer state sharded over the DP group", 0}, r.zero)
      ->group(model);
  add(cmd, {"--vocab-parallel", "With t > 1: embedding rows, output columns and the loss split over the TP ranks"},
      md.vocab_parallel, {{"on", true}, {"off", false}})
      ->group(model);
  add(cmd, {"--sequence-parallel", "With t > 1: LayerNorms and residuals hold s/t positions (all-gather/reduce-scatter)"},
      md.sequence_parallel)
      ->group(model);
  add(cmd, {"--cp-comm", "With --context-parallel: keys and values by a ring of sends posted ahead, or all-gathered"},
      md.cp_comm, {{"ring", kernels::CpComm::ring}, {"allgather", kernels::CpComm::allgather}})
      ->group(model)
      ->each([&r](const std::string&) { r.cp_comm_given = true; });
  add(cmd, {"--cp-chunks", "With --context-parallel: zigzag (rank i: chunks i, 2cp-1-i of 2cp) or contiguous chunks"},
      md.cp_chunks, {{"zigzag", kernels::CpChunks::zigzag}, {"contiguous", kernels::CpChunks::contiguous}})
      ->group(model)
      ->each([&r](const std::string&) { r.cp_chunks_given = true; });
  add(cmd, {"--tie-embeddings", "Output layer shares the token embedding's matrix (synced over the embedding group)"},
      md.tie_embeddings)
      ->group(model);
  // The seed is a count, not a byte size: parsed as an integer >= 0.
  add_parsed(
      cmd, {"--seed", "Seed of weights and data", 0},
      [&md](const std::string& t) {
        md.seed = static_cast<std::uint64_t>(parse_int(t, "--seed", 0, std::numeric_limits<int>::max()));
      },
      std::to_string(md.seed), "INT")
      ->group(model);
  add(cmd, {"--blas-threads", "Threads of the host BLAS per rank"}, r.blas_threads)->group(model);
}

// Steps, waits, and where the results, traces and pictures go.
void add_output_flags(CLI::App& cmd, RunSettings& r) {
  add(cmd, {"--warmup", "Warm-up steps (not recorded)", 0}, r.warmup);
  add(cmd, {"--steps", "Timed steps"}, r.steps);
  add(cmd, {"--repeats", "Run each configuration N times, each with its own warm-up; the steps of all are kept"},
      r.repeats);
  add(cmd, {"--system", "TOML file with a [system] table: what software cannot detect (accelerator model, interconnect, topology, cooling, power; docs/run.md)"},
      r.system_file);
  add(cmd, {"--scoring", "How the repeats' median step times score: median, or olympic (MLPerf: drop the fastest "
                         "and the slowest, average the rest; needs --repeats >= 3)"},
      r.scoring, std::vector<std::pair<std::string, std::string>>{{"median", "median"}, {"olympic", "olympic"}});
  add(cmd, {"--timeout", "Longest wait for any message before the job is aborted (with a unit)"}, r.timeout);
  add(cmd, {"--poll-us", "First sleep between polls of a pending message, microseconds (1 to --timeout / 10)"},
      r.poll_us);
  add(cmd, flag::out, r.out)->description("Results file, never replaced (default results/pipebench-<UTC time>.h5)");
  add(cmd, {"--append", "Add runs to an existing results file"}, r.append);
  add(cmd, {"--resume", "With --append: skip configurations already complete in the file"}, r.resume);
  add(cmd, flag::json, r.json);
  add(cmd, flag::csv, r.csv);
  add(cmd, flag::trace, r.trace)->description("Write a Chrome trace (Perfetto) of configuration --trace-config");
  add(cmd, flag::svg, r.svg)->description("Write the measured timeline of configuration --trace-config as SVG");
  add(cmd, {"--trace-config", "Which configuration of the sweep --trace and --svg show (1-based)"}, r.pick);
  add(cmd, flag::force, r.force);
  add_parsed(cmd, {"--inject-failure", "Testing: RANK:CONFIG:STEP:exit|hang"},
             [&r](const std::string& t) { parse_failure(t, r); }, "")
      ->group("");
}

}  // namespace

void check_repeat_flags(const RunSettings& r) {
  if (r.scoring == "olympic" && r.repeats < 3)
    throw UsageError("--scoring olympic drops the fastest and the slowest repeat and needs --repeats 3 or more, got --repeats " +
                     std::to_string(r.repeats));
}

void add_run_flags(CLI::App& cmd, RunSettings& r) {
  add_sweep_flags(cmd, r);
  add_synthetic_flags(cmd, r);
  add_model_flags(cmd, r);
  add_output_flags(cmd, r);
}

}  // namespace pipebench::bench
