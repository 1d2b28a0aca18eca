#pragma once
// What the model's stage loops (model.cpp) and the closed-form screen (screen.cpp) share: the ranks of
// the stages in turn and the busiest rank's work in one step. Internal to analysis/plan/.
#include "analysis/catalog.hpp"
#include "analysis/plan/model.hpp"

namespace pipebench::analysis::plan {

// The ranks of global stages 0, 1, 2, ... in turn, as ScheduleRow::rank_of_stage gives them, without
// its division per stage for the looped layout (the screen's hot loops).
class StageRanks {
 public:
  StageRanks(const ScheduleRow& row, int p) : row_(row), p_(p) {}
  int next() {
    const int stage = stage_++;
    if (row_.layout != ChunkLayout::looped) return row_.rank_of_stage(p_, stage);
    const int r = looped_;
    if (++looped_ == p_) looped_ = 0;
    return r;
  }

 private:
  const ScheduleRow& row_;
  int p_, stage_ = 0, looped_ = 0;
};

struct RankWork {
  double busy = 0, compute = 0, backward = 0;
};

// The busiest rank's work in one step, from the stage times.
RankWork busiest(const Layout& l, const StagePlan& sp);

// The gradient reduction the step waits for: all of it without overlap, else what the last backward
// (ZeRO-3: all the rank's work) does not hide.
double dp_exposed(const MachineSpec& mc, const Layout& l, const StagePlan& sp, const RankWork& w);

}  // namespace pipebench::analysis::plan
