#include "topology/placement.hpp"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>
#include <utility>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::topology {

Placement Placement::block(int world_size, int ranks_per_node) {
  if (ranks_per_node < 1)
    throw UsageError("ranks per node = " + std::to_string(ranks_per_node) + ": must be at least 1");
  Placement pl;
  pl.world_ = world_size;
  pl.block_ = ranks_per_node;
  pl.nodes_ = (world_size + ranks_per_node - 1) / ranks_per_node;
  return pl;
}

Placement Placement::from_hosts(const std::vector<std::string>& host_of_rank) {
  Placement pl;
  pl.world_ = static_cast<int>(host_of_rank.size());
  pl.node_.reserve(host_of_rank.size());
  std::unordered_map<std::string, int> index;
  for (const auto& host : host_of_rank) {
    auto [it, fresh] = index.emplace(host, static_cast<int>(pl.names_.size()));
    if (fresh) pl.names_.push_back(host);
    pl.node_.push_back(it->second);
  }
  pl.nodes_ = static_cast<int>(pl.names_.size());
  return pl;
}

Placement Placement::from_nodes(std::vector<int> node_of_rank, std::vector<std::string> node_names) {
  Placement pl;
  pl.world_ = static_cast<int>(node_of_rank.size());
  pl.nodes_ = static_cast<int>(node_names.size());
  for (int n : node_of_rank)
    if (n < 0 || n >= pl.nodes_)
      throw Error("node index " + std::to_string(n) + " is outside 0.." + std::to_string(pl.nodes_ - 1));
  pl.node_ = std::move(node_of_rank);
  pl.names_ = std::move(node_names);
  return pl;
}

std::string Placement::node_name(int node) const {
  if (node >= 0 && node < static_cast<int>(names_.size())) return names_[static_cast<std::size_t>(node)];
  return "node" + std::to_string(node);
}

std::vector<std::string> parse_hostfile(std::istream& in, const std::string& source, long long max_ranks) {
  std::vector<std::string> hosts;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto colon = line.rfind(':');
    std::string host = line.substr(0, colon);
    long n = 1;
    if (colon != std::string::npos) {
      const std::string count = line.substr(colon + 1);
      char* end = nullptr;
      n = std::strtol(count.c_str(), &end, 10);
      if (count.empty() || *end != '\0' || n < 1 || n > Grid::kMaxWorldSize)
        throw UsageError(source + ":" + std::to_string(lineno) + ": rank count " + quoted(count) +
                         " is not a whole number from 1 to " + std::to_string(Grid::kMaxWorldSize) +
                         " (lines are `host` or `host:n`)");
    }
    if (host.empty()) throw UsageError(source + ":" + std::to_string(lineno) + ": missing host name before ':'");
    if (static_cast<long long>(hosts.size()) + n > std::min(max_ranks, Grid::kMaxWorldSize))
      throw UsageError(source + " lists more than " + std::to_string(std::min(max_ranks, Grid::kMaxWorldSize)) +
                       " ranks" + (max_ranks < Grid::kMaxWorldSize ? " (t*p*d)" : ""));
    hosts.insert(hosts.end(), static_cast<std::size_t>(n), host);
  }
  if (hosts.empty()) throw UsageError(source + ": no hosts listed (lines are `host` or `host:n`)");
  return hosts;
}

namespace {

// s.kinds: distinct nodes per group, counted with a stamp per node so the whole pass stays linear. A
// kind whose groups another kind already made (dp-cp is dp when cp = 1) takes its figures.
void place_groups(const Grid& grid, const Placement& placement, PlacementSummary& s) {
  std::vector<int> stamp(static_cast<std::size_t>(s.nodes), -1);
  const int world = grid.world_size();
  for (std::size_t i = 0; i < kAllGroupKinds.size(); ++i) {
    const GroupKind k = kAllGroupKinds[i];
    GroupPlacement& gp = s.kinds[static_cast<std::size_t>(k)];
    const auto done = std::find_if(kAllGroupKinds.begin(), kAllGroupKinds.begin() + static_cast<std::ptrdiff_t>(i),
                                   [&](GroupKind o) { return grid.same_groups(k, o); });
    if (done != kAllGroupKinds.begin() + static_cast<std::ptrdiff_t>(i)) {
      gp = s.kinds[static_cast<std::size_t>(*done)];
      gp.kind = k;
      continue;
    }
    gp.kind = k;
    gp.groups = grid.num_groups(k);
    gp.size = grid.size(k);
    if (gp.size == 1) {  // one rank each: on one node
      gp.max_nodes = world > 0 ? 1 : 0;
      continue;
    }
    std::fill(stamp.begin(), stamp.end(), -1);
    for (int g = 0; g < gp.groups; ++g) {
      int nodes = 0;
      grid.for_each_member(k, g, [&](int r) {
        int& st = stamp[static_cast<std::size_t>(placement.node_of(r))];
        if (st != g) st = g, ++nodes;
      });
      if (nodes > 1) ++gp.spanning;
      gp.max_nodes = std::max(gp.max_nodes, nodes);
    }
  }
}

}  // namespace

PlacementSummary summarize(const Grid& grid, const Placement& placement) {
  const int world = grid.world_size();
  if (placement.world_size() != world)
    throw Error("placement has " + std::to_string(placement.world_size()) + " ranks but the grid has " +
                std::to_string(world));
  PlacementSummary s;
  s.world_size = world;
  s.nodes = placement.num_nodes();

  std::vector<int> per_node(static_cast<std::size_t>(s.nodes), 0);
  for (int r = 0; r < world; ++r) ++per_node[static_cast<std::size_t>(placement.node_of(r))];
  const auto [lo, hi] = std::minmax_element(per_node.begin(), per_node.end());
  s.min_ranks_per_node = per_node.empty() ? 0 : *lo;
  s.max_ranks_per_node = per_node.empty() ? 0 : *hi;

  place_groups(grid, placement, s);

  const int p = grid.p(), step = grid.stride(Axis::pp);
  const bool wrap = grid.v() > 1 && p > 2;
  for (int g = 0; g < grid.num_groups(GroupKind::pp); ++g) {
    const int first = grid.group_first(GroupKind::pp, g);
    for (int i = 0; i + 1 < p; ++i) {
      ++s.pp_links;
      if (placement.node_of(first + i * step) != placement.node_of(first + (i + 1) * step)) ++s.pp_links_cross;
    }
    if (wrap) {
      ++s.pp_wrap_links;
      if (placement.node_of(first + (p - 1) * step) != placement.node_of(first)) ++s.pp_wrap_cross;
    }
  }

  const GroupPlacement& tp = s[GroupKind::tp];
  if (tp.spanning > 0)
    s.warnings.push_back(std::to_string(tp.spanning) + " of " + std::to_string(tp.groups) +
                         " tp groups span more than one node, so tensor-parallel all-reduces cross the "
                         "network; put tp first in the order and use a multiple of t=" +
                         std::to_string(grid.t()) + " ranks per node");
  return s;
}

}  // namespace pipebench::topology
