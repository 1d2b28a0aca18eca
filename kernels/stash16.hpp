#pragma once
// 16-bit activations between the passes (TransformerConfig::stash16, docs/transformer.md "16-bit
// training state"): what a layer, the head or an MoE layer keeps for its backward is kept as bfloat16 or
// half bit patterns, as a bf16 Megatron run keeps its activations, and decoded into fp32 working views
// only for the pass that reads them. A stash type lists its 16-bit members with `each16(f)`, which calls
// f on every such view in one fixed order; what a 16-bit run keeps in fp32 (LayerNorm's 1/std, the
// context-parallel log-sum-exp, the loss's logits gradient) and the index vectors are not listed.
//   pack16   (end of F, end of I) encodes each held fp32 view into its slot and releases the view; a
//            view decoded from a slot earlier is released only (the slot holds its bits already); a
//            slot whose view the pass released goes too.
//   unpack16 (start of I, start of W) decodes every slot into a new fp32 view; before W the slots go.
// Rounding is comm/float16.hpp's (round to nearest even) through gemm16.hpp's device-callable
// conversions, so the same code serves host and device views.
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/gemm16.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

// One view's 16-bit copy, the extents of the fp32 view it replaced, and the factor its values were
// multiplied by before the rounding (fp16's loss scale for a gradient, else 1).
template <class E>
struct Packed16 {
  Kokkos::View<std::uint16_t*, Kokkos::LayoutRight, Kokkos::Device<E, typename E::memory_space>> bits;
  std::size_t extent[3] = {0, 0, 0};
  float scale = 1;
};

template <class E>
struct Slots16 {
  std::vector<Packed16<E>> slots;
  std::size_t bytes() const {
    std::size_t b = 0;
    for (const auto& s : slots) b += bytes_of(s.bits);
    return b;
  }
};

// A lone view as a stash (the first stage's embedding gradient: grad).
template <class V>
struct One16 {
  V& v;
  bool grad = false;
  template <class F>
  void each16(F&& f) {
    f(v, grad);
  }
};

namespace detail {

// Returns the values that are not finite in fp16 after the rounding (0 for bf16, whose range is fp32's).
template <class E, class V>
long encode_view(const V& v, Packed16<E>& p, bool bf16, float scale) {
  using Bits = decltype(p.bits);
  const std::size_t n = v.span();
  p.bits = alloc<Bits>("pipebench::stash16", n);
  p.scale = scale;
  for (unsigned r = 0; r < 3; ++r) p.extent[r] = r < static_cast<unsigned>(V::rank) ? v.extent(r) : 1;
  const float* x = v.data();
  std::uint16_t* out = p.bits.data();
  if (bf16) {
    Kokkos::parallel_for(
        "pipebench::stash16_encode", Kokkos::RangePolicy<E>(0, n), KOKKOS_LAMBDA(std::size_t i) { out[i] = encode16(x[i], true); });
    return 0;
  }
  long bad = 0;  // fp16: exponent bits all ones, an infinity or NaN
  Kokkos::parallel_reduce(
      "pipebench::stash16_encode", Kokkos::RangePolicy<E>(0, n),
      KOKKOS_LAMBDA(std::size_t i, long& b) {
        out[i] = encode16(x[i] * scale, false);
        if ((out[i] & 0x7c00u) == 0x7c00u) ++b;
      },
      bad);
  return bad;
}

template <class E, class V>
V decode_view(const Packed16<E>& p, bool bf16) {
  V v;
  if constexpr (V::rank == 1)
    v = alloc<V>("pipebench::stash16_fp32", p.extent[0]);
  else if constexpr (V::rank == 2)
    v = alloc<V>("pipebench::stash16_fp32", p.extent[0], p.extent[1]);
  else
    v = alloc<V>("pipebench::stash16_fp32", p.extent[0], p.extent[1], p.extent[2]);
  const std::uint16_t* in = p.bits.data();
  float* x = v.data();
  const float inv = 1 / p.scale;
  Kokkos::parallel_for(
      "pipebench::stash16_decode", Kokkos::RangePolicy<E>(0, p.bits.extent(0)),
      KOKKOS_LAMBDA(std::size_t i) { x[i] = decode16(in[i], bf16) * inv; });
  return v;
}

}  // namespace detail

// Does nothing where h is none or the stash is not fp32 (an fp32 or fp64 run is unchanged, bitwise).
// fp16 keeps a gradient multiplied by `grad_scale` (the loss scale), as a loss-scaled backward holds
// it, so that small gradients keep their digits. Returns the values that are not finite in fp16 after
// the rounding (past 65504): the caller counts them as the step's overflow.
template <class E, class Stash>
long pack16(Stash& st, Slots16<E>& s, Half h, float grad_scale = 1) {
  if (h == Half::none) return 0;
  long overflows = 0;
  std::size_t i = 0;
  st.each16([&](auto& v, bool grad = false) {
    using V = std::decay_t<decltype(v)>;
    if (!std::is_same_v<typename V::non_const_value_type, float>) return;
    if (s.slots.size() <= i) s.slots.resize(i + 1);
    Packed16<E>& p = s.slots[i++];
    if (!v.data()) {
      p = Packed16<E>();
      return;
    }
    if constexpr (std::is_same_v<typename V::non_const_value_type, float>)
      if (!p.bits.data()) overflows += detail::encode_view<E>(v, p, h == Half::bf16, grad && h == Half::fp16 ? grad_scale : 1.0f);
    v = V();
  });
  E().fence();
  return overflows;
}

template <class E, class Stash>
void unpack16(Stash& st, Slots16<E>& s, Half h, bool release) {
  if (h == Half::none) return;
  std::size_t i = 0;
  st.each16([&](auto& v, bool = false) {
    using V = std::decay_t<decltype(v)>;
    if (!std::is_same_v<typename V::non_const_value_type, float>) return;
    if (i >= s.slots.size()) return;
    Packed16<E>& p = s.slots[i++];
    if (!p.bits.data()) return;
    if constexpr (std::is_same_v<typename V::non_const_value_type, float>) v = detail::decode_view<E, V>(p, h == Half::bf16);
    if (release) p = Packed16<E>();
  });
  E().fence();
  if (release) s.slots.clear();
}

}  // namespace pipebench::kernels
