#include "bench/render/chakra.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "bench/render/output.hpp"
#include "bench/render/process_groups.hpp"
#include "bench/render/trace.hpp"

namespace pipebench::bench {

void ProtoWriter::varint(std::uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void ProtoWriter::uint(int field, std::uint64_t v, bool always) {
  if (v == 0 && !always) return;
  key(field, 0);
  varint(v);
}

void ProtoWriter::sint(int field, std::int64_t v, bool always) { uint(field, static_cast<std::uint64_t>(v), always); }

void ProtoWriter::bytes(int field, const std::string& s) {
  key(field, 2);
  varint(s.size());
  out_ += s;
}

void ProtoWriter::message(int field, const ProtoWriter& m) { bytes(field, m.data()); }

void ProtoWriter::packed(int field, const std::vector<std::uint64_t>& v) {
  if (v.empty()) return;
  ProtoWriter body;
  for (std::uint64_t x : v) body.varint(x);
  bytes(field, body.data());
}

namespace {

// et_def.proto's numbers (tests/data/chakra_et_def.proto).
namespace et {
enum NodeType { COMP_NODE = 4, COMM_SEND_NODE = 5, COMM_RECV_NODE = 6, COMM_COLL_NODE = 7 };
enum CollectiveCommType { ALL_REDUCE = 0, ALL_TO_ALL = 1, ALL_GATHER = 2, REDUCE_SCATTER = 7, BARRIER = 9 };
// Node fields
constexpr int kId = 1, kName = 2, kType = 3, kCtrlDeps = 4, kDataDeps = 5, kStart = 6, kDuration = 7, kAttr = 10;
// AttributeProto fields
constexpr int kAttrName = 1, kInt32 = 7, kInt64 = 9, kInt64List = 10, kBool = 27, kString = 29;
// GlobalMetadata fields
constexpr int kVersion = 1, kMetaAttr = 2;
}  // namespace et

ProtoWriter attr_int(const std::string& name, std::int64_t v, int field = et::kInt64) {
  ProtoWriter a;
  a.bytes(et::kAttrName, name);
  a.sint(field, v, true);
  return a;
}

ProtoWriter attr_bool(const std::string& name, bool v) {
  ProtoWriter a;
  a.bytes(et::kAttrName, name);
  a.uint(et::kBool, v ? 1 : 0, true);
  return a;
}

ProtoWriter attr_string(const std::string& name, const std::string& v) {
  ProtoWriter a;
  a.bytes(et::kAttrName, name);
  a.bytes(et::kString, v);
  return a;
}

ProtoWriter attr_ints(const std::string& name, const std::vector<int>& v) {
  ProtoWriter list;
  std::vector<std::uint64_t> u(v.begin(), v.end());
  list.packed(1, u);
  ProtoWriter a;
  a.bytes(et::kAttrName, name);
  a.message(et::kInt64List, list);
  return a;
}

void append_delimited(std::string& file, const ProtoWriter& m) {
  ProtoWriter len;
  len.varint(m.data().size());
  file += len.data() + m.data();
}

bool is_p2p(const CommRecord& c) { return c.kind == CommKind::Send || c.kind == CommKind::Recv; }

bool carries(const ActionRecord& a, const CommRecord& c) {
  if (a.global_rank != c.global_rank || a.step != c.step) return false;
  return (a.stage == c.stage && a.mb == c.mb) || (a.kind == analysis::Kind::FB && a.b_stage == c.stage && a.b_mb == c.mb);
}

// The action of a message on its rank: a receive's consumer waited for it while it ran (else the first
// later one); a send's producer is the last to end by the time it was posted (the executor posts the
// outputs of an action when it ends). -1: none.
long match_action(const std::vector<const ActionRecord*>& actions, const CommRecord& c) {
  constexpr double eps = 1e-6;
  long best = -1;
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const ActionRecord& a = *actions[i];
    if (!carries(a, c)) continue;
    if (c.kind == CommKind::Recv) {
      if (a.t_start <= c.t_wait + eps && c.t_wait <= a.t_end + eps) return static_cast<long>(i);
      if (best < 0 && a.t_end >= c.t_wait) best = static_cast<long>(i);
    } else if (a.t_end <= c.t_posted + eps && (best < 0 || a.t_end > actions[static_cast<std::size_t>(best)]->t_end)) {
      best = static_cast<long>(i);
    }
  }
  return best;
}

std::uint64_t micros(double seconds) { return static_cast<std::uint64_t>(std::llround(std::max(seconds, 0.0) * 1e6)); }

int coll_type(CommKind k) {
  switch (k) {
    case CommKind::AllGather: return et::ALL_GATHER;
    case CommKind::ReduceScatter: return et::REDUCE_SCATTER;
    case CommKind::Barrier: return et::BARRIER;
    case CommKind::AllToAll: return et::ALL_TO_ALL;
    default: return et::ALL_REDUCE;
  }
}

// One rank's records in the order they started (actions by start, communications by posting), with
// the node id of each (its position).
struct RankOrder {
  std::vector<const ActionRecord*> actions;
  std::vector<const CommRecord*> comms;
  std::vector<std::pair<bool, std::size_t>> nodes;  // (is an action, index into actions or comms)
  std::vector<std::uint64_t> action_id, comm_id;
};

RankOrder rank_order(const RunResult& run, int rank, const std::map<int, double>& off) {
  RankOrder o;
  for (const auto& a : run.actions)
    if (a.global_rank == rank) o.actions.push_back(&a);
  for (const auto& c : run.comms)
    if (c.global_rank == rank) o.comms.push_back(&c);
  std::vector<std::tuple<double, int, std::size_t>> at;
  for (std::size_t i = 0; i < o.actions.size(); ++i) at.emplace_back(o.actions[i]->t_start + off.at(o.actions[i]->step), 0, i);
  for (std::size_t i = 0; i < o.comms.size(); ++i) at.emplace_back(o.comms[i]->t_posted + off.at(o.comms[i]->step), 1, i);
  std::stable_sort(at.begin(), at.end());
  o.action_id.resize(o.actions.size());
  o.comm_id.resize(o.comms.size());
  for (const auto& [t, kind, i] : at) {
    (kind == 0 ? o.action_id[i] : o.comm_id[i]) = o.nodes.size();
    o.nodes.emplace_back(kind == 0, i);
  }
  return o;
}

ProtoWriter comm_node(const CommRecord& c, std::uint64_t id, const ProcessGroup& pg) {
  ProtoWriter n;
  n.uint(et::kId, id, true);
  const bool p2p = is_p2p(c);
  n.bytes(et::kName, std::string(comm_kind_name(c.kind)) + " " + pg.name + (p2p ? " peer " + std::to_string(c.peer) : ""));
  n.uint(et::kType, c.kind == CommKind::Send ? et::COMM_SEND_NODE : c.kind == CommKind::Recv ? et::COMM_RECV_NODE : et::COMM_COLL_NODE);
  return n;
}

void comm_tail(ProtoWriter& n, const CommRecord& c, const ProcessGroup& pg, double off) {
  n.uint(et::kStart, micros(c.t_posted + off));
  n.uint(et::kDuration, micros(c.t_done - c.t_posted));
  n.message(et::kAttr, attr_bool("is_cpu_op", false));
  if (is_p2p(c)) {
    const bool send = c.kind == CommKind::Send;
    n.message(et::kAttr, attr_int("comm_src", send ? c.global_rank : c.peer, et::kInt32));
    n.message(et::kAttr, attr_int("comm_dst", send ? c.peer : c.global_rank, et::kInt32));
    n.message(et::kAttr, attr_int("comm_tag", c.tag, et::kInt32));
  } else {
    n.message(et::kAttr, attr_int("comm_type", coll_type(c.kind)));
  }
  n.message(et::kAttr, attr_int("comm_size", c.bytes));
  n.message(et::kAttr, attr_string("pg_name", pg.name));
}

}  // namespace

std::string chakra_trace(const RunResult& run, int rank) {
  const auto off = step_offsets(run);
  const ProcessGroups groups(run);
  const RankOrder o = rank_order(run, rank, off);
  // Data dependencies: a send on its producer, a consumer on its receives.
  std::vector<std::vector<std::uint64_t>> consumed(o.actions.size());
  std::vector<long> producer(o.comms.size(), -1);
  for (std::size_t i = 0; i < o.comms.size(); ++i) {
    if (!is_p2p(*o.comms[i])) continue;
    const long a = match_action(o.actions, *o.comms[i]);
    if (a < 0) continue;
    if (o.comms[i]->kind == CommKind::Recv) consumed[static_cast<std::size_t>(a)].push_back(o.comm_id[i]);
    else producer[i] = a;
  }
  std::string file;
  ProtoWriter meta;
  meta.bytes(et::kVersion, "0.0.4");
  meta.message(et::kMetaAttr, attr_int("rank", rank));
  meta.message(et::kMetaAttr, attr_int("world_size", groups.world_size()));
  for (const ProcessGroup& g : groups.all()) meta.message(et::kMetaAttr, attr_ints("pg_ranks:" + g.name, g.ranks));
  append_delimited(file, meta);
  long prev = -1;  // the last compute or collective node: the rank runs them one after another
  for (std::size_t id = 0; id < o.nodes.size(); ++id) {
    const auto [is_action, i] = o.nodes[id];
    const std::vector<std::uint64_t> ctrl = prev < 0 ? std::vector<std::uint64_t>{} : std::vector<std::uint64_t>{static_cast<std::uint64_t>(prev)};
    if (is_action) {
      const ActionRecord& a = *o.actions[i];
      ProtoWriter n;
      n.uint(et::kId, id, true);
      n.bytes(et::kName, analysis::to_string(analysis::Action{a.kind, a.stage, a.mb, a.b_stage, a.b_mb}));
      n.uint(et::kType, et::COMP_NODE);
      n.packed(et::kCtrlDeps, ctrl);
      n.packed(et::kDataDeps, consumed[i]);
      n.uint(et::kStart, micros(a.t_start + off.at(a.step)));
      n.uint(et::kDuration, micros(a.t_end - a.t_start));
      n.message(et::kAttr, attr_bool("is_cpu_op", false));
      n.message(et::kAttr, attr_int("num_ops", std::llround(a.flops)));
      append_delimited(file, n);
      prev = static_cast<long>(id);
      continue;
    }
    const CommRecord& c = *o.comms[i];
    const ProcessGroup& pg = groups.of(c);
    ProtoWriter n = comm_node(c, id, pg);
    if (!is_p2p(c)) n.packed(et::kCtrlDeps, ctrl);
    if (producer[i] >= 0) n.packed(et::kDataDeps, {o.action_id[static_cast<std::size_t>(producer[i])]});
    comm_tail(n, c, pg, off.at(c.step));
    append_delimited(file, n);
    if (!is_p2p(c)) prev = static_cast<long>(id);
  }
  return file;
}

std::size_t write_chakra_traces(const RunResult& run, const std::string& prefix, bool overwrite) {
  const int world = static_cast<int>(run.ranks.size());
  for (int r = 0; r < world; ++r) check_output_path(rank_trace_path(prefix, r, "et"), "--trace-chakra", overwrite);
  for (int r = 0; r < world; ++r) {
    const std::string bytes = chakra_trace(run, r);
    write_output(rank_trace_path(prefix, r, "et"), "--trace-chakra", [&bytes](std::ostream& out) { out << bytes; }, overwrite);
  }
  return static_cast<std::size_t>(world);
}

}  // namespace pipebench::bench
