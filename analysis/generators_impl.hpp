#pragma once
// Internal to the generators: one function per schedule, called by make_schedule() after the common
// checks (known name, p >= 1, m >= 1, v resolved to the schedule's default or checked fixed).
#include "analysis/generators.hpp"

namespace pipebench::analysis::detail {

// Stage layouts. Looped: stage s on rank s mod p (GPipe, 1F1B, interleaved). V: rank r holds stages
// r and 2p-1-r (ZB-V, DualPipeV).
Schedule looped_layout(const std::string& name, int p, int m, int v);
Schedule v_layout(const std::string& name, int p, int m);

Schedule gpipe(const ScheduleParams& q);
Schedule one_f_one_b(const ScheduleParams& q);
Schedule interleaved(const ScheduleParams& q);
Schedule looped_bfs(const ScheduleParams& q);
Schedule zb_h1(const ScheduleParams& q);
Schedule zb_h2(const ScheduleParams& q);
Schedule zbv(const ScheduleParams& q);        // gen_zbv.cpp
Schedule dualpipev(const ScheduleParams& q);  // gen_dualpipe.cpp
Schedule dualpipe(const ScheduleParams& q);   // gen_dualpipe.cpp, pipes = 2

}  // namespace pipebench::analysis::detail
