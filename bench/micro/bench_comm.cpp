// What the harness of `pipebench comm` costs, measured in one job against bare MPI loops written here
// without the communicator layer (docs/comm-bench.md, "What the harness costs"):
//   latency at 8 B: pipebench's OSU ping-pong minus a bare MPI_Send/MPI_Recv ping-pong (us);
//   bw at 1 MiB and 4 MiB: pipebench's window bandwidth / a bare window of MPI_Isend + MPI_Waitall;
//   all_reduce at 8 B, 64 KiB, 1 MiB: pipebench's time / a bare MPI_Allreduce loop's.
// Each figure is taken --repeats times (default 5), alternating bare and pipebench; rank 0 prints
// each repeat and the worst and median. Run: mpiexec -n 2 bench_comm [--repeats R]. With one rank
// (the perf test runs it so) it says so and exits 0.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "comm/bench_harness.hpp"
#include "comm/mpi_communicator.hpp"

namespace {

using namespace pipebench::comm;
using clock_type = std::chrono::steady_clock;

double now() { return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count(); }

double max_over_ranks(double t) {
  double m = 0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

// A bare OSU-style ping-pong between ranks 0 and 1: the one-way time.
double bare_latency(std::size_t bytes, int warmup, int iters) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::vector<char> s(bytes, 1), r(bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = 0;
  for (int i = 0; i < warmup + iters; ++i) {
    if (i == warmup) t0 = now();
    if (me == 0) {
      MPI_Send(s.data(), static_cast<int>(bytes), MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(r.data(), static_cast<int>(bytes), MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == 1) {
      MPI_Recv(r.data(), static_cast<int>(bytes), MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(s.data(), static_cast<int>(bytes), MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  return max_over_ranks(me < 2 ? (now() - t0) / (2.0 * iters) : 0);
}

// A bare OSU-style window: 64 non-blocking sends from rank 0, then a 4-byte acknowledgement. MB/s.
double bare_bw(std::size_t bytes, int warmup, int iters) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::vector<char> s(bytes, 1), r(bytes);
  std::vector<MPI_Request> rq(bench::kWindow);
  char ack = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = 0;
  for (int i = 0; i < warmup + iters; ++i) {
    if (i == warmup) t0 = now();
    if (me == 0) {
      for (auto& q : rq) MPI_Isend(s.data(), static_cast<int>(bytes), MPI_BYTE, 1, 1, MPI_COMM_WORLD, &q);
      MPI_Waitall(bench::kWindow, rq.data(), MPI_STATUSES_IGNORE);
      MPI_Recv(&ack, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == 1) {
      for (auto& q : rq) MPI_Irecv(r.data(), static_cast<int>(bytes), MPI_BYTE, 0, 1, MPI_COMM_WORLD, &q);
      MPI_Waitall(bench::kWindow, rq.data(), MPI_STATUSES_IGNORE);
      MPI_Send(&ack, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    }
  }
  const double t = max_over_ranks(me < 2 ? now() - t0 : 0);
  return static_cast<double>(bytes) * bench::kWindow * iters / t / 1e6;
}

// A bare MPI_Allreduce loop (out of place, float sum): time of one, largest over the ranks.
double bare_allreduce(std::size_t bytes, int warmup, int iters) {
  const int n = static_cast<int>(bytes / 4);
  std::vector<float> s(static_cast<std::size_t>(n), 1.0f), r(static_cast<std::size_t>(n));
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < warmup; ++i) MPI_Allreduce(s.data(), r.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const double t0 = now();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(s.data(), r.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  return max_over_ranks((now() - t0) / iters);
}

// pipebench's figure for one size: the harness of `pipebench comm` on the world, polling without sleeping.
double harness(Communicator& group, Communicator& world, bench::BenchOp op, std::size_t bytes, int warmup, int iters) {
  bench::Spec spec;
  spec.op = op;
  spec.warmup = warmup;
  spec.iters = iters;
  spec.blocking = true;  // pipebench comm's default (--poll-us 0)
  bench::Harness h(group, world, spec, true, bytes);
  const bench::Sample mine = h.run(bytes);
  double t = -1;
  for (const auto& s : bench::gather_samples(world, mine)) t = std::max(t, s.time_s[0]);
  const bench::OpRow& row = bench::op_row(op);
  if (bench::table_of(row) == bench::Table::osu_bandwidth) return row.directions * static_cast<double>(bytes) / t / 1e6;
  return t;
}

struct Series {
  std::string name;
  std::vector<double> values;
  bool lower_is_worse;  // ratios of bandwidth: the smallest is the worst
};

void summary(const Series& s) {
  std::vector<double> v = s.values;
  std::sort(v.begin(), v.end());
  const double worst = s.lower_is_worse ? v.front() : v.back();
  const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  std::printf("%-44s worst %9.4f  median %9.4f  (", s.name.c_str(), worst, median);
  for (std::size_t i = 0; i < s.values.size(); ++i) std::printf("%s%.4f", i ? " " : "", s.values[i]);
  std::printf(")\n");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int repeats = 5;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[i + 1]));
  if (size != 2) {
    if (me == 0) std::printf("bench_comm: run it on 2 ranks (mpiexec -n 2 bench_comm); nothing measured on %d\n", size);
    MPI_Finalize();
    return 0;
  }
  {
    WaitPolicy spin;
    spin.poll_interval = spin.max_poll_interval = std::chrono::microseconds(0);
    MpiCommunicator world(MPI_COMM_WORLD, "world", spin);
    MpiCommunicator group(MPI_COMM_WORLD, "bench", spin);
    std::vector<Series> out{{"latency 8 B: pipebench - bare (us)", {}, false},
                            {"latency 8 B: bare (us)", {}, false},
                            {"bw 1 MiB: pipebench / bare", {}, true},
                            {"bw 4 MiB: pipebench / bare", {}, true},
                            {"bw 1 MiB: bare (MB/s)", {}, true},
                            {"all_reduce 8 B: pipebench / bare", {}, false},
                            {"all_reduce 64 KiB: pipebench / bare", {}, false},
                            {"all_reduce 1 MiB: pipebench / bare", {}, false}};
    for (int r = 0; r < repeats; ++r) {
      const double lb = bare_latency(8, 1000, 10000);
      const double lp = harness(group, world, bench::BenchOp::latency, 8, 1000, 10000);
      out[0].values.push_back((lp - lb) * 1e6);
      out[1].values.push_back(lb * 1e6);
      for (int k = 0; k < 2; ++k) {
        const std::size_t b = k == 0 ? (1u << 20) : (4u << 20);
        const double bb = bare_bw(b, 2, 10);
        const double bp = harness(group, world, bench::BenchOp::bw, b, 2, 10);
        out[2 + static_cast<std::size_t>(k)].values.push_back(bp / bb);
        if (k == 0) out[4].values.push_back(bb);
      }
      const std::size_t sizes[3] = {8, 64u << 10, 1u << 20};
      for (int k = 0; k < 3; ++k) {
        const int iters = k == 2 ? 100 : 2000;
        const double ab = bare_allreduce(sizes[k], iters / 10, iters);
        const double ap = harness(group, world, bench::BenchOp::all_reduce, sizes[k], iters / 10, iters);
        out[5 + static_cast<std::size_t>(k)].values.push_back(ap / ab);
      }
    }
    if (me == 0) {
      std::printf("# bench_comm: pipebench comm's harness against bare MPI loops, %d repeats, 2 ranks\n", repeats);
      for (const auto& s : out) summary(s);
    }
  }
  MPI_Finalize();
  return 0;
}
