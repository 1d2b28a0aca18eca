#pragma once
// The optimizer step over a range of a stage's flat weights: plain SGD, or Adam with decoupled weight
// decay (AdamW: Loshchilov & Hutter 2019; PyTorch's torch.optim.AdamW and Megatron-LM's default):
//
//   w -= lr * wd * w                    (matrices only: biases and LayerNorm parameters are not decayed,
//                                        as Megatron-LM does)
//   m  = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2
//   w -= lr * (m / (1 - b1^k)) / (sqrt(v / (1 - b2^k)) + eps)      k = 1, 2, ... the step
//
// The state m, v has the precision of the weights (fp32 runs: 8 bytes per parameter). A range is any
// contiguous part of the flat buffer, so that a sharded optimizer (ZeRO-1) updates its shard only and
// holds the state of its shard only; the result per element does not depend on how the buffer is cut.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/parameters.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

struct AdamSettings {
  double lr = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0;
};

// Elements [lo, hi) of `w` (flat weights) from `g` (the same elements' gradients, g(0) for w(lo)), with
// state `m`, `v` of hi - lo elements; `step` counts from 1. `table` says which elements are matrices.
// Element i of the flat buffer is w(i - w_base): a compact copy of a shard passes the index of its w(0).
template <class S, class E>
void adam_update(const typename Views<S, E>::Vec& w, const typename Views<S, E>::ConstVec& g,
                 const typename Views<S, E>::Vec& m, const typename Views<S, E>::Vec& v, std::size_t lo,
                 std::size_t hi, long step, const AdamSettings& a, const std::vector<ParamInfo>& table,
                 std::size_t w_base = 0) {
  const S b1 = static_cast<S>(a.beta1), b2 = static_cast<S>(a.beta2), eps = static_cast<S>(a.eps);
  const S lr = static_cast<S>(a.lr), decay = static_cast<S>(a.lr * a.weight_decay);
  const S c1 = static_cast<S>(1 - std::pow(a.beta1, static_cast<double>(step)));
  const S c2 = static_cast<S>(1 - std::pow(a.beta2, static_cast<double>(step)));
  for (const ParamInfo& p : table) {
    const std::size_t a0 = std::max(lo, p.offset), a1 = std::min(hi, p.offset + p.size());
    if (a0 >= a1) continue;
    const S wd = p.rows > 1 ? decay : S(0);
    Kokkos::parallel_for(
        "pipebench::adam", Kokkos::RangePolicy<E>(a0, a1), KOKKOS_LAMBDA(const std::size_t i) {
          const std::size_t j = i - lo;
          const S gi = g(j);
          const S mi = b1 * m(j) + (S(1) - b1) * gi;
          const S vi = b2 * v(j) + (S(1) - b2) * gi * gi;
          m(j) = mi;
          v(j) = vi;
          S wi = w(i - w_base) - wd * w(i - w_base);
          wi -= lr * (mi / c1) / (math::sqrt(vi / c2) + eps);
          w(i - w_base) = wi;
        });
  }
}

}  // namespace pipebench::kernels
