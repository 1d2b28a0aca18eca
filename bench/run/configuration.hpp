#pragma once
// One configuration of `pipebench run`, from its plan to the measured RunResult: communicators,
// workload, executor, clock alignment, gather, measurement. Collective over MPI_COMM_WORLD; the caller
// (cmd_run.cpp) owns the sweep loop, the output and the error handling.
#include <optional>
#include <string>

#include "analysis/schedule.hpp"
#include "bench/run/measure.hpp"
#include "bench/run/plan.hpp"
#include "comm/communicator.hpp"
#include "comm/factory.hpp"
#include "topology/placement.hpp"

namespace pipebench::bench {

comm::CommOptions comm_options(const RunSettings& rs);

// One line on where a configuration's groups sit (`pipebench run` prints it, the metadata records it):
// "2 node(s); tp groups spanning nodes 0/4, pp groups spanning nodes 4/4, dp ..., pipeline links ...".
std::string placement_line(const topology::PlacementSummary& s);

// Runs one planned configuration on every rank of `world` (a communicator over MPI_COMM_WORLD). Rank 0
// returns the measured run, with the plan's config and key and the metadata; other ranks return nothing.
std::optional<Measurement> run_configuration(const RunSettings& rs, const Plan& plan, comm::Communicator& world);

int world_rank();
// Prints `pipebench: error: rank R: what` and aborts the whole job (other ranks may be blocked).
[[noreturn]] void abort_job(const std::string& what);

}  // namespace pipebench::bench
