#include "bench/render/comm_text.hpp"

#include <cstdio>

#include "analysis/error.hpp"
#include "analysis/stats.hpp"
#include "comm/bench_ops.hpp"

namespace pipebench::bench {

namespace {

std::string get(const CommResult& r, const char* key, const char* fallback = "") {
  const auto it = r.config.find(key);
  return it == r.config.end() ? fallback : it->second;
}

using comm::bench::OpRow;
using OpTable = comm::bench::Table;  // which tool's table an operation prints (bench::Table is a text table)

// A result's operation, from its row (read_comms refuses a file's group whose operation has none).
const OpRow& op_of(const CommResult& r) {
  if (const OpRow* o = comm::bench::find_op(r.op)) return *o;
  throw Error("comm result of operation '" + r.op + "': not an operation of this pipebench (" + comm::bench::op_names() + ")");
}
bool osu(const CommResult& r) { return table_of(op_of(r)) != OpTable::nccl_tests; }
bool several(const CommResult& r) { return r.groups > 1; }

// nccl-tests prints times with fewer decimals as they grow.
std::string time_text(double us) {
  char b[32];
  std::snprintf(b, sizeof b, us < 1e4 ? "%7.2f" : us < 1e5 ? "%7.1f" : "%7.0f", us);
  return b;
}

std::string wrong_text(std::int64_t w) {
  char b[32];
  if (w < 0) return "   N/A";
  std::snprintf(b, sizeof b, "%6lld", static_cast<long long>(w));
  return b;
}

bool per_iter(const CommResult& r) { return get(r, "per_iter_timing", "0") == "1"; }

// The per-iteration times of a row of r.rows (-I), or nothing.
const std::vector<double>* iterations_of(const CommResult& r, const CommBenchRow& row) {
  if (r.iter_us.empty() || r.rows.empty() || &row < r.rows.data() || &row >= r.rows.data() + r.rows.size()) return nullptr;
  const auto i = static_cast<std::size_t>(&row - r.rows.data());
  return i < r.iter_us.size() ? &r.iter_us[i] : nullptr;
}

// nccl-tests' -I columns after a variant's: i_min, i_max, i_p99 (us) and i_cv% (analysis::iteration_stats).
constexpr const char* kIterHead = "    i_min    i_max    i_p99    i_cv%";
constexpr const char* kIterUnits = "     (us)     (us)     (us)      (%)";
std::string iteration_cells(const CommResult& r, const CommBenchRow* row) {
  if (!per_iter(r)) return "";
  const std::vector<double>* t = row ? iterations_of(r, *row) : nullptr;
  char buf[128];
  if (!t || t->empty()) {
    std::snprintf(buf, sizeof buf, "  %7s  %7s  %7s  %7s", "N/A", "N/A", "N/A", "N/A");
    return buf;
  }
  const analysis::IterationStats st = analysis::iteration_stats(*t);
  std::snprintf(buf, sizeof buf, "  %s  %s  %s  %7.2f", time_text(st.min).c_str(), time_text(st.max).c_str(),
                time_text(st.p99).c_str(), 100 * st.cv);
  return buf;
}

// One row object. `context`: with the result's op, group, groups, group_size, backend, dtype and redop,
// as the flat list of `comm --json`; else the row's own fields, as under its result in `report --json`.
nlohmann::ordered_json row_json(const CommResult& r, const CommBenchRow& row, bool context) {
  nlohmann::ordered_json j;
  if (context) {
    j["op"] = r.op;
    j["group"] = r.group;
    j["groups"] = r.groups;
    j["group_size"] = r.group_size;
    j["backend"] = r.backend;
  }
  j["bytes"] = row.bytes;
  j["count"] = row.count;
  if (context) {
    j["dtype"] = get(r, "dtype", "float");
    j["redop"] = get(r, "redop", "none");
  }
  j["in_place"] = row.in_place != 0;
  j["time_us"] = row.time_us;
  j["time_us_min"] = row.time_us_min;
  j["time_us_max"] = row.time_us_max;
  j["algbw_GBps"] = row.algbw_GBps;
  j["busbw_GBps"] = row.busbw_GBps;
  if (row.wrong >= 0) j["wrong"] = row.wrong;
  else j["wrong"] = nullptr;
  const OpTable table = table_of(op_of(r));
  if (table == OpTable::osu_latency) j["latency_us"] = row.latency_us;
  if (table == OpTable::osu_bandwidth) j["bandwidth_MBps"] = row.bandwidth_MBps;
  if (per_iter(r)) {
    const std::vector<double>* t = iterations_of(r, row);
    const analysis::IterationStats st = analysis::iteration_stats(t ? *t : std::vector<double>{});
    j["i_min_us"] = st.min;
    j["i_max_us"] = st.max;
    j["i_p99_us"] = st.p99;
    j["i_cv_pct"] = 100 * st.cv;
  }
  return j;
}

// nccl-tests' "*_per_iter" object of -I under -J (2.19): the figures of analysis::iteration_stats and the
// raw times of every timed iteration.
nlohmann::ordered_json per_iter_json(const std::vector<double>& t) {
  const analysis::IterationStats st = analysis::iteration_stats(t);
  nlohmann::ordered_json j;
  j["skipped_iterations"] = 0;
  j["min_us"] = st.min;
  j["max_us"] = st.max;
  j["avg_us"] = st.mean;
  j["p50_us"] = st.p50;
  j["p95_us"] = st.p95;
  j["p99_us"] = st.p99;
  j["stdev_us"] = st.stdev;
  j["cv_pct"] = 100 * st.cv;
  j["times_us"] = t;
  return j;
}

// The CSV column of each key of the row objects: the key without its unit, and the unit.
struct KeyColumn {
  const char* key;
  Column column;
};
const KeyColumn kKeyColumns[] = {
    {"op", {"op", "", false}},
    {"group", {"group", "", false}},
    {"groups", {"groups", ""}},
    {"group_size", {"group_size", ""}},
    {"backend", {"backend", "", false}},
    {"bytes", {"bytes", "B"}},
    {"count", {"count", "elements"}},
    {"dtype", {"dtype", "", false}},
    {"redop", {"redop", "", false}},
    {"in_place", {"in_place", "", false}},
    {"time_us", {"time", "us"}},
    {"time_us_min", {"time_min", "us"}},
    {"time_us_max", {"time_max", "us"}},
    {"algbw_GBps", {"algbw", "GB/s"}},
    {"busbw_GBps", {"busbw", "GB/s"}},
    {"wrong", {"wrong", ""}},
    {"latency_us", {"latency", "us"}},
    {"bandwidth_MBps", {"bandwidth", "MB/s"}},
    {"i_min_us", {"i_min", "us"}},
    {"i_max_us", {"i_max", "us"}},
    {"i_p99_us", {"i_p99", "us"}},
    {"i_cv_pct", {"i_cv", "%"}},
};

const Column& column_of(const std::string& key) {
  for (const auto& k : kKeyColumns)
    if (key == k.key) return k.column;
  throw Error("comm row key '" + key + "' has no CSV column (bench/render/comm_text.cpp kKeyColumns)");
}

// A row object's values as CSV cells: strings bare, null empty, numbers and booleans as JSON writes them.
std::vector<std::string> csv_cells(const nlohmann::ordered_json& row) {
  std::vector<std::string> cells;
  for (const auto& item : row.items()) {
    const auto& v = item.value();
    cells.push_back(v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump());
  }
  return cells;
}

}  // namespace

std::string comm_device_lines(const std::vector<RankPlace>& ranks) {
  std::string s;
  for (const auto& p : ranks) {
    char line[400];
    std::snprintf(line, sizeof line, "#  Rank %2d Group %2d Pid %6d on %10s device ", p.rank, p.group, p.pid, p.host.c_str());
    s += line;
    if (p.device < 0) {
      s += "host memory (MPI)\n";
    } else {
      std::snprintf(line, sizeof line, "%2d [%s] %s\n", p.device, p.pci_bus.c_str(), p.device_name.c_str());
      s += line;
    }
  }
  return s;
}

std::string comm_table_head(const CommResult& r) {
  const bool spread = several(r);
  const bool it = per_iter(r);
  if (osu(r)) {
    const bool latency = table_of(op_of(r)) == OpTable::osu_latency;
    std::string s = latency ? "# Size       Latency (us)" : "# Size     Bandwidth (MB/s)";
    if (spread) s += latency ? "     Min (us)     Max (us)" : "  Min (MB/s)  Max (MB/s)";
    if (it) s += kIterHead + ("\n#" + std::string(s.size() - 1, ' ')) + kIterUnits;
    return s + "\n";
  }
  const std::string ih = it ? kIterHead : "", iu = it ? kIterUnits : "", pad(it ? ih.size() : 0, ' ');
  std::string a = "#                                                              out-of-place" + pad + "                       in-place";
  std::string b = "#       size         count      type   redop    root     time   algbw   busbw #wrong" + ih + "     time   algbw   busbw #wrong" + ih;
  std::string c = "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       " + iu + "     (us)  (GB/s)  (GB/s)       " + iu;
  if (!it) c.erase(c.find_last_not_of(' ') + 1);
  if (spread) {
    b += "    min-t    max-t";
    c += "     (us)     (us)";
  }
  return a + "\n" + b + "\n" + c + "\n";
}

namespace {

std::string latency_row(const CommResult& r, const CommBenchRow& o) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%-10lld%18.2f", static_cast<long long>(o.bytes), o.latency_us);
  std::string s = buf;
  if (several(r)) {
    std::snprintf(buf, sizeof buf, "%13.2f%13.2f", o.time_us_min, o.time_us_max);
    s += buf;
  }
  return s + iteration_cells(r, &o) + "\n";
}

std::string bandwidth_row(const CommResult& r, const CommBenchRow& o) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%-10lld%18.2f", static_cast<long long>(o.bytes), o.bandwidth_MBps);
  std::string s = buf;
  if (several(r)) {
    // A slower group moves fewer MB/s: min bandwidth comes from the slowest time.
    const double moved = op_of(r).directions * static_cast<double>(o.bytes);
    const double lo = o.time_us_max > 0 ? moved / o.time_us_max : 0;
    const double hi = o.time_us_min > 0 ? moved / o.time_us_min : 0;
    std::snprintf(buf, sizeof buf, "%12.2f%12.2f", lo, hi);
    s += buf;
  }
  return s + iteration_cells(r, &o) + "\n";
}

std::string nccl_tests_row(const CommResult& r, const CommBenchRow& o, const CommBenchRow* ip) {
  char buf[512];
  const OpRow& op = op_of(r);
  const std::string redop = op.reduces ? get(r, "redop", "sum") : "none";
  const std::string root = op.root ? get(r, "root", "0") : "-1";
  std::snprintf(buf, sizeof buf, "%12lld  %12lld  %8s  %6s  %6s  %s  %6.2f  %6.2f  %s", static_cast<long long>(o.bytes),
                static_cast<long long>(o.count), get(r, "dtype", "float").c_str(), redop.c_str(), root.c_str(),
                time_text(o.time_us).c_str(), o.algbw_GBps, o.busbw_GBps, wrong_text(o.wrong).c_str());
  std::string s = buf + iteration_cells(r, &o);
  if (ip) {
    std::snprintf(buf, sizeof buf, "  %s  %6.2f  %6.2f  %s", time_text(ip->time_us).c_str(), ip->algbw_GBps, ip->busbw_GBps,
                  wrong_text(ip->wrong).c_str());
  } else {
    std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
  }
  s += buf + iteration_cells(r, ip);
  if (several(r)) {
    std::snprintf(buf, sizeof buf, "  %s  %s", time_text(o.time_us_min).c_str(), time_text(o.time_us_max).c_str());
    s += buf;
  }
  return s + "\n";
}

}  // namespace

std::string comm_row_text(const CommResult& r, const CommBenchRow& o, const CommBenchRow* ip) {
  switch (table_of(op_of(r))) {
    case OpTable::osu_latency: return latency_row(r, o);
    case OpTable::osu_bandwidth: return bandwidth_row(r, o);
    case OpTable::nccl_tests: return nccl_tests_row(r, o, ip);
  }
  throw Error("comm result of operation '" + r.op + "': its row names no table");
}

std::string comm_rows_text(const CommResult& r) {
  std::string s;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    if (r.rows[i].in_place) continue;
    const CommBenchRow* ip = nullptr;
    if (i + 1 < r.rows.size() && r.rows[i + 1].in_place && r.rows[i + 1].bytes == r.rows[i].bytes) ip = &r.rows[i + 1];
    s += comm_row_text(r, r.rows[i], ip);
  }
  return s;
}

std::string comm_fit_line(const CommResult& r) {
  char buf[400];
  const CommFit& f = r.fit;
  if (f.points == 0) return "# fit " + r.op + " over " + r.group + ": no sizes measured\n";
  char beta[64];
  // comm/bench_model.hpp: a fit that finds no bandwidth term stores beta = 1e18 B/s.
  if (f.beta_Bps >= 1e17)
    std::snprintf(beta, sizeof beta, "0 (no bandwidth term measurable)");
  else
    std::snprintf(beta, sizeof beta, "bytes / %.4g GB/s", f.beta_Bps / 1e9);
  std::snprintf(buf, sizeof buf, "# fit %s over %s: t(bytes) = %.3f us + %s (worst relative error %.1f %% over %lld sizes)\n",
                r.op.c_str(), r.group.c_str(), f.alpha_s * 1e6, beta, 100 * f.max_rel_error,
                static_cast<long long>(f.points));
  return buf;
}

Table comm_columns(const CommResult& r) {
  const nlohmann::ordered_json keys = row_json(r, CommBenchRow{}, true);  // every row has the same keys
  std::vector<Column> columns;
  for (const auto& item : keys.items()) columns.push_back(column_of(item.key()));
  return Table(columns);
}

Record comm_record(const CommResult& r, const CommBenchRow& o, const CommBenchRow* ip) {
  Record rec;
  rec.text = comm_row_text(r, o, ip);
  // The raw times are JSON's alone (a list is no CSV cell): added after the cells are taken.
  const auto add = [&](const CommBenchRow& row) {
    rec.objects.push_back(row_json(r, row, true));
    std::vector<std::string> cells = csv_cells(rec.objects.back());
    if (const std::vector<double>* t = iterations_of(r, row)) rec.objects.back()["per_iter"] = per_iter_json(*t);
    return cells;
  };
  rec.cells = add(o);
  if (ip) rec.more_cells.push_back(add(*ip));
  return rec;
}

std::string comm_summary(const CommResult& r) {
  long long wrong = 0;
  bool checked = false;
  double bus = 0;
  int n = 0;
  for (const auto& row : r.rows) {
    if (row.wrong >= 0) wrong += row.wrong, checked = true;
    bus += row.busbw_GBps;
    ++n;
  }
  char buf[200];
  std::string s;
  if (checked)
    std::snprintf(buf, sizeof buf, "# Out of bounds values : %lld %s\n", wrong, wrong ? "FAILED" : "OK");
  else
    std::snprintf(buf, sizeof buf, "# Out of bounds values : N/A (-c 0)\n");
  s += buf;
  // nccl-tests closes every one of its tests (sendrecv included, busbw = algbw) with the mean busbw over
  // the rows, out of place and in place; OSU's latency, bw and bibw print their figure per size only,
  // and a mean of their bytes/time over the sizes would be no figure of either tool.
  if (!osu(r)) {
    std::snprintf(buf, sizeof buf, "# Avg bus bandwidth    : %g\n", n ? bus / n : 0.0);
    s += buf;
  }
  return s;
}

std::string comm_footer(const CommResult& r) { return comm_summary(r) + comm_fit_line(r); }

nlohmann::ordered_json comm_results_json(const std::vector<StoredComm>& comms) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& c : comms) {
    const CommResult& r = c.result;
    const auto date = r.metadata.find("date_utc");
    out.push_back({{"id", c.id},
                   {"op", r.op},
                   {"group", r.group},
                   {"groups", r.groups},
                   {"group_size", r.group_size},
                   {"one_group", r.one_group != 0},
                   {"mapping", r.mapping},
                   {"backend", r.backend},
                   {"config", r.config},
                   {"date_utc", date == r.metadata.end() ? nlohmann::ordered_json() : nlohmann::ordered_json(date->second)},
                   {"fit", {{"alpha_s", r.fit.alpha_s},
                            {"beta_Bps", r.fit.beta_Bps},
                            {"max_rel_error", r.fit.max_rel_error},
                            {"points", r.fit.points}}},
                   {"rows", nlohmann::ordered_json::array()}});
    for (const auto& row : r.rows) out.back()["rows"].push_back(row_json(r, row, false));
  }
  return out;
}

std::string render_comm_listing(const std::vector<StoredComm>& comms) {
  std::string s;
  for (const auto& c : comms) {
    const CommResult& r = c.result;
    char buf[400];
    std::snprintf(buf, sizeof buf, "# comm %d: %s over %s, %lld group(s) of %lld rank(s)%s, mapping %s, backend %s, %s\n",
                  c.id, r.op.c_str(), r.group.c_str(), static_cast<long long>(r.groups),
                  static_cast<long long>(r.group_size), r.one_group ? " (--one-group)" : " at once", r.mapping.c_str(),
                  r.backend.c_str(), r.metadata.count("date_utc") ? r.metadata.at("date_utc").c_str() : "");
    s += buf + comm_table_head(r) + comm_rows_text(r) + comm_footer(r);
  }
  return s;
}

}  // namespace pipebench::bench
