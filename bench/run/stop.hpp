#pragma once
// Stopping a sweep early and cleanly, as batch systems ask: Slurm sends SIGUSR1 (or any signal named
// with `--signal`) before the time limit and SIGTERM on preemption or scancel, then SIGKILL after
// KillWait. `pipebench run` takes SIGUSR1 and SIGTERM as "stop at the next safe point": the signal only
// sets a flag; every rank reports its flag at the named meetings that start each configuration and
// each step, rank 0 takes the verdict and every rank learns it in the same meeting, so all ranks stop
// at the same point. A configuration that has not finished its timed steps is abandoned (nothing of it
// is written); every configuration already written stays in the file, and the job exits with
// kStoppedExitCode, after which `--append --resume` runs exactly the missing ones (docs/slurm.md).
#include <functional>
#include <string>

namespace pipebench::bench {

// EX_TEMPFAIL of sysexits.h, "temporary failure; the user is invited to retry": the sweep is not
// complete, and running the same command with --append --resume completes it. Distinct from 1 (a
// failure) and 2 (bad input).
inline constexpr int kStoppedExitCode = 75;

// Installs the handlers of SIGUSR1, SIGTERM and SIGINT (SA_RESTART: interrupted system calls go on).
void install_stop_handlers();
// Bounds the stop: `limit_s` seconds after the first stop signal, a process that is still running
// (one long action, --stage-cost 16777217, or a long wait defers the next meeting without bound)
// exits with kStoppedExitCode by itself; rank 0 first prints "pipebench: stopped by SIG: " and
// `what(sig)`, which says what was kept (a run being written then stays incomplete and is skipped).
// A watcher thread that sleeps 20 ms between looks at the flag.
void arm_stop_deadline(double limit_s, int rank, std::function<std::string()> what);
// The signal that asked this process to stop (the first one), or 0.
int stop_signal();
// Test-only: as if `sig` had arrived.
void request_stop(int sig);
// "SIGUSR1", "SIGTERM", "signal 12".
const char* signal_name(int sig);

// MPI_Abort(MPI_COMM_WORLD, code) without MPICH's own "Abort(code) on node N (rank N in comm 0): ..."
// line, which would follow the one line pipebench has already printed (issue 27): standard error
// goes to /dev/null first (MPICH's MPIR_CVAR_SUPPRESS_ABORT_MESSAGE empties only the line's text).
[[noreturn]] void abort_world(int code);

// Thrown on every rank at once by the step that the verdict stops (Executor::run_step): the
// configuration is abandoned. Not a std::exception: only the sweep loop catches it.
struct SweepStopped {
  int signal = 0;
};

}  // namespace pipebench::bench
