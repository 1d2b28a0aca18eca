#pragma once
// One configuration of `pipebench run`, from its plan to the measured RunResult: communicators,
// workload, executor, clock alignment, gather, measurement. Collective over MPI_COMM_WORLD; the caller
// (bench/cmd/run.cpp) owns the sweep loop, the output and the error handling.
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/schedule.hpp"
#include "bench/run/links.hpp"
#include "bench/run/measure.hpp"
#include "bench/run/plan.hpp"
#include "comm/communicator.hpp"
#include "comm/factory.hpp"
#include "comm/roll.hpp"
#include "topology/mpi_grid.hpp"
#include "topology/placement.hpp"

namespace pipebench::bench {

comm::CommOptions comm_options(const RunSettings& rs);

// One line on where a configuration's groups sit (`pipebench run` prints it, the metadata records it):
// "2 node(s); tp groups spanning nodes 0/4, pp groups spanning nodes 4/4, dp ..., pipeline links ...".
std::string placement_line(const topology::PlacementSummary& s);

// What a sweep keeps from one configuration to the next: the world with its named meeting point
// (comm::Roll), and the tp/pp/dp communicators of every mapping of the sweep, built once at the start.
// Building communicators takes blocking MPI calls (MPI_Comm_split has no non-blocking form), which a
// stopped rank would hold forever; made here, before any configuration and under a watchdog, none is
// left between configurations, where a rank stopped after a table row used to hang the job.
class SweepComms {
 public:
  struct Groups {
    std::unique_ptr<topology::MpiGrid> grid;
    std::unique_ptr<comm::Communicator> pp, tp, dp;  // tp, dp: null when their size is 1
    // Context-parallel (cp > 1): the cp group and the dp-cp group the gradients are reduced over.
    std::unique_ptr<comm::Communicator> cp, dp_cp;
    std::unique_ptr<comm::Communicator> ep;  // the expert-parallel group (ep > 1), else null
    std::unique_ptr<comm::Communicator> expert_dp;  // the expert-data-parallel group (cp d / ep > 1), else null
    std::unique_ptr<Links> links;  // per-direction pipeline links (NCCL; bench/run/links.hpp), else null
  };
  // Collective over `world`. A rank that does not come to the start is named by the roll; one that
  // stops inside the communicator calls ends the job through the watchdog after --timeout.
  SweepComms(const RunSettings& rs, const std::vector<Plan>& plans, comm::Communicator& world, comm::Roll& roll);
  const Groups& groups(const Mapping& m) const;
  comm::Communicator& world() { return roll_.world(); }
  comm::Roll& roll() { return roll_; }

 private:
  comm::Roll& roll_;
  std::map<std::string, Groups> groups_;  // by to_string(mapping)
};

// The named meeting that starts configuration `plan` on every rank (a rank that does not come is named
// with its host). Returns rank 0's verdict on every rank: `skip`, the configuration is already complete
// in the results file (--resume) and nobody runs it; `stop`, a rank was asked to stop (the signal
// number, bench/run/stop.hpp) and the sweep ends here.
struct ConfigurationStart {
  bool skip = false;
  int stop = 0;
};
// `repeat` (0-based, --repeats) names the meeting and picks the visit a test fault fires at.
ConfigurationStart start_configuration(SweepComms& sweep, const Plan& plan, bool skip, int repeat = 0);
// The named meeting after the last configuration: a rank that stopped after its last record is named
// instead of holding MPI_Finalize.
void finish_sweep(SweepComms& sweep);

// Runs one planned configuration on every rank (after start_configuration). Rank 0 returns the measured
// run, with the plan's config and key and the metadata; other ranks return nothing.
std::optional<Measurement> run_configuration(const RunSettings& rs, const Plan& plan, SweepComms& sweep);

// Refuses (UsageError, naming the configuration) a sweep whose pipeline messages would need a tag
// above `tag_ub` (the MPI library's MPI_TAG_UB; MPI promises only 32767): the executor's largest tag is
// 2 * m * stages - 1 (comm/tags.hpp). Without `tag_ub`, asks MPI.
void check_tags(const std::vector<Plan>& plans, long long tag_ub);
void check_tags(const std::vector<Plan>& plans);

// Test-only fault hook, read from the environment (the fault tests, tests/mpi/faults.sh):
// PIPEBENCH_TEST_FAULT=RANK:CONFIG:stop|kill|step|end makes global rank RANK stop itself (SIGSTOP) or
// die (SIGKILL) as it begins configuration CONFIG (between CONFIG-1 and CONFIG), stop inside the first
// timed step of CONFIG after its first action, or (end, CONFIG ignored) stop after the meeting that ends
// the sweep, before MPI_Finalize. RANK:CONFIG:usr1 sends itself SIGUSR1 as it begins CONFIG, and
// RANK:CONFIG:term SIGTERM after the first action of the first timed step of CONFIG (the stop tests,
// tests/mpi/stop.sh). A fourth field, RANK:CONFIG:MODE:REPEAT, makes stop, kill and usr1 fire as repeat
// REPEAT (1-based, default 1) of CONFIG begins (tests/mpi/repeat_order.sh). Unset, it does nothing.
struct TestFault {
  int rank = -1, config = 0, repeat = 1;
  // 's' stop, 'k' kill, 'a' stop after the first action of a step, 'e' stop at the end, 'u' SIGUSR1 at
  // the start, 't' SIGTERM inside a step
  char mode = 0;
};
const TestFault& test_fault();

}  // namespace pipebench::bench
