#include "analysis/replay.hpp"

#include "analysis/replay_engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace pipebench::analysis {

namespace detail {

const char* ReplayEngine::part_rule(Part p) {
  return p == kFwd ? "F of a stage needs the F of the previous stage (or, for I/B, its own F) for the same micro-batch"
                   : "I/B of a stage needs the I/B of the next stage for the same micro-batch, and W needs its own I";
}
const char* ReplayEngine::part_name(Part p) { return p == kFwd ? "F" : "I/B"; }

ReplayEngine::ReplayEngine(const Schedule& s, double p2p, double gap, double p2p_pair, const std::vector<double>& link_p2p,
                           const std::vector<double>& link_wait)
    : s_(s), p2p_pair_(p2p_pair), gap_(gap), S_(s.num_stages()), m_(s.m) {
  // One time per stage boundary, p2p where none is given: the lookup needs no test per message.
  link_.assign(S_ > 1 ? S_ - 1 : 0, p2p);
  for (std::size_t b = 0; b < link_.size() && b < link_p2p.size(); ++b)
    if (link_p2p[b] >= 0) link_[b] = link_p2p[b];
  wait_.assign(link_.size(), 0.0);
  for (std::size_t b = 0; b < wait_.size() && b < link_wait.size(); ++b)
    if (link_wait[b] > 0) wait_[b] = link_wait[b];
  // Outputs an action can produce that another action waits for, per (stage, micro-batch): the
  // activation and the input gradient. A weight gradient is waited for by nobody, so it is not tracked.
  done_.assign(static_cast<std::size_t>(2) * S_ * m_, kNotDone);
  // Where each stage sits in its chain, once: the per-action test would otherwise cost two divisions.
  first_.resize(S_);
  last_.resize(S_);
  for (int st = 0; st < S_; ++st) {
    first_[st] = s.is_first_stage(st);
    last_[st] = s.is_last_stage(st);
  }
  const std::size_t p = s.actions.size();
  cursor_.assign(p, 0);
  free_.assign(p, 0.0);
  waiting_on_.assign(p, -1);
  ready_.reserve(p);
}

void ReplayEngine::check_finished() const {
  for (std::size_t r = 0; r < s_.actions.size(); ++r)
    if (cursor_[r] < s_.actions[r].size()) throw ScheduleError(deadlock_message());
}

// Where (rank, step) an output is produced, or rank -1 if no action produces it.
std::pair<int, int> ReplayEngine::producer(Part part, int stage, int mb) const {
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

std::string ReplayEngine::deadlock_message() const {
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

}  // namespace detail

Timeline replay(const Schedule& s, const DurationFn& duration, double p2p, double gap, double p2p_pair,
                const std::vector<double>& link_p2p, const std::vector<double>& link_wait) {
  Timeline tl;
  tl.reserve(s.num_actions());
  detail::ReplayEngine(s, p2p, gap, p2p_pair, link_p2p, link_wait).run(duration, [&tl](int r, std::size_t, const Action& a, double start, double end) {
    tl.push_back(TimedOp{r, a, start, end});
  });
  return tl;
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
