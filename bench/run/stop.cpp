#include "bench/run/stop.hpp"

#include <csignal>
#include <cstring>

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
