#pragma once
// The performance model behind `pipebench plan` (docs/model.md): step time, memory per device and FLOP
// rates of one 3D-parallel training configuration of a GPT-style transformer on a machine. Compute
// comes from the FLOP formulas at the machine's achieved rate, communication from α-β link models, and
// the bubble and the peak in-flight activations from pipebench's own generators and simulator fed the
// per-stage times. Pure standard C++ (docs/design.md "Layout").
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analysis/breakdown.hpp"
#include "analysis/plan/gemm.hpp"
#include "analysis/recompute.hpp"
#include "analysis/schedule.hpp"
#include "analysis/transformer/shape.hpp"

namespace pipebench::analysis::plan {

// A transformer (analysis/transformer/shape.hpp: layers, hidden, heads, kv_heads, ffn, gated_mlp, seq,
// vocab), with the token embedding tied to the output layer as in Megatron-LM GPT. Its parameters and
// FLOPs are the cost model's (analysis/transformer/params.hpp, flops.hpp), its activations Korthikanti
// et al. 2022's (activations.hpp, convention megatron); docs/model.md.
struct ModelSpec : transformer::Shape {
  std::string name;    // preset name, or "custom"
  std::string source;  // where the shape comes from
  bool flash_attention = false;  // the s x s scores are never stored (Dao et al. 2022)
  ModelSpec() { tie_embeddings = true; }
};

const std::vector<ModelSpec>& model_presets();
// UsageError "--model 'x' is not allowed: expected one of ..." for an unknown name.
const ModelSpec& model_preset(const std::string& name);

// Bytes per GiB, the unit memory is given and printed in.
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A machine: nodes of `gpus_per_node` GPUs joined by NVLink inside a node and a per-GPU network link
// between nodes. Bandwidths are per GPU, one direction, bytes/s; latencies in seconds.
struct MachineSpec {
  std::string name;
  std::string source;          // the public sources of the figures, one line
  double peak_flops = 0;       // dense BF16 tensor FLOP/s per GPU
  double peak_fp8_flops = 0;   // dense FP8 tensor FLOP/s per GPU (0: none)
  double memory_bytes = 0;     // device memory
  double hbm_bandwidth = 0;    // device memory bandwidth, bytes/s
  int gpus_per_node = 8;
  double intra_bandwidth = 0;  // NVLink, per GPU per direction
  double inter_bandwidth = 0;  // network, per GPU per direction
  double intra_latency = 0;
  double inter_latency = 0;
  // The fraction of the link's bandwidth a ring collective reaches (nccl-tests' bus bandwidth / link).
  double intra_efficiency = 1.0, inter_efficiency = 1.0;
  // The fraction of peak each matrix product reaches, by its (m, n, k) (analysis/plan/gemm.hpp).
  GemmTable gemm;
  double elementwise_passes = 2;      // device-memory passes over a layer's activations per forward
  double dp_overlap = 1.0;            // fraction of the last backward the gradient reduction can hide behind
  double memory_reserve_bytes = 0;    // per GPU, for the runtime (context, workspaces, fragmentation)
  double action_gap = 0;              // seconds a rank spends between two actions (framework overhead)
  // A pipeline message's cost beyond its link's alpha-beta time (seconds; 0 in the presets): `p2p_extra`
  // added to every transfer, and `p2p_wait`, the least time one takes after its receiver reaches the
  // receive however early it was sent (SimCosts::link_wait). Both are what a calibration run measured
  // (bench/results/calibration.hpp): MPI over UCX's TCP moves a rendezvous message only while its
  // sender and its receiver are inside MPI, so it waits for the sender's next action to end.
  double p2p_extra = 0, p2p_wait = 0;
  // A group kind's own collective link, where a calibration measured one (`pipebench comm all_reduce
  // --group tp` or `dp`: bench/results/calibration.hpp): the ring's bus bandwidth and its latency per
  // ring step, in place of the tier's for that group's collectives on the tier it was measured on
  // (inter: across nodes). 0 in the presets: the tier's. Why: an all-reduce is several dependent steps,
  // each paying the wait's polling and the library's progress, which a point-to-point fit does not see
  // (on the 2-core VM 0.5 ms for 128 KiB over 2 ranks, against 0.21 ms from the sendrecv fit).
  struct GroupLink {
    double bandwidth = 0, latency = 0;
    bool inter = false;
  };
  GroupLink tp_link, dp_link;
  std::string rates_from = "preset";  // "preset", "file FILE", "calibrated from FILE ..."
};

const std::vector<MachineSpec>& machine_presets();
const MachineSpec& machine_preset(const std::string& name);  // UsageError listing the names
// UsageError naming the first field out of range.
void check_machine(const MachineSpec& m);

using analysis::parse_recompute;  // analysis/recompute.hpp
using analysis::Recompute;
using analysis::recompute_name;

struct Layout {
  int t = 1, p = 1, d = 1;
  int v = 0;  // chunks per rank; 0: the schedule's default
  std::string schedule;  // a row of the schedule catalog (analysis/catalog.hpp)
  int micro_batch_size = 1;
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;
  // ZeRO stage over the data-parallel group: 1 the optimizer state sharded (Megatron's distributed
  // optimizer), 2 the gradients too, 3 the weights too (FSDP, gathered per layer in F and in I).
  int zero = 0;
  int cp = 1;               // context-parallel ranks (all-gather of K and V, Meta 2024)
  // Expert-parallel ranks (MoE models): each holds E/ep routed experts of every MoE layer; drawn from the
  // cp d ranks of a stage (Megatron-Core's expert parallelism inside data parallelism), ep divides cp d.
  int ep = 1;
  bool fp8 = false;         // products at the FP8 peak
  bool tp_overlap = false;  // --tp-comm-overlap: TP collectives behind the GEMMs
  bool ep_overlap = false;  // --ep-comm-overlap: the all-to-alls behind the layer's GEMMs (DualPipe's paired chunks)
  bool dp_overlap = true;   // gradient buckets reduced during the backward (torch DDP, --overlap-grad-reduce)
  // The backward's TP collectives behind the column-parallel products' weight gradients (Megatron-LM
  // since 2022, --async-tensor-model-parallel-allreduce; off in the 2021 code of Narayanan et al.).
  bool async_tp = true;
  // Layers of each of the p v stages, first to last (Megatron-Core's --pipeline-model-parallel-layout);
  // empty: as even as possible.
  std::vector<int> stage_layers;
};

// One operation's time on one rank for one micro-batch, per pass (analysis/plan/ops.hpp); i includes
// the recomputed forward `recompute`.
struct OpCost {
  const char* name = "";  // a static string
  const char* kind = "gemm";  // gemm, memory, tp, cp, ep
  double f = 0, i = 0, w = 0, recompute = 0;
};

struct Prediction {
  Layout layout;
  int m = 0;  // micro-batches per pipeline
  int v = 1;  // resolved
  double step_time = 0;
  double tokens_per_second = 0;
  double model_tflops_per_gpu = 0;     // without recomputation
  double hardware_tflops_per_gpu = 0;  // with it
  double mfu = 0;
  double memory_bytes = 0;  // the fullest GPU
  double weights_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0, activation_bytes = 0;
  double bubble_fraction = 0;
  bool fits = false;
  Breakdown breakdown;  // analysis/breakdown.hpp: compute, tp, pp, dp, bubble, other
  bool simulated = false;  // false: closed-form screening figures only
  std::vector<OpCost> layer_ops, embedding_ops, head_ops;  // one layer's, the first and last stage's extras
  std::vector<OpCost> moe_layer_ops;                        // one MoE layer's (MoE models)
  double layer_forward = 0, layer_backward = 0;             // one layer's F and B with the exposed collectives
};

// Where the rank order puts one layout's groups: the distance in global rank between neighbours along
// each axis (topology::Grid::stride). The model counts a group as crossing nodes when the block of
// consecutive ranks that holds it, stride x size, is larger than a node (exact where both are powers of
// two; docs/model.md "Step time").
struct AxisStrides {
  std::int64_t tp = 1, pp = 1, dp = 1;
};
// The strides of each t x p x d under a rank order. The front end's comes from topology::Grid (any order
// --order allows, bench/cmd/plan_inputs.hpp rank_order); empty: Megatron's default order tp-dp-pp.
using RankOrder = std::function<AxisStrides(int t, int p, int d)>;

// The per-operation costs of the layouts a search screens, kept by what they depend on (t, cp, b,
// recompute, SP, the precision, the overlaps, the TP tier): many layouts share them.
struct PartsCache;
std::shared_ptr<PartsCache> make_parts_cache();

struct Problem {
  ModelSpec model;
  MachineSpec machine;
  std::int64_t global_batch = 0;
  int gpus_per_node = 0;  // 0: the machine's
  bool allow_cross_node_tp = false;
  RankOrder rank_order;   // empty: tp-dp-pp
  double value_bytes = 2;  // of activations and messages: 2 for BF16 training (4 for pipebench's fp32 runs)
  // The busiest expert-parallel rank's routed tokens over the mean (1: balanced routing, as the
  // load-balancing loss aims at): its expert GEMMs, permutations and all-to-alls take that much longer.
  double routing_imbalance = 1.0;
  // Empty: nothing kept. The search makes one for its own copy of the problem; a cache belongs to one
  // problem (its key holds the layout's fields only, not the model, machine or batch).
  std::shared_ptr<PartsCache> cache;
};

// Why a layout cannot run, in the words the planner counts ("global batch", "layers", "schedule",
// "memory", ...), with a one-line detail; empty `reason` when it can (memory is not checked here).
struct Refusal {
  std::string reason;
  std::string detail;
};
Refusal check_layout(const Problem& pr, const Layout& l, int* m_out = nullptr, int* v_out = nullptr);
// The layout's strides under the problem's rank order.
AxisStrides strides_of(const Problem& pr, const Layout& l);

// Everything the model derives from a layout before any schedule is generated.
struct StagePlan {
  int m = 0, v = 1, pipes = 1, stages_per_pipe = 1;
  std::vector<double> f, b, w;        // per stage depth (of one model copy): times of one micro-batch
  std::vector<double> fc, bc;         // their compute parts (the rest is TP)
  std::vector<double> stash, wstash;  // activation bytes per micro-batch: F to end of I/B, I to W
  double p2p = 0;                     // one pipeline transfer
  double dp_time = 0;                 // the gradient reduction (and ZeRO-1 parameter gather), whole
  double optimizer = 0;
  std::vector<int> layers;            // per stage depth
  double layer_forward = 0, layer_backward = 0;  // one layer's F and B (evaluate() gives its operations)
  double static_bytes = 0;            // weights + gradients + optimizer state of the fullest rank
  double weights = 0, gradients = 0, optimizer_state = 0;
  double model_flops = 0, hardware_flops = 0;  // per step, all GPUs
};
// Megatron-Core's --pipeline-model-parallel-layout: stages split by '|', 't' a layer, 'E' the embedding
// (first stage), 'L' the loss and head (last stage), "x*N" and "(...)*N" repeat, ',' and spaces
// ignored; "Ettt|tttt|tttL". Returns the layers per stage; UsageError naming the string otherwise.
std::vector<int> parse_pipeline_layout(const std::string& text);

// Throws UsageError for a refused layout (check_layout first to count refusals without throwing).
StagePlan stage_plan(const Problem& pr, const Layout& l);

// Closed-form screening: a lower bound of the step time (the busiest rank's work plus the pipeline
// fill where the schedule's last rank waits for it, ScheduleRow::waits_for_fill), an estimate (adding
// the row's screen_idle) and a lower bound of the memory (static + the formula peak in-flight count
// times the smallest stash); exact where the formulas hold.
struct Screen {
  double step_lower_bound = 0;
  double step_estimate = 0;
  double memory_lower_bound = 0;
};
Screen screen(const Problem& pr, const Layout& l, const StagePlan& sp);

// The full prediction: generates the schedule, simulates it (twice: with and without pipeline
// transfers, for the breakdown), and replays its order for the peak activation memory.
Prediction evaluate(const Problem& pr, const Layout& l);
Prediction evaluate(const Problem& pr, const Layout& l, const StagePlan& sp);

}  // namespace pipebench::analysis::plan
