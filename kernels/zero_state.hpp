#pragma once
// What a rank keeps of one stage under ZeRO (Rajbhandari et al. 2020; docs/transformer.md "ZeRO"): the
// compact copy of its shards (kernels/workload.hpp, stage_zero_shards: one [lo, hi) range per bucket, stored
// one after another) of the fp32 main weights (16-bit storage, ZeRO >= 1), of the gradients (ZeRO >= 2)
// and of the weights (ZeRO >= 3; a 16-bit run keeps its 16-bit ones in kernels/half_weights.hpp). The
// whole buffers of the stage are then allocated only while they are used and freed after, so that what
// the rank holds between uses is its 1/d. Host memory, as the executor's ZeRO copies (memcpy) already
// assume.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "analysis/error.hpp"
#include "kernels/workload.hpp"

namespace pipebench::kernels {

template <class Flat>
struct ZeroStageState {
  using S = typename Flat::value_type;
  int zero = 0;
  std::vector<ZeroShard> shards;
  std::vector<std::size_t> at;  // per shard: where its values start in the compact copies
  std::size_t count = 0;        // elements in the compact copies
  Flat main, grads, weights;    // compact; empty where that stage of ZeRO does not shard them

  ZeroStageState() = default;
  ZeroStageState(int z, std::vector<ZeroShard> mine) : zero(z), shards(std::move(mine)) {
    for (const ZeroShard& s : shards) at.push_back(count), count += s.hi - s.lo;
  }
  // The compact offset of element i of the whole buffer, which must lie in one of this rank's shards.
  std::size_t offset_of(std::size_t i) const {
    for (std::size_t k = 0; k < shards.size(); ++k)
      if (i >= shards[k].lo && i < shards[k].hi) return at[k] + (i - shards[k].lo);
    throw Error("ZeRO: element " + std::to_string(i) + " is not in this rank's shards");
  }
  // The compact copy of `whole`'s shards (a fresh allocation); V: Flat, or the 16-bit weights' view.
  template <class V = Flat>
  V compact(const char* label, const typename V::value_type* whole) const {
    using T = typename V::value_type;
    V f(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), count);
    for (std::size_t k = 0; k < shards.size(); ++k)
      std::memcpy(f.data() + at[k], whole + shards[k].lo, (shards[k].hi - shards[k].lo) * sizeof(T));
    return f;
  }
  // The compact copy written back into the whole layout `out` (the rest untouched).
  template <class V>
  void expand(const V& f, typename V::value_type* out) const {
    for (std::size_t k = 0; k < shards.size(); ++k)
      std::memcpy(out + shards[k].lo, f.data() + at[k], (shards[k].hi - shards[k].lo) * sizeof(typename V::value_type));
  }
};

}  // namespace pipebench::kernels
