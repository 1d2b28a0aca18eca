#include "bench/render/process_groups.hpp"

#include <algorithm>
#include <map>
#include <cstdlib>

#include "analysis/error.hpp"

namespace pipebench::bench {

namespace {

const char* desc_of(CommGroup g) {
  switch (g) {
    case CommGroup::pp: return "pipeline parallel";
    case CommGroup::tp: return "tensor parallel";
    case CommGroup::dp: return "data parallel";
    case CommGroup::ep: return "expert parallel";
  }
  return "?";
}

// The coordinates a group of kind g leaves free: its members agree on the other two. An ep group is ep
// consecutive data-parallel ranks (the default order, where ep varies faster than the expert-data axis).
bool same_group(CommGroup g, const RankSummary& a, const RankSummary& b, int ep) {
  switch (g) {
    case CommGroup::pp: return a.tp == b.tp && a.dp == b.dp;
    case CommGroup::tp: return a.pp == b.pp && a.dp == b.dp;
    case CommGroup::dp: return a.tp == b.tp && a.pp == b.pp;
    case CommGroup::ep: return a.tp == b.tp && a.pp == b.pp && a.dp / ep == b.dp / ep;
  }
  return false;
}

std::string kind_name(CommGroup g, int lowest) { return std::string(comm_group_name(g)) + ":" + std::to_string(lowest); }

bool is_pair(const CommRecord& c) {
  return c.kind != CommKind::Send && c.kind != CommKind::Recv && c.peer >= 0;
}

std::string pair_name(int a, int b) {
  return "pp:" + std::to_string(std::min(a, b)) + "-" + std::to_string(std::max(a, b));
}

}  // namespace

ProcessGroups::ProcessGroups(const RunResult& run) : ranks_(run.ranks) {
  std::sort(ranks_.begin(), ranks_.end(), [](const RankSummary& a, const RankSummary& b) { return a.global_rank < b.global_rank; });
  world_ = static_cast<int>(ranks_.size());
  std::map<std::string, ProcessGroup> by_name;
  const std::string ep_text = config_value(run, "expert_parallel");
  ep_ = ep_text.empty() ? 1 : std::max(1, std::atoi(ep_text.c_str()));
  std::vector<CommGroup> kinds{CommGroup::pp, CommGroup::tp, CommGroup::dp};
  if (ep_ > 1) kinds.push_back(CommGroup::ep);
  for (CommGroup g : kinds) {
    for (const RankSummary& r : ranks_) {
      std::vector<int> members;
      for (const RankSummary& o : ranks_)
        if (same_group(g, r, o, ep_)) members.push_back(o.global_rank);
      const std::string name = kind_name(g, members.front());
      by_name.emplace(name, ProcessGroup{name, desc_of(g), members});
    }
  }
  for (const CommRecord& c : run.comms)
    if (is_pair(c)) {
      const std::string name = pair_name(c.global_rank, c.peer);
      by_name.emplace(name, ProcessGroup{name, "tied weights", {std::min(c.global_rank, c.peer), std::max(c.global_rank, c.peer)}});
    }
  for (auto& [name, g] : by_name) groups_.push_back(std::move(g));
}

const ProcessGroup& ProcessGroups::find(const std::string& name) const {
  for (const ProcessGroup& g : groups_)
    if (g.name == name) return g;
  throw Error("trace: no process group " + name + " among the run's ranks");
}

const ProcessGroup& ProcessGroups::of(const CommRecord& c) const {
  if (is_pair(c)) return find(pair_name(c.global_rank, c.peer));
  if (c.global_rank < 0 || c.global_rank >= world_) throw Error("trace: rank " + std::to_string(c.global_rank) + " is not a rank of the run");
  const RankSummary& me = ranks_[static_cast<std::size_t>(c.global_rank)];
  for (const RankSummary& o : ranks_)
    if (same_group(c.group, me, o, ep_)) return find(kind_name(c.group, o.global_rank));
  throw Error("trace: rank " + std::to_string(c.global_rank) + " has no " + comm_group_name(c.group) + " group");
}

Elements elements_of(const RunResult& run) {
  const std::string p = config_value(run, "precision");
  if (config_value(run, "workload") == "transformer" && p == "fp64") return {"Double", 8};
  if (config_value(run, "workload") == "transformer") return {"Float", 4};
  return {"Byte", 1};
}

}  // namespace pipebench::bench
