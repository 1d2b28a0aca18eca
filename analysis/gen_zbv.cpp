// ZB-V (Qi et al. 2024, "Pipeline parallelism with controllable memory", arXiv 2401.10241 section 6):
// two chunks per rank in a V, split backward, W used to fill what would be bubbles.
//
// The order is the one torch.distributed.pipelining's ScheduleZBVZeroBubble builds
// (_calculate_single_rank_operations, pytorch/pytorch torch/distributed/pipelining/schedules.py),
// re-derived here: per rank r, with chunk 0 = stage r and chunk 1 = stage 2p-1-r,
//   warm-up   2(p-r)-1 F0; r x (F1 F0); p-r x (F1 I1 W1)
//   steady    repeat (F0 while forwards remain) I0 W0 F1 I1 W1 until both chunks did every forward
//   cool-down r x (I0 I1) with their W deferred; p-r x (I0 W0), W0 taking the oldest pending I0;
//             then the deferred W1, then the remaining W0
// Like torch, the order is built for n = max(2p-1, m) micro-batches and the actions of micro-batches
// >= m are dropped (torch turns them into idle slots), so any m >= 1 works. torch also starts rank r
// with r idle slots; here the replay waits for the inputs instead, which gives the same times.
#include <algorithm>
#include <deque>

#include "analysis/generators_impl.hpp"

namespace pipebench::analysis::detail {

namespace {

class ZbvRank {
 public:
  ZbvRank(std::vector<Action>& out, int m, int stage0, int stage1) : out_(out), m_(m), stage_{stage0, stage1} {}

  void f(int c) { emit(Kind::F, c, next_f_[c]++); }
  void i(int c) {
    emit(Kind::I, c, next_i_[c]);
    pending_w_[c].push_back(next_i_[c]++);
  }
  void w(int c) {  // the oldest I of chunk c still without its W
    emit(Kind::W, c, pending_w_[c].front());
    pending_w_[c].pop_front();
  }
  int forwards(int c) const { return next_f_[c]; }
  bool w_pending(int c) const { return !pending_w_[c].empty(); }

 private:
  void emit(Kind k, int c, int mb) {
    if (mb < m_) out_.push_back(Action::make(k, stage_[c], mb));
  }

  std::vector<Action>& out_;
  int m_;
  int stage_[2];
  int next_f_[2] = {0, 0};
  int next_i_[2] = {0, 0};
  std::deque<int> pending_w_[2];
};

}  // namespace

Schedule zbv(const ScheduleParams& q) {
  const int p = q.p;
  const int n = std::max(2 * p - 1, q.m);
  Schedule s = v_layout("zbv", p, q.m);
  for (int r = 0; r < p; ++r) {
    s.actions[r].reserve(static_cast<std::size_t>(6) * q.m);  // F, I and W of m micro-batches on two stages
    ZbvRank k(s.actions[r], q.m, r, 2 * p - 1 - r);
    for (int j = 0; j < 2 * (p - r) - 1; ++j) k.f(0);
    for (int j = 0; j < r; ++j) k.f(1), k.f(0);
    for (int j = 0; j < p - r; ++j) k.f(1), k.i(1), k.w(1);
    while (k.forwards(1) < k.forwards(0) || k.forwards(0) < n) {
      if (k.forwards(0) < n) k.f(0);
      k.i(0), k.w(0), k.f(1), k.i(1), k.w(1);
    }
    for (int j = 0; j < r; ++j) k.i(0), k.i(1);
    for (int j = 0; j < p - r; ++j) k.i(0), k.w(0);
    while (k.w_pending(1)) k.w(1);
    while (k.w_pending(0)) k.w(0);
  }
  return s;
}

}  // namespace pipebench::analysis::detail
