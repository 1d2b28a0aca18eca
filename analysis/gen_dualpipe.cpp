// DualPipe and DualPipeV (DeepSeek-V3 technical report, arXiv 2412.19437 section 3.2.1; code in
// deepseek-ai/DualPipe: dualpipe/dualpipe.py and dualpipe/dualpipev.py; torch.distributed.pipelining
// ScheduleDualPipeV builds the same DualPipeV order).
//
// Both run one per-rank program over two local "phases" (the reference's phase 0 and 1). DualPipe with
// p ranks runs it with P = p/2 ranks per half, the rank's distance h = min(r, p-1-r) from the nearer end
// and M = m/2 micro-batches per direction; DualPipeV ("DualPipe cut in half") runs it with P = p, h = r,
// M = m. Phase 0 is the chunk the rank meets early in its model copy, phase 1 the chunk it meets late:
//   1. 2(P-h-1) x F0                     5. P-h-1 x B1 (F1;B0)
//   2. h+1 x F0 F1                       6. h+1 x B1 B0, switching to I (W deferred) half way
//   3. P-h-1 x I1 W1 F1                  7. P-h-1 x W I0
//   4. M-2P+h+1 x (F0;B1) (F1;B0)        8. h+1 x W
// where (F;B) is an overlapped pair, W takes the oldest I still without its W (the reference's FIFO
// WeightGradStore), and on the rank with h = P-1 the first (F0;B1) runs as F0 then B1 (the reference
// does not overlap them, to shorten the bubble).
#include <deque>
#include <string>
#include <utility>

#include "analysis/error.hpp"
#include "analysis/generators_impl.hpp"

namespace pipebench::analysis::detail {

namespace {

// Where a phase's actions go: its stage and the number of its first micro-batch.
struct Phase {
  int stage = 0;
  int mb0 = 0;
};

class DualRank {
 public:
  DualRank(std::vector<Action>& out, Phase p0, Phase p1) : out_(out), phase_{p0, p1} {}

  void f(int ph) { out_.push_back(Action::make(Kind::F, phase_[ph].stage, next_f(ph))); }
  void b(int ph) { out_.push_back(Action::make(Kind::B, phase_[ph].stage, next_b(ph))); }
  void i(int ph) {
    const int mb = next_b(ph);
    out_.push_back(Action::make(Kind::I, phase_[ph].stage, mb));
    pending_w_.emplace_back(phase_[ph].stage, mb);
  }
  void backward(int ph, bool split) { split ? i(ph) : b(ph); }
  void w() {
    out_.push_back(Action::make(Kind::W, pending_w_.front().first, pending_w_.front().second));
    pending_w_.pop_front();
  }
  void fb(int f_ph, int b_ph) {
    const int f_mb = next_f(f_ph);
    out_.push_back(Action::overlapped(phase_[f_ph].stage, f_mb, phase_[b_ph].stage, next_b(b_ph)));
  }

 private:
  int next_f(int ph) { return phase_[ph].mb0 + f_count_[ph]++; }
  int next_b(int ph) { return phase_[ph].mb0 + b_count_[ph]++; }

  std::vector<Action>& out_;
  Phase phase_[2];
  int f_count_[2] = {0, 0};
  int b_count_[2] = {0, 0};
  std::deque<std::pair<int, int>> pending_w_;  // (stage, mb) of each I whose W is still to run
};

void dual_program(DualRank& k, int P, int h, int M) {
  for (int j = 0; j < 2 * (P - h - 1); ++j) k.f(0);
  for (int j = 0; j <= h; ++j) k.f(0), k.f(1);
  for (int j = 0; j < P - h - 1; ++j) k.i(1), k.w(), k.f(1);
  for (int j = 0; j < M - 2 * P + h + 1; ++j) {
    if (j == 0 && h == P - 1) {
      k.f(0);
      k.b(1);
    } else {
      k.fb(0, 1);
    }
    k.fb(1, 0);
  }
  for (int j = 0; j < P - h - 1; ++j) k.b(1), k.fb(1, 0);
  bool split = false;
  for (int j = 0; j <= h; ++j) {
    // The reference switches to split backwards at the middle of this step: before B1 on odd h,
    // between B1 and B0 on even h.
    if (j == (h + 1) / 2 && h % 2 == 1) split = true;
    k.backward(1, split);
    if (j == (h + 1) / 2 && h % 2 == 0) split = true;
    k.backward(0, split);
  }
  for (int j = 0; j < P - h - 1; ++j) k.w(), k.i(0);
  for (int j = 0; j <= h; ++j) k.w();
}

void require_m_at_least_2p(const char* name, int p, int m, const char* who) {
  if (m < 2 * p)
    throw UsageError("schedule '" + std::string(name) + "' needs m >= 2p = " + std::to_string(2 * p) +
                     " micro-batches, as " + who + " requires; got m = " + std::to_string(m));
}

}  // namespace

Schedule dualpipev(const ScheduleParams& q) {
  require_m_at_least_2p("dualpipev", q.p, q.m, "DeepSeek's DualPipeV (and torch ScheduleDualPipeV)");
  Schedule s = v_layout("dualpipev", q.p, q.m);
  for (int r = 0; r < q.p; ++r) {
    DualRank k(s.actions[r], {r, 0}, {2 * q.p - 1 - r, 0});
    dual_program(k, q.p, r, q.m);
  }
  return s;
}

// Copy 0 (stages 0..p-1, stage j on rank j) carries micro-batches 0..m/2-1, entering at rank 0; copy 1
// (stages p..2p-1, stage p+j on rank p-1-j) carries m/2..m-1, entering at rank p-1. A rank in the first half
// meets copy 0 early, one in the second half copy 1.
Schedule dualpipe(const ScheduleParams& q) {
  const int p = q.p, m = q.m;
  if (p % 2 != 0)
    throw UsageError("schedule 'dualpipe' needs an even p (ranks pair up from both ends); got p = " +
                     std::to_string(p));
  if (m % 2 != 0)
    throw UsageError("schedule 'dualpipe' needs an even m (half the micro-batches run in each direction); got m = " +
                     std::to_string(m));
  require_m_at_least_2p("dualpipe", p, m, "DeepSeek's DualPipe");
  Schedule s = v_layout("dualpipe", p, m);
  s.pipes = 2;
  const int half = m / 2;
  for (int r = 0; r < p; ++r) {
    const Phase copy0{r, 0}, copy1{2 * p - 1 - r, half};
    const bool second_half = r >= p / 2;
    DualRank k(s.actions[r], second_half ? copy1 : copy0, second_half ? copy0 : copy1);
    dual_program(k, p / 2, second_half ? p - 1 - r : r, half);
  }
  return s;
}

}  // namespace pipebench::analysis::detail
