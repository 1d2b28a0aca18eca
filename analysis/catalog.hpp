#pragma once
// The schedule catalog: one row per schedule holding every fact the rest of pipebench asks about it.
// make_schedule(), analytic_figures(), simulate, run's plan and the planner read the rows, never a
// schedule's name, and the rows are the only list of names (docs/schedules.md "Adding a schedule").
// The rows are in catalog.cpp; each schedule's generator, figures and screening estimate are in its
// family's file in analysis/schedules/. Action orders follow PyTorch's torch.distributed.pipelining
// and Megatron-Core for the same parameters (docs/schedules.md says where and why pipebench differs).
#include <string>
#include <vector>

#include "analysis/formulas.hpp"
#include "analysis/schedule.hpp"

namespace pipebench::analysis {

struct ScheduleParams {
  std::string name;
  int p = 1;
  int m = 1;
  int v = 0;      // chunks per rank; 0 = the schedule's default
  int group = 0;  // micro-batches per group (Megatron-Core's interleaved groups); 0 = default_group(p)
};

// The micro-batch group of the schedules that take one (MRule::groups) when none is given: p, the
// smallest group that spans every rank.
inline int default_group(int p) { return p; }

// Which rank holds which stage. Looped: stage s on rank s mod p (p*v stages). V: rank r holds stages r
// and 2p-1-r (2p stages: one copy's two chunks per rank, or two copies of p stages of which the second
// enters at the last rank). `none` is no layout: a row without one fails the catalog's tests.
enum class ChunkLayout { none, looped, v };
int rank_of_stage(ChunkLayout layout, int p, int stage);

// For v >= 2, whether micro-batch group g works for p and m: empty, or the refusal naming `schedule`.
using GroupCheck = std::string (*)(const std::string& schedule, int p, int m, int g);

// What m (and p) must be for the schedule's order, as data. make_schedule() refuses what they refuse
// in the generator's words, the planner (with the default group) in its own shorter ones.
struct MRule {
  int min_per_rank = 0;  // m >= min_per_rank * p
  bool even = false;     // p and m even: ranks pair up from both ends, half the micro-batches each way
  // The micro-batch groups the order runs in for v >= 2 (Megatron-Core's interleaved groups, with the
  // default group m a multiple of p); nullptr: the schedule takes no group.
  GroupCheck groups = nullptr;
  const char* required_by = "";  // who requires min_per_rank, for the message
};

// The idle time of the busiest rank that the planner's screening adds to its work, in closed form
// from the mean chunk times (a screening estimate, not the analytic figures).
using IdleEstimate = double (*)(int p, double F, double B, double W);
// Fills in the actions of a schedule whose name, sizes and layout make_schedule() has set, for
// parameters it has checked (v resolved; group resolved where the row takes one, else 0).
using Generator = void (*)(const ScheduleParams& q, Schedule& s);
// The analytic figures for checked parameters (analytic_figures() checks them).
using FiguresOf = AnalyticFigures (*)(const FormulaParams& q);

struct ScheduleRow {
  std::string name;
  std::string summary;  // one line for `pipebench schedule --help`
  Generator generate = nullptr;
  FiguresOf figures = nullptr;  // formulas and their conditions (docs/metrics.md)
  IdleEstimate screen_idle = nullptr;
  ChunkLayout layout = ChunkLayout::none;
  int pipes = 1;  // model copies that run through the ranks
  int default_v = 1;
  bool fixed_v = true;  // v cannot be chosen
  MRule m_rule;
  bool split_backward = false;  // I and W instead of B
  bool overlaps_fb = false;     // overlapped F&B pairs
  // The last rank starts after p-1 chunk forwards (with uniform stages and free transfers): true for
  // every schedule whose micro-batches all enter at rank 0.
  bool waits_for_fill = true;
  bool in_run_sweep = false;  // in `pipebench run`'s default --schedule list

  bool takes_group() const { return m_rule.groups != nullptr; }
  int rank_of_stage(int p, int stage) const { return analysis::rank_of_stage(layout, p, stage); }
};

// Every row, in the order the help and the pictures' colours list them.
const std::vector<ScheduleRow>& schedule_catalog();
// The row of `name`; UsageError "unknown schedule 'x'; allowed: ..." listing the names.
const ScheduleRow& schedule_row(const std::string& name);
// The row of `name`, or nullptr.
const ScheduleRow* find_schedule(const std::string& name);
// The row with one model copy that runs the same kind of order as `row` (same layout, split backward
// and overlap), for messages that refuse two copies; nullptr if there is none.
const ScheduleRow* one_copy_form(const ScheduleRow& row);
// The names of the rows in `pipebench run`'s default sweep, in catalog order.
std::vector<std::string> run_sweep_schedules();

// Generates the schedule; throws UsageError naming the bad parameter and the allowed range, and for
// p*v*m over kMaxSchedulePairs (analysis/limits.hpp) before building anything. The result is valid by
// construction (the tests validate every generator over a grid of p, m, v).
Schedule make_schedule(const ScheduleParams& params);

}  // namespace pipebench::analysis
