// Micro-benchmarks of the transformer kernels (fp32) and of one whole block's F, I and W, beside the raw
// BLAS product the block is made of, so that the block's FLOP rate reads as a fraction of what the BLAS
// gives on this machine (issue 25's target: F+I+W >= 90 % of sgemm at h=1024, a=16, s=1024, b=1), and the
// fused attention beside the unfused one.
//
//   bench_kernels                 small shapes (what ctest runs, a few seconds)
//   bench_kernels --size=paper    h=1024, a=16, s=1024, b=1, V=8192: the figure of docs/transformer.md
//   bench_kernels --size=gpu      h=4096, a=32, s=2048, b=1, V=8192: the device check's (jobs/gpu-check.sh)
//   bench_kernels --default-malloc  leave glibc's malloc as it is (see retain_freed_host_memory)
//
// Threads: on a backend with several host threads (Kokkos OpenMP, OMP_NUM_THREADS) the kernels split each
// product over them, each part a one-thread BLAS call (kernels/gemm.hpp), so the BLAS is set to one
// thread and sgemm_blas_threads adds the BLAS's own threading over as many threads for comparison;
// otherwise one BLAS thread unless OPENBLAS_NUM_THREADS is set. Counters: FLOP/s counts matrix products as 2 per
// multiply-add and, for element-wise kernels, the arithmetic operations per element given beside each;
// bytes/s counts each input read once and each output written once (the minimum traffic).
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>

#include "kernels/attention.hpp"
#include "kernels/flash_attention_backward.hpp"
#include "kernels/build_info.hpp"
#include "kernels/cross_entropy.hpp"
#include "kernels/gelu.hpp"
#include "kernels/host_tuning.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/linear.hpp"
#include "kernels/transformer_stage.hpp"
#include "analysis/transformer/flops.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <string>

#include "bench/micro/bench_kernels_attention.hpp"
#include "bench/micro/bench_kernels_common.hpp"

namespace {

using namespace bench_kernels;

// The baseline product and the four linears of a layer (F, I, W), named by their role.
void register_products(const Shape& sh) {
  const std::size_t n = sh.rows(), h = static_cast<std::size_t>(sh.h);
  const double N = sh.n(), H = sh.h;
  // The baseline: the block's largest product, [s*b, h] x [h, 4h], straight through KokkosBlas::gemm.
  const auto baseline = [=](benchmark::State& st) {  // fc1's shape
    const auto a = mat(n, h, 1), b = mat(h, 4 * h, 2);
    V::Mat c("c", n, 4 * h);
    run(st, product_flops(sh, Op::fc1), kB * (N * H + 4 * H * H + 4 * N * H), [&] { pk::gemm('N', 'N', S(1), a, b, S(0), c); });
  };
  reg("sgemm_baseline", baseline);
  // The same product through the BLAS's own threads (one per Kokkos thread): what the split is up against.
  if (const int threads = E().concurrency(); threads > 1)
    reg("sgemm_blas_threads", [=](benchmark::State& st) {
      pk::set_blas_threads(threads);  // gemm then leaves the product whole to the BLAS
      baseline(st);
      pk::set_blas_threads(1);
    });

  // The four linears of a layer, named by their role; in x out.
  const std::map<std::string, std::pair<std::size_t, std::size_t>> linears = {
      {"qkv", {h, 3 * h}}, {"proj", {h, h}}, {"fc1", {h, 4 * h}}, {"fc2", {4 * h, h}}};
  const std::map<std::string, Op> op_of = {{"qkv", Op::qkv}, {"proj", Op::proj}, {"fc1", Op::fc1}, {"fc2", Op::fc2}};
  for (const auto& [name, io] : linears) {
    const std::size_t in = io.first, out = io.second;
    const double I = static_cast<double>(in), O = static_cast<double>(out), mm = product_flops(sh, op_of.at(name));
    reg(("linear/F/" + name).c_str(), [=](benchmark::State& st) {
      const auto x = mat(n, in, 7), w = mat(in, out, 8);
      const auto b = vec(out, 9);
      V::Mat y("y", n, out);
      run(st, mm, kB * (N * I + I * O + N * O), [&] { pk::linear_forward<S, E>(x, w, b, y); });
    });
    reg(("linear/I/" + name).c_str(), [=](benchmark::State& st) {
      const auto dy = mat(n, out, 7), w = mat(in, out, 8);
      V::Mat dx("dx", n, in);
      run(st, mm, kB * (N * O + I * O + N * I), [&] { pk::linear_backward_input<S, E>(dy, w, dx); });
    });
    reg(("linear/W/" + name).c_str(), [=](benchmark::State& st) {
      const auto x = mat(n, in, 7), dy = mat(n, out, 8);
      V::Mat dw("dw", in, out);
      V::Vec db("db", out);
      run(st, mm + 2 * N * O, kB * (N * I + N * O + 2 * I * O + 2 * O),
          [&] { pk::linear_backward_weight<S, E>(x, dy, dw, db); });
    });
  }
}

// LayerNorm, causal softmax and GELU: their arithmetic per element, given beside each.
void register_elementwise(const Shape& sh) {
  const std::size_t n = sh.rows(), h = static_cast<std::size_t>(sh.h), s = static_cast<std::size_t>(sh.s);
  const double N = sh.n(), H = sh.h, Z = static_cast<double>(sh.z()), Sq = sh.s;
  // LayerNorm: F 7 operations per element (2 reductions, subtract, square, normalise, affine), I 9, W 3.
  reg("layernorm/F", [=](benchmark::State& st) {
    const auto x = mat(n, h, 3);
    const auto g = vec(h, 4), b = vec(h, 5);
    V::Mat y("y", n, h), xh("xh", n, h);
    V::Vec r("r", n);
    run(st, 7 * N * H, kB * (3 * N * H + N), [&] { pk::layernorm_forward<S, E>(x, g, b, y, xh, r); });
  });
  reg("layernorm/I", [=](benchmark::State& st) {
    const auto dy = mat(n, h, 3), xh = mat(n, h, 4);
    const auto g = vec(h, 5);
    const auto r = filled(V::Vec("r", n), 6, 0.1);
    V::Mat dx("dx", n, h);
    run(st, 9 * N * H, kB * (3 * N * H + N),
        [&] { pk::layernorm_backward_input<S, E>(dy, xh, r, g, V::ConstMat(), dx); });
  });
  reg("layernorm/W", [=](benchmark::State& st) {
    const auto dy = mat(n, h, 3), xh = mat(n, h, 4);
    V::Vec dg("dg", h), db("db", h);
    run(st, 3 * N * H, kB * (2 * N * H + 2 * H), [&] { pk::layernorm_backward_weight<S, E>(dy, xh, dg, db); });
  });

  // Causal softmax over b*a [s, s] score matrices: F 4 operations per element (max, subtract, exp,
  // scale), B 4 (dot, subtract, multiply twice); counted over all s^2 entries, masked ones included.
  const double scores = Z * Sq * Sq;
  reg("softmax_causal/F", [=](benchmark::State& st) {
    const auto p0 = mat(sh.z() * s, s, 10);
    V::Mat p("p", sh.z() * s, s);
    run(st, 4 * scores, kB * 2 * scores, [&] {
      Kokkos::deep_copy(p, p0);  // in place: restart from the same scores (one more read and write)
      pk::softmax_causal_forward<S, E>(p);
    });
  });
  reg("softmax_causal/B", [=](benchmark::State& st) {
    const auto p = mat(sh.z() * s, s, 10), dp0 = mat(sh.z() * s, s, 11);
    V::Mat dp("dp", sh.z() * s, s);
    run(st, 4 * scores, kB * 3 * scores, [&] {
      Kokkos::deep_copy(dp, dp0);
      pk::softmax_causal_backward<S, E>(p, dp);
    });
  });

  // GELU over [n, 4h]: F 9 operations per element with exp counted as 1, I 14.
  reg("gelu/F", [=](benchmark::State& st) {
    const auto u = mat(n, 4 * h, 16);
    V::Mat g("g", n, 4 * h);
    run(st, 9 * 4 * N * H, kB * 8 * N * H, [&] { pk::gelu_forward<S, E>(u, g); });
  });
  reg("gelu/I", [=](benchmark::State& st) {
    const auto u = mat(n, 4 * h, 16), dg0 = mat(n, 4 * h, 17);
    V::Mat dg("dg", n, 4 * h);
    run(st, 14 * 4 * N * H, kB * 12 * N * H, [&] {
      Kokkos::deep_copy(dg, dg0);  // in place
      pk::gelu_backward_input<S, E>(u, dg);
    });
  });
}

// The first stage's embedding and the last stage's loss.
void register_ends(const Shape& sh) {
  const std::size_t n = sh.rows(), h = static_cast<std::size_t>(sh.h), s = static_cast<std::size_t>(sh.s);
  const double N = sh.n(), H = sh.h;
  // Embedding (first stage) and loss (last stage), vocabulary V.
  const double Vc = sh.vocab;
  const pk::TokenSource src{1, 0, sh.b, sh.s, sh.vocab, {}};
  reg("embedding/F", [=](benchmark::State& st) {
    const auto wte = mat(static_cast<std::size_t>(sh.vocab), h, 18), wpe = mat(s, h, 19);
    V::Mat x("x", n, h);
    run(st, N * H, kB * 3 * N * H, [&] { pk::embedding_forward<S, E>(src, wte, wpe, x); });
  });
  reg("embedding/W", [=](benchmark::State& st) {
    const auto dx = mat(n, h, 20);
    V::Mat dwte("dwte", static_cast<std::size_t>(sh.vocab), h), dwpe("dwpe", s, h);
    run(st, 2 * N * H, kB * 5 * N * H, [&] { pk::embedding_backward_weight<S, E>(src, dx, dwte, dwpe); });
  });
  // Cross-entropy over [n, V]: 6 operations per logit (max, subtract, exp twice, scale, subtract).
  reg("cross_entropy/F", [=](benchmark::State& st) {
    const auto l0 = mat(n, static_cast<std::size_t>(sh.vocab), 21);
    V::Mat l("l", n, static_cast<std::size_t>(sh.vocab));
    run(st, 6 * N * Vc, kB * 2 * N * Vc, [&] {
      Kokkos::deep_copy(l, l0);  // in place: logits -> their gradient
      benchmark::DoNotOptimize(pk::cross_entropy_forward<S, E>(src, l));
    });
  });
}

void register_kernels(const Shape& sh) {
  register_products(sh);
  register_elementwise(sh);
  register_attention(sh);
  register_fused_attention(sh);
  register_ends(sh);
}

void register_block_vs_sgemm(const Shape& sh, pk::Attention attention, pk::Half half);

// One decoder layer through TransformerStage. Every iteration runs F, I and W; the benchmark reports
// the time of the pass it is named after (manual time), so each pass sees the state a schedule gives it.
void register_block(const Shape& sh) {
  for (const char* pass : {"F", "I", "W", "FIW"}) {
    for (pk::Recompute mode : {pk::Recompute::none, pk::Recompute::selective, pk::Recompute::full}) {
      if (std::strcmp(pass, "FIW") != 0 && mode != pk::Recompute::none) continue;
      const std::string name = std::string("block/") + pass + "/" + pipebench::analysis::recompute_name(mode);
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
        pk::TransformerConfig c = pk::TransformerConfig::whole_model(sh.h, sh.a, sh.s, sh.b, sh.vocab, 1);
        c.embedding = c.head = false;
        c.recompute = mode;
        pk::TransformerStage<S, E> stage(c);
        const auto x = filled(V::Act("x", static_cast<std::size_t>(sh.b), static_cast<std::size_t>(sh.s),
                                     static_cast<std::size_t>(sh.h)), 30);
        const auto dy = filled(V::Act("dy", x.extent(0), x.extent(1), x.extent(2)), 31, 1e-3);
        using clock = std::chrono::steady_clock;
        std::size_t stash = 0;
        for (auto _ : st) {
          const auto t0 = clock::now();
          stage.forward(0, x);
          Kokkos::fence();
          const auto t1 = clock::now();
          stash = stage.stash_bytes(0);
          stage.backward_input(0, dy);
          Kokkos::fence();
          const auto t2 = clock::now();
          stage.backward_weight(0);
          Kokkos::fence();
          const auto t3 = clock::now();
          const auto span = pass[0] == 'F' && pass[1] == '\0' ? t1 - t0
                            : pass[0] == 'I'                  ? t2 - t1
                            : pass[0] == 'W'                  ? t3 - t2
                                                              : t3 - t0;
          st.SetIterationTime(std::chrono::duration<double>(span).count());
        }
        const pk::StageFlops f = stage.flops();
        const double flops = pass[0] == 'F' && pass[1] == '\0' ? f.forward
                             : pass[0] == 'I'                  ? f.backward_input
                             : pass[0] == 'W'                  ? f.backward_weight
                                                               : f.total();
        st.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
        st.counters["stash_MB"] = static_cast<double>(stash) / 1e6;
      })->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }

  for (const pk::Half half : {pk::Half::none, pk::Half::bf16})
    for (const pk::Attention attention : pk::kAttentions) register_block_vs_sgemm(sh, attention, half);
}

// The target as one paired measurement: each iteration times the baseline product (repeated to last
// about as long as the block) and then the block's F+I+W, so both see the same load; "ratio" is the
// block's FLOP rate over the baseline's, both summed over the iterations. The unfused row is named as
// before ("none"); the fused one counts the model FLOPs of no recomputation (it is the same model).
// With a 16-bit `half` (block/FIW_vs_gemm16/bf16/...) the baseline is the 16-bit product of 16-bit
// operands (gemm_16: cuBLAS on the tensor cores on a CUDA build) and the block runs its products inside
// a Products16 scope (operands rounded on the way in, fp32 sums; everything else fp32).
void register_block_vs_sgemm(const Shape& sh, pk::Attention attention, pk::Half half) {
  const std::string name = std::string(half == pk::Half::none ? "block/FIW_vs_sgemm/" : "block/FIW_vs_gemm16/bf16/") +
                           (attention == pk::Attention::fused ? "fused" : "none");
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
    pk::TransformerConfig c = pk::TransformerConfig::whole_model(sh.h, sh.a, sh.s, sh.b, sh.vocab, 1);
    c.embedding = c.head = false;
    pk::TransformerConfig model = c;  // the FLOPs of the model, not of what the fused path reruns
    c.attention = attention;
    pk::TransformerStage<S, E> stage(c);
    const std::size_t n = sh.rows(), h = static_cast<std::size_t>(sh.h);
    const auto a = mat(n, h, 1), b = mat(h, 4 * h, 2);
    V::Mat out("c", n, 4 * h);
    const pk::Mat16<V::Device> a16("a16", n, h), b16("b16", h, 4 * h);
    pk::cast_to_16<V::Device>(a, a16, half == pk::Half::none ? pk::Half::bf16 : half);
    pk::cast_to_16<V::Device>(b, b16, half == pk::Half::none ? pk::Half::bf16 : half);
    const auto x = filled(V::Act("x", static_cast<std::size_t>(sh.b), static_cast<std::size_t>(sh.s), h), 30);
    const auto dy = filled(V::Act("dy", x.extent(0), x.extent(1), x.extent(2)), 31, 1e-3);
    const double gemm_flops = 2 * sh.n() * sh.h * 4.0 * sh.h, block_flops = pk::stage_flops(model).total();
    const int reps = std::max(1, static_cast<int>(block_flops / gemm_flops + 0.5));
    const auto product = [&] {
      if (half == pk::Half::none)
        pk::gemm('N', 'N', S(1), a, b, S(0), out);
      else
        pk::gemm_16<V::Device>('N', 'N', 1.0f, a16, b16, 0.0f, out, half);
    };
    const auto block = [&] {
      pk::Products16 scope(half);
      stage.forward(0, x);
      stage.backward(0, dy);
    };
    // One untimed product and F+I+W first, as `pipebench run` times steps only after warm-up ones: the
    // first F+I+W touches every page of its stash and workspaces anew (the view cache is empty), and in
    // the first repetition, of one iteration at the paper size, the page faults were 0.15-0.2 of the ratio.
    product();
    block();
    Kokkos::fence();
    using clock = std::chrono::steady_clock;
    double t_gemm = 0, t_block = 0, c_gemm = 0, c_block = 0;
    for (auto _ : st) {
      const auto t0 = clock::now();
      const double c0 = cpu_seconds();
      for (int r = 0; r < reps; ++r) product();
      Kokkos::fence();
      const auto t1 = clock::now();
      const double c1 = cpu_seconds();
      block();
      Kokkos::fence();
      const auto t2 = clock::now();
      c_gemm += c1 - c0;
      c_block += cpu_seconds() - c1;
      t_gemm += std::chrono::duration<double>(t1 - t0).count();
      t_block += std::chrono::duration<double>(t2 - t1).count();
      st.SetIterationTime(std::chrono::duration<double>(t2 - t0).count());
    }
    const double iters = static_cast<double>(st.iterations());
    st.counters[half == pk::Half::none ? "sgemm_GFLOP/s" : "gemm16_GFLOP/s"] = reps * gemm_flops * iters / t_gemm / 1e9;
    st.counters["block_GFLOP/s"] = block_flops * iters / t_block / 1e9;
    st.counters["ratio"] = (block_flops / t_block) / (reps * gemm_flops / t_gemm);
    st.counters["ratio_cpu"] = (block_flops / c_block) / (reps * gemm_flops / c_gemm);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

// Console output plus the lines the issue asks for: the block's F+I+W rate over the sgemm baseline's,
// from this same run: from the separate benchmarks (with repetitions, the best of each, the least
// disturbed on a shared machine; in CPU time beside it, what they reach without preemption), and from the
// paired benchmark, one figure per repetition.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      const std::string& name = r.run_name.function_name;
      for (const char* key : {"ratio", "fused_ratio", "ratio_cpu", "fused_ratio_cpu"})
        if (const auto it = r.counters.find(key); it != r.counters.end())
          paired_[name + (std::strstr(key, "cpu") ? ", CPU time" : ", wall clock")].push_back(it->second.value);
      const auto it = r.counters.find("FLOP/s");
      if (it == r.counters.end()) continue;
      Best& b = best_[name];
      b.wall = std::max(b.wall, it->second.value);
      b.cpu = std::max(b.cpu, it->second.value * r.real_accumulated_time / r.cpu_accumulated_time);
    }
  }
  void Finalize() override {
    std::ostream& out = GetOutputStream();
    const auto block = best_.find("block/FIW/none"), sgemm = best_.find("sgemm_baseline");
    if (block != best_.end() && sgemm != best_.end()) {
      const Best& b = block->second;
      const Best& s = sgemm->second;
      out << "# block F+I+W / sgemm, best runs: " << b.wall / 1e9 << " / " << s.wall / 1e9
          << " GFLOP/s = " << b.wall / s.wall << " (CPU time: " << b.cpu / s.cpu << ")\n";
    }
    for (const auto& [name, ratios] : paired_) {
      const bool is_block = name.rfind("block/", 0) == 0;
      const char* what = !is_block ? "unfused / fused attention F+I time, paired"
                         : name.find("gemm16") != std::string::npos ? "block F+I+W / 16-bit GEMM, paired"
                                                                    : "block F+I+W / sgemm, paired";
      out << "# " << what << " ("
          << name << "):";
      for (double r : ratios) out << " " << r;
      std::vector<double> sorted = ratios;
      std::sort(sorted.begin(), sorted.end());
      out << "; median " << sorted[sorted.size() / 2] << ", worst " << sorted.front() << "\n";
    }
    if (!paired_.empty() || !best_.empty()) out << "# issue 25's target at --size=paper: block >= 0.90 (worst >= 0.85)\n";
    ConsoleReporter::Finalize();
  }

 private:
  struct Best {
    double wall = 0, cpu = 0;
  };
  std::map<std::string, Best> best_;
  std::map<std::string, std::vector<double>> paired_;
};

}  // namespace

int main(int argc, char** argv) {
  Shape shape{1, 128, 256, 4, 2048};
  std::string size = "small";
  bool default_malloc = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--size=", 7) == 0)
      size = argv[i] + 7;
    else if (std::strcmp(argv[i], "--default-malloc") == 0)
      default_malloc = true;
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  if (size == "paper") {
    shape = Shape{1, 1024, 1024, 16, 8192};
  } else if (size == "gpu") {  // the device check's shape (jobs/gpu-check.sh)
    shape = Shape{1, 2048, 4096, 32, 8192};
  } else if (size != "small") {
    std::cerr << "bench_kernels: error: --size=" << size << " is not one of: small, paper, gpu\n";
    return 2;
  }
  int rc = 0;
  Kokkos::initialize();
  {
    if (E().concurrency() > 1 || !std::getenv("OPENBLAS_NUM_THREADS")) pk::set_blas_threads(1);
    // The stage allocates its stash per micro-batch, as in a run; keep freed memory for reuse as a
    // caching allocator would (the baseline allocates once and does not care).
    const bool retained = !default_malloc && pk::retain_freed_host_memory();
    benchmark::AddCustomContext("malloc", retained ? "freed memory retained for reuse" : "default");
    benchmark::AddCustomContext("size", size + ": b=" + std::to_string(shape.b) + " s=" + std::to_string(shape.s) +
                                            " h=" + std::to_string(shape.h) + " a=" + std::to_string(shape.a) +
                                            " V=" + std::to_string(shape.vocab) + ", fp32");
    benchmark::AddCustomContext("blas", pk::blas_description());
    benchmark::AddCustomContext("gemm16", pk::gemm16_path());
    benchmark::AddCustomContext("kokkos", pk::kokkos_version() + ", " + pk::kokkos_backends());
    benchmark::AddCustomContext("kokkos_threads", std::to_string(E().concurrency()));
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
      rc = 2;
    } else {
      register_kernels(shape);
      register_block(shape);
      register_fused_vs_unfused(shape, size == "paper" ? std::vector<int>{512, 1024, 2048} : std::vector<int>{shape.s});
      RatioReporter reporter;
      benchmark::RunSpecifiedBenchmarks(&reporter);
    }
    benchmark::Shutdown();
  }
  Kokkos::finalize();
  return rc;
}
