#include "analysis/validate.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/replay_engine.hpp"

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
  // With one model copy every stage and micro-batch in range belong to it: no division per action.
  if (s.pipes > 1 && s.pipe_of_stage(stage) != s.pipe_of_mb(mb))
    fail(s, r, i,
         "micro-batch " + std::to_string(mb) + " belongs to model copy " + std::to_string(s.pipe_of_mb(mb)) +
             ", stage " + std::to_string(stage) + " to copy " + std::to_string(s.pipe_of_stage(stage)),
         "a micro-batch runs through the stages of one model copy");
}

// Calls f(rank, step, kind, stage, mb) for every action in list order, an F&B pair as its F then its B.
template <class F>
void for_each_part(const Schedule& s, F&& f) {
  for (int r = 0; r < s.p; ++r) {
    const auto& list = s.actions[r];
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      const Action& a = list[i];
      if (a.kind == Kind::FB) {
        if (!f(r, i, Kind::F, a.stage, a.mb)) return;
        if (!f(r, i, Kind::B, a.b_stage, a.b_mb)) return;
      } else if (!f(r, i, a.kind, a.stage, a.mb)) {
        return;
      }
    }
  }
}

// Where the first action of this kind, stage and micro-batch is, in list order (for messages only).
std::pair<int, int> first_of(const Schedule& s, Kind k, int stage, int mb) {
  std::pair<int, int> at{-1, -1};
  for_each_part(s, [&](int r, int i, Kind kind, int st, int b) {
    if (kind != k || st != stage || b != mb) return true;
    at = {r, i};
    return false;
  });
  return at;
}

const char* const kCompleteRule = "every (stage, micro-batch) gets exactly one F and either one B or one I and one W";

// One byte per (stage, micro-batch), a bit per kind seen (F, B, I, W): where a duplicate or a mix was
// first seen is looked up again only to word an error.
void check_completeness(const Schedule& s) {
  const int S = s.num_stages();
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(S) * s.m, 0);
  for_each_part(s, [&](int r, int i, Kind k, int stage, int mb) {
    check_action(s, r, i, stage, mb);
    std::uint8_t& e = seen[static_cast<std::size_t>(stage) * s.m + mb];
    const auto bit = static_cast<std::uint8_t>(1u << static_cast<int>(k));
    if (e & bit) {
      const auto [fr, fi] = first_of(s, k, stage, mb);
      fail(s, r, i,
           std::string("duplicate ") + kind_name(k) + " of stage " + std::to_string(stage) + ", micro-batch " +
               std::to_string(mb) + " (first at rank " + std::to_string(fr) + ", step " + std::to_string(fi) + ")",
           kCompleteRule);
    }
    e |= bit;
    return true;
  });
  constexpr std::uint8_t kF = 1, kB = 2, kI = 4, kW = 8;
  const int per_pipe = s.mbs_per_pipe();
  for (int st = 0; st < S; ++st) {
    // The micro-batches of this stage's model copy (all of them with one copy).
    const int lo = s.pipes > 1 ? s.pipe_of_stage(st) * per_pipe : 0;
    const int hi = s.pipes > 1 ? lo + per_pipe : s.m;
    const std::uint8_t* row = seen.data() + static_cast<std::size_t>(st) * s.m;
    for (int mb = lo; mb < hi; ++mb) {
      const std::uint8_t e = row[mb];
      if (e == (kF | kB) || e == (kF | kI | kW)) continue;  // complete: the common case
      // Built only for a message: one string per (stage, micro-batch) would dominate the validator's time.
      auto where = [&] {
        return "stage " + std::to_string(st) + " (rank " + std::to_string(s.stage_rank[st]) + "), micro-batch " +
               std::to_string(mb);
      };
      const bool B = e & kB, I = e & kI, W = e & kW;
      std::string missing;
      if (!(e & kF)) missing = "F";
      else if (!B && !I && !W) missing = "B (or I and W)";
      else if (!B && !I) missing = "I";
      else if (!B && !W) missing = "W";
      if (!missing.empty())
        throw ScheduleError("invalid schedule '" + s.name + "': missing " + missing + " of " + where() +
                            "\n  rule: " + kCompleteRule);
      if (B && (I || W)) {
        const auto [fr, fi] = first_of(s, I ? Kind::I : Kind::W, st, mb);
        fail(s, fr, fi, where() + " has both a full B and a split " + (I ? "I" : "W"), kCompleteRule);
      }
    }
  }
}

}  // namespace

void validate_without_replay(const Schedule& s) {
  check_shape(s);
  check_completeness(s);
}

void validate(const Schedule& s) {
  validate_without_replay(s);
  // Deadlocks do not depend on durations: any will do, and no timeline is kept.
  detail::ReplayEngine(s, 0, 0).run([](int, const Action&) { return 1.0; },
                                    [](int, std::size_t, const Action&, double, double) {});
}

}  // namespace pipebench::analysis
