#include <gtest/gtest.h>

#include "analysis/catalog.hpp"
#include "analysis/memory.hpp"
#include "analysis/simulate.hpp"

using namespace pipebench::analysis;

TEST(Memory, EqualStashesGiveInFlightCountTimesBytes) {
  // With the same stash before and after I, bytes are the in-flight count times the stash (the
  // in-flight peak of the simulator), for every schedule.
  for (const auto& info : schedule_catalog()) {
    const Schedule s = make_schedule({info.name, 4, 8});
    const auto peaks = peak_activation_bytes(s, std::vector<StashBytes>(s.num_stages(), {1000, 1000}));
    const auto sim = simulate(s, uniform_costs(s, 1, 2, 1));
    for (int r = 0; r < s.p; ++r) EXPECT_DOUBLE_EQ(peaks[r], 1000.0 * sim.metrics.ranks[r].peak_inflight) << info.name;
  }
}

TEST(Memory, SplitBackwardSwapsTheStashAtI) {
  // One rank, two micro-batches: 0F0 0F1 0I0 0W0 0I1 0W1 with forward stash 10 and weight stash 3.
  Schedule s;
  s.p = 1;
  s.m = 2;
  s.stage_rank = {0};
  s.actions = {{Action::make(Kind::F, 0, 0), Action::make(Kind::F, 0, 1), Action::make(Kind::I, 0, 0),
                Action::make(Kind::W, 0, 0), Action::make(Kind::I, 0, 1), Action::make(Kind::W, 0, 1)}};
  EXPECT_DOUBLE_EQ(peak_activation_bytes(s, {{10, 3}})[0], 20.0);
  EXPECT_DOUBLE_EQ(peak_activation_bytes(s, {{10, 30}})[0], 40.0);  // after 0I0: 30 + 10
}
