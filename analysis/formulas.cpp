#include "analysis/formulas.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis {

const char* idle_measure_name(IdleMeasure m) {
  switch (m) {
    case IdleMeasure::Idle: return "idle per rank";
    case IdleMeasure::MaxIdle: return "max rank idle";
    case IdleMeasure::SpanBubble: return "span bubble per rank";
    case IdleMeasure::MaxSpanBubble: return "max span bubble";
  }
  return "?";
}

namespace {

bool same(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// The parameters with per-chunk times (docs/formulas.md's F, B, W, I, F&B are per chunk).
struct Ctx {
  const FormulaParams& q;
  int p, m, v, g;
  double F, B, W, I, FB;
  double busy;              // every rank's busy time when its F&B pairs (if any) cost F + B
  std::string time_reason;  // why no time formula can hold (non-uniform stages, p2p), or empty

  explicit Ctx(const FormulaParams& params)
      : q(params), p(params.p), m(params.m), v(params.v), g(params.group > 0 ? params.group : params.p) {
    F = q.tf / v;
    B = q.tb / v;
    W = q.tw / v;
    I = B - W;
    FB = (q.t_overlap < 0 ? q.tf + q.tb : q.t_overlap) / v;
    busy = m * (q.tf + q.tb);
    if (!q.uniform_stages)
      time_reason = "stages are not uniform (stage cost multipliers given)";
    else if (q.p2p > 0)
      time_reason = "p2p time = " + num(q.p2p) + " > 0 (the formula assumes free transfers)";
  }

  std::string chunk_times() const {
    return "F=" + num(F) + ", I=" + num(I) + ", W=" + num(W) + " per chunk";
  }
};

template <class T>
Claim<T> claim(std::optional<T> value, std::string formula, std::string condition, std::string reason = {}) {
  Claim<T> c;
  c.formula = std::move(formula);
  c.condition = std::move(condition);
  if (value && reason.empty())
    c.value = std::move(value);
  else
    c.reason = reason.empty() ? "formula does not apply" : std::move(reason);
  return c;
}

// Sets idle, makespan and bubble fraction from an idle time that every rank has (T = busy + idle).
// `why_not` is the first unmet schedule-specific condition, or empty.
void from_rank_idle(AnalyticFigures& a, const Ctx& c, double idle, const std::string& idle_formula,
                    std::string condition, std::string why_not) {
  if (!c.time_reason.empty()) why_not = c.time_reason;
  const double T = c.busy + idle;
  a.idle_measure = IdleMeasure::Idle;
  a.idle = claim<double>(idle, idle_formula, condition, why_not);
  a.makespan = claim<double>(T, "m(tf+tb) + " + idle_formula, condition, why_not);
  a.bubble_fraction = claim<double>(T > 0 ? idle / T : 0.0, idle_formula + " / T", std::move(condition),
                                    std::move(why_not));
}

std::vector<int> per_rank(int p, const std::function<int(int)>& f) {
  std::vector<int> v(p);
  for (int r = 0; r < p; ++r) v[r] = f(r);
  return v;
}

const char* kUniform = "uniform stages, p2p = 0";

// ---- one function per schedule --------------------------------------------------------------------

AnalyticFigures gpipe(const Ctx& c) {
  AnalyticFigures a;
  a.source = "GPipe (Huang et al. 2019)";
  from_rank_idle(a, c, (c.p - 1) * (c.F + c.B), "(p-1)(F+B)", kUniform, "");
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return c.m; }), "m", "always");
  return a;
}

AnalyticFigures one_f_one_b(const Ctx& c) {
  AnalyticFigures a;
  a.source = "1F1B / PipeDream-Flush (Narayanan et al. 2021)";
  from_rank_idle(a, c, (c.p - 1) * (c.F + c.B), "(p-1)(F+B)", kUniform, "");
  a.peak_inflight =
      claim<std::vector<int>>(per_rank(c.p, [&](int r) { return std::min(c.p - r, c.m); }), "min(p-r, m)", "always");
  return a;
}

AnalyticFigures interleaved(const Ctx& c) {
  if (c.v == 1) {  // the generator gives exactly 1F1B's lists
    AnalyticFigures a = one_f_one_b(c);
    a.source = "interleaved 1F1B with v = 1 is 1F1B (Narayanan et al. 2021)";
    return a;
  }
  AnalyticFigures a;
  a.source = "interleaved 1F1B (Narayanan et al. 2021), Megatron-Core groups of g micro-batches";
  from_rank_idle(a, c, (c.p - 1) * (c.F + c.B), "(p-1)(F+B), chunk times", kUniform, "");
  a.peak_inflight = claim<std::vector<int>>(
      per_rank(c.p, [&](int r) { return std::min(2 * (c.p - r - 1) + (c.v - 1) * c.g + 1, c.m * c.v); }),
      "min(2(p-r-1) + (v-1)g + 1, m*v)", "v >= 2");
  return a;
}

AnalyticFigures looped_bfs(const Ctx& c) {
  AnalyticFigures a;
  a.source = "looped BFS (Lamy-Poirier 2022), torch ScheduleLoopedBFS";
  // Each rank runs all forwards chunk by chunk, then all backwards: with m >= p the pipeline of p*v
  // stages never waits between chunks, so only the fill and drain of (p-1) chunk steps remain. With
  // m < p the first micro-batch of chunk c+1 waits for the last stage of chunk c: (p-m) steps per chunk.
  const double idle = c.m >= c.p ? (c.p - 1) * (c.F + c.B) : ((c.p - c.m) * c.v + c.m - 1) * (c.F + c.B);
  from_rank_idle(a, c, idle, c.m >= c.p ? "(p-1)(F+B)" : "((p-m)v + m-1)(F+B)", kUniform, "");
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return c.m * c.v; }), "m*v", "always");
  return a;
}

// "needs m >= 2p-1 (m=3, p=4)"
std::string needs_m(const Ctx& c, int min_m, const char* rule) {
  if (c.m >= min_m) return "";
  return std::string("needs ") + rule + " (m=" + std::to_string(c.m) + ", p=" + std::to_string(c.p) + ")";
}

bool le(double a, double b) { return a <= b || same(a, b); }

AnalyticFigures zb_h1(const Ctx& c) {
  AnalyticFigures a;
  a.source = "ZB-H1 (Qi et al. 2023, Zero Bubble Pipeline Parallelism)";
  // With W > F the last rank still starts (p-1)F late; with W > I the deferred W cannot all fit the
  // cool-down (docs/schedules.md, checked by simulation).
  std::string why = needs_m(c, c.p, "m >= p");
  if (why.empty() && !(le(c.W, c.F) && le(c.W, c.I))) why = "needs W <= F and W <= I (" + c.chunk_times() + ")";
  from_rank_idle(a, c, (c.p - 1) * (c.F + c.B - 2 * c.W), "(p-1)(F+B-2W)",
                 std::string(kUniform) + ", m >= p, W <= F, W <= I", why);
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return std::min(c.p, c.m); }), "min(p, m)",
                                            "always");
  return a;
}

AnalyticFigures zb_h2(const Ctx& c) {
  AnalyticFigures a;
  a.source = "ZB-H2 (Qi et al. 2023, Zero Bubble Pipeline Parallelism)";
  const std::string cond = std::string(kUniform) + ", m >= 2p-1, W <= F, 2W <= F+I";
  std::string why = c.time_reason;
  if (why.empty()) why = needs_m(c, 2 * c.p - 1, "m >= 2p-1");
  if (why.empty() && !(le(c.W, c.F) && le(2 * c.W, c.F + c.I)))
    why = "needs W <= F and 2W <= F+I (" + c.chunk_times() + ")";
  // The paper's (p-1)(F+B-3W) is rank 0's span bubble (rank r: (p-1-r)(F+B-3W)): its parallelogram has
  // no gap once started. Counted from the common start, the last rank still waits p-1 forwards.
  a.idle_measure = IdleMeasure::MaxSpanBubble;
  a.idle = claim<double>((c.p - 1) * (c.F + c.B - 3 * c.W), "(p-1)(F+B-3W)", cond, why);
  const double idle = (c.p - 1) * std::max(c.F, c.F + c.B - 3 * c.W);
  const double T = c.busy + idle;
  a.makespan = claim<double>(T, "m(tf+tb) + (p-1)max(F, F+B-3W)", cond, why);
  a.bubble_fraction = claim<double>(idle / T, "(p-1)max(F, F+B-3W) / T", cond, why);
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return std::min(2 * c.p - 1, c.m); }),
                                            "min(2p-1, m)", "always");
  return a;
}

AnalyticFigures zbv(const Ctx& c) {
  AnalyticFigures a;
  a.source = "ZB-V (Qi et al. 2024, Pipeline Parallelism with Controllable Memory), torch ScheduleZBVZeroBubble";
  const std::string cond = std::string(kUniform) + ", m >= 2p-1, F = I = W per chunk";
  std::string why = c.time_reason;
  if (why.empty()) why = needs_m(c, 2 * c.p - 1, "m >= 2p-1");
  if (why.empty() && (!same(c.F, c.I) || !same(c.I, c.W))) why = "needs F = I = W per chunk (" + c.chunk_times() + ")";
  a.idle_measure = IdleMeasure::SpanBubble;
  a.idle = claim<double>(0.0, "0", cond, why);
  // Rank r starts after r chunk forwards and then works without a gap, so every rank idles (p-1)F.
  const double T = c.busy + (c.p - 1) * c.F;
  a.makespan = claim<double>(T, "m(tf+tb) + (p-1)F", cond, why);
  a.bubble_fraction = claim<double>((c.p - 1) * c.F / T, "(p-1)F / T", cond, why);
  // The chunk-0 forwards of the warm-up plus the chunk-1 forwards before the first W: 2p when
  // m >= 2p-1.
  a.peak_inflight = claim<std::vector<int>>(
      per_rank(c.p, [&](int r) { return std::min(c.m, 2 * c.p - 1 - r) + std::min(c.m, r + 1); }),
      "min(m, 2p-1-r) + min(m, r+1)", "always");
  return a;
}

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

AnalyticFigures dualpipev(const Ctx& c) {
  AnalyticFigures a;
  a.source = "DualPipeV (DeepSeek 2024, deepseek-ai/DualPipe), torch ScheduleDualPipeV";
  dual_figures(a, c, c.p, c.m, [](int r) { return r; }, "p");
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return 2 * c.p + 1; }), "2p+1", "m >= 2p");
  return a;
}

AnalyticFigures dualpipe(const Ctx& c) {
  AnalyticFigures a;
  a.source = "DualPipe (DeepSeek-V3 report 2024, deepseek-ai/DualPipe)";
  dual_figures(a, c, c.p / 2, c.m / 2, [&c](int r) { return std::min(r, c.p - 1 - r); }, "p/2");
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return c.p + 1; }), "p+1", "m >= 2p");
  return a;
}

using Entry = std::function<AnalyticFigures(const Ctx&)>;

const std::map<std::string, Entry>& table() {
  static const std::map<std::string, Entry> t = {
      {"gpipe", gpipe},       {"1f1b", one_f_one_b}, {"interleaved", interleaved}, {"looped-bfs", looped_bfs},
      {"zb-h1", zb_h1},       {"zb-h2", zb_h2},      {"zbv", zbv},                 {"dualpipev", dualpipev},
      {"dualpipe", dualpipe},
  };
  return t;
}

void check(const FormulaParams& q) {
  auto at_least_one = [](int x, const char* what) {
    if (x < 1)
      throw UsageError(std::string(what) + " = " + std::to_string(x) + " is not allowed: need " + what + " >= 1");
  };
  at_least_one(q.p, "p");
  at_least_one(q.m, "m");
  at_least_one(q.v, "v");
  if (!(q.tf > 0) || !(q.tb > 0))
    throw UsageError("tf = " + num(q.tf) + ", tb = " + num(q.tb) + " are not allowed: times must be > 0");
  if (!(q.tw >= 0 && q.tw < q.tb))
    throw UsageError("tw = " + num(q.tw) + " is not allowed: must be in [0, tb = " + num(q.tb) + ")");
}

}  // namespace

bool has_formula(const std::string& schedule) { return table().count(schedule) > 0; }

std::vector<std::string> formula_schedules() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : table()) names.push_back(name);
  return names;
}

AnalyticFigures analytic_figures(const FormulaParams& q) {
  check(q);
  const auto it = table().find(q.schedule);
  if (it == table().end()) {
    AnalyticFigures a;
    const std::string why = "no analytic formula for schedule '" + q.schedule + "'";
    a.makespan = claim<double>(std::nullopt, "", "", why);
    a.bubble_fraction = a.makespan;
    a.idle = a.makespan;
    a.peak_inflight = claim<std::vector<int>>(std::nullopt, "", "", why);
    return a;
  }
  return it->second(Ctx(q));
}

}  // namespace pipebench::analysis
