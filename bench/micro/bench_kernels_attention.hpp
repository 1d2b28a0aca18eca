#pragma once
// bench_kernels' attention benchmarks: the unfused core (kernels/attention.hpp), the fused one
// (kernels/flash_attention*.hpp), and the two paired.
#include "bench/micro/bench_kernels_common.hpp"
#include "kernels/attention.hpp"
#include "kernels/flash_attention_backward.hpp"

#include <chrono>
#include <vector>

namespace bench_kernels {

// The attention core over b*a heads: F, I with the probabilities stored, and I recomputing them.
void register_attention(const Shape& sh) {
  const std::size_t s = static_cast<std::size_t>(sh.s);
  const double N = sh.n(), H = sh.h, Z = static_cast<double>(sh.z()), Sq = sh.s, scores = Z * Sq * Sq;
  // Attention core: F = scores + weighted sum, I twice that (+ the scores again when recomputing them).
  const double attn = product_flops(sh, Op::scores) + product_flops(sh, Op::values), qkv_bytes = kB * 3 * N * H;
  reg("attention/F", [=](benchmark::State& st) {
    const auto q = heads(sh, 12), k = heads(sh, 13), v = heads(sh, 14);
    V::Heads p("p", sh.z(), s, s), o("o", sh.z(), s, sh.d());
    run(st, attn, qkv_bytes + kB * (scores + N * H), [&] { pk::attention_forward<S, E>(q, k, v, p, o); });
  });
  for (const bool stored : {true, false}) {
    reg(stored ? "attention/I" : "attention/I/recompute", [=](benchmark::State& st) {
      const auto q = heads(sh, 12), k = heads(sh, 13), v = heads(sh, 14);
      const auto dout = heads(sh, 15);
      V::Heads p("p", sh.z(), s, s), o("o", sh.z(), s, sh.d());
      pk::attention_forward<S, E>(q, k, v, p, o);
      V::Heads dq("dq", sh.z(), s, sh.d()), dk("dk", sh.z(), s, sh.d()), dv("dv", sh.z(), s, sh.d());
      const V::Heads probs = stored ? p : V::Heads();
      run(st, 2 * attn + (stored ? 0 : product_flops(sh, Op::scores)), qkv_bytes + kB * ((stored ? scores : 0) + 4 * N * H),
          [&] { pk::attention_backward_input<S, E>(q, k, v, probs, dout, dq, dk, dv); });
    });
  }
}

// The fused attention (kernels/flash_attention*.hpp), F and I, with the model FLOPs of the unfused path
// (the scores in full: the fused kernel skips the masked half, and its I recomputes the scores twice).
void register_fused_attention(const Shape& sh) {
  const std::size_t s = static_cast<std::size_t>(sh.s);
  const double N = sh.n(), H = sh.h;
  const double attn = product_flops(sh, Op::scores) + product_flops(sh, Op::values), qkv_bytes = kB * 3 * N * H;
  reg("attention/F/fused", [=](benchmark::State& st) {
    const auto q = heads(sh, 12), k = heads(sh, 13), v = heads(sh, 14);
    V::Heads o("o", sh.z(), s, sh.d());
    run(st, attn, qkv_bytes + kB * N * H, [&] { pk::flash_attention_forward<S, E>(q, k, v, o); });
  });
  reg("attention/I/fused", [=](benchmark::State& st) {
    const auto q = heads(sh, 12), k = heads(sh, 13), v = heads(sh, 14), dout = heads(sh, 15);
    V::Heads o("o", sh.z(), s, sh.d()), dq("dq", sh.z(), s, sh.d()), dk("dk", sh.z(), s, sh.d()),
        dv("dv", sh.z(), s, sh.d());
    pk::flash_attention_forward<S, E>(q, k, v, o);
    run(st, 2 * attn, qkv_bytes + kB * 5 * N * H, [&] { pk::flash_attention_backward<S, E>(q, k, v, o, dout, dq, dk, dv); });
  });
}

// Fused over unfused attention F+I, paired as the block's benchmark is: each iteration runs the unfused
// F and I (probabilities stored) and then the fused ones on the same heads; "ratio" is the unfused time
// over the fused (above 1: fused is faster). At the size's h and a, for sequence lengths `seqs`.
void register_fused_vs_unfused(const Shape& base, const std::vector<int>& seqs) {
  for (const int seq : seqs) {
    Shape sh = base;
    sh.s = seq;
    const std::string name = "attention/fused_vs_unfused/s:" + std::to_string(seq);
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
      const std::size_t s = static_cast<std::size_t>(sh.s), z = sh.z(), d = sh.d();
      const auto q = heads(sh, 12), k = heads(sh, 13), v = heads(sh, 14), dout = heads(sh, 15);
      V::Heads p("p", z, s, s), o("o", z, s, d), dq("dq", z, s, d), dk("dk", z, s, d), dv("dv", z, s, d);
      using clock = std::chrono::steady_clock;
      double t_unfused = 0, t_fused = 0, c_unfused = 0, c_fused = 0;
      for (auto _ : st) {
        const auto t0 = clock::now();
        const double c0 = cpu_seconds();
        pk::attention_forward<S, E>(q, k, v, p, o);
        pk::attention_backward_input<S, E>(q, k, v, p, dout, dq, dk, dv);
        Kokkos::fence();
        const auto t1 = clock::now();
        const double c1 = cpu_seconds();
        pk::flash_attention_forward<S, E>(q, k, v, o);
        pk::flash_attention_backward<S, E>(q, k, v, o, dout, dq, dk, dv);
        Kokkos::fence();
        const auto t2 = clock::now();
        c_unfused += c1 - c0;
        c_fused += cpu_seconds() - c1;
        t_unfused += std::chrono::duration<double>(t1 - t0).count();
        t_fused += std::chrono::duration<double>(t2 - t1).count();
        st.SetIterationTime(std::chrono::duration<double>(t2 - t0).count());
      }
      const double iters = static_cast<double>(st.iterations());
      st.counters["unfused_ms"] = 1e3 * t_unfused / iters;
      st.counters["fused_ms"] = 1e3 * t_fused / iters;
      st.counters["fused_ratio"] = t_unfused / t_fused;
      st.counters["fused_ratio_cpu"] = c_unfused / c_fused;
    })->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}

}  // namespace bench_kernels
