#pragma once
// One configuration of `pipebench run`, from communicators to the measured RunResult. Collective over
// MPI_COMM_WORLD; the caller (cmd_run.cpp) owns the sweep loop, the output and the error handling.
#include <string>

#include "analysis/schedule.hpp"
#include "bench/run/measure.hpp"
#include "bench/results/records.hpp"
#include "bench/run/plan.hpp"
#include "comm/communicator.hpp"
#include "comm/factory.hpp"
#include "topology/placement.hpp"

namespace pipebench::bench {

struct Outcome {
  analysis::Schedule schedule;
  RunResult run;    // rank 0 only
  Prediction pred;  // rank 0 only
};

comm::CommOptions comm_options(const RunConfig& c);

// One line on where a configuration's groups sit (`pipebench run` prints it, the metadata records it):
// "2 node(s); tp groups spanning nodes 0/4, pp groups spanning nodes 4/4, dp ..., pipeline links ...".
std::string placement_line(const topology::PlacementSummary& s);

// Runs configuration `index` (1-based, for fault injection) of the sweep on every rank of `world`
// (a communicator over MPI_COMM_WORLD). Rank 0 returns the measured run; others return its schedule.
Outcome run_configuration(const RunConfig& c, const RunPoint& pt, int index, comm::Communicator& world);

int world_rank();
// Prints `pipebench: error: rank R: what` and aborts the whole job (other ranks may be blocked).
[[noreturn]] void abort_job(const std::string& what);

}  // namespace pipebench::bench
