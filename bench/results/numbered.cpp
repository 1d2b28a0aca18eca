#include "bench/results/numbered.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/records.hpp"
#include "bench/results/store.hpp"

namespace pipebench::bench {

int append_numbered(const std::string& path, const char* top, const std::function<void(hid_t)>& write) {
  const SignalDeferral hold;
  const ResultsFileLock lock(path);
  {
    // Checked read-only first, as append_run does: a refused file is never opened for writing.
    h5::Id file = open_results_file(path, false);
    check_version(check_root(file.get(), path), path, true);
  }
  if (::access(path.c_str(), W_OK) != 0) throw UsageError("results file '" + path + "' is not writable: " + std::strerror(errno));
  h5::Id file = open_results_file(path, true);
  int id = 0;
  {
    if (!h5::has_link(file.get(), top)) h5::create_group(file.get(), top);
    const h5::Id parent = h5::open_group(file.get(), top);
    const auto ids = run_ids(parent.get());
    id = ids.empty() ? 1 : ids.back() + 1;
    const h5::Id g = h5::create_unlinked_group(file.get());
    write(g.get());
    h5::flush(file.get());
    h5::link(g.get(), parent.get(), run_name(id));
    h5::flush(file.get());
    h5::write_attr(g.get(), "complete", std::int64_t{1});
  }
  h5::close_file(file);
  return id;
}

void read_numbered(const std::string& path, const char* top, const std::function<void(int, hid_t)>& read) {
  h5::Id file = open_results_file(path, false);
  check_version(check_root(file.get(), path), path, false);
  if (h5::object_kind(file.get(), top) != h5::ObjectKind::group) return;
  const h5::Id parent = h5::open_group(file.get(), top);
  for (int id : run_ids(parent.get())) {
    if (h5::object_kind(parent.get(), run_name(id)) != h5::ObjectKind::group) continue;
    const h5::Id g = h5::open_group(parent.get(), run_name(id));
    if (!h5::has_attr(g.get(), "complete") || h5::read_int_attr(g.get(), "complete") != 1) continue;
    read(id, g.get());
  }
}

void write_string_map(hid_t g, const std::string& name, const std::map<std::string, std::string>& entries) {
  const h5::Id sub = h5::create_group(g, name);
  for (const auto& [k, v] : entries) h5::write_attr(sub.get(), utf8_escaped(k), utf8_escaped(v));
}

std::map<std::string, std::string> read_string_map(hid_t g, const std::string& name) {
  std::map<std::string, std::string> out;
  if (h5::object_kind(g, name) != h5::ObjectKind::group) throw Error("HDF5: '" + h5::where(g) + "/" + name + "' is not a group");
  const h5::Id sub = h5::open_group(g, name);
  for (const auto& k : h5::attr_names(sub.get())) out[utf8_escaped(k)] = utf8_escaped(h5::read_string_attr(sub.get(), k));
  return out;
}

}  // namespace pipebench::bench
