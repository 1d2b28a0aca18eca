// GPipe and 1F1B: one stage per rank.
#include <algorithm>

#include "analysis/generators_impl.hpp"

namespace pipebench::analysis::detail {

// All forwards, then all backwards in micro-batch order (torch ScheduleGPipe).
Schedule gpipe(const ScheduleParams& q) {
  Schedule s = looped_layout("gpipe", q.p, q.m, 1);
  for (int r = 0; r < q.p; ++r) {
    auto& list = s.actions[r];
    list.reserve(static_cast<std::size_t>(2) * q.m);  // exact: grown by doubling it held up to twice that
    for (int k = 0; k < q.m; ++k) list.push_back(Action::make(Kind::F, r, k));
    for (int k = 0; k < q.m; ++k) list.push_back(Action::make(Kind::B, r, k));
  }
  return s;
}

// Rank r runs min(p-r, m) forwards, then alternates one backward and one forward, then drains the
// backwards (Megatron's warm-up of p-r-1 forwards followed by 1F1B starting with F is the same list;
// torch Schedule1F1B too). Peak in-flight on rank r: min(p-r, m).
Schedule one_f_one_b(const ScheduleParams& q) {
  Schedule s = looped_layout("1f1b", q.p, q.m, 1);
  for (int r = 0; r < q.p; ++r) {
    auto& list = s.actions[r];
    list.reserve(static_cast<std::size_t>(2) * q.m);
    const int warm = std::min(q.p - r, q.m);
    int f = 0, b = 0;
    while (f < warm) list.push_back(Action::make(Kind::F, r, f++));
    while (b < q.m) {
      list.push_back(Action::make(Kind::B, r, b++));
      if (f < q.m) list.push_back(Action::make(Kind::F, r, f++));
    }
  }
  return s;
}

}  // namespace pipebench::analysis::detail
