// Schedules with v chunks per rank on the looped layout (stage s on rank s mod p): interleaved 1F1B
// as Megatron-Core runs it, and torch's looped BFS. docs/schedules.md has the grids and the formulas.
#include <algorithm>
#include <string>
#include <vector>

#include "analysis/schedules/claims.hpp"
#include "analysis/schedules/families.hpp"

namespace pipebench::analysis::schedules {

namespace {

struct Slot {
  int mb;
  int chunk;
};

// Megatron-Core get_schedule_table (megatron/core/pipeline_parallel/schedules.py): micro-batches go in
// groups of g; every chunk runs the whole group before the next chunk starts, and the last group takes
// whatever is left (m mod g when that is not 0). The k-th forward of every rank is slot k; the k-th
// backward is slot k with the chunk mirrored (v-1-chunk).
std::vector<Slot> group_table(int m, int v, int g) {
  std::vector<Slot> t;
  t.reserve(static_cast<std::size_t>(m) * v);
  for (int first = 0; first < m; first += g) {
    const int end = first + g >= m ? m : first + g;
    for (int c = 0; c < v; ++c)
      for (int k = first; k < end; ++k) t.push_back({k, c});
  }
  return t;
}

// The first few, so that a message stays one short line for any m.
std::string valid_groups(int p, int m) {
  std::string s;
  int shown = 0;
  for (int g = p; g <= m; ++g) {
    const int rest = m % g;
    if (rest != 0 && rest < p) continue;
    if (shown++ == 8) return s + ", ...";
    s += (s.empty() ? "" : ", ") + std::to_string(g);
  }
  return s;
}

}  // namespace

// Megatron-Core's checks in forward_backward_pipelining_with_interleaving. A group smaller than p, or a
// last group of fewer than p micro-batches, makes rank 0 wait for its own next chunk's input (a
// dependency bubble): Megatron refuses those and so does pipebench.
std::string group_problem(const std::string& schedule, int p, int m, int g) {
  const int rest = m % g;
  if (m >= p && g >= p && g <= m && (rest == 0 || rest >= p)) return "";
  const std::string pm = " (p = " + std::to_string(p) + ", m = " + std::to_string(m) + ")";
  if (m < p)
    return "schedule '" + schedule + "' needs m >= p" + pm +
           ": every group of micro-batches must span all p ranks (Megatron-Core requires "
           "p <= group <= m); use v = 1 (1F1B) or looped-bfs for fewer micro-batches";
  if (g < p || g > m)
    return "group = " + std::to_string(g) + " is not allowed for schedule '" + schedule + "'" + pm +
           ": the micro-batch group size must be in [p, m] = [" + std::to_string(p) + ", " + std::to_string(m) + "]";
  return "group = " + std::to_string(g) + " is not allowed for schedule '" + schedule + "'" + pm +
         ": the last group would hold m mod group = " + std::to_string(rest) +
         " micro-batches; it must hold 0 or at least p (m mod group in {0} U [p, group)), "
         "else rank 0 waits on its own next chunk; groups that work: " + valid_groups(p, m);
}

// Megatron-Core forward_backward_pipelining_with_interleaving: rank r runs
// min(2(p-r-1) + (v-1)g, m v) warm-up forwards, then forward k+warmup followed by backward k, then the
// remaining backwards. torch's ScheduleInterleaved1F1B is the same list with g = m / max(1, m div p)
// (its "rounds"). v = 1 is 1F1B: Megatron runs its non-interleaved schedule then, whose warm-up is
// p-r-1 (the interleaved formula would give 2(p-r-1)), and torch's Schedule1F1B agrees.
void interleaved(const ScheduleParams& q, Schedule& s) {
  if (q.v == 1) return one_f_one_b(q, s);
  const int p = q.p, m = q.m, v = q.v, g = q.group;
  const std::vector<Slot> table = group_table(m, v, g);
  const int total = m * v;
  for (int r = 0; r < p; ++r) {
    auto& list = s.actions[r];
    list.reserve(static_cast<std::size_t>(2) * total);
    auto fwd = [&](int k) { list.push_back(Action::make(Kind::F, table[k].chunk * p + r, table[k].mb)); };
    auto bwd = [&](int k) { list.push_back(Action::make(Kind::B, (v - 1 - table[k].chunk) * p + r, table[k].mb)); };
    const int warm = std::min(2 * (p - r - 1) + (v - 1) * g, total);
    for (int k = 0; k < warm; ++k) fwd(k);
    for (int k = 0; k < total - warm; ++k) {
      fwd(k + warm);
      bwd(k);
    }
    for (int k = total - warm; k < total; ++k) bwd(k);
  }
}

// torch ScheduleLoopedBFS (torch/distributed/pipelining/schedules.py; Lamy-Poirier 2022, breadth
// first): every forward of chunk 0, then of chunk 1, ...; then the backwards chunk by chunk from the
// last, each chunk's micro-batches in reverse order (the last micro-batch's forward ends last, so its
// backward can start first). Holds all m v activations at the peak.
void looped_bfs(const ScheduleParams& q, Schedule& s) {
  const int p = q.p, m = q.m, v = q.v;
  for (int r = 0; r < p; ++r) {
    auto& list = s.actions[r];
    list.reserve(static_cast<std::size_t>(2) * m * v);
    for (int c = 0; c < v; ++c)
      for (int k = 0; k < m; ++k) list.push_back(Action::make(Kind::F, c * p + r, k));
    for (int c = v - 1; c >= 0; --c)
      for (int k = m - 1; k >= 0; --k) list.push_back(Action::make(Kind::B, c * p + r, k));
  }
}

AnalyticFigures interleaved_figures(const FormulaParams& q) {
  if (q.v == 1) {  // the generator gives exactly 1F1B's lists
    AnalyticFigures a = one_f_one_b_figures(q);
    a.source = "interleaved 1F1B with v = 1 is 1F1B (Narayanan et al. 2021)";
    return a;
  }
  const Ctx c(q);
  AnalyticFigures a;
  a.source = "interleaved 1F1B (Narayanan et al. 2021), Megatron-Core groups of g micro-batches";
  from_rank_idle(a, c, (c.p - 1) * (c.F + c.B), "(p-1)(F+B), chunk times", kUniform, "");
  a.peak_inflight = claim<std::vector<int>>(
      per_rank(c.p, [&](int r) { return std::min(2 * (c.p - r - 1) + (c.v - 1) * c.g + 1, c.m * c.v); }),
      "min(2(p-r-1) + (v-1)g + 1, m*v)", "v >= 2");
  return a;
}

AnalyticFigures looped_bfs_figures(const FormulaParams& q) {
  const Ctx c(q);
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

}  // namespace pipebench::analysis::schedules
