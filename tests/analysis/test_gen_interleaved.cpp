// Interleaved 1F1B (Megatron-Core) and looped BFS (torch): exact lists, equivalence with torch's
// interleaved schedule, the bubble and memory formulas of docs/formulas.md, constraints, CSV round trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/csv.hpp"
#include "analysis/error.hpp"
#include "analysis/simulate.hpp"
#include "analysis/validate.hpp"

using namespace pipebench::analysis;

namespace {

Schedule interleaved(int p, int m, int v, int group = 0) { return make_schedule({"interleaved", p, m, v, group}); }

std::string usage_error(const ScheduleParams& q) {
  try {
    make_schedule(q);
  } catch (const pipebench::UsageError& e) {
    return e.what();
  }
  return "";
}

bool megatron_accepts(int p, int m, int g) { return p <= g && g <= m && (m % g == 0 || m % g >= p); }

// torch ScheduleInterleaved1F1B._calculate_single_rank_operations with _get_1f1b_rank_ops, compute
// actions only (its None padding dropped): rounds = max(1, m div p), mpr = m / rounds micro-batches
// per round, warm-up min((v-1) mpr + 2(p-1-r), m v), forward stage from (op div mpr) mod v, backward
// stage mirrored, micro-batches counted per stage. A reference model written from the Python source.
std::vector<std::vector<Action>> torch_interleaved(int p, int m, int v) {
  const int mpr = m / std::max(1, m / p);
  std::vector<std::vector<Action>> out(p);
  for (int r = 0; r < p; ++r) {
    const int warm = std::min((v - 1) * mpr + 2 * (p - 1 - r), m * v);
    std::map<int, int> fmb, bmb;
    auto fwd = [&](int op) {
      const int st = (op / mpr) % v * p + r;
      out[r].push_back(Action::make(Kind::F, st, fmb[st]++));
    };
    auto bwd = [&](int op) {
      const int st = (v - 1 - (op - warm) / mpr % v) * p + r;
      out[r].push_back(Action::make(Kind::B, st, bmb[st]++));
    };
    for (int op = 0; op < m * v + warm; ++op) {
      if (op < warm) {
        fwd(op);
      } else if (op < m * v) {
        fwd(op);
        bwd(op);
      } else {
        bwd(op);
      }
    }
  }
  return out;
}

void expect_csv_round_trip(const Schedule& s) {
  std::istringstream in(to_csv(s));
  const Schedule t = from_csv(in);
  EXPECT_EQ(t.p, s.p);
  EXPECT_EQ(t.m, s.m);
  EXPECT_EQ(t.stage_rank, s.stage_rank);
  EXPECT_EQ(t.actions, s.actions);
}

}  // namespace

TEST(GenInterleaved, MegatronScheduleTableExample) {
  // Megatron-Core's own example in forward_backward_pipelining_with_interleaving: PP2, group 3, M5, VP2,
  // table mb 0 1 2 0 1 2 3 4 3 4 / chunk 0 0 0 1 1 1 0 0 1 1. Warm-up 2(p-r-1) + (v-1)g = 5 and 3;
  // backward k runs slot k's micro-batch on the mirrored chunk. Hand-derived from that source.
  const Schedule s = interleaved(2, 5, 2, 3);
  EXPECT_EQ(to_grid(s),
            "rank 0: 0F0 0F1 0F2 2F0 2F1 2F2 2B0 0F3 2B1 0F4 2B2 2F3 0B0 2F4 0B1 0B2 2B3 2B4 0B3 0B4\n"
            "rank 1: 1F0 1F1 1F2 3F0 3B0 3F1 3B1 3F2 3B2 1F3 1B0 1F4 1B1 3F3 1B2 3F4 3B3 3B4 1B3 1B4\n");
  EXPECT_EQ(s.stage_rank, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_NO_THROW(validate(s));
}

TEST(GenInterleaved, TorchSmallCase) {
  // torch ScheduleInterleaved1F1B, p = 2, m = 4, two stages per rank: 2 rounds of 2 micro-batches,
  // warm-up 4 and 2, then F and B per step. Hand-derived from _get_1f1b_rank_ops; Megatron's default
  // group (g = p = 2) gives the same lists.
  const Schedule s = interleaved(2, 4, 2);
  EXPECT_EQ(to_grid(s),
            "rank 0: 0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3\n"
            "rank 1: 1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3\n");
}

TEST(GenInterleaved, MatchesTorchRoundsAsGroups) {
  // torch's rounds are Megatron groups of g = m / max(1, m div p); torch needs m divisible by the number
  // of rounds and, for this comparison, m >= p (Megatron refuses smaller groups).
  int compared = 0;
  for (int p = 1; p <= 6; ++p)
    for (int m = p; m <= 24; ++m) {
      const int rounds = std::max(1, m / p);
      if (m % rounds != 0) continue;
      for (int v = 2; v <= 4; ++v) {
        EXPECT_EQ(interleaved(p, m, v, m / rounds).actions, torch_interleaved(p, m, v))
            << "p=" << p << " m=" << m << " v=" << v;
        ++compared;
      }
    }
  EXPECT_EQ(compared, 249);
}

TEST(GenInterleaved, OneChunkIs1F1B) {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 20; ++m) {
      const Schedule s = interleaved(p, m, 1);
      EXPECT_EQ(s.name, "interleaved");
      EXPECT_EQ(s.actions, make_schedule({"1f1b", p, m}).actions) << "p=" << p << " m=" << m;
    }
}

TEST(GenInterleaved, DefaultsAreTwoChunksAndGroupP) {
  const Schedule s = make_schedule({"interleaved", 4, 8});
  EXPECT_EQ(s.v(), 2);
  EXPECT_EQ(s.num_stages(), 8);
  EXPECT_EQ(s.actions, interleaved(4, 8, 2, 4).actions);
}

TEST(GenInterleaved, BubbleAndPeakFormulas) {
  // docs/formulas.md: idle per rank (p-1)(F+B) with chunk times (1/v of 1F1B's), bubble fraction
  // (p-1)/(v m + p - 1), peak on rank r min(2(p-r-1) + (v-1)g + 1, m v), for every group Megatron accepts.
  struct Times {
    double f, b;
  };
  const Times times[] = {{1, 2}, {1, 1}, {3, 1}};
  int checked = 0;
  for (int p = 1; p <= 6; ++p)
    for (int v = 2; v <= 4; ++v)
      for (int m = p; m <= 16; ++m)
        for (int g = p; g <= m; ++g) {
          if (!megatron_accepts(p, m, g)) continue;
          const Schedule s = interleaved(p, m, v, g);
          ASSERT_NO_THROW(validate(s)) << "p=" << p << " m=" << m << " v=" << v << " g=" << g;
          for (const Times& t : times) {
            const Metrics mt = simulate(s, uniform_costs(s, t.f, t.b, 0)).metrics;
            const double idle = (p - 1) * (t.f + t.b) / v;
            EXPECT_NEAR(mt.bubble_fraction, double(p - 1) / (v * m + p - 1), 1e-12);
            for (const RankMetrics& rm : mt.ranks) {
              EXPECT_NEAR(rm.idle, idle, 1e-9) << "p=" << p << " m=" << m << " v=" << v << " g=" << g;
              EXPECT_EQ(rm.peak_inflight, std::min(2 * (p - rm.rank - 1) + (v - 1) * g + 1, m * v));
            }
          }
          ++checked;
        }
  EXPECT_EQ(checked, 1140);
}

TEST(GenInterleaved, RejectsWhatMegatronRejects) {
  EXPECT_NE(usage_error({"interleaved", 4, 3, 2}).find("needs m >= p (p = 4, m = 3)"), std::string::npos);
  EXPECT_NE(usage_error({"interleaved", 4, 8, 2, 3}).find("group = 3 is not allowed"), std::string::npos);
  EXPECT_NE(usage_error({"interleaved", 4, 8, 2, 9}).find("must be in [p, m] = [4, 8]"), std::string::npos);
  // Default group p = 4 with m = 10 leaves a last group of 2 < p.
  const std::string rest = usage_error({"interleaved", 4, 10, 2});
  EXPECT_NE(rest.find("m mod group = 2"), std::string::npos) << rest;
  EXPECT_NE(rest.find("groups that work: 5, 6, 10"), std::string::npos) << rest;
  for (int p = 1; p <= 6; ++p)
    for (int m = 1; m <= 16; ++m)
      for (int g = 1; g <= 18; ++g)
        EXPECT_EQ(usage_error({"interleaved", p, m, 3, g}).empty(), megatron_accepts(p, m, g))
            << "p=" << p << " m=" << m << " g=" << g;
  // One chunk is 1F1B: the group plays no part and m < p is fine.
  EXPECT_NO_THROW(interleaved(4, 2, 1));
  EXPECT_NE(usage_error({"1f1b", 4, 8, 0, 4}).find("only 'interleaved' takes a micro-batch group size"),
            std::string::npos);
}

TEST(GenInterleaved, CsvRoundTrip) {
  expect_csv_round_trip(interleaved(4, 8, 2));
  expect_csv_round_trip(interleaved(3, 7, 3, 4));  // a last group of 3
  expect_csv_round_trip(interleaved(1, 3, 4));
}

TEST(GenLoopedBfs, TorchSmallCase) {
  // torch ScheduleLoopedBFS, p = 2, m = 3, two stages per rank: forwards stage by stage, then backwards
  // from the last local stage with micro-batches in reverse. Hand-derived from the Python source.
  const Schedule s = make_schedule({"looped-bfs", 2, 3, 2});
  EXPECT_EQ(to_grid(s),
            "rank 0: 0F0 0F1 0F2 2F0 2F1 2F2 2B2 2B1 2B0 0B2 0B1 0B0\n"
            "rank 1: 1F0 1F1 1F2 3F0 3F1 3F2 3B2 3B1 3B0 1B2 1B1 1B0\n");
  EXPECT_EQ(make_schedule({"looped-bfs", 2, 3}).actions, s.actions);  // default v = 2
  EXPECT_EQ(to_grid(make_schedule({"looped-bfs", 2, 2, 1})),
            "rank 0: 0F0 0F1 0B1 0B0\n"
            "rank 1: 1F0 1F1 1B1 1B0\n");
}

TEST(GenLoopedBfs, BubbleAndPeak) {
  // Idle per rank (p-1)(F+B) in chunk times when m >= p, like interleaved; with m < p each of the v-1
  // chunk changes waits p-m chunk steps more: ((p-1) + (v-1)(p-m))(F+B)/v. Every rank holds all m v.
  for (int p = 1; p <= 8; ++p)
    for (int v = 1; v <= 4; ++v)
      for (int m = 1; m <= 12; ++m) {
        const Schedule s = make_schedule({"looped-bfs", p, m, v});
        ASSERT_NO_THROW(validate(s));
        const Metrics mt = simulate(s, uniform_costs(s, 1, 2, 0)).metrics;
        const double idle = ((p - 1) + (v - 1) * std::max(0, p - m)) * 3.0 / v;
        for (const RankMetrics& rm : mt.ranks) {
          EXPECT_NEAR(rm.idle, idle, 1e-9) << "p=" << p << " m=" << m << " v=" << v;
          EXPECT_EQ(rm.peak_inflight, m * v);
        }
      }
}

TEST(GenLoopedBfs, CsvRoundTrip) {
  expect_csv_round_trip(make_schedule({"looped-bfs", 4, 6, 3}));
  expect_csv_round_trip(make_schedule({"looped-bfs", 3, 2, 1}));
}
