#pragma once
// Internal to analysis/: the dependency engine of replay.hpp as a template over the duration of an
// action and over what is done with each timed action, so that the simulator and the validator pay for
// no call through std::function and keep no timeline they do not need. replay.hpp describes the rules.
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "analysis/replay.hpp"
#include "analysis/schedule.hpp"

namespace pipebench::analysis::detail {

class ReplayEngine {
 public:
  ReplayEngine(const Schedule& s, double p2p, double gap, double p2p_pair = -1, const std::vector<double>& link_p2p = {},
               const std::vector<double>& link_wait = {});

  // Calls duration(rank, action) -> double for each action, and sink(rank, step, action, start, end)
  // once per action: each rank's actions in its own order (so in time order), the ranks interleaved as
  // they are resolved. Throws ScheduleError if ranks are left blocked.
  template <class Duration, class Sink>
  void run(const Duration& duration, Sink&& sink);

 private:
  enum Part : int { kFwd = 0, kGrad = 1 };  // activation, input gradient
  struct Dep {
    Part part;
    int stage;
    int mb;
  };
  static constexpr double kNotDone = -std::numeric_limits<double>::infinity();

  int key(const Dep& d) const { return (d.part * S_ + d.stage) * m_ + d.mb; }
  // The link an input crosses: an activation from stage b to b + 1 and a gradient from b + 1 to b
  // both cross boundary b.
  int boundary(const Dep& d) const { return d.part == kFwd ? d.stage : d.stage - 1; }
  double link_time(const Dep& d) const { return link_[boundary(d)]; }
  int forward_deps(int stage, int mb, Dep* out) const {
    if (first_[stage]) return 0;
    out[0] = {kFwd, stage - 1, mb};
    return 1;
  }
  int backward_deps(int stage, int mb, Dep* out) const {
    out[0] = {kFwd, stage, mb};
    if (last_[stage]) return 1;
    out[1] = {kGrad, stage + 1, mb};
    return 2;
  }
  int dependencies(const Action& a, Dep* out) const {
    switch (a.kind) {
      case Kind::F: return forward_deps(a.stage, a.mb, out);
      case Kind::B:
      case Kind::I: return backward_deps(a.stage, a.mb, out);
      case Kind::W: out[0] = {kGrad, a.stage, a.mb}; return 1;
      case Kind::FB: {
        const int n = forward_deps(a.stage, a.mb, out);
        return n + backward_deps(a.b_stage, a.b_mb, out + n);
      }
    }
    return 0;
  }
  // Records an output and wakes the one rank that can be blocked on it. Besides the producing rank
  // itself (running, so not blocked), only the neighbouring stage's rank consumes an output: the next
  // stage's for an activation, the previous stage's for an input gradient (validate() has checked that
  // every action runs on the rank holding its stage).
  void mark(Part part, int stage, int mb, double t) {
    const int k = key({part, stage, mb});
    done_[k] = t;
    const int consumer = part == kFwd ? (last_[stage] ? -1 : stage + 1) : (first_[stage] ? -1 : stage - 1);
    if (consumer < 0) return;
    const int r = s_.stage_rank[consumer];
    if (waiting_on_[r] == k) {
      waiting_on_[r] = -1;
      ready_.push_back(r);
    }
  }
  void produce(const Action& a, double t) {
    switch (a.kind) {
      case Kind::F: mark(kFwd, a.stage, a.mb, t); break;
      case Kind::B:
      case Kind::I: mark(kGrad, a.stage, a.mb, t); break;
      case Kind::W: break;
      case Kind::FB:
        mark(kFwd, a.stage, a.mb, t);
        mark(kGrad, a.b_stage, a.b_mb, t);
        break;
    }
  }
  void check_finished() const;
  std::pair<int, int> producer(Part part, int stage, int mb) const;
  std::string deadlock_message() const;
  static const char* part_rule(Part p);
  static const char* part_name(Part p);

  const Schedule& s_;
  double p2p_pair_;           // for an action with two inputs from other ranks; < 0: each input its link's time
  std::vector<double> link_;  // per stage boundary
  std::vector<double> wait_;  // per stage boundary: the least time after the receiver reaches the input
  double gap_;
  int S_, m_;
  std::vector<char> first_, last_;  // stage is the first / last of its model copy
  std::vector<double> done_;        // per output key: when it was produced, or kNotDone
  std::vector<std::size_t> cursor_;
  std::vector<double> free_;
  std::vector<int> waiting_on_;  // per rank: the output key it is blocked on, or -1
  std::vector<int> ready_;       // ranks that can run, popped from the back
};

template <class Duration, class Sink>
void ReplayEngine::run(const Duration& duration, Sink&& sink) {
  const int p = static_cast<int>(s_.actions.size());
  ready_.resize(p);
  for (int r = 0; r < p; ++r) ready_[r] = p - 1 - r;  // rank 0 first
  Dep deps[4];
  while (!ready_.empty()) {
    const int r = ready_.back();
    ready_.pop_back();
    const auto& list = s_.actions[r];
    std::size_t i = cursor_[r];
    double free = free_[r];
    for (; i < list.size(); ++i) {
      const Action& a = list[i];
#if defined(__GNUC__)
      // Ranks take turns, one or two actions each, so the hardware sees p interleaved streams of
      // actions and stops following them: fetch this rank's list a few lines ahead.
      __builtin_prefetch(list.data() + i + 16);
#endif
      const int n = dependencies(a, deps);
      double start = free;
      int missing = -1, remote = 0;
      for (int d = 0; d < n; ++d) remote += s_.stage_rank[deps[d].stage] != r;
      const bool pair = remote > 1 && p2p_pair_ >= 0;
      for (int d = 0; d < n; ++d) {
        const double t = done_[key(deps[d])];
        if (t == kNotDone) {
          missing = key(deps[d]);
          break;
        }
        const bool other = s_.stage_rank[deps[d].stage] != r;
        double arrive = t + (other ? (pair ? p2p_pair_ : link_time(deps[d])) : 0.0);
        if (other && arrive < free + wait_[boundary(deps[d])]) arrive = free + wait_[boundary(deps[d])];
        start = start < arrive ? arrive : start;
      }
      if (missing >= 0) {  // park on the missing output; its producer wakes us
        waiting_on_[r] = missing;
        break;
      }
      const double end = start + duration(r, a);
      free = end + gap_;
      sink(r, i, a, start, end);
      produce(a, end);
    }
    cursor_[r] = i;
    free_[r] = free;
  }
  check_finished();
}

}  // namespace pipebench::analysis::detail
