#include "bench/run/job.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <new>
#include <string>
#include <utility>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/exit_code.hpp"
#include "bench/run/launch_check.hpp"
#include "bench/run/stop.hpp"

namespace pipebench::bench {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

namespace {

// Prints `what` (nothing when empty) and ends this process with 1, through MPI_Abort when `mpi_abort`
// (not once MPI_Finalize has begun: then neither MPI_Abort nor world_rank() may be called, so `what`
// must name its rank itself).
[[noreturn]] void end_job(const std::string& what, bool mpi_abort) {
  if (!what.empty()) {
    // Timeouts already say which rank waited; do not say it twice.
    const std::string prefix = what.rfind("rank ", 0) == 0 ? "" : "rank " + std::to_string(world_rank()) + ": ";
    std::fprintf(stderr, "pipebench: error: %s%s\n", prefix.c_str(), one_line(what).c_str());
  }
  std::fflush(stderr);
  // The launcher forwards a rank's stderr asynchronously and drops what it has not forwarded when the
  // abort tears the job down: about 1 in 10 aborts lost this line under load without the pause.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (mpi_abort) abort_world(1);
  std::_Exit(1);
}

}  // namespace

[[noreturn]] void abort_job(const std::string& what) { end_job(what, true); }

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

Watchdog::Watchdog(std::string what, std::chrono::duration<double> limit, bool finalizing) {
  thread_ = std::thread([this, what = std::move(what), limit, finalizing] {
    std::unique_lock<std::mutex> lock(m_);
    if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
    end_job(what, !finalizing);
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(m_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

ProgressWatchdog::ProgressWatchdog(int rank, std::chrono::duration<double> limit) : rank_(rank), limit_(limit) {
  thread_ = std::thread([this] { loop(); });
}

ProgressWatchdog::~ProgressWatchdog() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ProgressWatchdog::watch(const std::string& what) {
  std::lock_guard<std::mutex> lock(m_);
  what_ = what;
  seen_ = counter.load();
  since_ = std::chrono::steady_clock::now();
}

void ProgressWatchdog::loop() {
  std::unique_lock<std::mutex> lock(m_);
  while (!stop_) {
    cv_.wait_for(lock, limit_ / 10);
    if (stop_ || what_.empty()) continue;
    const std::uint64_t now = counter.load();
    if (now != seen_) {
      seen_ = now;
      since_ = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - since_ >= limit_) {
      abort_job("rank " + std::to_string(rank_) + ": no operation of " + what_ + " completed within --timeout " +
                num(limit_.count()) +
                " s (a rank stopped or died inside a blocking MPI collective)");
    }
  }
}

Job::Job(bool stop_on_signals) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  // Installed after MPI_Init, so that the handlers are ours and not the MPI library's.
  if (stop_on_signals) install_stop_handlers();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // Each of N one-rank jobs is its own rank 0: only the launcher's first task says so.
  if (const std::string wrong = launch_mismatch(size_); !wrong.empty()) {
    const char* procid = std::getenv("SLURM_PROCID");
    if (!procid || std::string(procid) == "0") std::fprintf(stderr, "pipebench: error: %s\n", wrong.c_str());
    finished_ = true;
    MPI_Finalize();
    throw ExitCode{2};
  }
}

Job::~Job() {
  // An exception on its way to main() (the same usage error on every rank, say a bad flag of the `run`
  // that `rerun` starts): MPI still ends, under the watchdog.
  if (finished_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) finish("the end of the job");
}

void Job::refuse(const std::string& msg, const std::function<void()>& undo) {
  if (rank_ == 0) {
    if (undo) undo();
    std::fprintf(stderr, "pipebench: error: %s\n", msg.empty() ? "see the other ranks" : one_line(msg).c_str());
  }
  roll_.reset();
  world_.reset();
  finished_ = true;
  MPI_Finalize();
  throw ExitCode{2};
}

void Job::check(const std::string& meeting, const std::function<void()>& checks, const std::function<void()>& undo,
                std::chrono::duration<double> grace) {
  int bad = 0;
  std::string msg;
  try {
    checks();
  } catch (const UsageError& e) {
    bad = 1, msg = e.what();
  } catch (const std::bad_alloc&) {
    bad = 1, msg = "the job's plans need more memory than this node has";
  }
  // Before the world exists every rank found the same (the checks need no other rank's data).
  if (!roll_) {
    if (bad) refuse(msg, undo);
    return;
  }
  // A named, timed meeting rather than MPI_Allreduce: a rank that never comes is named, not waited for.
  if (roll_->meet(meeting, bad, grace)) refuse(msg, undo);
}

void Job::open_world(const comm::CommOptions& options) {
  guarded([&] {
    world_ = comm::make_communicator("mpi", MPI_COMM_WORLD, "world", options);
    roll_ = std::make_unique<comm::Roll>(*world_, host_name());
  });
}

void Job::guarded(const std::function<void()>& work) {
  try {
    work();
  } catch (const ExitCode&) {
    throw;
  } catch (const std::exception& e) {
    abort_job(e.what());
  }
}

void Job::finish(const std::string& phase, const std::string& note) {
  // MPICH's MPI_Finalize waits for every rank: one stopped after `phase` would hold it (and MPICH
  // 4.0.2 over UCX's TCP now and then deadlocks in it by itself, docs/netns.md). Every rank waits in
  // it, so only rank 0 says so, once, after --timeout; MPI_Abort may not be called once MPI_Finalize
  // has begun. The others end silently 2 s after rank 0 would have spoken: every rank has met at
  // `phase` already, so nothing is left for which they should wait the 2-3 x --timeout of a meeting
  // (Roll::release_limit), which made each such hang cost 3 x --timeout (61 s at --timeout 20s).
  const std::chrono::duration<double> timeout = world_ ? world_->wait_policy().timeout : std::chrono::seconds(60);
  const auto limit = rank_ == 0 ? timeout : timeout + std::chrono::seconds(2);
  const std::string late = rank_ != 0 ? std::string()
                                      : "rank 0: MPI_Finalize did not complete " +
                                            (roll_ ? roll_->within() : std::string("within 60 s")) +
                                            ", though every rank reached " + phase +
                                            " (a rank stopped or died after it, or the MPI library hung in it)" + note;
  roll_.reset();
  world_.reset();
  finished_ = true;
  Watchdog dog(late, limit, true);
  MPI_Finalize();
}

PreparedFile claim_results_file(std::string& out, bool append) {
  if (!out.empty()) return prepare_results_file(out, append);
  // The default file goes to results/, made here; a directory the user names must exist.
  char stem[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(stem, sizeof stem, "results/pipebench-%Y%m%d-%H%M%S", std::gmtime(&now));
  std::filesystem::create_directories("results");
  PreparedFile made;
  out = create_unique_results_file(stem);
  made.created = true;
  return made;
}

}  // namespace pipebench::bench
