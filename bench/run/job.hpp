#pragma once
// The life of pipebench's MPI jobs, written once for `run`, `comm` and `rerun` (which runs `run`): MPI's
// start and the refusal of N one-rank jobs, the world communicator and its named meeting point
// (comm::Roll), the verdict of each round of checks (bad input on any rank: one line from rank 0, exit
// code 2 on every rank, before any traffic and with nothing half-written), the abort of the whole job
// on a failure, watchdogs for the blocking MPI calls no timed wait covers, the default results file,
// and MPI_Finalize under a watchdog (docs/design.md "Conventions", docs/run.md "When a rank dies or
// hangs").
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bench/results/store.hpp"
#include "comm/factory.hpp"
#include "comm/roll.hpp"

namespace pipebench::bench {

int world_rank();
std::string host_name();  // MPI_Get_processor_name
// Prints `pipebench: error: rank R: what` and aborts the whole job (other ranks may be blocked).
[[noreturn]] void abort_job(const std::string& what);

// Ends the job with `what` (abort_job) unless disarmed (destroyed) within `limit`: for the blocking
// MPI calls that no timed wait can cover. Its thread calls MPI_Abort while the main thread is inside
// MPI, which MPICH and Open MPI take at any thread level (the job is being torn down anyway).
class Watchdog {
 public:
  // `finalizing`: the watch is over MPI_Finalize, where MPI_Abort is no longer allowed: the message
  // (if any) is printed and the process exits 1 by itself, and the launcher ends the others.
  Watchdog(std::string what, std::chrono::duration<double> limit, bool finalizing = false);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Ends the job (abort_job) when, while it watches something, `counter` stands still for `limit`: a
// blocking MPI collective that a stopped or dead rank holds (`pipebench comm --poll-us 0`). Checks ten
// times per limit, sleeping.
class ProgressWatchdog {
 public:
  std::atomic<std::uint64_t> counter{0};
  ProgressWatchdog(int rank, std::chrono::duration<double> limit);
  ~ProgressWatchdog();
  ProgressWatchdog(const ProgressWatchdog&) = delete;
  ProgressWatchdog& operator=(const ProgressWatchdog&) = delete;
  // What is being watched ("size 1024"); "" stops watching.
  void watch(const std::string& what);

 private:
  void loop();
  int rank_;
  std::chrono::duration<double> limit_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string what_;
  std::uint64_t seen_ = 0;
  std::chrono::steady_clock::time_point since_;
  std::thread thread_;
};

// One MPI job of pipebench, from MPI_Init to MPI_Finalize. Every member function is called by every
// rank, in the same order.
class Job {
 public:
  // Starts MPI unless it runs already and, with `stop_on_signals`, takes SIGUSR1 and SIGTERM as "stop at
  // the next meeting" (bench/run/stop.hpp). N one-rank jobs where the launcher started one N-rank job
  // (bench/run/launch_check.hpp) are refused here: one line, exit code 2, nothing made.
  explicit Job(bool stop_on_signals);
  ~Job();  // finish() unless done (or MPI ended otherwise)
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank runs `checks`; a UsageError (or bad_alloc) is its verdict. Before open_world() the ranks
  // cannot talk, so `checks` must find the same on every rank; after it they meet as `meeting` and share
  // the verdict. Either way, when any rank failed: `undo` runs on rank 0 (what its checks made, say a
  // results file, is removed), rank 0 prints its message ("see the other ranks" when only others
  // failed), MPI ends and every rank throws ExitCode{2}.
  // `grace`: how much longer the others wait for rank 0's verdict (Roll::meet), where its checks read
  // the results file to append to (kResultsReadLimit).
  void check(const std::string& meeting, const std::function<void()>& checks, const std::function<void()>& undo = {},
             std::chrono::duration<double> grace = {});
  // The world communicator on the MPI backend, with `options`' waits, and its Roll; a failure here ends
  // the job (abort_job). Every wait from here on is timed and names the rank it waited for.
  void open_world(const comm::CommOptions& options);
  comm::Communicator& world() { return *world_; }
  comm::Roll& roll() { return *roll_; }
  // Runs `work`; any std::exception ends the whole job with its message (abort_job), since other ranks
  // may wait for this one. ExitCode and SweepStopped pass through.
  void guarded(const std::function<void()>& work);
  // The end: the Roll and the world are freed, then MPI_Finalize, which MPICH makes wait for every rank,
  // runs under a watchdog that names this rank when a rank stopped or died after `phase` (every rank
  // reached it); `note` ends that message ("; every run is in FILE").
  void finish(const std::string& phase, const std::string& note = "");

 private:
  [[noreturn]] void refuse(const std::string& msg, const std::function<void()>& undo);
  int rank_ = 0, size_ = 1;
  bool finished_ = false;
  std::unique_ptr<comm::Communicator> world_;
  std::unique_ptr<comm::Roll> roll_;
};

// The results file of a job, prepared on rank 0 before anything runs: `out` as given (an existing file
// needs `append`; prepare_results_file checks it) or, when `out` is empty, a new
// results/pipebench-<UTC time>.h5 (-2, -3, ... when two jobs start in the same second), whose name is
// written to `out`. UsageError otherwise.
PreparedFile claim_results_file(std::string& out, bool append);

}  // namespace pipebench::bench
