#include "bench/run/stop.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "analysis/text.hpp"

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

void arm_stop_deadline(double limit_s, int rank, std::shared_ptr<const std::string> file) {
  std::thread([limit_s, rank, file = std::move(file)] {
    while (g_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int sig = g_stop;
    std::this_thread::sleep_for(std::chrono::duration<double>(limit_s));
    if (rank == 0) {
      std::fprintf(stderr,
                   "pipebench: stopped by %s: the sweep reached no safe point within --timeout %s s of it (a long "
                   "action or wait); every configuration written before is in %s, and the same command with "
                   "--append --resume runs the rest (exit code %d)\n",
                   signal_name(sig), num(limit_s).c_str(), file->c_str(), kStoppedExitCode);
      std::fflush(stderr);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the launcher forward the line
    _exit(kStoppedExitCode);
  }).detach();
}

int stop_signal() { return g_stop; }

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
