#pragma once
// Internal to the catalog (analysis/catalog.cpp names them in its rows): per schedule its generator,
// its analytic figures and its screening idle, defined in its family's file next to each other.
#include <string>

#include "analysis/catalog.hpp"

namespace pipebench::analysis::schedules {

// basic.cpp: one stage per rank, full backwards.
void gpipe(const ScheduleParams& q, Schedule& s);
void one_f_one_b(const ScheduleParams& q, Schedule& s);
AnalyticFigures gpipe_figures(const FormulaParams& q);
AnalyticFigures one_f_one_b_figures(const FormulaParams& q);
double fill_drain_idle(int p, double F, double B, double W);  // (p-1)(F+B), the bubble of 1F1B

// interleaved.cpp: v chunks per rank on the looped layout.
void interleaved(const ScheduleParams& q, Schedule& s);
void looped_bfs(const ScheduleParams& q, Schedule& s);
AnalyticFigures interleaved_figures(const FormulaParams& q);
AnalyticFigures looped_bfs_figures(const FormulaParams& q);
// interleaved's MRule::groups (Megatron-Core's checks).
std::string group_problem(const std::string& schedule, int p, int m, int g);

// zb.cpp: the handcrafted zero-bubble schedules.
void zb_h1(const ScheduleParams& q, Schedule& s);
void zb_h2(const ScheduleParams& q, Schedule& s);
AnalyticFigures zb_h1_figures(const FormulaParams& q);
AnalyticFigures zb_h2_figures(const FormulaParams& q);
double w_filled_idle(int p, double F, double B, double W);  // (p-1)(F+B-2W): ZB-H1, DualPipe(V)
double forward_fill_idle(int p, double F, double B, double W);  // (p-1)F: ZB-H2 and ZB-V

// zbv.cpp
void zbv(const ScheduleParams& q, Schedule& s);
AnalyticFigures zbv_figures(const FormulaParams& q);

// dualpipe.cpp: DualPipe and DualPipeV.
void dualpipev(const ScheduleParams& q, Schedule& s);
void dualpipe(const ScheduleParams& q, Schedule& s);
AnalyticFigures dualpipev_figures(const FormulaParams& q);
AnalyticFigures dualpipe_figures(const FormulaParams& q);

}  // namespace pipebench::analysis::schedules
