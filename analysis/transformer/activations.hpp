#pragma once
// Activation bytes of the transformer per operation (docs/formulas.md "Activation memory per layer"):
// one table of what each operation keeps for its backward, evaluated for the two conventions of
// shape.hpp. A tensor is kept
//   f_to_i  by F until the end of I (read by I only: LayerNorm statistics, Q, K, V, probabilities),
//   f_to_w  by F until W (the weight products' inputs, which W reads after I),
//   i_to_w  by I for W (the output gradients a split backward keeps for the weight gradients),
// so a micro-batch holds its forward stash (f_to_i + f_to_w) from F to I and its weight stash
// (f_to_w + i_to_w) from I to W. Full recomputation keeps only each layer's input from F to I (I reruns
// the layer's forward first); selective recomputation drops the s x s tensors, which I rebuilds.
#include <cstdint>
#include <vector>

#include "analysis/recompute.hpp"
#include "analysis/transformer/shape.hpp"

namespace pipebench::analysis::transformer {

// The activation type (e bytes), 4 bytes, 1 byte, and `wide`: 4 bytes or e where e is wider, what a
// 16-bit run keeps in fp32 (the per-row statistics: docs/transformer.md "16-bit training state").
enum class Element { value, fp32, mask, wide };
enum class Life { f_to_i, f_to_w, i_to_w };
enum class Part { layer, embedding, head };

// One kept tensor of one micro-batch on one rank.
struct Kept {
  const char* tensor;     // "LN1 input", "Q", "softmax output", ...
  const char* op;         // the operation whose backward reads it: ln1, qkv, attention, proj, ln2, fc1, gelu, fc2, ...
  Element element;
  Life life;
  std::uint64_t elements;
};
// What `part` keeps for one micro-batch on one rank; flash_attention (megatron only) keeps no s x s tensor.
std::vector<Kept> kept(const Shape& m, const Split& split, Recompute r, Part part, Convention c,
                       bool flash_attention = false);

// pipebench's kernels, exact bytes with `value_bytes`-byte values (4 for fp32, 8 for fp64): the forward
// stash, held from the end of F to the start of I, and the weight stash, from the end of I to the end
// of W. What kernels::estimate_memory reports and TransformerStage::stash_bytes measures.
struct Stash {
  std::uint64_t forward = 0, weight = 0;
};
Stash stash(const Shape& m, const Split& split, Recompute r, Part part, std::uint64_t value_bytes);

// An MoE layer's rows on one rank for one micro-batch (kernels/moe.hpp), which depend on the routing:
// the routes it keeps (the permuted rows its tokens send), the rows that arrive at its E/ep experts
// (tensor-parallel: the t blocks all-gathered over the tp group, each padded to the largest), and the
// rows of their stack (the busiest local expert's count; the others are padded to it).
struct MoeRows {
  std::uint64_t kept = 0, arrivals = 0, rows = 0;
};
// Balanced routing, every expert getting n k / E of every source's routes: kept = n k (with a capacity
// factor, at most E ceil(C n k / E)), arrivals = ep times what one source sends to E/ep experts, rows =
// arrivals / (E/ep). n = tokens(m, split). Sequence-parallel, each of a source's t shards sends 1/t
// of that, and the arrivals and rows count all t shards.
MoeRows balanced_moe_rows(const Shape& m, const Split& split);
// pipebench's MoE layer with `value_bytes`-byte values and 4-byte indices: the forward stash (F to I):
// each local expert row's input, fc1 pre-activation, GELU and output, the combined outputs, the shared
// experts' same four for every token, the gates and the index vectors; the weight stash (I to W): the
// inputs, GELUs, output and pre-activation gradients, the router logits' gradient, gates and indices.
// The host's routing vectors (O(n E)) are not counted.
Stash moe_stash(const Shape& m, const Split& split, const MoeRows& r, std::uint64_t value_bytes);
// A whole MoE layer of pipebench's kernels (kernels/moe_stage.hpp): the dense layer's stash less its
// MLP's tensors (fc1's output and its gradient, GELU's output, fc2's output gradient), plus moe_stash.
Stash moe_layer_stash(const Shape& m, const Split& split, Recompute r, const MoeRows& rows, std::uint64_t value_bytes);

// Megatron-LM as Korthikanti et al. 2022 count it, what `plan` predicts with. A layer: Korthikanti's
// closed form, its coefficients summed from the table (16-bit values: s b h (34 + 5 a s/h) at t = 1,
// s b h (10 + 24/t + 5 a s/(h t)) tensor-parallel, s b h/t (34 + 5 a s/h) sequence-parallel; flash
// attention drops the s x s terms); the W stash is the four weight products' inputs. The embedding
// and the head row by row (their output and the fp32 logits; the output layer's input for its W).
struct MegatronStash {
  double forward = 0, weight = 0;
  double scores = 0;  // the s x s tensors' bytes, what selective recomputation rebuilds (0 with flash)
};
struct MegatronOptions {
  double value_bytes = 2;  // of an activation value: Korthikanti's 16 bits; masks 1 byte, logits 4
  bool flash_attention = false;
};
MegatronStash megatron_stash(const Shape& m, const Split& split, Recompute r, Part part, const MegatronOptions& o = {});

}  // namespace pipebench::analysis::transformer
