// Issue 26: --repeat-order. Interleaved visits are exactly round-robin (round r of every configuration
// before round r + 1), consecutive ones a configuration's repeats back to back; both visit every
// (configuration, repeat) once, and one repeat is the plain sweep order either way.
#include <gtest/gtest.h>

#include "bench/run/repeat_order.hpp"

namespace pipebench::bench {
namespace {

TEST(RepeatOrder, InterleavedIsRoundRobin) {
  const std::vector<Visit> v = visit_order(3, 2, kRepeatOrderInterleaved);
  const std::vector<Visit> want{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1}};
  EXPECT_EQ(v, want);
}

TEST(RepeatOrder, ConsecutiveKeepsAConfigurationsRepeatsTogether) {
  const std::vector<Visit> v = visit_order(3, 2, kRepeatOrderConsecutive);
  const std::vector<Visit> want{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}};
  EXPECT_EQ(v, want);
}

TEST(RepeatOrder, OneRepeatIsTheSweepOrder) {
  for (const char* order : {kRepeatOrderInterleaved, kRepeatOrderConsecutive}) {
    const std::vector<Visit> v = visit_order(4, 1, order);
    ASSERT_EQ(v.size(), 4u) << order;
    for (int k = 0; k < 4; ++k) EXPECT_EQ(v[k], (Visit{k, 0})) << order;
  }
}

// Every configuration's last repeat is its last visit, where it is written: in the interleaved order
// all of them come in the final round, in sweep order.
TEST(RepeatOrder, LastRepeatsComeInTheFinalRound) {
  const std::vector<Visit> v = visit_order(5, 4, kRepeatOrderInterleaved);
  ASSERT_EQ(v.size(), 20u);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i].repeat == 3, i >= 15) << i;
}

}  // namespace
}  // namespace pipebench::bench
