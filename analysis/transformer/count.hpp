#pragma once
// Checked 64-bit arithmetic for the exact counts of the cost model (parameters, bytes): a model whose
// counts overflow is refused with a UsageError, never wrapped.
#include <cstdint>

#include "analysis/error.hpp"

namespace pipebench::analysis::transformer {

inline std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) throw UsageError("model too large: its size in bytes overflows 64 bits");
  return a * b;
}

inline std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  if (b > UINT64_MAX - a) throw UsageError("model too large: its size in bytes overflows 64 bits");
  return a + b;
}

inline std::uint64_t u64(long long v) { return static_cast<std::uint64_t>(v); }

}  // namespace pipebench::analysis::transformer
