#include "bench/results/comm_reader.hpp"

#include <cstddef>

#include "analysis/error.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/records.hpp"

namespace pipebench::bench {

namespace {

std::string text_attr(hid_t g, const char* name) {
  return h5::has_attr(g, name) ? utf8_escaped(h5::read_string_attr(g, name)) : std::string();
}

std::int64_t int_attr(hid_t g, const char* name) { return h5::has_attr(g, name) ? h5::read_int_attr(g, name) : 0; }

std::optional<double> double_attr(hid_t g, const char* name) {
  if (!h5::has_attr(g, name)) return std::nullopt;
  return h5::read_double_attr(g, name);
}

std::map<std::string, std::string> string_attrs(hid_t g, const char* name) {
  std::map<std::string, std::string> out;
  if (h5::object_kind(g, name) != h5::ObjectKind::group) return out;
  const h5::Id sub = h5::open_group(g, name);
  for (const auto& k : h5::attr_names(sub.get())) out[utf8_escaped(k)] = utf8_escaped(h5::read_string_attr(sub.get(), k));
  return out;
}

// The members of `rows` the report reads, by name: HDF5 converts from what is stored.
h5::Id row_type() {
  h5::Id t = h5::compound_type(sizeof(CommRow));
  h5::insert_member(t.get(), "bytes", offsetof(CommRow, bytes), H5T_NATIVE_INT64);
  h5::insert_member(t.get(), "count", offsetof(CommRow, count), H5T_NATIVE_INT64);
  h5::insert_member(t.get(), "time_us", offsetof(CommRow, time_us), H5T_NATIVE_DOUBLE);
  h5::insert_member(t.get(), "time_us_min", offsetof(CommRow, time_us_min), H5T_NATIVE_DOUBLE);
  h5::insert_member(t.get(), "time_us_max", offsetof(CommRow, time_us_max), H5T_NATIVE_DOUBLE);
  h5::insert_member(t.get(), "algbw_GBps", offsetof(CommRow, algbw_GBps), H5T_NATIVE_DOUBLE);
  h5::insert_member(t.get(), "busbw_GBps", offsetof(CommRow, busbw_GBps), H5T_NATIVE_DOUBLE);
  h5::insert_member(t.get(), "wrong", offsetof(CommRow, wrong), H5T_NATIVE_INT64);
  return t;
}

}  // namespace

std::vector<CommResult> read_comm_results(const std::string& path) {
  std::vector<CommResult> out;
  const h5::Id file = open_results_file(path, false);
  if (h5::object_kind(file.get(), "comm") != h5::ObjectKind::group) return out;
  const h5::Id comm = h5::open_group(file.get(), "comm");
  const h5::Id type = row_type();
  for (int id : run_ids(comm.get())) {  // the same 6-digit names as /runs
    const std::string name = run_name(id);
    if (h5::object_kind(comm.get(), name) != h5::ObjectKind::group) continue;
    const h5::Id g = h5::open_group(comm.get(), name);
    if (int_attr(g.get(), "complete") != 1) continue;
    CommResult c;
    c.id = id;
    c.op = text_attr(g.get(), "op");
    c.group = text_attr(g.get(), "group");
    c.backend = text_attr(g.get(), "backend");
    c.mapping = text_attr(g.get(), "mapping");
    c.groups = int_attr(g.get(), "groups");
    c.group_size = int_attr(g.get(), "group_size");
    c.one_group = int_attr(g.get(), "one_group");
    c.config = string_attrs(g.get(), "config");
    c.metadata = string_attrs(g.get(), "metadata");
    if (h5::object_kind(g.get(), "rows") == h5::ObjectKind::dataset) {
      c.rows.resize(h5::checked_table_size(g.get(), "rows", type.get()));
      if (!c.rows.empty()) h5::read_table(g.get(), "rows", type.get(), c.rows.data());
    }
    if (h5::object_kind(g.get(), "fit") == h5::ObjectKind::group) {
      const h5::Id fit = h5::open_group(g.get(), "fit");
      c.alpha_s = double_attr(fit.get(), "alpha_s");
      c.beta_Bps = double_attr(fit.get(), "beta_Bps");
      c.max_rel_error = double_attr(fit.get(), "max_rel_error");
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace pipebench::bench
