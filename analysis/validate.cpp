#include "analysis/validate.hpp"

#include <string>
#include <vector>

namespace pipebench::analysis {

namespace {

[[noreturn]] void fail(const Schedule& s, int rank, int step, const std::string& what, const std::string& rule) {
  std::string msg = "invalid schedule '" + s.name + "': rank " + std::to_string(rank) + ", step " +
                    std::to_string(step) + " (" + to_string(s.actions[rank][step]) + "): " + what;
  if (!rule.empty()) msg += "\n  rule: " + rule;
  throw ScheduleError(msg + "\n" + grid_window(s, rank, step));
}

[[noreturn]] void fail_shape(const Schedule& s, const std::string& what) {
  throw ScheduleError("invalid schedule '" + s.name + "': " + what);
}

void check_shape(const Schedule& s) {
  if (s.p < 1) fail_shape(s, "p = " + std::to_string(s.p) + ", must be >= 1");
  if (s.m < 1) fail_shape(s, "m = " + std::to_string(s.m) + ", must be >= 1");
  if (s.pipes < 1) fail_shape(s, "pipes = " + std::to_string(s.pipes) + ", must be >= 1");
  if (static_cast<int>(s.actions.size()) != s.p)
    fail_shape(s, "has action lists for " + std::to_string(s.actions.size()) + " ranks, but p = " + std::to_string(s.p));
  if (s.num_stages() == 0 || s.num_stages() % s.pipes != 0)
    fail_shape(s, std::to_string(s.num_stages()) + " stages cannot be split into " + std::to_string(s.pipes) +
                      " equal model copies");
  if (s.m % s.pipes != 0)
    fail_shape(s, "m = " + std::to_string(s.m) + " micro-batches cannot be split over " + std::to_string(s.pipes) +
                      " model copies");
  std::vector<int> held(s.p, 0);
  for (int st = 0; st < s.num_stages(); ++st) {
    const int r = s.stage_rank[st];
    if (r < 0 || r >= s.p)
      fail_shape(s, "stage " + std::to_string(st) + " is mapped to rank " + std::to_string(r) + ", allowed 0.." +
                        std::to_string(s.p - 1));
    ++held[r];
  }
  for (int r = 0; r < s.p; ++r)
    if (held[r] == 0) fail_shape(s, "rank " + std::to_string(r) + " holds no stage");
}

void check_action(const Schedule& s, int r, int i, int stage, int mb) {
  if (stage < 0 || stage >= s.num_stages())
    fail(s, r, i, "stage " + std::to_string(stage) + " out of range 0.." + std::to_string(s.num_stages() - 1), "");
  if (mb < 0 || mb >= s.m)
    fail(s, r, i, "micro-batch " + std::to_string(mb) + " out of range 0.." + std::to_string(s.m - 1), "");
  if (s.stage_rank[stage] != r)
    fail(s, r, i, "stage " + std::to_string(stage) + " is held by rank " + std::to_string(s.stage_rank[stage]),
         "each stage runs on one rank");
  if (s.pipe_of_stage(stage) != s.pipe_of_mb(mb))
    fail(s, r, i,
         "micro-batch " + std::to_string(mb) + " belongs to model copy " + std::to_string(s.pipe_of_mb(mb)) +
             ", stage " + std::to_string(stage) + " to copy " + std::to_string(s.pipe_of_stage(stage)),
         "a micro-batch runs through the stages of one model copy");
}

// Counts of each kind per (stage, mb), and where the first of each was seen (for messages).
struct Seen {
  int count[4] = {0, 0, 0, 0};  // F, B, I, W
  int rank[4] = {-1, -1, -1, -1};
  int step[4] = {-1, -1, -1, -1};
};

void check_completeness(const Schedule& s) {
  const int S = s.num_stages();
  std::vector<Seen> seen(static_cast<std::size_t>(S) * s.m);
  auto note = [&](int r, int i, Kind k, int stage, int mb) {
    check_action(s, r, i, stage, mb);
    Seen& e = seen[static_cast<std::size_t>(stage) * s.m + mb];
    const int ki = static_cast<int>(k);
    if (++e.count[ki] > 1)
      fail(s, r, i,
           std::string("duplicate ") + kind_name(k) + " of stage " + std::to_string(stage) + ", micro-batch " +
               std::to_string(mb) + " (first at rank " + std::to_string(e.rank[ki]) + ", step " +
               std::to_string(e.step[ki]) + ")",
           "every (stage, micro-batch) gets exactly one F and either one B or one I and one W");
    e.rank[ki] = r;
    e.step[ki] = i;
  };
  for (int r = 0; r < s.p; ++r) {
    for (int i = 0; i < static_cast<int>(s.actions[r].size()); ++i) {
      const Action& a = s.actions[r][i];
      if (a.kind == Kind::FB) {
        note(r, i, Kind::F, a.stage, a.mb);
        note(r, i, Kind::B, a.b_stage, a.b_mb);
      } else {
        note(r, i, a.kind, a.stage, a.mb);
      }
    }
  }
  const std::string rule = "every (stage, micro-batch) gets exactly one F and either one B or one I and one W";
  for (int st = 0; st < S; ++st) {
    for (int mb = 0; mb < s.m; ++mb) {
      if (s.pipe_of_stage(st) != s.pipe_of_mb(mb)) continue;
      const Seen& e = seen[static_cast<std::size_t>(st) * s.m + mb];
      // Built only for a message: one string per (stage, micro-batch) would dominate the validator's time.
      auto where = [&] {
        return "stage " + std::to_string(st) + " (rank " + std::to_string(s.stage_rank[st]) + "), micro-batch " +
               std::to_string(mb);
      };
      const int B = e.count[1], I = e.count[2], W = e.count[3];
      std::string missing;
      if (e.count[0] == 0) missing = "F";
      else if (B == 0 && I == 0 && W == 0) missing = "B (or I and W)";
      else if (B == 0 && I == 0) missing = "I";
      else if (B == 0 && W == 0) missing = "W";
      if (!missing.empty())
        throw ScheduleError("invalid schedule '" + s.name + "': missing " + missing + " of " + where() +
                            "\n  rule: " + rule);
      if (B == 1 && (I + W) > 0) {
        const int k = I > 0 ? 2 : 3;
        fail(s, e.rank[k], e.step[k], where() + " has both a full B and a split " + (I > 0 ? "I" : "W"), rule);
      }
    }
  }
}

}  // namespace

void validate(const Schedule& s) {
  check_shape(s);
  check_completeness(s);
  replay(s, [](int, const Action&) { return 1.0; });
}

}  // namespace pipebench::analysis
