#pragma once
// 16-bit storage over fp32 compute (TransformerWorkloadConfig::half, docs/transformer.md "16-bit training
// state"): float buffers rounded to the nearest bfloat16 or half value in place, and 16-bit messages
// encoded from and decoded to float, with the conversions of comm/float16.hpp. Host memory only: a
// device build refuses --precision bf16|fp16 (bench/run/device_check.cpp).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/float16.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::kernels {

inline std::uint16_t to_16(float x, Half h) { return h == Half::bf16 ? comm::to_bf16(x) : comm::to_half(x); }
inline float from_16(std::uint16_t x, Half h) { return h == Half::bf16 ? comm::from_bf16(x) : comm::from_half(x); }

inline void round_to_16(float* x, std::size_t n, Half h) {
  for (std::size_t i = 0; i < n; ++i) x[i] = from_16(to_16(x[i], h), h);
}

// out[i] = 16-bit (x[i] * scale); true where some value is not finite in 16 bits (past fp16's 65504, or
// an infinity or NaN already), what a loss scaler counts as an overflow.
inline bool encode_16(const float* x, std::uint16_t* out, std::size_t n, Half h, float scale) {
  bool overflow = false;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i] * scale;
    out[i] = to_16(v, h);
    overflow |= !std::isfinite(from_16(out[i], h));
  }
  return overflow;
}

// IEEE half's 65536 values, filled once by comm::from_half (equal to it by construction; from_half's
// ldexp would cost ~10x the decode of a stage's weights before each action, kernels/half_weights.hpp).
inline const float* half_values() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (std::uint32_t b = 0; b < 65536; ++b) t[b] = comm::from_half(static_cast<std::uint16_t>(b));
    return t;
  }();
  return table.data();
}
// x[i] = in[i] * inv_scale (bfloat16 is the high half of a float; half through half_values()).
inline void decode_16(const std::uint16_t* in, float* x, std::size_t n, Half h, float inv_scale) {
  if (h == Half::bf16) {
    for (std::size_t i = 0; i < n; ++i) x[i] = comm::from_bf16(in[i]) * inv_scale;
    return;
  }
  const float* t = half_values();
  for (std::size_t i = 0; i < n; ++i) x[i] = t[in[i]] * inv_scale;
}
inline void encode_weights_16(const float* x, std::uint16_t* out, std::size_t n, Half h) {
  for (std::size_t i = 0; i < n; ++i) out[i] = to_16(x[i], h);
}

}  // namespace pipebench::kernels
