#pragma once
// The order in which `pipebench run --repeats N` visits the configurations of a sweep (docs/run.md
// "Repeats and scoring"). Interleaved: round 1 of every configuration, then round 2, ...: each
// configuration's repeats span the whole sweep, so a change of the machine's load between two
// configurations (minutes apart) falls on the repeats of all of them instead of on one configuration's
// whole sample, where it looked like a difference between two files. Consecutive: a configuration's
// repeats back to back, each configuration written as soon as it ends.
#include <string>
#include <vector>

namespace pipebench::bench {

inline constexpr const char* kRepeatOrderInterleaved = "interleaved";
inline constexpr const char* kRepeatOrderConsecutive = "consecutive";

// One visit of the sweep: repeat `repeat` (0-based) of configuration `config` (0-based, sweep order).
struct Visit {
  int config = 0;
  int repeat = 0;
  bool operator==(const Visit& o) const { return config == o.config && repeat == o.repeat; }
};

// Every visit of `configurations` x `repeats`, in the order `order` names (kRepeatOrder*; anything but
// "consecutive" interleaves). A configuration's last repeat is where it is combined and written.
inline std::vector<Visit> visit_order(int configurations, int repeats, const std::string& order) {
  std::vector<Visit> out;
  const bool consecutive = order == kRepeatOrderConsecutive;
  const int outer = consecutive ? configurations : repeats, inner = consecutive ? repeats : configurations;
  for (int a = 0; a < outer; ++a)
    for (int b = 0; b < inner; ++b) out.push_back(consecutive ? Visit{a, b} : Visit{b, a});
  return out;
}

}  // namespace pipebench::bench
