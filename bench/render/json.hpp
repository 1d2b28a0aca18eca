#pragma once
// The JSON contract of one configuration (docs/json.md): `pipebench simulate --json` prints a list of
// these objects, `pipebench schedule --format json` embeds one, and `pipebench run --json` reuses them
// and adds its measured keys. Keys are only ever added, never renamed or removed.
#include <ostream>

#include <nlohmann/json.hpp>

#include "analysis/formulas.hpp"
#include "analysis/metrics.hpp"
#include "analysis/schedule.hpp"
#include "analysis/timeline.hpp"

namespace pipebench::bench {

// schedule, p, m, v, pipes, makespan, bubble_fraction, max_idle, max_span_bubble, the analytic_* keys
// (null where no formula holds, with the reasons in analytic_notes) and ranks. `analytic` may be null
// (an imported schedule): then every analytic_* value is null.
nlohmann::ordered_json summary_json(const analysis::Schedule& s, const analysis::Metrics& metrics,
                                    const analysis::AnalyticFigures* analytic);

// The `timeline` list: {rank, action, kind, stage, mb, start, end} per action, plus b_stage and b_mb for
// an overlapped F&B pair, in the order of the given timeline.
nlohmann::ordered_json timeline_json(const analysis::Timeline& timeline);

// The same list as text, written as it goes (no tree of millions of objects): exactly
// timeline_json(timeline).dump(2) with every line after the first indented by `indent` more spaces,
// which is how it reads inside an object dumped with an indent of 2.
void write_timeline_json(std::ostream& os, const analysis::Timeline& timeline, int indent);

// The schedule itself: stage_rank and per-rank action lists in the text form.
nlohmann::ordered_json schedule_json(const analysis::Schedule& s);

}  // namespace pipebench::bench
