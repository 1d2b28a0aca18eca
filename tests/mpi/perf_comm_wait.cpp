// What a wait policy costs: ping-pong latency between ranks 0 and 1, and the CPU a rank uses while it
// waits 0.5 s for a late message, with every rank but the sender waiting (oversubscribed on small
// machines). Prints one table row per policy; asserts payloads and that the default policy stays
// under 20 % of a core. Run by hand for the figures in docs/comm.md:
//   mpiexec -n 4 build/release/tests/mpitest_comm_wait_cost
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>
#include <vector>

#include "comm/factory.hpp"

using namespace pipebench::comm;

namespace {

WaitPolicy make(int poll_us, int max_us) {
  WaitPolicy p;
  p.poll_interval = std::chrono::microseconds(poll_us);
  p.max_poll_interval = std::chrono::microseconds(max_us);
  p.timeout = std::chrono::duration<double>(30);
  return p;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Half round trip in microseconds, 8-byte messages between ranks 0 and 1, at most `iters` round
// trips or 0.5 s (a spinning policy on an oversubscribed machine needs milliseconds per trip). Rank 0
// ends the exchange by sending -1.
double ping_pong_us(Communicator& c, int iters) {
  double msg = 0, back = 0;
  const int r = c.rank();
  int done = 0;
  c.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  if (r == 0) {
    for (; done < iters && elapsed() < 0.5; ++done) {
      msg = done;
      c.send(&msg, sizeof msg, 1, 0);
      c.recv(&back, sizeof back, 1, 0);
      EXPECT_EQ(back, done + 0.5);
    }
    msg = -1;
    c.send(&msg, sizeof msg, 1, 0);
  } else if (r == 1) {
    while (true) {
      c.recv(&msg, sizeof msg, 0, 0);
      if (msg < 0) break;
      back = msg + 0.5;
      c.send(&back, sizeof back, 0, 0);
    }
  }
  const double us = 1e6 * elapsed();
  c.barrier();
  return done ? us / (2.0 * done) : 0;
}

// Largest share of a core used by a rank that waits 0.5 s for rank 1.
double waiting_cpu_share(Communicator& c) {
  const int n = c.size(), r = c.rank();
  double share = 0;
  c.barrier();
  if (r == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::vector<Request> rs;
    for (int i = 0; i < n; ++i)
      if (i != 1) rs.push_back(c.isend(&r, sizeof r, i, 1));
    c.wait_all(rs);
  } else {
    int token = 0;
    const double cpu0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    c.recv(&token, sizeof token, 1, 1);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    share = (process_cpu_seconds() - cpu0) / wall;
    EXPECT_EQ(token, 1);
  }
  double worst = 0;
  MPI_Allreduce(&share, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

}  // namespace

TEST(WaitCost, LatencyAndCpuPerPolicy) {
  auto c = make_communicator("mpi", MPI_COMM_WORLD, "world");
  if (c->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  struct Row {
    const char* name;
    int poll, max;
  };
  const Row rows[] = {{"spin", 0, 0},          {"fixed 20us", 20, 20},    {"fixed 50us", 50, 50},
                      {"fixed 100us", 100, 100}, {"default (growing)", 50, 1000}};
  const int iters = 1000;
  if (c->rank() == 0) {
    std::printf("# wait policy cost: %d ranks, ping-pong ranks 0<->1 (8 B, up to %d round trips or 0.5 s), then all\n"
                "# ranks but rank 1 wait 0.5 s for it; CPU is the busiest waiting process\n",
                c->size(), iters);
    std::printf("#%-19s %6s %6s %10s %10s\n#%-19s %6s %6s %10s %10s\n", "policy", "poll", "max", "latency",
                "cpu-wait", "", "(us)", "(us)", "(us)", "(% core)");
  }
  for (const Row& row : rows) {
    c->set_wait_policy(make(row.poll, row.max));
    const double lat = ping_pong_us(*c, iters);
    const double cpu = waiting_cpu_share(*c);
    if (c->rank() == 0) std::printf(" %-19s %6d %6d %10.1f %10.1f\n", row.name, row.poll, row.max, lat, 100 * cpu);
    if (row.poll == 50 && row.max == 1000) {
      EXPECT_LT(cpu, 0.2);
    }
  }
  c->set_wait_policy(WaitPolicy{});
}
