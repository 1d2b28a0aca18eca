#include "bench/results/comm_results.hpp"

#include <cstddef>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/numbered.hpp"
#include "bench/results/records.hpp"
#include "bench/results/store.hpp"
#include "comm/bench_ops.hpp"

namespace pipebench::bench {

bool CommBenchRow::operator==(const CommBenchRow& o) const {
  return bytes == o.bytes && count == o.count && in_place == o.in_place && time_us == o.time_us &&
         time_us_min == o.time_us_min && time_us_max == o.time_us_max && algbw_GBps == o.algbw_GBps &&
         busbw_GBps == o.busbw_GBps && wrong == o.wrong && latency_us == o.latency_us && bandwidth_MBps == o.bandwidth_MBps;
}

bool CommFit::operator==(const CommFit& o) const {
  return alpha_s == o.alpha_s && beta_Bps == o.beta_Bps && max_rel_error == o.max_rel_error && points == o.points;
}

bool CommResult::operator==(const CommResult& o) const {
  return op == o.op && group == o.group && backend == o.backend && mapping == o.mapping && groups == o.groups &&
         group_size == o.group_size && one_group == o.one_group && config == o.config && metadata == o.metadata &&
         rows == o.rows && iter_us == o.iter_us && fit == o.fit;
}

namespace {

// The rows' compound type, member by member in the struct's own layout (as the run tables are stored).
h5::Id row_type() {
  h5::Id t = h5::compound_type(sizeof(CommBenchRow));
  const auto i64 = H5T_NATIVE_INT64, f64 = H5T_NATIVE_DOUBLE;
  h5::insert_member(t.get(), "bytes", offsetof(CommBenchRow, bytes), i64);
  h5::insert_member(t.get(), "count", offsetof(CommBenchRow, count), i64);
  h5::insert_member(t.get(), "in_place", offsetof(CommBenchRow, in_place), H5T_NATIVE_INT32);
  h5::insert_member(t.get(), "time_us", offsetof(CommBenchRow, time_us), f64);
  h5::insert_member(t.get(), "time_us_min", offsetof(CommBenchRow, time_us_min), f64);
  h5::insert_member(t.get(), "time_us_max", offsetof(CommBenchRow, time_us_max), f64);
  h5::insert_member(t.get(), "algbw_GBps", offsetof(CommBenchRow, algbw_GBps), f64);
  h5::insert_member(t.get(), "busbw_GBps", offsetof(CommBenchRow, busbw_GBps), f64);
  h5::insert_member(t.get(), "wrong", offsetof(CommBenchRow, wrong), i64);
  h5::insert_member(t.get(), "latency_us", offsetof(CommBenchRow, latency_us), f64);
  h5::insert_member(t.get(), "bandwidth_MBps", offsetof(CommBenchRow, bandwidth_MBps), f64);
  return t;
}

void write_comm_group(hid_t g, const CommResult& r) {
  h5::write_attr(g, "op", r.op);
  h5::write_attr(g, "group", r.group);
  h5::write_attr(g, "groups", r.groups);
  h5::write_attr(g, "group_size", r.group_size);
  h5::write_attr(g, "backend", r.backend);
  h5::write_attr(g, "mapping", r.mapping);
  h5::write_attr(g, "one_group", r.one_group);
  write_string_map(g, "config", r.config);
  write_string_map(g, "metadata", r.metadata);
  const h5::Id type = row_type();
  h5::write_table(g, "rows", type.get(), r.rows.data(), r.rows.size());
  if (!r.iter_us.empty()) {
    // -I: every row's per-iteration times, one after another, and how many each row has.
    std::vector<double> times;
    std::vector<std::int64_t> counts;
    for (const auto& t : r.iter_us) times.insert(times.end(), t.begin(), t.end()), counts.push_back(static_cast<std::int64_t>(t.size()));
    h5::write_table(g, "iter_us", H5T_NATIVE_DOUBLE, times.data(), times.size());
    h5::write_table(g, "iter_counts", H5T_NATIVE_INT64, counts.data(), counts.size());
  }
  const h5::Id fit = h5::create_group(g, "fit");
  h5::write_attr(fit.get(), "alpha_s", r.fit.alpha_s);
  h5::write_attr(fit.get(), "beta_Bps", r.fit.beta_Bps);
  h5::write_attr(fit.get(), "max_rel_error", r.fit.max_rel_error);
  h5::write_attr(fit.get(), "points", r.fit.points);
}

}  // namespace

CommResult read_comm_group(hid_t g) {
  CommResult r;
  r.op = utf8_escaped(h5::read_string_attr(g, "op"));
  // Every reader of a result asks its operation's row (comm/bench_ops.hpp): one without is refused here.
  if (!comm::bench::find_op(r.op))
    throw Error("HDF5: '" + h5::where(g) + "' holds results of operation " + quoted(r.op) +
                ", which this pipebench does not know: expected one of " + comm::bench::op_names());
  r.group = utf8_escaped(h5::read_string_attr(g, "group"));
  r.groups = h5::read_int_attr(g, "groups");
  r.group_size = h5::read_int_attr(g, "group_size");
  r.backend = utf8_escaped(h5::read_string_attr(g, "backend"));
  r.mapping = utf8_escaped(h5::read_string_attr(g, "mapping"));
  r.one_group = h5::read_int_attr(g, "one_group");
  r.config = read_string_map(g, "config");
  r.metadata = read_string_map(g, "metadata");
  const h5::Id type = row_type();
  r.rows.resize(h5::checked_table_size(g, "rows", type.get()));
  if (!r.rows.empty()) h5::read_table(g, "rows", type.get(), r.rows.data());
  if (h5::has_link(g, "iter_counts")) {
    std::vector<std::int64_t> counts(h5::checked_table_size(g, "iter_counts", H5T_NATIVE_INT64));
    std::vector<double> times(h5::checked_table_size(g, "iter_us", H5T_NATIVE_DOUBLE));
    if (!counts.empty()) h5::read_table(g, "iter_counts", H5T_NATIVE_INT64, counts.data());
    if (!times.empty()) h5::read_table(g, "iter_us", H5T_NATIVE_DOUBLE, times.data());
    std::size_t at = 0;
    for (std::int64_t n : counts) {
      if (n < 0 || at + static_cast<std::size_t>(n) > times.size() || counts.size() != r.rows.size())
        throw Error("HDF5: '" + h5::where(g) + "/iter_counts' does not match its rows and iter_us");
      r.iter_us.emplace_back(times.begin() + static_cast<long>(at), times.begin() + static_cast<long>(at + n));
      at += static_cast<std::size_t>(n);
    }
  }
  if (h5::object_kind(g, "fit") != h5::ObjectKind::group) throw Error("HDF5: '" + h5::where(g) + "/fit' is not a group");
  const h5::Id fit = h5::open_group(g, "fit");
  r.fit.alpha_s = h5::read_double_attr(fit.get(), "alpha_s");
  r.fit.beta_Bps = h5::read_double_attr(fit.get(), "beta_Bps");
  r.fit.max_rel_error = h5::read_double_attr(fit.get(), "max_rel_error");
  r.fit.points = h5::read_int_attr(fit.get(), "points");
  return r;
}

int append_comm(const std::string& path, const CommResult& r) {
  return append_numbered(path, "comm", [&r](hid_t g) { write_comm_group(g, r); });
}

std::vector<StoredComm> read_comms(const std::string& path) {
  ReadRequest req;  // in the reading process, under its memory limit and watchdog (reader.cpp)
  req.runs = false;
  req.comms = true;
  RunListing l = read_results(path, req);
  for (const DamagedRun& d : l.damaged_comms)
    throw Error((d.id == 0 ? std::string("/comm") : "/comm/" + run_name(d.id)) + " of " + quoted(path, 200) + ": " + d.reason);
  return std::move(l.comms);
}

}  // namespace pipebench::bench
