#pragma once
// The named, timed meeting point of all ranks of a communicator, for everything outside the pipeline's
// own messages: before a configuration starts, when records are gathered, when a step starts, when
// the sweep ends. Every member sends its arrival to rank 0 with a non-blocking message; rank 0 waits for
// all of them under the timeout, so when one does not come it knows exactly which (a stopped rank
// cannot make it blame a healthy one), and names it with its host. Then rank 0 releases every member
// with a message of its own. Only point-to-point messages travel, so no member ever sits in a blocking
// collective that a stopped rank would hold forever (docs/run.md, "When a rank dies or hangs").
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace pipebench::comm {

class Roll {
 public:
  // `host`: this process's host name; it travels with every arrival, so rank 0 can say where a rank
  // that stops arriving runs.
  Roll(Communicator& world, std::string host);
  ~Roll();
  Roll(const Roll&) = delete;
  Roll& operator=(const Roll&) = delete;

  // Every member calls it. Rank 0 waits for every member's arrival and returns their `value`s (index =
  // rank); other members send theirs and return an empty vector. Members that do not arrive within the
  // communicator's timeout get a roll call (half the timeout), and the Error names those that do not
  // answer either: "rank R (host H) did not reach PHASE within --timeout T; the other ranks did
  // (stopped, hung or dead)"; a member that answers is alive, waiting for one that does not.
  // `grace`: how much longer than root_limit() the other members wait for rank 0, for a phase in
  // which rank 0 alone does slow work of a known bound (reading a results file to append to).
  std::vector<std::int64_t> collect(const std::string& phase, std::int64_t value = 0,
                                    std::chrono::duration<double> grace = {});
  // Rank 0 sends `value` to every member, which returns it. The other members wait longer than rank 0
  // (root_limit()), so that rank 0's diagnosis is the one the job ends with; past it, the Error names
  // rank 0.
  std::int64_t release(const std::string& phase, std::int64_t value = 0, std::chrono::duration<double> grace = {});
  // collect, then release the largest value: a named, timed barrier that also shares a verdict.
  std::int64_t meet(const std::string& phase, std::int64_t value = 0, std::chrono::duration<double> grace = {});

  // After a wait of this member timed out during `phase` (what: the TimeoutError's text), finds out who
  // really stopped, so that the job's one message names that rank and not a healthy neighbour that
  // waits for it too. Rank 0 calls the roll: every member answers from whichever wait it is in
  // (Communicator's idle hook), and those that do not answer within half the timeout are named. Other
  // members send the alarm to rank 0 and keep answering until rank 0 ends the job; if it does not
  // (it is the one stopped), they end it naming rank 0. Always throws Error.
  [[noreturn]] void alarm(const std::string& phase, const std::string& what);

  // How long this member waits for rank 0: twice the timeout on rank 1, three times on the others, so
  // that even when rank 0 itself stopped, one line (rank 1's) names it before the job ends.
  std::chrono::duration<double> root_limit() const;
  // How long this member waits in what follows a meeting every rank reached (the barrier that
  // releases it, communicator splits): the timeout on rank 0, root_limit() on the others, so that
  // rank 0's diagnosis comes first. (MPI_Finalize has its own, shorter limit: bench/run/job.cpp.)
  std::chrono::duration<double> release_limit() const;
  // "rank 2 (host h)" or "ranks 1 (host a), 3 (host b)"; hosts as last heard, "unknown" before.
  std::string name_ranks(const std::vector<int>& ranks) const;
  // Rank 0: how many members run on its host, as last heard (after a collect); others: 0.
  int members_on_root_host() const;
  // "within --timeout 2 s"
  std::string within() const;
  Communicator& world() { return world_; }

 private:
  Communicator& world_;
  std::string host_;
  std::vector<std::string> hosts_;  // rank 0: every member's host as last heard; others: rank 0's in [0]

  // The roll call. Rank 0 listens for alarms from any member; the others for rank 0's call.
  struct Alarm {
    std::int32_t rank = 0;
    char phase[124] = {};
    char what[384] = {};
  };
  void idle();
  // Rank 0: calls the roll among `ranks`; those that do not answer within roll_window().
  std::vector<int> silent_among(const std::vector<int>& ranks);
  std::chrono::duration<double> roll_window() const;
  [[noreturn]] void call_roll(const Alarm& alarm);
  Alarm alarm_in_;
  Request alarm_recv_;
  char call_in_ = 0, answer_ = 1;
  Request call_recv_;
  std::vector<Request> answers_;
  bool in_hook_ = false;
};

}  // namespace pipebench::comm
