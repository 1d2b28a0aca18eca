#pragma once
// The transformer cost model (docs/transformer.md, docs/formulas.md): one description of a GPT-style
// decoder and of how a rank splits it, from which parameters (params.hpp), FLOPs per operation
// (flops.hpp) and activation bytes per operation (activations.hpp) are computed. The kernels
// (kernels/transformer_config.hpp) and the planner (analysis/plan/) both take their figures from here.
// Pure standard C++.
#include <cstdint>
#include <string>

namespace pipebench::analysis::transformer {

// The router's score function: softmax over all experts, or a sigmoid per expert (DeepSeek-V3), whose
// top-k scores are renormalised to sum to 1 (Megatron-Core's --moe-router-score-function).
enum class Router { softmax, sigmoid };
inline const char* router_name(Router r) { return r == Router::sigmoid ? "sigmoid" : "softmax"; }

// Mixture of experts (Shazeer et al. 2017; Megatron-Core's names in parentheses), with pipebench's flags.
// experts = 0: every layer dense. Shape holds it as a base so that a workload's settings can carry the
// same fields (kernels/transformer_workload.hpp).
struct Moe {
  int experts = 0;              // routed experts per MoE layer, --experts (--num-experts)
  int top_k = 1;                // experts each token goes to, --top-k (--moe-router-topk)
  std::int64_t expert_ffn = 0;  // inner size of one expert's MLP; 0: f. --moe-ffn (--moe-ffn-hidden-size)
  int shared_experts = 0;       // experts every token goes to, each of expert_ffn (DeepSeek-MoE), --shared-experts
  int moe_every = 1;            // layer l is an MoE layer when l % moe_every == 0, --moe-every (--moe-layer-freq)
  Router router = Router::softmax;  // --router (--moe-router-score-function)
  // Tokens an expert takes per micro-batch: ceil(C * tokens * top_k / experts), the rest dropped
  // (--moe-expert-capacity-factor); 0: dropless, every routed token computed. --capacity-factor
  double capacity_factor = 0;
  double aux_loss_coeff = 0;  // the load-balancing loss's weight α, --aux-loss-coeff (--moe-aux-loss-coeff)
};

// The model. A layer is pre-LayerNorm attention then an MLP (or, where moe_layer(l), an MoE layer); the
// first stage embeds, the last projects to the vocabulary.
struct Shape : Moe {
  int layers = 0;       // L
  int hidden = 0;       // h
  int heads = 0;        // a (query heads)
  int kv_heads = 0;     // key/value heads; 0: = heads. Fewer: grouped-query attention (Ainslie et al. 2023)
  std::int64_t ffn = 0;  // MLP inner size f; 0: 4h
  bool gated_mlp = false;  // SwiGLU (Shazeer 2020): fc1 makes a gate and a value, 2f columns
  int seq = 0;             // s
  int vocab = 0;           // V
  int micro_batch = 1;     // b, sequences per micro-batch
  // The output layer projects with the token embedding's [V, h] matrix (Press and Wolf 2017).
  bool tie_embeddings = false;
  bool learned_positions = true;  // an [s, h] position table (GPT); false: rotary or ALiBi, no parameters

  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  std::int64_t head_dim() const { return hidden / heads; }                    // d = h/a
  std::int64_t kv_width() const { return head_dim() * kv(); }                 // d * kv heads
  std::int64_t ffn_size() const { return ffn > 0 ? ffn : std::int64_t{4} * hidden; }
  std::int64_t expert_ffn_size() const { return expert_ffn > 0 ? expert_ffn : ffn_size(); }
  int fc1_factor() const { return gated_mlp ? 2 : 1; }  // fc1's columns per MLP column
  bool moe_layer(int l) const { return experts > 0 && l % moe_every == 0; }
  // How many of the layers [first, first + n) are MoE layers (moe_layer), in O(1): the multiples of
  // moe_every below first + n less those below first (ceil(x / e) multiples of e lie in [0, x)). The
  // planner asks it for every stage of every layout (a loop over the layers made its screening O(L) per
  // layout: 27 s for DeepSeek-V3 at L = 16384 on 2^20 GPUs, issue 27).
  int moe_layers_in(int first, int n) const {
    if (experts <= 0 || n <= 0) return 0;
    const auto below = [e = std::int64_t{moe_every}](std::int64_t x) { return (x + e - 1) / e; };
    return static_cast<int>(below(std::int64_t{first} + n) - below(first));
  }
};

// How one rank splits the model: Megatron's tensor parallelism over t ranks (Shoeybi et al. 2019), with
// sequence parallelism (Korthikanti et al. 2022) and a vocabulary-parallel embedding and output layer,
// and context parallelism over cp ranks (each holds s/cp positions of every sequence; ready, default 1).
struct Split {
  int t = 1;
  bool sequence_parallel = false;  // needs t > 1 and s % t == 0
  bool vocab_parallel = false;     // needs V % t == 0
  int cp = 1;
  // Expert parallelism: this rank holds experts/ep of each MoE layer's routed experts (topology/grid.hpp's
  // ep axis); the router and the shared experts are replicated.
  int ep = 1;
  bool seq_split() const { return sequence_parallel && t > 1; }
  bool vocab_split() const { return vocab_parallel && t > 1; }
};

// The part of the model one pipeline stage holds: layers [first_layer, first_layer + layers), the
// token (and position) embedding on the first stage, the final LayerNorm and output layer on the last.
struct StageParts {
  int first_layer = 0;
  int layers = 0;
  bool embedding = false;
  bool head = false;
};

// Two documented ways of running a layer, which differ in what the backward keeps and recomputes:
//   megatron   Megatron-LM as Korthikanti et al. 2022 count it: 16-bit activations, 1-byte dropout
//              masks, the LayerNorms' statistics neglected; selective recomputation reruns the core
//              attention (scores, softmax, dropout and the product with V); flash attention (Dao et
//              al. 2022) keeps no s x s tensor. What `pipebench plan` predicts with.
//   pipebench  pipebench's kernels (kernels/): every tensor in the run's precision (fp32 or fp64), no
//              dropout, LayerNorms keep xhat and 1/std; selective recomputation reruns Q K^T and the
//              softmax only (the attention output is kept).
enum class Convention { megatron, pipebench };

// The whole model as one stage.
inline StageParts whole(const Shape& m) { return {0, m.layers, true, true}; }

// UsageError naming the first bad value by its flag and what is allowed: sizes >= 1, heads dividing
// hidden, kv heads dividing heads, t dividing the heads, kv heads and (vocabulary-parallel) V, sequence
// parallelism with t > 1 and s % t == 0, cp dividing s, the MoE fields consistent.
void check(const Shape& m, const Split& split = {});

// Megatron-LM's rule (arguments.py: "When using MoE and tensor parallelism, sequence parallelism must be
// used"): empty where `split` keeps it, else what breaks it, as a refusal's text. check() refuses it, and
// the planner skips such layouts (analysis/plan/model.cpp, check_layout).
std::string moe_tensor_parallel_refusal(const Moe& m, const Split& split);

// UsageError unless ep >= 1 divides the routed experts (each ep rank holds E/ep of them); `flag` names
// ep in the message. Shared by check() and run's flags.
void check_expert_parallel(const Moe& m, int ep, const char* flag = "--expert-parallel");

// Tokens of one micro-batch on one rank: b * s / cp.
inline double tokens(const Shape& m, const Split& split) {
  return static_cast<double>(m.micro_batch) * m.seq / split.cp;
}

}  // namespace pipebench::analysis::transformer
