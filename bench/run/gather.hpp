#pragma once
// Moving one run's records to rank 0, which alone writes results (docs/results-schema.md argues why).
#include <string>
#include <vector>

#include "bench/run/clock_sync.hpp"
#include "bench/run/executor.hpp"
#include "bench/results/records.hpp"
#include "comm/communicator.hpp"
#include "comm/roll.hpp"
#include "kernels/workload.hpp"

namespace pipebench::bench {

// What one rank contributes.
struct RankRecords {
  std::vector<ActionRecord> actions;
  std::vector<CommRecord> comms;
  std::vector<StepTiming> timing;
  ClockOffset clock;
  std::string host;
  std::string affinity;  // cpu_affinity()
  std::vector<kernels::Workload::Figure> figures;  // after the last timed step
  double blas_rate = 0;                            // FLOP/s of the reference matrix product, 0: not measured
};

// Collective over the roll's world: rank 0 gets every rank's records (index = rank); other ranks get an
// empty vector. The sizes arrive as the roll's named meeting `phase` (a rank that does not come is
// named); then the records travel point to point, the senders waiting on rank 0 as long as the roll says.
std::vector<RankRecords> gather_records(comm::Roll& roll, const std::string& phase, const RankRecords& mine);

}  // namespace pipebench::bench
