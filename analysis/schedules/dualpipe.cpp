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
#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "analysis/schedules/claims.hpp"
#include "analysis/schedules/families.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis::schedules {

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

}  // namespace

void dualpipev(const ScheduleParams& q, Schedule& s) {
  for (int r = 0; r < q.p; ++r) {
    DualRank k(s.actions[r], {r, 0}, {2 * q.p - 1 - r, 0});
    dual_program(k, q.p, r, q.m);
  }
}

// Copy 0 (stages 0..p-1, stage j on rank j) carries micro-batches 0..m/2-1, entering at rank 0; copy 1
// (stages p..2p-1, stage p+j on rank p-1-j) carries m/2..m-1, entering at rank p-1. A rank in the first half
// meets copy 0 early, one in the second half copy 1.
void dualpipe(const ScheduleParams& q, Schedule& s) {
  const int p = q.p, half = q.m / 2;
  for (int r = 0; r < p; ++r) {
    const Phase copy0{r, 0}, copy1{2 * p - 1 - r, half};
    const bool second_half = r >= p / 2;
    DualRank k(s.actions[r], second_half ? copy1 : copy0, second_half ? copy0 : copy1);
    dual_program(k, p / 2, second_half ? p - 1 - r : r, half);
  }
}

namespace {

// DualPipeV and DualPipe: a V of P ranks (DualPipe: each half of the ranks) with M micro-batches per
// direction. The literature states the largest idle of any rank; it holds for W <= I <= F with an
// overlapped pair no faster than its longer half, as (P-1)(F&B + F - 2W), which is docs/formulas.md's
// (P-1)(F&B + B - 3W) when I = F (docs/metrics.md). Rank r runs 2M - 3P + h + 1 overlapped pairs
// (h its position in the V, one fewer at the V's tip), each saving F + B - F&B of busy time, so the
// makespan follows from the least busy rank.
void dual_figures(AnalyticFigures& a, const Ctx& c, int P, int M, const std::function<int(int)>& h_of,
                  const char* pname) {
  const std::string P_ = pname;
  const std::string cond = std::string(kUniform) + ", m >= 2p, W <= I <= F, max(F,B) <= F&B <= F+B";
  std::string why = c.time_reason;
  if (why.empty()) why = needs_m(c, 2 * c.p, "m >= 2p");
  if (why.empty() && !(le(c.W, c.I) && le(c.I, c.F)))
    why = "needs W <= I <= F per chunk (" + c.chunk_times() + ")";
  if (why.empty() && !(le(std::max(c.F, c.B), c.FB) && le(c.FB, c.F + c.B)))
    why = "needs max(F,B) <= F&B <= F+B per chunk (F&B=" + num(c.FB) + ", F=" + num(c.F) + ", B=" + num(c.B) + ")";
  const double idle = (P - 1) * (c.FB + c.F - 2 * c.W);
  a.idle_measure = IdleMeasure::MaxIdle;
  a.idle = claim<double>(idle, same(c.I, c.F) ? "(" + P_ + "-1)(F&B+B-3W)" : "(" + P_ + "-1)(F&B+F-2W)", cond, why);
  double min_busy = c.busy, total_busy = 0;
  for (int r = 0; r < c.p; ++r) {
    const int h = h_of(r);
    const int pairs = 2 * M - 3 * P + h + 1 - (h == P - 1 ? 1 : 0);
    const double busy = c.busy - pairs * (c.F + c.B - c.FB);
    min_busy = std::min(min_busy, busy);
    total_busy += busy;
  }
  const double T = min_busy + idle;
  a.makespan = claim<double>(T, "least busy rank + max idle", cond, why);
  a.bubble_fraction = claim<double>(1 - total_busy / (c.p * T), "1 - sum(busy) / (p T)", cond, why);
}

}  // namespace

AnalyticFigures dualpipev_figures(const FormulaParams& q) {
  const Ctx c(q);
  AnalyticFigures a;
  a.source = "DualPipeV (DeepSeek 2024, deepseek-ai/DualPipe), torch ScheduleDualPipeV";
  dual_figures(a, c, c.p, c.m, [](int r) { return r; }, "p");
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return 2 * c.p + 1; }), "2p+1", "m >= 2p");
  return a;
}

AnalyticFigures dualpipe_figures(const FormulaParams& q) {
  const Ctx c(q);
  AnalyticFigures a;
  a.source = "DualPipe (DeepSeek-V3 report 2024, deepseek-ai/DualPipe)";
  dual_figures(a, c, c.p / 2, c.m / 2, [&c](int r) { return std::min(r, c.p - 1 - r); }, "p/2");
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return c.p + 1; }), "p+1", "m >= 2p");
  return a;
}

}  // namespace pipebench::analysis::schedules
