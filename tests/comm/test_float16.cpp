// The 16-bit conversions (comm/float16.hpp) over every bit pattern: each finite or infinite value comes
// back to its own bits, NaN stays NaN, and every point between two neighbours rounds to the nearer, a
// tie to the one with the even last bit (round to nearest even, IEEE 754's default).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "comm/float16.hpp"

using namespace pipebench::comm;

namespace {

template <class To, class From>
void check_every_pattern(To to, From from, std::uint32_t exponent_mask) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = from(bits);
    const bool nan = (h & exponent_mask) == exponent_mask && (h & ~exponent_mask & 0x7fffu) != 0;
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_TRUE(std::isnan(from(to(f)))) << std::hex << h;
      continue;
    }
    ASSERT_EQ(to(f), bits) << std::hex << h;
    // Between this finite value and the next one up (same sign): the midpoint and its neighbours.
    const auto next = static_cast<std::uint16_t>(h + 1);
    if ((h & 0x7fffu) >= (exponent_mask & 0x7fffu) || (next & exponent_mask) == exponent_mask) continue;
    const float g = from(next), mid = f + (g - f) / 2;
    ASSERT_EQ(to(std::nextafter(mid, f)), bits) << std::hex << h;
    ASSERT_EQ(to(std::nextafter(mid, g)), next) << std::hex << h;
    ASSERT_EQ(to(mid), (h & 1) ? next : bits) << std::hex << h << ": a tie goes to the even neighbour";
  }
}

}  // namespace

TEST(Float16, HalfRoundsToNearestEvenOverEveryPattern) {
  check_every_pattern(to_half, from_half, 0x7c00u);
  EXPECT_EQ(from_half(to_half(65504.0f)), 65504.0f);
  EXPECT_EQ(from_half(to_half(65519.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(from_half(to_half(65520.0f))));  // the tie above the largest goes to infinity
  EXPECT_EQ(from_half(to_half(std::ldexp(1.0f, -25))), 0.0f);  // half the smallest subnormal: a tie, to 0
  EXPECT_EQ(from_half(to_half(std::ldexp(1.5f, -25))), std::ldexp(1.0f, -24));
}

TEST(Float16, Bfloat16RoundsToNearestEvenOverEveryPattern) {
  check_every_pattern(to_bf16, from_bf16, 0x7f80u);
  EXPECT_EQ(from_bf16(to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);  // a tie: to the even 1
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isinf(from_bf16(to_bf16(3.4e38f))));
}
