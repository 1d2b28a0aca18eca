#include "bench/run/stop.hpp"

#include <mpi.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

namespace pipebench::bench {

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_stop_signal(int sig) {
  if (g_stop == 0) g_stop = sig;
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

void arm_stop_deadline(double limit_s, int rank, std::function<std::string()> what) {
  std::thread([limit_s, rank, what = std::move(what)] {
    while (g_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int sig = g_stop;
    std::this_thread::sleep_for(std::chrono::duration<double>(limit_s));
    if (rank == 0) {
      std::fprintf(stderr, "pipebench: stopped by %s: %s (exit code %d)\n", signal_name(sig), what().c_str(), kStoppedExitCode);
      std::fflush(stderr);
    }
    // Rank 0 ends the job through MPI_Abort (as the watchdogs do), so that the launcher exits with
    // 75 (hydra returned 0 now and then when the ranks just left), after the launcher forwarded its
    // line; the others leave by themselves 1 s later if the launcher has not ended them by then.
    std::this_thread::sleep_for(std::chrono::milliseconds(rank == 0 ? 200 : 1200));
    if (rank == 0) abort_world(kStoppedExitCode);
    _exit(kStoppedExitCode);
  }).detach();
}

int stop_signal() { return g_stop; }

void abort_world(int code) {
  std::fflush(stderr);
  const int null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, STDERR_FILENO);
  MPI_Abort(MPI_COMM_WORLD, code);
  _exit(code);
}

void request_stop(int sig) { on_stop_signal(sig); }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

}  // namespace pipebench::bench
