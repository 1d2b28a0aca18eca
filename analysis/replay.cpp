#include "analysis/replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace pipebench::analysis {

namespace {

// Outputs an action can produce that another action waits for, per (stage, micro-batch). A weight
// gradient is waited for by nobody, so it is not tracked.
enum Part : int { kFwd = 0, kGrad = 1 };  // activation, input gradient
const char* part_rule(Part p) {
  return p == kFwd ? "F of a stage needs the F of the previous stage (or, for I/B, its own F) for the same micro-batch"
                   : "I/B of a stage needs the I/B of the next stage for the same micro-batch, and W needs its own I";
}
const char* part_name(Part p) { return p == kFwd ? "F" : "I/B"; }

struct Dep {
  Part part;
  int stage;
  int mb;
};

class Engine {
 public:
  Engine(const Schedule& s, double p2p, double gap) : s_(s), p2p_(p2p), gap_(gap), S_(s.num_stages()), m_(s.m) {
    done_.assign(static_cast<std::size_t>(2) * S_ * m_, kNotDone);
    // Where each stage sits in its chain, once: the per-action test would otherwise cost two divisions.
    first_.resize(S_);
    last_.resize(S_);
    for (int st = 0; st < S_; ++st) {
      first_[st] = s.is_first_stage(st);
      last_[st] = s.is_last_stage(st);
    }
  }

  Timeline run(const DurationFn& duration) {
    const int p = static_cast<int>(s_.actions.size());
    cursor_.assign(p, 0);
    free_.assign(p, 0.0);
    waiting_on_.assign(p, -1);
    Timeline tl;
    tl.reserve(s_.num_actions());
    std::vector<int> ready(p);
    for (int r = 0; r < p; ++r) ready[r] = p - 1 - r;  // pop from the back: rank 0 first
    Dep deps[4];
    while (!ready.empty()) {
      const int r = ready.back();
      ready.pop_back();
      const auto& list = s_.actions[r];
      while (cursor_[r] < list.size()) {
        const Action& a = list[cursor_[r]];
        const int n = dependencies(a, deps);
        double start = free_[r];
        int missing = -1;
        for (int i = 0; i < n; ++i) {
          const double t = done_[key(deps[i])];
          if (t == kNotDone) {
            missing = key(deps[i]);
            break;
          }
          start = std::max(start, t + (s_.stage_rank[deps[i].stage] != r ? p2p_ : 0.0));
        }
        if (missing >= 0) {  // park on the missing output; its producer wakes us
          waiting_on_[r] = missing;
          break;
        }
        const double end = start + duration(r, a);
        free_[r] = end + gap_;
        tl.push_back(TimedOp{r, a, start, end});
        ++cursor_[r];
        produce(a, end, ready);
      }
    }
    for (int r = 0; r < p; ++r)
      if (cursor_[r] < s_.actions[r].size()) throw ScheduleError(deadlock_message());
    return tl;
  }

 private:
  static constexpr double kNotDone = -std::numeric_limits<double>::infinity();

  int key(const Dep& d) const { return (d.part * S_ + d.stage) * m_ + d.mb; }

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
  void mark(Part part, int stage, int mb, double t, std::vector<int>& ready) {
    const int k = key({part, stage, mb});
    done_[k] = t;
    const int consumer = part == kFwd ? (last_[stage] ? -1 : stage + 1) : (first_[stage] ? -1 : stage - 1);
    if (consumer < 0) return;
    const int r = s_.stage_rank[consumer];
    if (waiting_on_[r] == k) {
      waiting_on_[r] = -1;
      ready.push_back(r);
    }
  }

  void produce(const Action& a, double t, std::vector<int>& ready) {
    switch (a.kind) {
      case Kind::F: mark(kFwd, a.stage, a.mb, t, ready); break;
      case Kind::B:
      case Kind::I: mark(kGrad, a.stage, a.mb, t, ready); break;
      case Kind::W: break;
      case Kind::FB:
        mark(kFwd, a.stage, a.mb, t, ready);
        mark(kGrad, a.b_stage, a.b_mb, t, ready);
        break;
    }
  }

  // Where (rank, step) an output is produced, or rank -1 if no action produces it.
  std::pair<int, int> producer(Part part, int stage, int mb) const {
    for (int r = 0; r < static_cast<int>(s_.actions.size()); ++r) {
      const auto& list = s_.actions[r];
      for (int i = 0; i < static_cast<int>(list.size()); ++i) {
        const Action& a = list[i];
        const bool f = (a.kind == Kind::F || a.kind == Kind::FB) && a.stage == stage && a.mb == mb;
        const bool g = ((a.kind == Kind::B || a.kind == Kind::I) && a.stage == stage && a.mb == mb) ||
                       (a.kind == Kind::FB && a.b_stage == stage && a.b_mb == mb);
        if ((part == kFwd && f) || (part == kGrad && g)) return {r, i};
      }
    }
    return {-1, -1};
  }

  std::string deadlock_message() const {
    std::ostringstream os;
    int first_rank = -1;
    std::string first_line;
    for (int r = 0; r < static_cast<int>(s_.actions.size()); ++r) {
      if (cursor_[r] >= s_.actions[r].size()) continue;
      const int k = waiting_on_[r];
      const auto part = static_cast<Part>(k / (S_ * m_));
      const int stage = (k / m_) % S_, mb = k % m_;
      const auto [pr, pi] = producer(part, stage, mb);
      std::ostringstream line;
      line << "rank " << r << ", step " << cursor_[r] << " (" << to_string(s_.actions[r][cursor_[r]]) << ") waits for "
           << part_name(part) << " of stage " << stage << ", micro-batch " << mb;
      if (pr < 0)
        line << ", which no rank runs";
      else if (pr == r)
        line << ", which this rank runs later, at step " << pi << " (" << to_string(s_.actions[pr][pi]) << ")";
      else
        line << ", which rank " << pr << " runs at step " << pi << " (" << to_string(s_.actions[pr][pi]) << ")";
      if (first_rank < 0) {
        first_rank = r;
        first_line = line.str() + "\n  rule: " + part_rule(part);
      } else {
        os << "\n  also blocked: " << line.str();
      }
    }
    return "invalid schedule '" + s_.name + "': deadlock: " + first_line + os.str() + "\n" +
           grid_window(s_, first_rank, static_cast<int>(cursor_[first_rank]));
  }

  const Schedule& s_;
  double p2p_;
  double gap_;
  int S_, m_;
  std::vector<char> first_, last_;  // stage is the first / last of its model copy
  std::vector<double> done_;
  std::vector<std::size_t> cursor_;
  std::vector<double> free_;
  std::vector<int> waiting_on_;  // per rank: the output key it is blocked on, or -1
};

}  // namespace

Timeline replay(const Schedule& s, const DurationFn& duration, double p2p, double gap) {
  return Engine(s, p2p, gap).run(duration);
}

std::string grid_window(const Schedule& s, int rank, int step, int radius) {
  const int lo = std::max(0, step - radius);
  const int hi = step + radius;
  std::ostringstream os;
  os << "  steps " << lo << ".." << hi << ":\n";
  for (int r = 0; r < static_cast<int>(s.actions.size()); ++r) {
    os << (r == rank ? "> " : "  ") << "rank " << r << ":";
    const auto& list = s.actions[r];
    for (int i = lo; i <= hi && i < static_cast<int>(list.size()); ++i) {
      const std::string t = to_string(list[i]);
      os << ' ' << (r == rank && i == step ? "[" + t + "]" : t);
    }
    os << '\n';
  }
  return os.str();
}

}  // namespace pipebench::analysis
