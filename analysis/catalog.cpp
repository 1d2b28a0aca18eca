#include "analysis/catalog.hpp"

#include "analysis/error.hpp"
#include "analysis/limits.hpp"
#include "analysis/schedules/families.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis {

namespace {

namespace sch = schedules;

constexpr ChunkLayout kLooped = ChunkLayout::looped, kV = ChunkLayout::v;
const MRule kAnyM{};
const MRule kGroups{0, false, sch::group_problem, ""};

}  // namespace

// The catalog: the only list of schedule names. Adding a schedule is its family's file in
// analysis/schedules/ (generator, figures, screening idle, declared in families.hpp) and one row here.
const std::vector<ScheduleRow>& schedule_catalog() {
  // name, summary,
  //   generator, figures, screening idle, layout, pipes, default v, fixed v, m rule,
  //   split backward, overlapped F&B, last rank waits for the fill, in run's default sweep
  static const std::vector<ScheduleRow> table = {
      {"gpipe", "all forwards, then all backwards (Huang 2019)",
       sch::gpipe, sch::gpipe_figures, sch::fill_drain_idle, kLooped, 1, 1, true, kAnyM,
       false, false, true, true},
      {"1f1b", "one forward one backward, PipeDream-Flush (Narayanan 2021)",
       sch::one_f_one_b, sch::one_f_one_b_figures, sch::fill_drain_idle, kLooped, 1, 1, true, kAnyM,
       false, false, true, true},
      {"interleaved", "interleaved 1F1B in groups of micro-batches (Narayanan 2021, Megatron-Core)",
       sch::interleaved, sch::interleaved_figures, sch::fill_drain_idle, kLooped, 1, 2, false, kGroups,
       false, false, true, true},
      {"looped-bfs", "all forwards chunk by chunk, then all backwards (Lamy-Poirier 2022, torch)",
       sch::looped_bfs, sch::looped_bfs_figures, sch::fill_drain_idle, kLooped, 1, 2, false, kAnyM,
       false, false, true, false},
      {"zb-h1", "zero bubble at 1F1B memory: W fills the bubbles (Qi 2023)",
       sch::zb_h1, sch::zb_h1_figures, sch::w_filled_idle, kLooped, 1, 1, true, kAnyM,
       true, false, true, true},
      {"zb-h2", "zero bubble with 2p-1 in flight: more warm-up forwards (Qi 2023)",
       sch::zb_h2, sch::zb_h2_figures, sch::forward_fill_idle, kLooped, 1, 1, true, kAnyM,
       true, false, true, false},
      {"zbv", "zero bubble in a V, two chunks per rank, split backward (Qi 2024, torch ScheduleZBVZeroBubble)",
       sch::zbv, sch::zbv_figures, sch::forward_fill_idle, kV, 1, 2, true, kAnyM,
       true, false, true, true},
      {"dualpipev", "DualPipe cut in half: V of two chunks, overlapped F&B pairs (DeepSeek 2024, torch ScheduleDualPipeV)",
       sch::dualpipev, sch::dualpipev_figures, sch::w_filled_idle, kV, 1, 2, true,
       {2, false, nullptr, "DeepSeek's DualPipeV (and torch ScheduleDualPipeV)"},
       true, true, true, true},
      // Copy 1 enters at the last rank, which so starts at once.
      {"dualpipe", "two model copies in opposite directions, overlapped F&B pairs (DeepSeek-V3 2024)",
       sch::dualpipe, sch::dualpipe_figures, sch::w_filled_idle, kV, 2, 1, true,
       {2, true, nullptr, "DeepSeek's DualPipe"},
       true, true, false, false},
  };
  return table;
}

namespace {

// "'a', 'b'" for the rows that pass `pick`.
template <class Pick>
std::string names_where(Pick pick, bool quote) {
  std::string out;
  for (const auto& row : schedule_catalog())
    if (pick(row)) out += (out.empty() ? "" : ", ") + (quote ? "'" + row.name + "'" : row.name);
  return out;
}

void check_sizes(const ScheduleParams& q, const ScheduleRow& row) {
  if (q.p < 1) throw UsageError("p = " + std::to_string(q.p) + " is not allowed: need p >= 1");
  if (q.m < 1) throw UsageError("m = " + std::to_string(q.m) + " is not allowed: need m >= 1");
  if (q.v < 0) throw UsageError("v = " + std::to_string(q.v) + " is not allowed: need v >= 1");
  if (q.group < 0) throw UsageError("group = " + std::to_string(q.group) + " is not allowed: need group >= 1");
  if (q.group != 0 && !row.takes_group()) {
    const std::string takers = names_where([](const ScheduleRow& r) { return r.takes_group(); }, true);
    throw UsageError("group = " + std::to_string(q.group) + " is not allowed for schedule '" + q.name + "': only " +
                     takers + (takers.find(',') == std::string::npos ? " takes" : " take") +
                     " a micro-batch group size");
  }
}

// The row's m rule in the generator's words, for resolved parameters.
void check_m_rule(const ScheduleRow& row, const ScheduleParams& q) {
  const MRule& rule = row.m_rule;
  const std::string who = "schedule '" + row.name + "'";
  if (rule.even && q.p % 2 != 0)
    throw UsageError(who + " needs an even p (ranks pair up from both ends); got p = " + std::to_string(q.p));
  if (rule.even && q.m % 2 != 0)
    throw UsageError(who + " needs an even m (half the micro-batches run in each direction); got m = " +
                     std::to_string(q.m));
  if (q.m < rule.min_per_rank * q.p)
    throw UsageError(who + " needs m >= " + std::to_string(rule.min_per_rank) + "p = " +
                     std::to_string(rule.min_per_rank * q.p) + " micro-batches, as " + rule.required_by +
                     " requires; got m = " + std::to_string(q.m));
  if (rule.groups && q.v >= 2) {
    const std::string why = rule.groups(row.name, q.p, q.m, q.group);
    if (!why.empty()) throw UsageError(why);
  }
}

// The schedule without its actions: sizes and the row's layout.
Schedule laid_out(const ScheduleRow& row, const ScheduleParams& q) {
  if (row.layout == ChunkLayout::none) throw Error("schedule '" + row.name + "' has no chunk layout in the catalog");
  if (row.layout == ChunkLayout::v && q.v * row.pipes != 2)
    throw Error("schedule '" + row.name + "': a V layout holds two stages per rank, not v*pipes = " +
                std::to_string(q.v * row.pipes));
  Schedule s;
  s.name = row.name;
  s.p = q.p;
  s.m = q.m;
  s.pipes = row.pipes;
  const int stages = q.p * q.v * row.pipes;
  s.stage_rank.resize(static_cast<std::size_t>(stages));
  for (int st = 0; st < stages; ++st) s.stage_rank[st] = row.rank_of_stage(q.p, st);
  s.actions.resize(q.p);
  return s;
}

}  // namespace

int rank_of_stage(ChunkLayout layout, int p, int stage) {
  switch (layout) {
    case ChunkLayout::looped: return stage % p;
    case ChunkLayout::v: return stage < p ? stage : 2 * p - 1 - stage;
    case ChunkLayout::none: break;
  }
  throw Error("rank_of_stage: a schedule row without a chunk layout");
}

const ScheduleRow* find_schedule(const std::string& name) {
  for (const auto& row : schedule_catalog())
    if (row.name == name) return &row;
  return nullptr;
}

const ScheduleRow& schedule_row(const std::string& name) {
  if (const ScheduleRow* row = find_schedule(name)) return *row;
  throw UsageError("unknown schedule " + quoted(name) + "; allowed: " +
                   names_where([](const ScheduleRow&) { return true; }, false));
}

const ScheduleRow* one_copy_form(const ScheduleRow& row) {
  for (const auto& r : schedule_catalog())
    if (r.pipes == 1 && r.layout == row.layout && r.split_backward == row.split_backward &&
        r.overlaps_fb == row.overlaps_fb)
      return &r;
  return nullptr;
}

std::vector<std::string> run_sweep_schedules() {
  std::vector<std::string> names;
  for (const auto& row : schedule_catalog())
    if (row.in_run_sweep) names.push_back(row.name);
  return names;
}

Schedule make_schedule(const ScheduleParams& params) {
  const ScheduleRow& row = schedule_row(params.name);
  check_sizes(params, row);
  ScheduleParams q = params;
  if (q.v == 0) q.v = row.default_v;
  if (row.fixed_v && q.v != row.default_v)
    throw UsageError("schedule '" + q.name + "' has v = " + std::to_string(row.default_v) +
                     " chunks per rank; got v = " + std::to_string(q.v));
  // Every generator's work and memory are linear in p*v*m (zbv's dropped micro-batches included, see
  // analysis/schedules/zbv.cpp), so this one check bounds them all before anything is built.
  check_pipeline_ranks(q.p, "p");
  check_schedule_pairs(static_cast<std::int64_t>(q.p) * q.v * q.m,
                       "p*v*m = " + std::to_string(q.p) + "*" + std::to_string(q.v) + "*" + std::to_string(q.m));
  if (row.takes_group() && q.group == 0) q.group = default_group(q.p);
  check_m_rule(row, q);
  Schedule s = laid_out(row, q);
  row.generate(q, s);
  return s;
}

}  // namespace pipebench::analysis
