// `pipebench topology`: the t x p x d mapping and its placement on nodes, for any cluster size, without
// MPI (docs/topology.md).
#include <algorithm>
#include <iostream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/error.hpp"
#include "analysis/limits.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/render/table.hpp"
#include "topology/placement.hpp"

namespace pipebench::bench {

namespace {

using topology::Grid;
using topology::GroupKind;
using topology::kGroupKinds;
using topology::Placement;

constexpr int kDefaultRanksPerNode = 8;
constexpr int kMaxRowsShown = 64;   // worlds up to this size print one row per rank
constexpr int kGroupsShown = 4;     // larger ones print the first groups of each kind

struct TopologySettings {
  int t = 1, p = 1, d = 1, v = 1;
  std::string order{Grid::kDefaultOrder};
  int ranks_per_node = kDefaultRanksPerNode;
  bool ranks_per_node_given = false;
  std::string hostfile;
  bool json = false;
  std::vector<int> ranks;
};

// Group members always form an arithmetic progression: print short ones whole, long ones as a range.
std::string members_text(const Grid& g, GroupKind k, int index) {
  const int first = g.group_first(k, index), stride = g.stride(k), n = g.size(k);
  const int last = first + (n - 1) * stride;
  if (n <= 4) {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(first + i * stride);
    return s;
  }
  if (stride == 1) return std::to_string(first) + ".." + std::to_string(last);
  return std::to_string(first) + "," + std::to_string(first + stride) + ".." + std::to_string(last);
}

Placement make_placement(const TopologySettings& o, const Grid& g) {
  if (o.hostfile.empty()) return Placement::block(g.world_size(), o.ranks_per_node);
  std::istringstream in(analysis::read_input_file(o.hostfile, "hostfile"));
  const auto hosts = topology::parse_hostfile(in, o.hostfile, g.world_size());
  if (static_cast<int>(hosts.size()) != g.world_size())
    throw UsageError("hostfile '" + o.hostfile + "' lists " + std::to_string(hosts.size()) + " ranks but t*p*d = " +
                     std::to_string(g.world_size()));
  return Placement::from_hosts(hosts);
}

std::string placement_text(const TopologySettings& o, const Placement& pl, const topology::PlacementSummary& s) {
  std::string txt = std::to_string(s.nodes) + (s.nodes == 1 ? " node, " : " nodes, ");
  txt += s.min_ranks_per_node == s.max_ranks_per_node
             ? std::to_string(s.max_ranks_per_node) + " ranks per node"
             : std::to_string(s.min_ranks_per_node) + "-" + std::to_string(s.max_ranks_per_node) + " ranks per node";
  if (!o.hostfile.empty()) return txt + " (hostfile " + o.hostfile + ")";
  txt += " (ranks numbered node by node";
  if (!o.ranks_per_node_given) txt += "; default " + std::to_string(pl.ranks_per_node()) + ", set --ranks-per-node";
  return txt + ")";
}

void print_text(const TopologySettings& o, const Grid& g, const Placement& pl, const topology::PlacementSummary& s,
                const std::vector<int>& rows) {
  std::cout << "# pipebench topology: t=" << g.t() << " p=" << g.p() << " d=" << g.d() << " v=" << g.v() << ", "
            << g.world_size() << " ranks, order " << g.order() << " (fastest-varying first)\n"
            << "# " << g.rank_formula() << "\n"
            << "# placement: " << placement_text(o, pl, s) << "\n";
  std::vector<std::vector<std::string>> place;
  for (GroupKind k : kGroupKinds) {
    const auto& gp = s[k];
    place.push_back({topology::group_kind_name(k), std::to_string(gp.groups), std::to_string(gp.size),
                     std::to_string(gp.spanning), std::to_string(gp.max_nodes)});
  }
  std::cout << Table({{"group", "", false}, {"groups", ""}, {"size", "ranks"}, {"spanning", "groups"},
                      {"max-nodes", "per group"}})
                   .render(place);
  std::cout << "# pipeline neighbour links: " << s.pp_links << ", " << s.pp_links_cross << " across nodes";
  if (s.pp_wrap_links)
    std::cout << "; interleaved wrap links (pp " << g.p() - 1 << " -> pp 0): " << s.pp_wrap_links << ", "
              << s.pp_wrap_cross << " across nodes";
  std::cout << "\n";
  for (const auto& w : s.warnings) std::cout << "# warning: " << w << "\n";

  const bool large = g.world_size() > kMaxRowsShown;
  if (large) {
    std::cout << "# first groups of each kind\n";
    std::vector<std::vector<std::string>> groups;
    for (GroupKind k : kGroupKinds)
      for (int i = 0; i < std::min(kGroupsShown, g.num_groups(k)); ++i)
        groups.push_back({topology::group_kind_name(k), std::to_string(i), members_text(g, k, i)});
    std::cout << Table({{"group", "", false}, {"index", ""}, {"members", ""}}).render(groups);
  }
  if (!rows.empty()) {
    std::vector<std::vector<std::string>> map;
    for (int r : rows) {
      const auto c = g.coords(r);
      std::vector<std::string> row{std::to_string(r),
                                   o.hostfile.empty() ? std::to_string(pl.node_of(r)) : pl.node_name(pl.node_of(r)),
                                   std::to_string(c.tp), std::to_string(c.pp), std::to_string(c.dp)};
      for (GroupKind k : kGroupKinds) row.push_back(members_text(g, k, g.group_index(k, r)));
      map.push_back(std::move(row));
    }
    std::cout << Table({{"rank", ""}, {"node", ""}, {"tp", ""}, {"pp", ""}, {"dp", ""}, {"tp-group", ""},
                        {"pp-group", ""}, {"dp-group", ""}})
                     .render(map);
  }
  if (large && o.ranks.empty())
    std::cout << "# " << g.world_size() << " ranks: one row per rank is printed up to " << kMaxRowsShown
              << " ranks; pass --rank R (repeatable) for a rank's row, or --json for the whole mapping\n";
}

// A string as JSON; bytes that are not UTF-8 (a host name from a hostfile) become U+FFFD, not an error.
std::string json_string(const std::string& text) {
  return nlohmann::ordered_json(text).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// What j.dump(1) prints, with the O(world) lists (ranks, groups) written as they go instead of held
// as a tree (about 1.5 kB a rank).
void print_json(const TopologySettings& o, const Grid& g, const Placement& pl, const topology::PlacementSummary& s,
                const std::vector<int>& rows) {
  nlohmann::ordered_json j;
  j["t"] = g.t();
  j["p"] = g.p();
  j["d"] = g.d();
  j["v"] = g.v();
  j["world_size"] = g.world_size();
  j["order"] = g.order();
  j["rank_formula"] = g.rank_formula();
  for (GroupKind k : kGroupKinds) j["strides"][topology::group_kind_name(k)] = g.stride(k);
  j["nodes"] = s.nodes;
  j["ranks_per_node"] = pl.ranks_per_node() ? nlohmann::ordered_json(pl.ranks_per_node()) : nlohmann::ordered_json();
  j["hostfile"] = o.hostfile.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.hostfile);
  j["min_ranks_per_node"] = s.min_ranks_per_node;
  j["max_ranks_per_node"] = s.max_ranks_per_node;
  for (GroupKind k : kGroupKinds) {
    const auto& gp = s[k];
    j["placement"][topology::group_kind_name(k)] = {
        {"groups", gp.groups}, {"size", gp.size}, {"spanning_nodes", gp.spanning}, {"max_nodes", gp.max_nodes}};
  }
  j["pp_links"] = s.pp_links;
  j["pp_links_cross_node"] = s.pp_links_cross;
  j["pp_wrap_links"] = s.pp_wrap_links;
  j["pp_wrap_links_cross_node"] = s.pp_wrap_cross;
  j["warnings"] = s.warnings;
  std::string head = j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  head.resize(head.size() - 2);  // reopen the object: drop "\n}"
  std::ostream& os = std::cout;
  os << head << ",\n \"ranks\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int r = rows[i];
    const auto c = g.coords(r);
    const int node = pl.node_of(r);
    os << (i ? "," : "") << "\n  {\n   \"rank\": " << r << ",\n   \"node\": " << node
       << ",\n   \"host\": " << json_string(pl.node_name(node)) << ",\n   \"tp\": " << c.tp
       << ",\n   \"pp\": " << c.pp << ",\n   \"dp\": " << c.dp
       << ",\n   \"tp_group\": " << g.group_index(GroupKind::tp, r)
       << ",\n   \"pp_group\": " << g.group_index(GroupKind::pp, r)
       << ",\n   \"dp_group\": " << g.group_index(GroupKind::dp, r) << "\n  }";
  }
  os << (rows.empty() ? "]" : "\n ]") << ",\n \"groups\": {";
  bool first_kind = true;
  for (GroupKind k : kGroupKinds) {
    os << (first_kind ? "" : ",") << "\n  \"" << topology::group_kind_name(k) << "\": [";
    first_kind = false;
    for (int gi = 0; gi < g.num_groups(k); ++gi) {
      os << (gi ? "," : "") << "\n   [";
      const int first = g.group_first(k, gi);
      for (int i = 0; i < g.size(k); ++i) os << (i ? "," : "") << "\n    " << first + i * g.stride(k);
      os << "\n   ]";
    }
    os << "\n  ]";
  }
  os << "\n }\n}\n";
}

void run(const TopologySettings& o) {
  const Grid g(o.t, o.p, o.d, o.v, o.order);
  if (o.json)  // it lists every rank (and every group member) whatever --rank says
    analysis::check_listed_items(g.world_size(), "--json of t*p*d = " + std::to_string(g.world_size()) + " ranks",
                                 "use the text output, with --rank R for a rank's row");
  const Placement pl = make_placement(o, g);
  const auto summary = topology::summarize(g, pl);
  std::vector<int> rows = o.ranks;
  for (int r : rows) g.coords(r);  // UsageError for a rank outside the grid, before any output
  if (rows.empty() && (o.json || g.world_size() <= kMaxRowsShown)) {
    rows.resize(static_cast<std::size_t>(g.world_size()));
    for (int r = 0; r < g.world_size(); ++r) rows[static_cast<std::size_t>(r)] = r;
  }
  if (o.json)
    print_json(o, g, pl, summary, rows);
  else
    print_text(o, g, pl, summary, rows);
  if (!std::cout.flush()) throw Error("cannot write the output to stdout");
}

}  // namespace

void add_topology_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("topology", "Print the t x p x d rank mapping and its placement on nodes (no MPI)");
  auto o = std::make_shared<TopologySettings>();
  add(*cmd, flag::tensor, o->t);
  add(*cmd, flag::pipeline, o->p);
  add(*cmd, flag::data, o->d);
  add(*cmd, flag::chunks, o->v)->description("Chunks per pipeline rank v (interleaved schedules)");
  add(*cmd, flag::order, o->order);
  auto* rpn = add(*cmd, {"--ranks-per-node", "Ranks per node, numbered node by node"}, o->ranks_per_node);
  add(*cmd, {"--hostfile", "Machine file: one `host` or `host:n` per line, ranks in order"}, o->hostfile)->excludes(rpn);
  add_each(*cmd, {"--rank", "Print this rank's row (repeatable, or a comma list)", 0}, o->ranks);
  add(*cmd, flag::json, o->json)->description("Print one JSON object (keys in docs/topology.md)");
  cmd->callback([o, rpn] {
    o->ranks_per_node_given = rpn->count() > 0;
    run(*o);
  });
}

}  // namespace pipebench::bench
