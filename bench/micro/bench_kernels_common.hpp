#pragma once
// What bench_kernels.cpp and bench_kernels_attention.hpp share: the shapes, filled views, timing loops
// and counters, the cost model's FLOPs of a product.
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>

#include "analysis/transformer/flops.hpp"
#include "kernels/random.hpp"
#include "kernels/views.hpp"

#include <ctime>
#include <string>

namespace bench_kernels {

namespace pk = pipebench::kernels;
using S = float;
using E = Kokkos::DefaultExecutionSpace;
using V = pk::Views<S, E>;
constexpr double kB = sizeof(S);
using Op = pipebench::analysis::transformer::Op;

struct Shape {
  int b, s, h, a, vocab;
  double n() const { return static_cast<double>(b) * s; }
  std::size_t rows() const { return static_cast<std::size_t>(b) * static_cast<std::size_t>(s); }
  std::size_t z() const { return static_cast<std::size_t>(b) * static_cast<std::size_t>(a); }
  std::size_t d() const { return static_cast<std::size_t>(h / a); }
};

template <class View>
View filled(View v, std::uint64_t seed, double scale = 1.0) {
  typename V::Vec flat(v.data(), v.span());
  Kokkos::parallel_for(
      "bench::fill", Kokkos::RangePolicy<E>(0, flat.extent(0)),
      KOKKOS_LAMBDA(std::size_t i) { flat(i) = static_cast<S>(scale * pk::uniform_pm1(pk::hash3(seed, i, 1))); });
  return v;
}
V::Mat mat(std::size_t r, std::size_t c, std::uint64_t seed) { return filled(V::Mat("m", r, c), seed); }
V::Vec vec(std::size_t n, std::uint64_t seed) { return filled(V::Vec("v", n), seed); }
V::Heads heads(const Shape& sh, std::uint64_t seed) {
  return filled(V::Heads("h", sh.z(), static_cast<std::size_t>(sh.s), sh.d()), seed);
}

// CPU seconds of the whole process (all threads): beside the wall clock, what a paired figure reaches on
// a shared machine where other processes take the cores away (preemption stops this clock, not the
// wall's). On several threads it includes time they spin waiting (OMP_WAIT_POLICY=passive avoids it).
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void counters(benchmark::State& st, double flops, double bytes) {
  st.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

template <class F>
void run(benchmark::State& st, double flops, double bytes, F&& f) {
  for (auto _ : st) {
    f();
    Kokkos::fence();
  }
  counters(st, flops, bytes);
}

// Wall-clock time, like the block benchmarks (CPU time would hide preemption on a shared machine and
// mean nothing on a GPU backend).
template <class F>
void reg(const std::string& name, F&& f) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(f))->UseRealTime()->Unit(benchmark::kMillisecond);
}

// The forward FLOPs of one layer's product `op` for one micro-batch at t = 1, from the cost model
// (analysis/transformer/): its I and W are as many (the attention's I twice, W none).
double product_flops(const Shape& sh, Op op) {
  pipebench::analysis::transformer::Shape m;
  m.layers = 1, m.hidden = sh.h, m.heads = sh.a, m.seq = sh.s, m.micro_batch = sh.b, m.vocab = sh.vocab;
  for (const auto& o : pipebench::analysis::transformer::layer_ops(m, {}, pipebench::analysis::Recompute::none,
                                                                  pipebench::analysis::transformer::Convention::pipebench))
    if (o.op == op) return o.flops.forward;
  return 0;
}

}  // namespace bench_kernels
