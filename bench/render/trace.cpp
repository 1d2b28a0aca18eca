#include "bench/render/trace.hpp"

#include "bench/render/output.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/error.hpp"
#include "bench/render/process_groups.hpp"

namespace pipebench::bench {

namespace {

using nlohmann::json;

// Lanes of one process, in display order.
enum Category { kCompute = 0, kSend = 1, kRecv = 2, kCollective = 3, kNumCategories = 4 };
constexpr const char* kCategoryName[kNumCategories] = {"compute", "send", "recv", "collective"};

struct Event {
  int pid = 0;
  Category category = kCompute;
  // Integer nanoseconds: lanes are assigned on these, and ts/dur are written from them, so the
  // viewer sees exactly the order the assignment saw.
  std::int64_t start = 0, end = 0;
  json body;
  int lane = 0;
};

}  // namespace

std::map<int, double> step_offsets(const RunResult& run) {
  std::map<int, std::pair<double, double>> extent;  // step -> (first time, last time)
  const auto see = [&](int step, double a, double b) {
    auto [it, fresh] = extent.try_emplace(step, a, b);
    if (!fresh) it->second = {std::min(it->second.first, a), std::max(it->second.second, b)};
  };
  for (const auto& a : run.actions) see(a.step, a.t_start, a.t_end);
  for (const auto& c : run.comms) see(c.step, c.t_posted, c.t_done);
  std::map<int, double> offset;
  double cursor = 0;
  for (const auto& [step, e] : extent) {
    offset[step] = cursor - e.first;
    cursor += e.second - e.first;
  }
  return offset;
}

namespace {

std::int64_t to_ns(double seconds) { return std::llround(seconds * 1e9); }


Event action_event(const ActionRecord& a, double offset) {
  analysis::Action act{a.kind, a.stage, a.mb, a.b_stage, a.b_mb};
  Event e;
  e.pid = a.global_rank;
  e.category = kCompute;
  e.start = to_ns(a.t_start + offset);
  e.end = std::max(e.start, to_ns(a.t_end + offset));
  json args = {{"step", a.step}, {"stage", a.stage}, {"chunk", a.chunk}, {"mb", a.mb}};
  if (a.kind == analysis::Kind::FB) {
    args["b_stage"] = a.b_stage;
    args["b_mb"] = a.b_mb;
  }
  if (a.flops > 0) args["flops"] = a.flops;
  args["activation_bytes"] = a.activation_bytes;
  e.body = {{"name", analysis::to_string(act)}, {"cat", analysis::kind_name(a.kind)}, {"args", std::move(args)}};
  return e;
}

Event comm_event_of(const CommRecord& c, double offset) {
  Event e;
  e.pid = c.global_rank;
  e.category = c.kind == CommKind::Send ? kSend : c.kind == CommKind::Recv ? kRecv : kCollective;
  e.start = to_ns(c.t_posted + offset);
  e.end = std::max(e.start, to_ns(c.t_done + offset));
  std::string name = comm_kind_name(c.kind);
  json args = {{"step", c.step}, {"bytes", c.bytes}, {"group", comm_group_name(c.group)}};
  if (e.category == kCollective) {
    name += std::string(" ") + comm_group_name(c.group);
  } else {
    name += (c.kind == CommKind::Send ? " to " : " from ") + std::to_string(c.peer);
    args["peer"] = c.peer;
  }
  if (c.stage >= 0) args["stage"] = c.stage;
  if (c.mb >= 0) args["mb"] = c.mb;
  e.body = {{"name", std::move(name)}, {"cat", kCategoryName[e.category]}, {"args", std::move(args)}};
  return e;
}

// Pairs each send with its receive by (step, source, destination, tag): the executor gives every
// message of a step its own tag. Records without a tag (tag < 0) fall back to (stage, mb), and
// within one key the k-th send matches the k-th receive in posting order, as MPI delivers them.
void bind_flows(const RunResult& run, std::vector<Event>& events, const std::vector<std::size_t>& comm_event) {
  using Key = std::tuple<int, int, int, int, int, int>;  // step, src, dst, tag, stage, mb
  std::map<Key, std::vector<std::size_t>> sends, recvs;
  for (std::size_t i = 0; i < run.comms.size(); ++i) {
    const auto& c = run.comms[i];
    const int stage = c.tag < 0 ? c.stage : 0, mb = c.tag < 0 ? c.mb : 0;
    if (c.kind == CommKind::Send) sends[{c.step, c.global_rank, c.peer, c.tag, stage, mb}].push_back(i);
    if (c.kind == CommKind::Recv) recvs[{c.step, c.peer, c.global_rank, c.tag, stage, mb}].push_back(i);
  }
  const auto by_posting = [&](std::size_t a, std::size_t b) { return run.comms[a].t_posted < run.comms[b].t_posted; };
  int next_id = 1;
  for (auto& [key, s] : sends) {
    auto r = recvs.find(key);
    if (r == recvs.end()) continue;
    std::stable_sort(s.begin(), s.end(), by_posting);
    std::stable_sort(r->second.begin(), r->second.end(), by_posting);
    for (std::size_t k = 0; k < std::min(s.size(), r->second.size()); ++k) {
      char id[24];
      std::snprintf(id, sizeof id, "0x%x", next_id++);
      Event& out = events[comm_event[s[k]]];
      Event& in = events[comm_event[r->second[k]]];
      out.body["bind_id"] = id;
      out.body["flow_out"] = true;
      in.body["bind_id"] = id;
      in.body["flow_in"] = true;
    }
  }
}

// Interval partitioning per (pid, category): each event goes to the lane that became free earliest,
// or a new lane, which uses the fewest lanes possible and keeps every lane's events disjoint.
// Returns the number of lanes per (pid, category).
std::map<std::pair<int, int>, int> assign_lanes(std::vector<Event>& events) {
  std::vector<std::size_t> order(events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(events[a].pid, events[a].category, events[a].start, events[a].end) <
           std::tie(events[b].pid, events[b].category, events[b].start, events[b].end);
  });
  using Free = std::pair<std::int64_t, int>;  // (end of the lane's last event, lane)
  std::map<std::pair<int, int>, std::priority_queue<Free, std::vector<Free>, std::greater<>>> lanes;
  std::map<std::pair<int, int>, int> count;
  for (std::size_t i : order) {
    Event& e = events[i];
    const std::pair<int, int> where{e.pid, e.category};
    auto& q = lanes[where];
    if (!q.empty() && q.top().first <= e.start) {
      e.lane = q.top().second;
      q.pop();
    } else {
      e.lane = count[where]++;
    }
    q.push({e.end, e.lane});
  }
  return count;
}

json metadata_event(const char* what, int pid, int tid, json args) {
  json m = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) m["tid"] = tid;
  return m;
}

// Kineto: the CUDA stream of each lane (compute from 7, as PyTorch's default stream shows; the
// communication lanes above it, 100 per category).
int stream_of(const Event& e) { return e.category == kCompute ? 7 + e.lane : 100 * e.category + e.lane; }

// The NCCL kernel of a communication, named as NCCL's device kernels are (HTA's communication pattern
// is ^nccl), and HTA's "nccl::" arguments (its configs/event_args_formats/event_args_1.0.0.yaml).
void annotate_nccl(Event& e, const CommRecord& c, const ProcessGroup& pg, const Elements& el, int seq) {
  const bool p2p = c.kind == CommKind::Send || c.kind == CommKind::Recv;
  // NCCL runs an all-to-all as grouped sends and receives: the SendRecv kernel.
  const char* kernel = p2p || c.kind == CommKind::AllToAll ? "ncclDevKernel_SendRecv"
                       : c.kind == CommKind::AllGather ? "ncclDevKernel_AllGather"
                       : c.kind == CommKind::ReduceScatter ? "ncclDevKernel_ReduceScatter_Sum"
                                                           : "ncclDevKernel_AllReduce_Sum";
  const std::int64_t n = c.bytes / el.size, g = static_cast<std::int64_t>(pg.ranks.size());
  // The record's bytes are the whole gathered (all-gather) or scattered (reduce-scatter) buffer.
  const std::int64_t in = c.kind == CommKind::AllGather ? n / g : n;
  const std::int64_t out = c.kind == CommKind::ReduceScatter ? n / g : n;
  json& args = e.body["args"];
  args["Collective name"] = comm_kind_name(c.kind);
  args["In msg nelems"] = in;
  args["Out msg nelems"] = out;
  args["In split size"] = json::array();
  args["Out split size"] = json::array();
  args["dtype"] = el.dtype;
  args["Group size"] = g;
  args["Process Group Name"] = pg.name;
  args["Process Group Description"] = pg.desc;
  args["Process Group Ranks"] = pg.ranks;
  args["Rank"] = c.global_rank;
  args["Seq"] = seq;
  e.body["name"] = kernel;
}

json distributed_info(const RunResult& run, int rank, const ProcessGroups& groups) {
  json pgs = json::array();
  for (const ProcessGroup& g : groups.all())
    pgs.push_back({{"pg_name", g.name}, {"pg_desc", g.desc}, {"backend_config", config_value(run, "backend")},
                   {"pg_size", g.ranks.size()}, {"ranks", g.ranks}});
  return {{"backend", config_value(run, "backend")}, {"rank", rank}, {"world_size", groups.world_size()},
          {"pg_count", pgs.size()}, {"pg_config", std::move(pgs)}};
}

// One rank's kernels: compute and communication events of rank `rank`, lanes assigned, NCCL-annotated.
std::vector<Event> kineto_kernels(const RunResult& run, int rank, const std::map<int, double>& offset,
                                  const ProcessGroups& groups) {
  std::vector<Event> events;
  for (const auto& a : run.actions)
    if (a.global_rank == rank) events.push_back(action_event(a, offset.at(a.step)));
  const Elements el = elements_of(run);
  std::map<std::string, int> seq;  // per process group: the collectives' sequence number, as c10d counts
  for (const auto& c : run.comms) {
    if (c.global_rank != rank) continue;
    events.push_back(comm_event_of(c, offset.at(c.step)));
    const ProcessGroup& pg = groups.of(c);
    annotate_nccl(events.back(), c, pg, el, seq[pg.name]++);
  }
  assign_lanes(events);
  return events;
}

}  // namespace

std::string rank_trace_path(const std::string& prefix, int rank, const char* ext) {
  return prefix + "." + std::to_string(rank) + "." + ext;
}

json kineto_trace(const RunResult& run, int rank) {
  const auto offset = step_offsets(run);
  const ProcessGroups groups(run);
  std::vector<Event> events = kineto_kernels(run, rank, offset, groups);
  json out = json::array();
  // The device is process 0 of the rank's file, its streams the threads; the host thread holds the steps.
  out.push_back(metadata_event("process_name", 0, -1, {{"name", "GPU 0 (rank " + std::to_string(rank) + ")"}}));
  out.push_back(metadata_event("process_name", 1, -1, {{"name", "host (rank " + std::to_string(rank) + ")"}}));
  std::map<int, int> streams;  // stream -> category
  for (const Event& e : events) streams[stream_of(e)] = e.category;
  for (const auto& [stream, category] : streams)
    out.push_back(metadata_event("thread_name", 0, stream, {{"name", "stream " + std::to_string(stream) + " " + kCategoryName[category]}}));
  int correlation = 1;
  for (Event& e : events) {
    json& j = e.body;
    j["ph"] = "X";
    j["cat"] = "kernel";
    j["pid"] = 0;
    j["tid"] = stream_of(e);
    j["ts"] = static_cast<double>(e.start) / 1e3;
    j["dur"] = static_cast<double>(e.end - e.start) / 1e3;
    j["args"]["device"] = 0;
    j["args"]["stream"] = stream_of(e);
    j["args"]["correlation"] = correlation++;
    out.push_back(std::move(j));
  }
  // HTA's iterations: ProfilerStep#k on the host, one per timed step (each step's extent on every rank).
  std::map<int, std::pair<double, double>> step_extent;
  for (const auto& [step, off] : offset) step_extent[step] = {1e300, -1e300};
  for (const auto& a : run.actions) {
    auto& x = step_extent[a.step];
    x = {std::min(x.first, a.t_start + offset.at(a.step)), std::max(x.second, a.t_end + offset.at(a.step))};
  }
  for (const auto& [step, x] : step_extent)
    if (x.second >= x.first)
      out.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#" + std::to_string(step)},
                     {"pid", 1}, {"tid", 1}, {"ts", x.first * 1e6}, {"dur", (x.second - x.first) * 1e6}});
  return {{"schemaVersion", 1}, {"distributedInfo", distributed_info(run, rank, groups)},
          {"deviceProperties", json::array()}, {"traceEvents", std::move(out)}, {"displayTimeUnit", "ms"},
          {"otherData", {{"key", run.key}, {"config", run.config}}}};
}

std::size_t write_kineto_traces(const RunResult& run, const std::string& prefix, bool overwrite) {
  const int world = static_cast<int>(run.ranks.size());
  for (int r = 0; r < world; ++r) check_output_path(rank_trace_path(prefix, r, "json"), "--trace-kineto", overwrite);
  for (int r = 0; r < world; ++r) {
    const json trace = kineto_trace(run, r);
    write_output(rank_trace_path(prefix, r, "json"), "--trace-kineto", [&trace](std::ostream& out) {
      out << trace.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    }, overwrite);
  }
  return static_cast<std::size_t>(world);
}

json chrome_trace(const RunResult& run) {
  const auto offset = step_offsets(run);
  std::vector<Event> events;
  events.reserve(run.actions.size() + run.comms.size());
  for (const auto& a : run.actions) events.push_back(action_event(a, offset.at(a.step)));
  std::vector<std::size_t> comm_event;
  for (const auto& c : run.comms) {
    comm_event.push_back(events.size());
    events.push_back(comm_event_of(c, offset.at(c.step)));
  }
  bind_flows(run, events, comm_event);
  const auto lanes = assign_lanes(events);

  // tid of lane 0 of each (pid, category): the categories' lanes follow one another.
  std::map<std::pair<int, int>, int> first_tid;
  std::map<int, int> tids_of_pid;
  for (const auto& [where, n] : lanes) {
    first_tid[where] = tids_of_pid[where.first];
    tids_of_pid[where.first] += n;
  }

  json out = json::array();
  std::map<int, const RankSummary*> rank_of;
  for (const auto& r : run.ranks) rank_of[r.global_rank] = &r;
  for (const auto& entry : tids_of_pid) {
    const int pid = entry.first;
    std::string name = "rank " + std::to_string(pid);
    if (auto it = rank_of.find(pid); it != rank_of.end())
      name += " (pp " + std::to_string(it->second->pp) + ", tp " + std::to_string(it->second->tp) + ", dp " +
              std::to_string(it->second->dp) + ")";
    out.push_back(metadata_event("process_name", pid, -1, {{"name", name}}));
    out.push_back(metadata_event("process_sort_index", pid, -1, {{"sort_index", pid}}));
  }
  for (const auto& [where, n] : lanes) {
    for (int lane = 0; lane < n; ++lane) {
      const int tid = first_tid[where] + lane;
      std::string name = kCategoryName[where.second];
      if (n > 1) name += " " + std::to_string(lane + 1);
      out.push_back(metadata_event("thread_name", where.first, tid, {{"name", name}}));
      out.push_back(metadata_event("thread_sort_index", where.first, tid, {{"sort_index", tid}}));
    }
  }
  for (auto& e : events) {
    json& j = e.body;
    j["ph"] = "X";
    j["pid"] = e.pid;
    j["tid"] = first_tid[{e.pid, e.category}] + e.lane;
    j["ts"] = static_cast<double>(e.start) / 1e3;
    j["dur"] = static_cast<double>(e.end - e.start) / 1e3;
    out.push_back(std::move(j));
  }
  return {{"traceEvents", std::move(out)},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"key", run.key}, {"config", run.config}}}};
}

std::size_t write_chrome_trace(const RunResult& run, const std::string& path, bool overwrite) {
  check_output_path(path, "--trace", overwrite);
  const json trace = chrome_trace(run);
  write_output(path, "--trace", [&trace](std::ostream& out) {
    out << trace.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
  }, overwrite);
  return trace["traceEvents"].size();
}

}  // namespace pipebench::bench
