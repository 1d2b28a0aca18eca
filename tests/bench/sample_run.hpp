#pragma once
// A small hand-made run (2 pipeline ranks, 2 micro-batches, 2 timed steps) shared by the results,
// trace and report tests and by the report command's test files (tests/cli/report_fixtures.cpp).
#include <string>

#include "bench/results/records.hpp"

namespace pipebench::bench::testing {

inline ActionRecord act(int step, int rank, analysis::Kind k, int stage, int mb, double t0, double t1) {
  ActionRecord a;
  a.step = step;
  a.rank = rank;
  a.global_rank = rank;
  a.stage = stage;
  a.chunk = 0;
  a.mb = mb;
  a.kind = k;
  a.t_start = t0;
  a.t_end = t1;
  a.activation_bytes = 1000 * (mb + 1);
  return a;
}

inline CommRecord comm(int step, int rank, CommKind k, int peer, int stage, int mb, double t0, double t1) {
  CommRecord c;
  c.step = step;
  c.global_rank = rank;
  c.peer = peer;
  c.kind = k;
  c.group = k == CommKind::AllReduce ? CommGroup::dp : CommGroup::pp;
  c.bytes = k == CommKind::AllReduce ? 4096 : 1024;
  c.stage = stage;
  c.mb = mb;
  c.t_posted = t0;
  c.t_done = t1;
  return c;
}

// Times in seconds. Step 0 has two overlapping sends on rank 0 and two overlapping receives on rank 1,
// one send that nobody received, and an overlapped F&B; step 1 repeats one transfer.
inline RunResult sample_run(const std::string& key = "schedule=1f1b,t=1,p=2,d=1,m=2") {
  using analysis::Kind;
  RunResult r;
  r.key = key;
  r.config = {{"schedule", "1f1b"}, {"t", "1"}, {"p", "2"}, {"d", "1"}, {"v", "1"}, {"m", "2"}, {"note", ""}};
  r.metadata = {{"pipebench_version", "0.1.0"}, {"env.OMP_NUM_THREADS", "1"}, {"placement", "node01:0,node02:1"},
                {"cpu", "Caf\xc3\xa9 CPU (x 2)"}};
  r.actions = {act(0, 0, Kind::F, 0, 0, 0.000, 0.001), act(0, 0, Kind::F, 0, 1, 0.001, 0.002),
               act(0, 0, Kind::B, 0, 0, 0.005, 0.007), act(0, 0, Kind::B, 0, 1, 0.009, 0.011),
               act(0, 1, Kind::F, 1, 0, 0.0011, 0.0021), act(0, 1, Kind::FB, 1, 1, 0.0021, 0.0051),
               act(0, 1, Kind::B, 1, 1, 0.0061, 0.0081), act(1, 0, Kind::F, 0, 0, 0.000, 0.001),
               act(1, 1, Kind::F, 1, 0, 0.0012, 0.0022)};
  r.actions[5].b_stage = 1;
  r.actions[5].b_mb = 0;
  r.actions[5].flops = 1.0 / 3.0;
  r.comms = {comm(0, 0, CommKind::Send, 1, 0, 0, 0.001, 0.003),  comm(0, 0, CommKind::Send, 1, 0, 1, 0.002, 0.0035),
             comm(0, 1, CommKind::Recv, 0, 0, 0, 0.000, 0.0011), comm(0, 1, CommKind::Recv, 0, 0, 1, 0.000, 0.0021),
             comm(0, 1, CommKind::Send, 0, 1, 0, 0.0051, 0.0052), comm(0, 0, CommKind::Recv, 1, 1, 0, 0.002, 0.0052),
             comm(0, 1, CommKind::Send, 0, 1, 1, 0.0081, 0.0082), comm(0, 0, CommKind::AllReduce, -1, -1, -1, 0.011, 0.012),
             comm(0, 1, CommKind::AllReduce, -1, -1, -1, 0.0081, 0.012), comm(1, 0, CommKind::Send, 1, 0, 0, 0.001, 0.0012),
             comm(1, 1, CommKind::Recv, 0, 0, 0, 0.000, 0.0012)};
  RankSummary r0{0, 0, 0, 0, 0.006, 0.006, 0.005, 2, 2, 2000, 2048, 1.5e9, 0.0, 0.0, "node01"};
  RankSummary r1{1, 0, 1, 0, 0.006, 0.006, 0.001, 1, 1, 1000, 1024, 0.0, -2.5e-6, 1.25e-7, "node02"};
  r.ranks = {r0, r1};
  r.summary.step_time = 0.012;
  r.summary.makespan = 0.011;
  r.summary.bubble_measured = 0.25;
  r.summary.bubble_simulated = 0.245;
  r.summary.bubble_formula = 1.0 / 3.0;
  r.summary.simulated_makespan = 0.0105;
  r.summary.dp_sync_time = 0.001;
  r.summary.extra = {{"loss", 2.5}};
  r.summary.step_time_min = 0.0118;
  r.summary.step_time_max = 0.0125;
  r.summary.step_time_cv = 0.03;
  r.summary.bubble_min = 0.24;
  r.summary.bubble_max = 0.26;
  r.summary.analytic_makespan = 0.009;
  r.summary.analytic_peak_inflight = {2, 1};
  r.summary.analytic_idle_measure = "idle per rank";
  r.summary.analytic_source = "1F1B";
  r.summary.analytic_notes = {{"idle", "stages are not uniform"}};
  r.stages = {{0, 0.001, 0.002, 0.0}, {1, 0.001, 0.0021, 0.0}};
  return r;
}

}  // namespace pipebench::bench::testing
