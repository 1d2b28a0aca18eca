// Every registered schedule, over p 1..16, m 1..64, v 1..4 (only its own v when v is fixed): what
// make_schedule accepts must validate (shape, completeness, replay without deadlock), and it must accept
// exactly what the docs say is allowed. Schedules added later are covered through schedule_catalog().
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/simulate.hpp"
#include "analysis/validate.hpp"

using namespace pipebench::analysis;

namespace {

using Allowed = std::function<bool(int p, int m, int v)>;

// What docs/schedules.md and docs/schedules-v.md allow, for the default group of interleaved. Every
// registered schedule must have its line here.
const std::map<std::string, Allowed>& documented() {
  static const std::map<std::string, Allowed> rules = {
      {"gpipe", [](int, int, int) { return true; }},
      {"1f1b", [](int, int, int) { return true; }},
      {"interleaved", [](int p, int m, int v) { return v == 1 || (m >= p && m % p == 0); }},
      {"looped-bfs", [](int, int, int) { return true; }},
      {"zb-h1", [](int, int, int) { return true; }},
      {"zb-h2", [](int, int, int) { return true; }},
      {"zbv", [](int, int, int) { return true; }},
      {"dualpipev", [](int p, int m, int) { return m >= 2 * p; }},
      {"dualpipe", [](int p, int m, int) { return p % 2 == 0 && m % 2 == 0 && m >= 2 * p; }},
  };
  return rules;
}

}  // namespace

TEST(GenGrid, EveryScheduleValidatesOverTheGrid) {
  for (const ScheduleRow& info : schedule_catalog()) {
    SCOPED_TRACE(info.name);
    const auto rule = documented().find(info.name);  // checked by the test below
    std::vector<int> vs = {info.default_v};
    if (!info.fixed_v) vs = {1, 2, 3, 4};
    int accepted = 0;
    for (int p = 1; p <= 16; ++p)
      for (int m = 1; m <= 64; ++m)
        for (int v : vs) {
          Schedule s;
          try {
            s = make_schedule({info.name, p, m, v});
          } catch (const pipebench::UsageError& e) {
            if (rule != documented().end() && rule->second(p, m, v))
              ADD_FAILURE() << "p=" << p << " m=" << m << " v=" << v << " is documented as allowed: " << e.what();
            continue;
          }
          ++accepted;
          if (rule != documented().end() && !rule->second(p, m, v))
            ADD_FAILURE() << "p=" << p << " m=" << m << " v=" << v << " is accepted, but the docs say it is refused";
          ASSERT_EQ(s.name, info.name);
          ASSERT_EQ(s.p, p);
          ASSERT_EQ(s.m, m);
          ASSERT_EQ(s.v(), v);
          try {
            validate(s);
          } catch (const ScheduleError& e) {
            FAIL() << "p=" << p << " m=" << m << " v=" << v << ": " << e.what();
          }
        }
    EXPECT_GT(accepted, 0) << "no combination of the grid is accepted";
    if (info.fixed_v) {
      EXPECT_THROW(make_schedule({info.name, 4, 16, info.default_v + 1}), pipebench::UsageError);
    }
  }
}

TEST(GenGrid, EveryRegisteredScheduleHasDocumentedConstraints) {
  for (const ScheduleRow& info : schedule_catalog())
    EXPECT_EQ(documented().count(info.name), 1u) << "schedule '" << info.name << "' has no line in documented()";
}

TEST(GenGrid, GPipeAnd1F1BFormulas) {
  // docs/schedules.md: for every m, makespan (m+p-1)(F+B), idle (p-1)(F+B), span bubble of rank r
  // (p-1-r)(F+B); peak m (GPipe) and min(p-r, m) (1F1B).
  const double fb[][2] = {{1, 2}, {1, 1}, {3, 1}};
  for (const char* name : {"gpipe", "1f1b"})
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m)
        for (const auto& t : fb) {
          const Schedule s = make_schedule({name, p, m});
          const Metrics mt = simulate(s, uniform_costs(s, t[0], t[1], 0)).metrics;
          const double step = t[0] + t[1];
          EXPECT_DOUBLE_EQ(mt.makespan, (m + p - 1) * step) << name << " p=" << p << " m=" << m;
          for (const RankMetrics& rm : mt.ranks) {
            EXPECT_DOUBLE_EQ(rm.idle, (p - 1) * step);
            EXPECT_DOUBLE_EQ(rm.span_bubble, (p - 1 - rm.rank) * step);
            EXPECT_EQ(rm.peak_inflight, std::string(name) == "gpipe" ? m : std::min(p - rm.rank, m));
          }
        }
}
