#include "bench/results/gemm_results.hpp"

#include <cstddef>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/numbered.hpp"
#include "bench/results/records.hpp"

namespace pipebench::bench {

bool GemmRow::operator==(const GemmRow& o) const {
  return m == o.m && n == o.n && k == o.k && seconds == o.seconds && flop_rate == o.flop_rate;
}

bool GemmResult::operator==(const GemmResult& o) const {
  return precision == o.precision && rows == o.rows && elementwise_Bps == o.elementwise_Bps &&
         elementwise_elements == o.elementwise_elements && config == o.config && metadata == o.metadata;
}

std::vector<double> gemm_grid(const GemmResult& r, std::vector<double>& seconds) {
  std::vector<double> sizes;
  for (const GemmRow& row : r.rows)
    if (sizes.empty() || double(row.m) > sizes.back()) sizes.push_back(double(row.m));
  const std::size_t N = sizes.size();
  seconds.clear();
  if (r.rows.size() != N * N * N)
    throw Error("the GEMM sweep has " + std::to_string(r.rows.size()) + " rows, not the " + std::to_string(N * N * N) +
                " of a grid of " + std::to_string(N) + " sizes");
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const GemmRow& row = r.rows[i];
    if (double(row.m) != sizes[i / (N * N)] || double(row.n) != sizes[i / N % N] || double(row.k) != sizes[i % N])
      throw Error("GEMM row " + std::to_string(i) + " (" + std::to_string(row.m) + " x " + std::to_string(row.n) + " x " +
                  std::to_string(row.k) + ") is out of the grid's order");
    seconds.push_back(row.seconds);
  }
  return sizes;
}

namespace {

h5::Id row_type() {
  h5::Id t = h5::compound_type(sizeof(GemmRow));
  const auto i64 = H5T_NATIVE_INT64, f64 = H5T_NATIVE_DOUBLE;
  h5::insert_member(t.get(), "m", offsetof(GemmRow, m), i64);
  h5::insert_member(t.get(), "n", offsetof(GemmRow, n), i64);
  h5::insert_member(t.get(), "k", offsetof(GemmRow, k), i64);
  h5::insert_member(t.get(), "seconds", offsetof(GemmRow, seconds), f64);
  h5::insert_member(t.get(), "flop_rate", offsetof(GemmRow, flop_rate), f64);
  return t;
}

void write_gemm_group(hid_t g, const GemmResult& r) {
  h5::write_attr(g, "precision", r.precision);
  h5::write_attr(g, "elementwise_Bps", r.elementwise_Bps);
  h5::write_attr(g, "elementwise_elements", r.elementwise_elements);
  write_string_map(g, "config", r.config);
  write_string_map(g, "metadata", r.metadata);
  const h5::Id type = row_type();
  h5::write_table(g, "rows", type.get(), r.rows.data(), r.rows.size());
}

GemmResult read_gemm_group(hid_t g) {
  GemmResult r;
  r.precision = utf8_escaped(h5::read_string_attr(g, "precision"));
  if (r.precision != "fp32" && r.precision != "fp64")
    throw Error("HDF5: '" + h5::where(g) + "' holds a GEMM sweep of precision " + quoted(r.precision) +
                ": expected fp32 or fp64");
  r.elementwise_Bps = h5::read_double_attr(g, "elementwise_Bps");
  r.elementwise_elements = h5::read_int_attr(g, "elementwise_elements");
  r.config = read_string_map(g, "config");
  r.metadata = read_string_map(g, "metadata");
  const h5::Id type = row_type();
  r.rows.resize(h5::checked_table_size(g, "rows", type.get()));
  if (!r.rows.empty()) h5::read_table(g, "rows", type.get(), r.rows.data());
  return r;
}

}  // namespace

int append_gemm(const std::string& path, const GemmResult& r) {
  return append_numbered(path, "gemm", [&r](hid_t g) { write_gemm_group(g, r); });
}

std::vector<StoredGemm> read_gemms(const std::string& path) {
  std::vector<StoredGemm> out;
  read_numbered(path, "gemm", [&out](int id, hid_t g) { out.push_back({id, read_gemm_group(g)}); });
  return out;
}

}  // namespace pipebench::bench
