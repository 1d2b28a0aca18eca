#include "bench/results/calibration.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/stats.hpp"
#include "analysis/text.hpp"
#include "comm/bench_ops.hpp"
#include "bench/results/comm_results.hpp"
#include "bench/results/gemm_results.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/store.hpp"

namespace pipebench::bench {

namespace {

// Operations that measure one link: OSU's tests and sendrecv (comm/bench_ops.hpp; read_comms refuses
// a group whose operation has no row).
bool point_to_point(const std::string& op) {
  const comm::bench::OpRow* o = comm::bench::find_op(op);
  return o && comm::bench::point_to_point(*o);
}

// A FIFO or a device would block the HDF5 signature check forever: refused, as every other file flag does.
void refuse_non_regular(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw UsageError(what + " is not a regular file, so not a results file");
}

// The file's last GEMM sweep of the runs' precision, if any.
void read_gemm_sweep(Calibration& c, const std::string& what) {
  const std::string precision = c.value_bytes == 8 ? "fp64" : "fp32";
  try {
    for (const StoredGemm& g : read_gemms(c.path)) {
      if (g.result.precision != precision) continue;
      std::vector<double> seconds;
      const std::vector<double> sizes = gemm_grid(g.result, seconds);
      c.gemm = analysis::plan::measured_gemm_table(sizes, seconds, "gemm sweep /gemm/" + run_name(g.id) + " of " + c.path);
      if (!(g.result.elementwise_Bps > 0) || !std::isfinite(g.result.elementwise_Bps))
        throw Error("its element-wise bandwidth " + num(g.result.elementwise_Bps) + " B/s is not > 0");
      c.elementwise_Bps = g.result.elementwise_Bps;
      c.gemm_id = g.id;
    }
  } catch (const Error& e) {
    throw UsageError(what + ": its /gemm group is damaged: " + e.what());
  }
}

// The fit with the most points among `comms` (a point-to-point operation's first), of groups that span
// nodes as `spans` says ("none", "all"; "": any); null when there is none.
const StoredComm* best_fit(const std::vector<StoredComm>& comms, const std::string& spans) {
  const StoredComm* best = nullptr;
  for (int pass = 0; pass < 2 && !best; ++pass)
    for (const StoredComm& sc : comms) {
      const auto it = sc.result.metadata.find("groups_span_nodes");
      if (!spans.empty() && (it == sc.result.metadata.end() || it->second != spans)) continue;
      if (pass == 0 && !point_to_point(sc.result.op)) continue;
      if (!best || sc.result.fit.points > best->result.fit.points) best = &sc;
    }
  return best;
}

// The link one comm fit gives: a collective's fit is of its size column, and each link carries the bus
// factor of it (a ring all-reduce 2(n-1)/n).
Calibration::Link link_of(const StoredComm& sc) {
  const CommResult& r = sc.result;
  Calibration::Link l{r.fit.alpha_s, r.fit.beta_Bps, "comm fit /comm/" + run_name(sc.id) + " (op " + r.op + ")"};
  const comm::bench::OpRow* op = comm::bench::find_op(r.op);
  if (op && op->op == comm::bench::BenchOp::all_reduce && r.group_size > 1)
    l.beta = r.fit.beta_Bps * comm::bench::bus_factor(op->op, static_cast<int>(r.group_size));
  return l;
}

// The all_reduce fit over `group` groups with the most points, of groups all inside a node or all across
// nodes. Its t = alpha + bytes / beta at n ranks is a ring's 2(n - 1) steps: latency alpha / (2(n - 1))
// each and the bus bandwidth beta 2(n - 1) / n, from which collective() (analysis/plan/ops.cpp) gives
// the fit back at n ranks and a ring's time at other counts.
Calibration::GroupFit group_fit(const std::vector<StoredComm>& comms, const std::string& group) {
  Calibration::GroupFit best;
  std::int64_t points = 0;
  for (const StoredComm& sc : comms) {
    const CommResult& r = sc.result;
    const comm::bench::OpRow* op = comm::bench::find_op(r.op);
    const auto spans = r.metadata.find("groups_span_nodes");
    if (r.group != group || !op || op->op != comm::bench::BenchOp::all_reduce || r.group_size < 2 ||
        spans == r.metadata.end() || (spans->second != "none" && spans->second != "all") || r.fit.points <= points)
      continue;
    const Calibration::Link l = link_of(sc);  // beta at the bus factor
    points = r.fit.points;
    best.link = {l.beta, std::max(0.0, l.alpha) / (2.0 * double(r.group_size - 1)), spans->second == "all"};
    best.source = "comm fit /comm/" + run_name(sc.id) + " (all_reduce over " + group + ", " +
                  (best.link.inter ? "across nodes" : "inside a node") + ")";
  }
  return best;
}

// A run's FLOPs and compute seconds as a typical step has them: per (rank, stage, kind) the median of
// its actions' durations, times their count. The step time the plan is held to is the median of the
// steps', and a step the machine's other work slowed (its actions are in the records too) would
// lower a rate taken over every action's duration (seen: one step of three at 3.7 x the others).
std::pair<double, double> typical_flops(const StoredRun& sr) {
  std::map<std::tuple<int, int, int>, std::vector<double>> durations;
  std::map<std::tuple<int, int, int>, double> flops;
  for (const ActionRecord& a : sr.run.actions)
    if (a.flops > 0 && a.t_end > a.t_start) {
      const auto key = std::make_tuple(a.global_rank, a.stage, static_cast<int>(a.kind));
      durations[key].push_back(a.t_end - a.t_start);
      flops[key] += a.flops;
    }
  double f = 0, s = 0;
  for (auto& [key, d] : durations) f += flops[key], s += double(d.size()) * analysis::median(d);
  return {f, s};
}

// One run's pipeline messages: per stage boundary its measured p2p_time.<b> and p2p_wait.<b> (the
// run's summary, bench/run/measure.cpp), whether the boundary's two ranks were on different hosts,
// and the bytes of the run's pipeline sends.
struct RunLinks {
  std::vector<double> time, wait;
  std::vector<bool> across;
  double bytes = 0;
};

RunLinks run_links(const StoredRun& sr) {
  RunLinks out;
  const auto& x = sr.run.summary.extra;
  const analysis::ScheduleRow* row = nullptr;
  const auto sch = sr.run.config.find("schedule");
  if (sch != sr.run.config.end()) row = analysis::find_schedule(sch->second);
  std::map<int, std::string> host;  // pipeline 0's ranks by pipeline rank
  for (const RankSummary& r : sr.run.ranks)
    if (r.tp == 0 && r.dp == 0) host[r.pp] = r.host;
  const int p = static_cast<int>(host.size());
  for (int b = 0;; ++b) {
    const auto t = x.find("p2p_time." + std::to_string(b));
    if (t == x.end()) break;
    const auto w = x.find("p2p_wait." + std::to_string(b));
    out.time.push_back(t->second);
    out.wait.push_back(w == x.end() ? -1 : w->second);
    const int r0 = row ? row->rank_of_stage(p, b) : b % std::max(1, p), r1 = row ? row->rank_of_stage(p, b + 1) : (b + 1) % std::max(1, p);
    out.across.push_back(host.count(r0) && host.count(r1) && host[r0] != host[r1]);
  }
  double n = 0;
  for (const CommRecord& r : sr.run.comms)
    if (r.kind == CommKind::Send && r.group == CommGroup::pp && r.bytes > 0) out.bytes += double(r.bytes), n += 1;
  out.bytes = n > 0 ? out.bytes / n : 0;
  return out;
}

// The runs' p2p time beyond the link model (each boundary against its own tier's link, never below 0)
// and their wait after the receiver arrived, each the mean over the boundaries that measured it.
void read_p2p_extra(Calibration& c, const std::vector<RunLinks>& runs) {
  double extra = 0, wait = 0, ne = 0, nw = 0;
  for (const RunLinks& r : runs)
    for (std::size_t b = 0; b < r.time.size(); ++b) {
      const Calibration::Link& l = r.across[b] ? c.inter : c.intra;
      if (r.time[b] >= 0 && l.beta > 0) extra += std::max(0.0, r.time[b] - (l.alpha + r.bytes / l.beta)), ne += 1;
      if (r.wait[b] >= 0) wait += r.wait[b], nw += 1;
    }
  c.p2p_extra = ne > 0 ? extra / ne : 0;
  c.p2p_wait = nw > 0 ? wait / nw : 0;
}

// The link: the file's comm fit (a point-to-point one preferred), else a least-squares fit of the runs' sends.
void read_link(Calibration& c, const std::vector<std::pair<double, double>>& p2p, const std::string& what) {
  try {
    for (auto& sc : read_comms(c.path))
      if (sc.result.fit.points > 0 && sc.result.fit.beta_Bps > 0 && std::isfinite(sc.result.fit.alpha_s))
        c.comms.push_back(std::move(sc));
  } catch (const Error& e) {
    throw UsageError(what + ": its /comm group is damaged: " + e.what());
  }
  c.tp = group_fit(c.comms, "tp");
  c.dp = group_fit(c.comms, "dp");
  if (const StoredComm* best = best_fit(c.comms, "")) {
    const Calibration::Link l = link_of(*best);
    c.alpha = l.alpha, c.beta = l.beta, c.link_source = l.source;
    c.intra = c.inter = l;
    if (const StoredComm* in = best_fit(c.comms, "none")) c.intra = link_of(*in);
    if (const StoredComm* across = best_fit(c.comms, "all")) c.inter = link_of(*across);
    return;
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
    c.intra = c.inter = {c.alpha, c.beta, c.link_source};
    return;
  }
  throw UsageError(what + " holds neither a `pipebench comm` fit (/comm/NNNNNN/fit) nor point-to-point transfers "
                   "to fit the link: add a comm sweep or a run with p > 1");
}

}  // namespace

Calibration read_calibration(const std::string& path) {
  const std::string what = "--calibrate " + quoted(path);
  refuse_non_regular(path, what);
  if (!h5::is_hdf5(path)) throw UsageError(what + " is not a readable HDF5 results file");
  ReadRequest rq;
  rq.records = true;
  RunListing listing = read_results(path, rq);
  Calibration c;
  c.path = path;
  double flops = 0, seconds = 0;
  std::vector<std::pair<double, double>> p2p;  // (bytes, seconds) of the transfers that did not wait
  std::vector<RunLinks> links;
  for (const StoredRun& sr : listing.runs) {
    const auto it = sr.run.config.find("workload");
    if (it == sr.run.config.end() || it->second != "transformer") continue;
    const auto [f, s] = typical_flops(sr);
    if (f <= 0) continue;
    if (c.runs.empty()) {
      c.config = sr.run.config;
      c.step_time = sr.run.summary.step_time;
      const auto prec = sr.run.config.find("precision");
      c.value_bytes = prec != sr.run.config.end() && prec->second == "fp64" ? 8 : 4;
    }
    c.runs.push_back(sr.id);
    flops += f, seconds += s;
    const auto gap = sr.run.summary.extra.find("executor_overhead_per_action");
    if (gap != sr.run.summary.extra.end() && gap->second > 0) c.action_gap += gap->second;
    links.push_back(run_links(sr));
    for (const CommRecord& r : sr.run.comms)
      if (r.kind == CommKind::Send && r.bytes > 0 && r.t_done > r.t_posted) p2p.emplace_back(double(r.bytes), r.t_done - r.t_posted);
  }
  if (c.runs.empty())
    throw UsageError(what + " holds no complete `run --workload transformer` run with FLOP counts: calibrate from "
                     "a file such a run wrote");
  c.flop_rate = flops / seconds;  // per rank: each action ran on one rank
  c.action_gap /= static_cast<double>(c.runs.size());

  read_gemm_sweep(c, what);
  read_link(c, p2p, what);
  read_p2p_extra(c, links);
  return c;
}

}  // namespace pipebench::bench
