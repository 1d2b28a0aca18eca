// compute_metrics() gives the same figures whatever order a timeline lists its ops in: the simulator
// emits each rank's ops in time order (the one-pass path), measured records may not (the sorting path).
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/catalog.hpp"
#include "analysis/metrics.hpp"
#include "analysis/simulate.hpp"

using namespace pipebench::analysis;

TEST(MetricsOrder, ShuffledTimelineGivesTheSameFigures) {
  const Schedule s = make_schedule({"1f1b", 4, 6});
  const SimResult r = simulate(s, uniform_costs(s, 1, 2, 1));
  Timeline shuffled = r.timeline;
  std::reverse(shuffled.begin(), shuffled.end());
  std::rotate(shuffled.begin(), shuffled.begin() + 5, shuffled.end());
  const Metrics m = compute_metrics(s, shuffled);
  EXPECT_DOUBLE_EQ(m.makespan, r.metrics.makespan);
  EXPECT_DOUBLE_EQ(m.bubble_fraction, r.metrics.bubble_fraction);
  ASSERT_EQ(m.ranks.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_DOUBLE_EQ(m.ranks[k].busy, r.metrics.ranks[k].busy);
    EXPECT_DOUBLE_EQ(m.ranks[k].span_bubble, r.metrics.ranks[k].span_bubble);
    EXPECT_EQ(m.ranks[k].peak_inflight, 4 - k);  // min(p-r, m), as in the simulator's own order
  }
}
