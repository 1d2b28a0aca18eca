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
  const auto given = [&y](CLI::Option* o) {
    const std::string name = o->get_name();
    o->each([&y, name](const std::string&) { y.ep_flags.push_back(name); });
  };
  given(add(cmd, {"--ep-alltoall-bytes", "Synthetic: bytes each rank dispatches to the experts (and combines back) "
                                         "per chunk's F and B, over the --expert-parallel group", 0},
            y.ep_alltoall_bytes));
  given(add(cmd, {"--routing-imbalance", "Synthetic: the busiest ep rank receives X times the mean (1 <= X <= ep)"},
            y.routing_imbalance));
  given(add(cmd, {"--ep-overlap", "Synthetic and MoE transformer: on (default) hides each expert exchange of an "
                                  "overlapped F&B pair behind the other micro-batch's compute; off waits for it at once"},
            y.ep_overlap, {{"on", true}, {"off", false}}));
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
  add(cmd, flag::precision, r.precision,
      {{"fp32", kernels::Precision::fp32}, {"fp64", kernels::Precision::fp64}, {"bf16", kernels::Precision::bf16},
       {"fp16", kernels::Precision::fp16}})
      ->group(model);
  add(cmd, {"--loss-scale", "With --precision fp16: dynamic (default; an overflow skips the step and halves the scale) or off"},
      r.loss_scaling, {{"dynamic", true}, {"off", false}})
      ->group(model);
  add(cmd, {"--grad-reduce-dtype", "Type of the data-parallel gradient reduction: fp32 (default), or bf16 with --precision bf16"},
      r.grad_reduce_bf16, {{"fp32", false}, {"bf16", true}})
      ->group(model);
  add(cmd, {"--lr", "Learning rate after each step (SGD at 0: weights fixed, identical steps)", 0}, md.lr)->group(model);
  add(cmd, {"--optimizer", "sgd, or adam (AdamW: fp32 state, bias correction, decoupled weight decay)"}, md.optimizer,
      {{"sgd", kernels::Optimizer::sgd}, {"adam", kernels::Optimizer::adam}})
      ->group(model);
  add(cmd, {"--weight-decay", "Adam's decoupled weight decay of the weight matrices", 0}, md.weight_decay)->group(model);
  add(cmd, {"--zero", "ZeRO stage over the DP group: 1 optimizer state sharded (gradients reduce-scattered), 2 "
                      "gradients too, 3 weights too (FSDP: gathered before each use)", 0, 3},
      r.zero)
      ->group(model);
  add(cmd, {"--reshard-after-forward", "With --zero 3: on (default) drops the weights after each action; off keeps "
                                       "them from a stage's first action of the step to its last"},
      r.reshard_after_forward, {{"on", 1}, {"off", 0}})
      ->group(model);
  add(cmd, {"--gather-prefetch", "With --zero 3: on (default) posts the next action's weight gathers before this "
                                 "one computes; off gathers each when it is needed"},
      r.gather_prefetch, {{"on", true}, {"off", false}})
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
  add(cmd, {"--job-warmup", "Untimed steps of the sweep's first configuration before its first repeat, so that it "
                            "does not pay the job's cold start (thread pools, page faults, connections); 0: none", 0},
      r.job_warmup);
  add(cmd, {"--repeats", "Run each configuration N times, each with its own warm-up; the steps of all are kept"},
      r.repeats);
  add(cmd, {"--system", "TOML file with a [system] table: what software cannot detect (accelerator model, interconnect, topology, cooling, power; docs/run.md)"},
      r.system_file);
  add(cmd, {"--scoring", "How the repeats' median step times score: median, or olympic (MLPerf: drop the fastest "
                         "and the slowest, average the rest; needs --repeats >= 3)"},
      r.scoring, std::vector<std::pair<std::string, std::string>>{{"median", "median"}, {"olympic", "olympic"}});
  add(cmd, {"--repeat-order", "When the repeats run: interleaved (round 1 of every configuration, then round 2, ...: "
                              "a load change spreads over every configuration) or consecutive (each configuration's "
                              "repeats back to back, written as each configuration ends)"},
      r.repeat_order,
      std::vector<std::pair<std::string, std::string>>{{kRepeatOrderInterleaved, kRepeatOrderInterleaved}, {kRepeatOrderConsecutive, kRepeatOrderConsecutive}});
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
  add(cmd, {"--trace-kineto", "Write per-rank Kineto-style traces (Holistic Trace Analysis) of configuration "
                             "--trace-config to PREFIX.<rank>.json"},
      r.trace_kineto);
  add(cmd, {"--trace-chakra", "Write per-rank Chakra execution traces (ASTRA-sim) of configuration --trace-config "
                             "to PREFIX.<rank>.et"},
      r.trace_chakra);
  add(cmd, {"--trace-config", "Which configuration of the sweep --trace, --trace-kineto, --trace-chakra and --svg show (1-based)"}, r.pick);
  add(cmd, flag::force, r.force);
  add_parsed(cmd, {"--inject-failure", "Testing: RANK:CONFIG:STEP:exit|hang"},
             [&r](const std::string& t) { parse_failure(t, r); }, "")
      ->group("");
}

}  // namespace

void add_moe_flags(CLI::App& cmd, analysis::transformer::Moe& moe, std::vector<std::string>& flags, const char* group) {
  auto given = [&flags, group](CLI::Option* o) {
    const std::string name = o->get_name();
    o->group(group)->each([&flags, name](const std::string&) { flags.push_back(name); });
  };
  given(add(cmd, {"--experts", "Routed experts E of each MoE layer (0: dense layers only)", 0}, moe.experts));
  given(add(cmd, {"--top-k", "Experts each token is routed to, 1 <= k <= E"}, moe.top_k));
  given(add_parsed(
      cmd, {"--moe-ffn", "Inner size F of one expert's MLP (default 4h)"},
      [&moe](const std::string& t) { moe.expert_ffn = parse_int(t, "--moe-ffn", 1); }, "4h", "INT"));
  given(add(cmd, {"--shared-experts", "Experts of size F every token also goes through (DeepSeek-MoE)", 0},
            moe.shared_experts));
  given(add(cmd, {"--moe-every", "Layer l is an MoE layer when l % N == 0 (1: every layer; Megatron's --moe-layer-freq)"},
            moe.moe_every));
  given(add(cmd, {"--router", "Router score: softmax over the experts, or sigmoid per expert (top-k renormalised)"},
            moe.router,
            {{analysis::transformer::router_name(analysis::transformer::Router::softmax), analysis::transformer::Router::softmax},
             {analysis::transformer::router_name(analysis::transformer::Router::sigmoid), analysis::transformer::Router::sigmoid}}));
  given(add_parsed(
      cmd, {"--capacity-factor", "Tokens an expert takes: ceil(C x tokens x k / E), the rest dropped; or dropless"},
      [&moe](const std::string& t) {
        if (t == "dropless") {
          moe.capacity_factor = 0;
          return;
        }
        try {
          moe.capacity_factor = parse_number(t, "--capacity-factor");
        } catch (const UsageError&) {
          throw UsageError("--capacity-factor " + quoted(t) + " is not allowed: expected a number > 0, or dropless");
        }
      },
      "dropless", "C|dropless"));
  given(add(cmd, {"--aux-loss-coeff", "Weight of the load-balancing auxiliary loss (Switch Transformer)", 0},
            moe.aux_loss_coeff));
}

namespace {

void check_repeat_flags(const RunSettings& r) {
  if (r.scoring == "olympic" && r.repeats < 3)
    throw UsageError("--scoring olympic drops the fastest and the slowest repeat and needs --repeats 3 or more, got --repeats " +
                     std::to_string(r.repeats));
}

}  // namespace

void settle_run_flags(RunSettings& r) {
  kernels::set_precision(r.model, r.precision);
  r.model.loss_scaling = r.loss_scaling;
  r.model.grad_reduce_bf16 = r.grad_reduce_bf16;
  check_repeat_flags(r);
}

void add_run_flags(CLI::App& cmd, RunSettings& r) {
  add_sweep_flags(cmd, r);
  add_synthetic_flags(cmd, r);
  add_model_flags(cmd, r);
  add_moe_flags(cmd, r.model.moe, r.moe_flags, "Mixture of experts (--workload transformer)");
  add_output_flags(cmd, r);
}

}  // namespace pipebench::bench
