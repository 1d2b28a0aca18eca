// `pipebench gemm`: the matrix-product and element-wise rates of this machine, what `pipebench plan
// --calibrate` takes to plan a run on many nodes of it (docs/model.md "Calibration"). Every product of a
// grid of m, n and k through the transformer kernels' own gemm() (kernels/gemm_sweep.hpp), and one
// element-wise pass; printed as a table (or JSON, CSV) and appended to the results file as /gemm/NNNNNN.
// One process: run it on one node of a candidate machine, one GPU (or one CPU socket's threads) at a time.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/plan/gemm.hpp"
#include "analysis/text.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/render/sink.hpp"
#include "bench/results/gemm_results.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/metadata.hpp"
#include "bench/run/job.hpp"
#include "bench/run/plan.hpp"
#include "kernels/build_info.hpp"
#include "kernels/gemm_sweep.hpp"
#include "kernels/host_tuning.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::bench {

namespace {

struct GemmSettings {
  std::vector<int> sizes{64, 128, 256, 512, 1024, 2048};
  std::string precision = "fp32";
  double min_time = 0.02;
  double elementwise_elements = 1 << 24;
  int blas_threads = 1;
  std::string out;
  bool append = false, json = false, csv = false;
};

// The flags' checks that need more than one flag, before anything is allocated.
void check_settings(const GemmSettings& s) {
  for (std::size_t i = 1; i < s.sizes.size(); ++i)
    if (s.sizes[i] <= s.sizes[i - 1])
      throw UsageError("--sizes " + std::to_string(s.sizes[i]) + " after " + std::to_string(s.sizes[i - 1]) +
                       " is not allowed: the sizes must be ascending, each once");
  if (s.precision != "fp32" && s.precision != "fp64")
    throw UsageError("--precision " + quoted(s.precision) + " is not allowed: pipebench gemm times fp32 or fp64");
  const double value = s.precision == "fp64" ? 8 : 4;
  const double largest = s.sizes.back();
  const double bytes =
      std::max(3 * largest * largest, 2 * s.elementwise_elements) * value + kernels::blas_buffer_bytes(s.blas_threads);
  const double limit = memory_per_rank_bytes(1);
  if (limit > 0 && bytes > limit)
    throw UsageError("--sizes up to " + std::to_string(s.sizes.back()) + " and --elementwise-elements " +
                     num(s.elementwise_elements) + " need " + fmt("%.3g", bytes / (1 << 30)) + " GiB, more than the " +
                     fmt("%.3g", limit / (1 << 30)) + " GiB this process may use");
}

std::string host() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("unknown");
}

GemmResult measure(const GemmSettings& s) {
  const kernels::KokkosSession kokkos(s.blas_threads);
  kernels::GemmSweepSpec spec;
  for (int x : s.sizes) spec.sizes.push_back(static_cast<std::size_t>(x));
  spec.fp64 = s.precision == "fp64";
  spec.seconds = s.min_time;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto last = start;
  spec.progress = [&](std::size_t done, std::size_t total) {  // a line every 10 s of a long sweep
    const auto now = clock::now();
    if (now - last < std::chrono::seconds(10) || done == total) return;
    last = now;
    std::fprintf(stderr, "# pipebench gemm: %zu of %zu products timed, %.0f s\n", done, total,
                 std::chrono::duration<double>(now - start).count());
  };
  const std::vector<double> seconds = kernels::gemm_sweep(spec);
  GemmResult r;
  r.precision = s.precision;
  std::size_t i = 0;
  for (int m : s.sizes)
    for (int n : s.sizes)
      for (int k : s.sizes) {
        const double t = seconds[i++];
        r.rows.push_back({m, n, k, t, 2.0 * m * double(n) * k / t});
      }
  r.elementwise_elements = static_cast<std::int64_t>(s.elementwise_elements);
  r.elementwise_Bps = kernels::measure_elementwise_bandwidth(static_cast<std::size_t>(s.elementwise_elements),
                                                             spec.fp64, std::max(s.min_time, 0.1));
  std::string sizes;
  for (int x : s.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(x);
  r.config = {{"sizes", sizes},
              {"precision", s.precision},
              {"min_time", num(s.min_time)},
              {"blas_threads", std::to_string(s.blas_threads)},
              {"kokkos", kernels::kokkos_backends()},
              {"blas", kernels::blas_description()}};
  MetadataInput meta;
  meta.command_line = command_line_text();
  meta.hosts = {host()};
  meta.statistic = "median over the timed calls of each product";
  r.metadata = collect_metadata(meta);
  return r;
}

void print(const GemmSettings& s, const GemmResult& r, int id) {
  std::vector<double> seconds;
  const std::vector<double> sizes = gemm_grid(r, seconds);
  const analysis::plan::MeasuredGemm table = analysis::plan::measured_gemm_table(sizes, seconds, "this sweep");
  JsonDocument doc;
  doc.head = {{"precision", r.precision}, {"file", s.out}, {"id", id}};
  doc.list_key = "products";
  doc.tail = {{"peak_flops", table.peak_flops}, {"elementwise_Bps", r.elementwise_Bps},
              {"elementwise_elements", r.elementwise_elements}};
  const auto sink = make_sink(output_format(s.json, s.csv), std::cout, std::cerr, doc);
  sink->legend("# pipebench gemm: " + std::to_string(r.rows.size()) + " products C[m,n] = A[m,k] B[k,n], " + r.precision +
               ", " + r.config.at("blas") + "; median of the timed calls, efficiency of the fastest product's rate\n");
  sink->begin_table(Table({{"m", ""}, {"n", ""}, {"k", ""}, {"time", "us"}, {"rate", "GFLOP/s"}, {"efficiency", "%"}}), true);
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const GemmRow& row = r.rows[i];
    Record rec;
    const double e = table.table.efficiency[i];
    rec.cells = {std::to_string(row.m), std::to_string(row.n), std::to_string(row.k), fixed(row.seconds * 1e6, 1),
                 fixed(row.flop_rate * 1e-9, 2), fixed(100 * e, 1)};
    rec.objects.push_back({{"m", row.m}, {"n", row.n}, {"k", row.k}, {"seconds", row.seconds},
                           {"flop_rate", row.flop_rate}, {"efficiency", e}});
    sink->record(rec);
  }
  sink->end_table();
  sink->note("# peak (the fastest product): " + fixed(table.peak_flops * 1e-9, 2) + " GFLOP/s; element-wise pass " +
             fixed(r.elementwise_Bps * 1e-9, 2) + " GB/s over " + num(double(r.elementwise_elements)) + " values\n");
  sink->note("# results: " + s.out + " /gemm/" + run_name(id) + " (pipebench plan --calibrate reads it)\n");
  sink->finish();
}

void run_gemm(GemmSettings& s) {
  check_settings(s);
  claim_results_file(s.out, s.append);
  const GemmResult r = measure(s);
  const int id = append_gemm(s.out, r);
  print(s, r, id);
}

}  // namespace

void add_gemm_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "gemm", "Time the matrix products of a grid of m, n, k and an element-wise pass: the rates plan --calibrate takes");
  auto ss = std::make_shared<GemmSettings>();
  GemmSettings& s = *ss;
  add(*cmd, {"--sizes", "Comma list of the grid's sizes, ascending: every m, n and k of it (default 64,...,2048)", 1, 65536},
      s.sizes);
  add(*cmd, {"--precision", "fp32 or fp64"}, s.precision);
  add(*cmd, {"--min-time", "Seconds of timed calls per product, at least (3 calls at least)"}, s.min_time);
  add_large_count(*cmd, {"--elementwise-elements", "Values of the element-wise pass (2 read, 1 written per value)"},
                  s.elementwise_elements);
  add(*cmd, {"--blas-threads", "Threads of the host BLAS"}, s.blas_threads);
  add(*cmd, {"--out", "Results file (default results/pipebench-<UTC time>.h5); never replaced"}, s.out);
  add(*cmd, {"--append", "Add the sweep to an existing results file (of runs, comm or gemm results)"}, s.append);
  add(*cmd, flag::json, s.json)->description("Print one JSON object, the products as a list, instead of the table");
  add(*cmd, flag::csv, s.csv)->description("Print the products as CSV instead of the table");
  cmd->callback([ss] { run_gemm(*ss); });
}

}  // namespace pipebench::bench
