#pragma once
// A machine's matrix-product efficiency: a table of the fraction of peak that one [m, k] x [k, n]
// product reaches, over a grid of m, n and k, looked up by interpolation (docs/model.md "GEMM
// efficiency"). A preset's table, a machine file's or the one a GEMM sweep measured (--calibrate).
#include <string>
#include <vector>

namespace pipebench::analysis::plan {

struct GemmTable {
  std::vector<double> sizes;       // the grid of each of m, n and k: ascending, > 0
  std::vector<double> efficiency;  // sizes^3 fractions of peak in (0, 1], index (i_m * N + i_n) * N + i_k
  std::string source;              // where the figures come from
  bool empty() const { return sizes.empty(); }
};

// Trilinear interpolation in log2 of each size; outside the grid the nearest edge. An empty table: 1.
double gemm_efficiency(const GemmTable& table, double m, double n, double k);
// The efficiencies of a product's three passes, F (m, n, k), I (m, k, n) and W (k, n, m), with each
// size located on the grid once.
struct PassEfficiency {
  double f = 1, i = 1, w = 1;
};
PassEfficiency pass_efficiency(const GemmTable& table, double m, double n, double k);

// The presets' tables: e_max * g(m) g(n) g(k), g(x) = x / (x + half) on the grid 64 .. 65,536, a
// saturating form with two parameters per machine (docs/model.md says where each pair comes from).
GemmTable saturating_table(double e_max, double half, const std::string& source);

// A table measured on the machine itself (`pipebench gemm`, docs/model.md "Calibration"): the median
// seconds of every product of the grid, sizes^3 in the table's order. The peak is the fastest product's
// FLOP rate (2 m n k / seconds) and each efficiency its rate over that peak. UsageError naming `source`
// for a grid the table refuses or a time that is not > 0.
struct MeasuredGemm {
  GemmTable table;
  double peak_flops = 0;
};
MeasuredGemm measured_gemm_table(const std::vector<double>& sizes, const std::vector<double>& seconds,
                                 const std::string& source);

// UsageError naming the first bad entry (what a machine or calibration file gives).
void check_gemm_table(const GemmTable& table, const std::string& where);

}  // namespace pipebench::analysis::plan
