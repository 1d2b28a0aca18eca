#pragma once
// Counter-based random numbers: every value is a pure function of (seed, what, index), so a model split
// into stages (or heads split over tensor-parallel ranks) gets exactly the weights and data of the whole
// model on one rank, whatever order or device generates them.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace pipebench::kernels {

// splitmix64's finaliser (Steele, Lea, Flood 2014): a bijective mix with full avalanche.
KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

KOKKOS_INLINE_FUNCTION std::uint64_t hash3(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return mix64(mix64(mix64(a) ^ b) ^ c);
}

// Uniform in [-1, 1) from the top 24 bits (exact in float and double).
KOKKOS_INLINE_FUNCTION double uniform_pm1(std::uint64_t bits) {
  return static_cast<double>(bits >> 40) * (2.0 / 16777216.0) - 1.0;
}

// FNV-1a of a parameter name, on the host.
inline std::uint64_t name_hash(const std::string& name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// The token stream of micro-batch mb: sequence bi holds positions 0..s; the model reads positions
// 0..s-1 and predicts 1..s (targets are the next tokens).
KOKKOS_INLINE_FUNCTION int token_at(std::uint64_t seed, int mb, int bi, int pos, int vocab) {
  const std::uint64_t stream = (static_cast<std::uint64_t>(static_cast<unsigned>(mb)) << 32) |
                               static_cast<unsigned>(bi);
  return static_cast<int>(hash3(seed ^ 0x746f6b656e73ULL, stream, static_cast<std::uint64_t>(pos)) %
                          static_cast<std::uint64_t>(vocab));
}

}  // namespace pipebench::kernels
