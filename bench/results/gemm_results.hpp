#pragma once
// The results of one `pipebench gemm` sweep and their place in the results file: the group
// /gemm/NNNNNN (docs/results-schema.md), appended with the discipline of bench/results/numbered.hpp and
// read by `pipebench plan --calibrate` (bench/results/calibration.hpp) and copied by `merge`.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipebench::bench {

// One row of /gemm/NNNNNN/rows: one product C[m, n] = A[m, k] B[k, n].
struct GemmRow {
  std::int64_t m = 0, n = 0, k = 0;
  double seconds = 0;    // median of the timed calls
  double flop_rate = 0;  // 2 m n k / seconds
  bool operator==(const GemmRow& o) const;
};

struct GemmResult {
  std::string precision;           // fp32 or fp64
  std::vector<GemmRow> rows;       // every m, n, k of the grid, m slowest, k fastest
  double elementwise_Bps = 0;      // the element-wise pass (kernels/gemm_sweep.hpp)
  std::int64_t elementwise_elements = 0;
  std::map<std::string, std::string> config, metadata;
  bool operator==(const GemmResult& o) const;
};

struct StoredGemm {
  int id = 0;
  GemmResult result;
};

// The grid of a result's rows (the distinct m, ascending) and their seconds in analysis/plan/gemm.hpp's
// order; Error when the rows are not the whole grid in that order.
std::vector<double> gemm_grid(const GemmResult& r, std::vector<double>& seconds);

// Appends `r` as the next /gemm group of the results file `path` (which must exist) and returns its id.
int append_gemm(const std::string& path, const GemmResult& r);

// Every complete /gemm group of `path`, by id (none where the file has no /gemm). UsageError for a file
// that is not a readable results file; Error naming the group for one that is damaged.
std::vector<StoredGemm> read_gemms(const std::string& path);

}  // namespace pipebench::bench
