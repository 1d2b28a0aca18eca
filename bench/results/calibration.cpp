#include "bench/results/calibration.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/store.hpp"

namespace pipebench::bench {

std::vector<CommFit> read_comm_fits(const std::string& path) {
  std::vector<CommFit> fits;
  h5::Id file = h5::open_file(path, false);
  if (h5::object_kind(file.get(), "comm") != h5::ObjectKind::group) return fits;
  h5::Id comm = h5::open_group(file.get(), "comm");
  for (const std::string& name : h5::link_names(comm.get())) {
    if (h5::object_kind(comm.get(), name) != h5::ObjectKind::group) continue;
    h5::Id g = h5::open_group(comm.get(), name);
    // Only complete invocations count, as for runs.
    if (!h5::has_attr(g.get(), "complete") || h5::read_int_attr(g.get(), "complete") != 1) continue;
    if (h5::object_kind(g.get(), "fit") != h5::ObjectKind::group) continue;
    h5::Id fit = h5::open_group(g.get(), "fit");
    CommFit f;
    f.id = "/comm/" + name;
    if (h5::has_attr(g.get(), "op")) f.op = h5::read_string_attr(g.get(), "op");
    if (h5::has_attr(g.get(), "group")) f.group = h5::read_string_attr(g.get(), "group");
    if (h5::has_attr(g.get(), "group_size")) f.group_size = h5::read_int_attr(g.get(), "group_size");
    f.alpha = h5::read_double_attr(fit.get(), "alpha_s");
    f.beta = h5::read_double_attr(fit.get(), "beta_Bps");
    if (h5::has_attr(fit.get(), "points")) f.points = h5::read_int_attr(fit.get(), "points");
    if (!(f.alpha >= 0) || !(f.beta > 0) || !std::isfinite(f.alpha) || !std::isfinite(f.beta)) continue;
    fits.push_back(f);
  }
  return fits;
}

namespace {

bool point_to_point(const std::string& op) {
  for (const char* p : {"sendrecv", "send", "recv", "p2p", "ping", "latency", "bw"})
    if (op.find(p) != std::string::npos) return true;
  return false;
}

}  // namespace

Calibration read_calibration(const std::string& path) {
  const std::string what = "--calibrate " + quoted(path);
  if (!h5::is_hdf5(path)) throw UsageError(what + " is not a readable HDF5 results file");
  ReadRequest rq;
  rq.records = true;
  RunListing listing = read_results(path, rq);
  Calibration c;
  c.path = path;
  double flops = 0, seconds = 0;
  std::vector<std::pair<double, double>> p2p;  // (bytes, seconds) of the transfers that did not wait
  for (const StoredRun& sr : listing.runs) {
    const auto it = sr.run.config.find("workload");
    if (it == sr.run.config.end() || it->second != "transformer") continue;
    double f = 0, s = 0;
    for (const ActionRecord& a : sr.run.actions)
      if (a.flops > 0 && a.t_end > a.t_start) f += a.flops, s += a.t_end - a.t_start;
    if (f <= 0) continue;
    if (c.runs.empty()) {
      c.config = sr.run.config;
      const auto prec = sr.run.config.find("precision");
      c.value_bytes = prec != sr.run.config.end() && prec->second == "fp64" ? 8 : 4;
    }
    c.runs.push_back(sr.id);
    flops += f, seconds += s;
    const auto gap = sr.run.summary.extra.find("executor_overhead_per_action");
    if (gap != sr.run.summary.extra.end() && gap->second > 0) c.action_gap += gap->second;
    for (const CommRecord& r : sr.run.comms)
      if (r.kind == CommKind::Send && r.bytes > 0 && r.t_done > r.t_posted) p2p.emplace_back(double(r.bytes), r.t_done - r.t_posted);
  }
  if (c.runs.empty())
    throw UsageError(what + " holds no complete `run --workload transformer` run with FLOP counts: calibrate from "
                     "a file such a run wrote");
  c.flop_rate = flops / seconds;  // per rank: each action ran on one rank
  c.action_gap /= static_cast<double>(c.runs.size());

  try {
    c.fits = read_comm_fits(path);
  } catch (const Error& e) {
    throw UsageError(what + ": its /comm group is damaged: " + e.what());
  }
  const CommFit* best = nullptr;
  for (const CommFit& f : c.fits)
    if (point_to_point(f.op) && (!best || f.points > best->points)) best = &f;
  if (!best && !c.fits.empty()) best = &c.fits.front();
  if (best) {
    c.alpha = best->alpha;
    c.beta = best->beta;
    if (!point_to_point(best->op) && best->group_size > 1) {
      // A collective's fit: a ring all-reduce moves 2(n-1)/n of the bytes through each link.
      const double n = double(best->group_size);
      if (best->op.find("reduce") != std::string::npos && best->op.find("all") != std::string::npos)
        c.beta = best->beta * 2 * (n - 1) / n;
    }
    c.link_source = "comm fit " + best->id + " (op " + best->op + ")";
    return c;
  }
  // Least squares of t = alpha + bytes / beta over the runs' sends.
  if (p2p.size() >= 2) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [x, y] : p2p) sx += x, sy += y, sxx += x * x, sxy += x * y;
    const double n = double(p2p.size());
    const double den = n * sxx - sx * sx;
    double slope = den > 0 ? (n * sxy - sx * sy) / den : 0;
    double alpha = den > 0 ? (sy - slope * sx) / n : 0;
    if (!(slope > 0)) {  // one message size: all of it is bandwidth
      slope = sy / sx;
      alpha = 0;
    }
    c.alpha = std::max(0.0, alpha);
    c.beta = 1 / slope;
    c.link_source = "point-to-point transfers of run " + std::to_string(c.runs.front()) + " (no comm fit in the file)";
    return c;
  }
  throw UsageError(what + " holds neither a `pipebench comm` fit (/comm/NNNNNN/fit) nor point-to-point transfers "
                   "to fit the link: add a comm sweep or a run with p > 1");
}

}  // namespace pipebench::bench
