#pragma once
// FLOPs of the transformer per operation (docs/formulas.md "FLOPs"). The convention, the kernels':
// matrix products only, 2 FLOPs per multiply-add; the attention's s x s products are counted in full
// (the kernels compute the whole score matrix and mask it afterwards: causal masking does not halve
// them), as Narayanan et al. 2021 count them; element-wise work (LayerNorm, softmax, GELU, bias,
// dropout, the loss) and the embedding's lookups count 0.
//
// Per operation and pass: F runs each product once; I (input gradients) runs a weight product's
// dX = dY W^T once and the attention's two products twice each (dQ and dK from the scores' gradient,
// dP and dV from the output's); W (weight gradients) runs each weight product's dW = X^T dY once and
// nothing for the attention. Recomputation adds forward work to I: full, the whole layer's forward;
// selective, the scores (pipebench) or the core attention (megatron, Convention in shape.hpp).
#include <cstdint>
#include <vector>

#include "analysis/recompute.hpp"
#include "analysis/transformer/shape.hpp"

namespace pipebench::analysis::transformer {

enum class Op {
  qkv,     // [n, h] x [h, h + 2 kv]
  scores,  // Q K^T: per head [s, d] x [d, s]
  values,  // softmax(scores) V: per head [s, s] x [s, d]
  proj,    // [n, h] x [h, h]
  fc1,     // [n, h] x [h, g f] (MoE: each token's top_k + shared experts)
  fc2,     // [n, f] x [f, h]
  router,  // MoE layers: [n, h] x [h, experts]
  head     // the output layer: [n, h] x [h, V]
};
const char* op_name(Op op);

// One operation of one micro-batch on one rank, or a sum of them.
struct Flops {
  double forward = 0, backward_input = 0, backward_weight = 0;
  double recompute = 0;  // the forward work recomputation adds; part of backward_input
  // The part of each of forward, backward_input and backward_weight that every tensor-parallel rank
  // repeats in full (the replicated output layer, the router): model FLOPs count it once, not t times.
  double replicated = 0;
  double total() const { return forward + backward_input + backward_weight; }
};

struct OpFlops {
  Op op;
  Flops flops;
};

// The forward matrix product of `op` on one rank of `split` for one micro-batch: `batch` independent
// [m, k] x [k, n] products (the attention's per head). I runs dX = dY W^T, an [m, n] x [n, k]; W runs
// dW = X^T dY, a [k, m] x [m, n]. MoE fc1 and fc2 count the routed tokens of one expert's share
// (tokens x (top_k + shared) spread evenly). Their FLOPs are layer_ops' (2 m n k batch, summed over the
// passes); these are the shapes a per-shape efficiency table is looked up with (analysis/plan/).
struct Gemm {
  double batch = 1, m = 0, n = 0, k = 0;
};
Gemm op_gemm(const Shape& m, const Split& split, Op op, bool moe = false);

// Forward FLOPs of one token through one layer, all tensor-parallel ranks together (GPT: 24h^2 + 4sh),
// and through the output layer (2hV).
double layer_forward_flops_per_token(const Shape& m, bool moe = false);
double head_forward_flops_per_token(const Shape& m);

// Every operation of one layer (moe: an MoE layer) for one micro-batch on one rank of `split`.
std::vector<OpFlops> layer_ops(const Shape& m, const Split& split, Recompute r, Convention c, bool moe = false);
// Their sum.
Flops layer_flops(const Shape& m, const Split& split, Recompute r, Convention c, bool moe = false);
// The output layer on one rank (its share of the vocabulary, or all of it replicated).
Flops head_flops(const Shape& m, const Split& split);
// A stage's F, I and W for one micro-batch on one rank: its layers and, on the last stage, the head
// (which recomputation never reruns).
Flops stage_flops(const Shape& m, const Split& split, const StageParts& part, Recompute r, Convention c);

// Model FLOPs of one step of `global_batch` sequences: forward + backward = 3 x forward, without
// recomputation (Korthikanti et al. 2022): 72 G L s h^2 (1 + s/(6h) + V/(12 h L)) for GPT.
double model_flops_per_step(const Shape& m, std::int64_t global_batch);
// What recomputation adds to one step: the layers' forward (full), or the recomputed part of the
// attention (selective); model + this = the hardware FLOPs, 96 G L s h^2 (1 + s/(6h) + V/(16 h L)) for
// GPT under full recomputation.
double recompute_flops_per_step(const Shape& m, std::int64_t global_batch, Recompute r, Convention c);

}  // namespace pipebench::analysis::transformer
