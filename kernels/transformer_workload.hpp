#pragma once
// The transformer stage workload: a GPT model (kernels/transformer_stage.hpp) split into the stages of a
// schedule, one TransformerStage per stage this rank holds, behind the Workload interface. Kokkos must
// be initialised by the program. Kept free of Kokkos headers so that bench/ compiles quickly.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "analysis/schedule.hpp"
#include "kernels/precision.hpp"
#include "kernels/transformer_config.hpp"
#include "kernels/workload.hpp"

namespace pipebench::kernels {

enum class Optimizer { sgd, adam };
const char* to_string(Optimizer o);

const char* to_string(Precision p);  // Precision and Half: kernels/precision.hpp

// What --layers-per-stage auto balances: per-micro-batch F+I+W costs measured in a calibration step
// (measure_stage_costs), or FLOPs (stage_flops; the embedding's lookups count 0).
enum class Balance { measured, flops };
const char* to_string(Balance b);
struct StageCosts {
  double layer = 0, embedding = 0, head = 0;  // seconds (measured) or FLOPs, per micro-batch, F+I+W
};

struct TransformerWorkloadConfig {
  int hidden = 0, heads = 0, seq = 0, micro_batch = 1, vocab = 0, layers = 0;
  std::vector<int> layers_per_stage;  // one per stage of a model copy; empty: split evenly
  bool layers_auto = false;           // balance the split (stage_layers)
  Balance balance = Balance::measured;
  // Measured costs by tensor-parallel size (measure_stage_costs, agreed over the ranks); where the
  // model's tp_size has none, or balance is flops, the FLOPs are the costs.
  std::map<int, StageCosts> measured_costs;
  // The embedding / the output layer and loss as a stage of their own, holding no layer (Llama 3).
  bool embedding_stage = false, head_stage = false;
  Recompute recompute = Recompute::none;
  Attention attention = default_attention();  // kernels/transformer_config.hpp
  std::uint64_t seed = 1;
  bool fp64 = false;
  // 16-bit storage over fp32 compute (fp64 false): the weights the kernels read are the 16-bit rounding
  // of fp32 main weights, which the optimizer steps (with fp32 Adam state); the stage-boundary messages
  // are 16-bit on the wire; weight gradients accumulate in fp32 (Megatron-LM's main gradients).
  Half half = Half::none;
  // fp16: dynamic loss scaling (PyTorch's GradScaler: scale 2^16 at the start, halved on an overflow,
  // whose step every rank skips, doubled after `scale_window` steps without one). The gradient messages
  // are encoded scaled and decoded unscaled: an overflow is a message value past fp16's range.
  bool loss_scaling = true;
  int scale_window = 2000;
  int test_overflow_step = -1;  // test-only: this rank reports an overflow in this step (counted from 0)
  // bf16: the weight gradients rounded to bfloat16 before the data-parallel reduction, which sums them
  // in fp32 (MPI has no bfloat16 sum: the values are bf16, the wire keeps 4 bytes a value).
  bool grad_reduce_bf16 = false;
  double lr = 0;  // SGD step after the data-parallel sync; 0 keeps the weights (identical steps)
  // Adam (kernels/optimizer.hpp) keeps two values of state per parameter and runs even at lr = 0 (its
  // time and memory are then real, the weights unchanged).
  Optimizer optimizer = Optimizer::sgd;
  double weight_decay = 0;  // Adam's decoupled weight decay (matrices only)
  bool tie_embeddings = false;  // kernels/transformer_config.hpp
  bool vocab_parallel = true;   // when t > 1 (kernels/transformer_config.hpp), as Megatron-LM does
  int tp_size = 1, tp_rank = 0;
  bool sequence_parallel = false;  // kernels/transformer_config.hpp; needs tp_size > 1 and seq % tp_size == 0
  analysis::transformer::Moe moe;  // the MoE layers (analysis/transformer/shape.hpp); experts 0: dense
  int ep_size = 1, ep_rank = 0;    // expert parallelism (kernels/transformer_config.hpp)
  // DualPipe(V)'s overlapped F&B pairs run their passes in turns, each expert exchange of one in flight
  // while the other computes (kernels/interleave.hpp); false: one pass after the other (--ep-overlap).
  bool ep_overlap = true;
  // Context parallelism (kernels/transformer_config.hpp): rank cp_rank of context_parallel.
  int context_parallel = 1, cp_rank = 0;
  CpChunks cp_chunks = CpChunks::zigzag;
  CpComm cp_comm = CpComm::ring;
  // Micro-batch k of this pipeline reads data sample mb_offset + k (data-parallel replicas differ).
  int mb_offset = 0;
  // The stage-boundary messages are the kernels' own memory (NCCL's device buffers), used in place;
  // else host memory (the MPI backend's), staged through device memory in a device build.
  bool device_messages = false;
};

// Layers of each stage of a model copy with `stages` stages: `given` if not empty (checked: one entry
// per stage, each >= 1, summing to `layers`), else an even split whose remainder goes to the middle
// stages, since the first and last stages also carry the embedding and the loss. UsageError otherwise.
std::vector<int> split_layers(int layers, int stages, const std::vector<int>& given);

// The layers of each stage for `c`: `layers_per_stage` if given, else balanced by FLOPs when
// `layers_auto` (the last stage, which also holds the output layer and the loss, gets as few layers as
// minimises the largest stage's F+I+W FLOPs; the others an even split), else even. With
// embedding_stage / head_stage the first / last stage holds 0 layers and the rest are split over the
// other stages (a given list then has 0 there). UsageError where that cannot be done.
std::vector<int> stage_layers(const TransformerWorkloadConfig& c, int stages);

// The split of `layers` over `stages` stages that minimises the largest stage cost, each stage costing
// its layers times `layer`, plus `first` on the first stage and `last` on the last (the embedding's and
// the head's costs). Every stage gets at least one layer; the middle ones share the rest evenly
// (split_layers). Ties: the smallest second-largest cost and so on, then the fewest layers on the
// first stage. Pure and deterministic.
std::vector<int> balance_layers(int layers, int stages, double layer, double first, double last);

// Each stage's cost per micro-batch under `split`: its layers times k.layer, plus k.embedding on the
// first stage and k.head on the last.
std::vector<double> stage_costs(const std::vector<int>& split, const StageCosts& k);

// The per-micro-batch costs stage_layers balances with: measured ones if `c` has them for its
// tp_size and balance is measured, else FLOPs.
StageCosts balance_costs(const TransformerWorkloadConfig& c);

// Times one micro-batch's F, I and W of one layer, of the embedding alone and of the head alone (output
// layer and loss) on this rank, as a stage of c's shape holds them (tensor-parallel slice, no
// communication): the median of `reps` after one warm-up. Allocates; Kokkos must be initialised.
StageCosts measure_stage_costs(const TransformerWorkloadConfig& c, int reps);

// The TransformerConfig of one stage at `depth` of a model copy (embedding on depth 0, head on the last).
TransformerConfig stage_config(const TransformerWorkloadConfig& c, const std::vector<int>& split, int depth);

// fp64 and half from --precision; and back (the precision a configuration records).
void set_precision(TransformerWorkloadConfig& c, Precision p);
Precision precision_of(const TransformerWorkloadConfig& c);
// Bytes a weight is kept in between actions: 8 fp64, 4 fp32, 2 bf16 and fp16 (kernels/half_weights.hpp).
int weight_element_bytes(const TransformerWorkloadConfig& c);

// Checks the model against the schedule (validate() of every stage) without allocating.
void validate_model(const TransformerWorkloadConfig& c, int stages_per_pipe);

// Bytes of optimizer state pipeline rank `pp_rank` holds: 2 values per parameter of its stages for Adam
// (0 for SGD), of its ZeRO-1 shards only when `zero` (kernels/workload.hpp, zero_shards with `buckets`
// buckets per stage over `dp` ranks, data-parallel rank `dp_rank`).
std::uint64_t optimizer_state_bytes(const TransformerWorkloadConfig& c, const analysis::Schedule& s, int pp_rank,
                                    bool zero, int buckets, int dp, int dp_rank);

// Bytes of training state pipeline rank `pp_rank` holds between steps (after the optimizer step), at
// ZeRO stage `zero` over `dp` data-parallel ranks (its rank dp_rank, `buckets` buckets per stage):
// whole for its stages, or its shards (zero_shards) of what the stage shards. What the workload's
// weight_bytes, gradient_bytes, main_weight_bytes and optimizer_state_bytes figures measure.
struct StateBytes {
  std::uint64_t weights = 0, gradients = 0, main_weights = 0, optimizer = 0;
  // 16-bit runs, during the step: the most fp32 bytes of weights decoded for the actions at once
  // (kernels/half_weights.hpp, analysis::decoded_peak_bytes); 0 otherwise.
  std::uint64_t decoded = 0;
};
// With expert parallelism (kernels::stage_zero_shards): the dense parameters sharded over g.d ranks
// (rank g.r), the routed experts' over the g.edp ranks of the expert-data-parallel group (rank g.er;
// whole where g.edp = 1). Nothing is sharded where g.d = 1. The form with dp, dp_rank is ep = 1: the
// experts over the same group.
StateBytes state_bytes(const TransformerWorkloadConfig& c, const analysis::Schedule& s, int pp_rank, int zero,
                       int buckets, const ZeroGroups& g);
StateBytes state_bytes(const TransformerWorkloadConfig& c, const analysis::Schedule& s, int pp_rank, int zero,
                       int buckets, int dp, int dp_rank);

std::unique_ptr<Workload> make_transformer_workload(const TransformerWorkloadConfig& c, const analysis::Schedule& s,
                                                    int pp_rank, TpAllReduce tp_allreduce, TpSequenceOps tp_sequence = {},
                                                    CpOps cp = {}, EpOps ep = {});

// Kokkos for the lifetime of a `pipebench run`: initialised here unless the program already did, and
// then finalised here. Also sets the host BLAS to `blas_threads` threads (ranks share the cores) and
// keeps freed host memory for reuse (kernels/host_tuning.hpp).
class KokkosSession {
 public:
  explicit KokkosSession(int blas_threads);
  ~KokkosSession();
  KokkosSession(const KokkosSession&) = delete;
  KokkosSession& operator=(const KokkosSession&) = delete;

 private:
  bool owner_ = false;
};

}  // namespace pipebench::kernels
