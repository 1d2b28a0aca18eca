// Figures of context-parallel attention (docs/transformer.md "Context parallelism"), label perf: one
// layer's attention core, F then I (kernels/context_parallel.hpp), on every rank of a cp group of the
// whole world, fp32, b = 1, s = PIPEBENCH_CP_SEQ (default 4096), h = 256, a = 8. Per chunking and
// exchange, the median of 5 repeats per rank (and the worst repeat of any rank) of
//   compute  the call's time less the time blocked in the exchanges' waits (the rank's own work),
//   waited   the time blocked in them (the exposed communication),
// and, for the ring, the same messages sent without any compute (their total time alone). Prints one
// row per case; asserts that zigzag chunks balance the ranks' compute better than contiguous ones.
// Run by hand:  mpiexec -n 4 build/release/tests/mpitest_context_parallel_figures
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/run/context_parallel.hpp"
#include "comm/factory.hpp"
#include "kernels/context_parallel.hpp"
#include "kokkos_env.hpp"

using namespace pipebench;
using Clock = std::chrono::steady_clock;

namespace {

using E = Kokkos::DefaultExecutionSpace;
using Heads = kernels::Views<float, E>::Heads;
using Rows = kernels::Views<float, E>::Mat;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The exchanges of `ops`, each wait timed into `waited`.
kernels::CpOps timed(kernels::CpOps ops, std::shared_ptr<double> waited) {
  auto ring = ops.ring;
  ops.ring = [ring, waited](const void* s, void* r, std::size_t n, int stream) {
    auto wait = ring(s, r, n, stream);
    return std::function<void()>([wait, waited] {
      const auto t0 = Clock::now();
      wait();
      *waited += seconds_since(t0);
    });
  };
  auto gather = ops.all_gather;
  ops.all_gather = [gather, waited](const void* s, void* r, std::size_t n) {
    const auto t0 = Clock::now();
    gather(s, r, n);
    *waited += seconds_since(t0);
  };
  auto scatter = ops.reduce_scatter;
  ops.reduce_scatter = [scatter, waited](const void* s, void* r, std::size_t n, int e) {
    const auto t0 = Clock::now();
    scatter(s, r, n, e);
    *waited += seconds_since(t0);
  };
  return ops;
}

struct Times {
  double compute = 0, waited = 0;  // medians
  double worst = 0;                // the slowest repeat's compute
};

// One layer's attention F and I on this rank, median of `reps` after one warm-up.
Times attention_times(comm::Communicator& cp, kernels::CpChunks chunks, kernels::CpComm exchange, int seq, int reps) {
  const int z = 8, d = 32, n = seq / cp.size();
  auto waited = std::make_shared<double>(0);
  kernels::ContextParallel<float, E> c;
  c.pos = {cp.size(), cp.rank(), n, chunks};
  c.comm = exchange;
  c.ops = timed(bench::make_cp_ops(cp), waited);
  Heads q("q", z, n, d), k("k", z, n, d), v("v", z, n, d), o("o", z, n, d), dout("dout", z, n, d);
  Heads dq("dq", z, n, d), dk("dk", z, n, d), dv("dv", z, n, d);
  Rows lse("lse", z, n);
  Kokkos::Random_XorShift64_Pool<E> pool(1 + cp.rank());
  for (Heads* h : {&q, &k, &v, &dout}) Kokkos::fill_random(*h, pool, -1.0f, 1.0f);
  std::vector<double> compute, wait;
  for (int r = 0; r <= reps; ++r) {
    *waited = 0;
    cp.barrier();
    const auto t0 = Clock::now();
    kernels::cp_attention_forward<float, E>(c, q, k, v, lse, o);
    kernels::cp_attention_backward<float, E>(c, q, k, v, o, lse, dout, dq, dk, dv);
    const double total = seconds_since(t0);
    if (r == 0) continue;
    compute.push_back(total - *waited);
    wait.push_back(*waited);
  }
  return {median(compute), median(wait), *std::max_element(compute.begin(), compute.end())};
}

// The ring's messages of one layer alone: cp-1 K/V hops in F, cp-1 K/V and cp dK/dV hops in I.
double ring_alone(comm::Communicator& cp, int seq, int reps) {
  const std::size_t bytes = 2ull * 8 * (seq / cp.size()) * 32 * sizeof(float);
  std::vector<char> a(bytes), b(bytes);
  const kernels::CpOps ops = bench::make_cp_ops(cp);
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    cp.barrier();
    const auto t0 = Clock::now();
    for (int hop = 0; hop < 3 * cp.size() - 2; ++hop) ops.ring(a.data(), b.data(), bytes, hop % 2)();
    if (r > 0) t.push_back(seconds_since(t0));
  }
  return median(t);
}

}  // namespace

TEST(ContextParallelFigures, ZigzagBalancesTheRanksAndTheRingHidesBehindCompute) {
  const char* env = std::getenv("PIPEBENCH_CP_SEQ");
  const int seq = env ? std::atoi(env) : 4096, reps = 5;
  auto cp = comm::make_communicator("mpi", MPI_COMM_WORLD, "cp");
  if (cp->size() < 2) GTEST_SKIP() << "a cp group of 2 or more ranks";
  double spread[2] = {0, 0};
  for (auto chunks : {kernels::CpChunks::zigzag, kernels::CpChunks::contiguous})
    for (auto exchange : {kernels::CpComm::ring, kernels::CpComm::allgather}) {
      const Times t = attention_times(*cp, chunks, exchange, seq, reps);
      double mine[3] = {t.compute, t.waited, t.worst}, lo[3], hi[3];
      MPI_Allreduce(mine, lo, 3, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
      MPI_Allreduce(mine, hi, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (exchange == kernels::CpComm::ring) spread[chunks == kernels::CpChunks::contiguous] = hi[0] / lo[0];
      if (cp->rank() == 0)
        std::printf("cp %d s %d %-10s %-9s compute min %.1f ms max %.1f ms (max/min %.2f; worst repeat %.1f ms), "
                    "waited min %.1f ms max %.1f ms\n",
                    cp->size(), seq, kernels::cp_chunks_name(chunks), kernels::cp_comm_name(exchange), 1e3 * lo[0],
                    1e3 * hi[0], hi[0] / lo[0], 1e3 * hi[2], 1e3 * lo[1], 1e3 * hi[1]);
    }
  const double alone = ring_alone(*cp, seq, reps);
  if (cp->rank() == 0) std::printf("cp %d s %d ring messages alone (F and I of one layer): %.1f ms\n", cp->size(), seq, 1e3 * alone);
  EXPECT_LT(spread[0], spread[1]);
}
