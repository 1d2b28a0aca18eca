// `pipebench topology`: the rank grid (t x cp x p x d, and the expert layers' t x ep x edp x p), its
// groups and their placement on nodes, for any cluster size, without MPI (docs/topology.md).
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
using topology::Placement;

constexpr int kDefaultRanksPerNode = 8;
constexpr int kMaxRowsShown = 64;   // worlds up to this size print one row per rank
constexpr int kGroupsShown = 4;     // larger ones print the first groups of each kind

struct TopologySettings {
  topology::Sizes sizes;
  std::vector<Mapping> mappings;  // --mapping, instead of -t -p -d
  int v = 1;
  std::string order = topology::default_order();  // not given: the default of the sizes given
  int ranks_per_node = kDefaultRanksPerNode;
  bool ranks_per_node_given = false;
  std::string hostfile;
  bool json = false;
  std::vector<int> ranks;
};

// With cp = ep = 1 the other kinds repeat tp, pp and dp (or are single ranks): the output stays what
// it was for the t x p x d grid.
bool five_axes(const Grid& g) { return g.cp() > 1 || g.ep() > 1; }
std::vector<GroupKind> shown_kinds(const Grid& g) {
  if (five_axes(g)) return {topology::kAllGroupKinds.begin(), topology::kAllGroupKinds.end()};
  return {topology::kGroupKinds.begin(), topology::kGroupKinds.end()};
}
// The per-rank rows leave out the two widest combined kinds (they are in the placement table and JSON).
std::vector<GroupKind> row_kinds(const Grid& g) {
  std::vector<GroupKind> kinds = shown_kinds(g);
  kinds.erase(std::remove_if(kinds.begin(), kinds.end(),
                             [](GroupKind k) { return k == GroupKind::tp_cp || k == GroupKind::tp_ep; }),
              kinds.end());
  return kinds;
}
// The kinds the JSON lists: tp, pp, dp first (their order of old), the others after them, as the text
// shows them: only where cp or ep is above 1, since otherwise every other kind's groups are those of
// tp, dp or single ranks (the 2^20 ranks --json may list stay a third of the size).
std::vector<GroupKind> json_kinds(const Grid& g) {
  std::vector<GroupKind> kinds(topology::kGroupKinds.begin(), topology::kGroupKinds.end());
  if (!five_axes(g)) return kinds;
  for (GroupKind k : topology::kAllGroupKinds)
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  return kinds;
}
// "dp-cp" -> "dp_cp": the JSON spelling of a kind.
std::string json_name(GroupKind k) {
  std::string s = topology::group_kind_name(k);
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

// Short groups print whole; evenly spaced ones as a range, "first..last" or "first,second..last";
// others (combined kinds whose axes are apart) as their first four members, ",...," and the last.
std::string members_text(const Grid& g, GroupKind k, int index) {
  const int n = g.size(k), stride = g.even_stride(k);
  const auto member = [&](int i) { return std::to_string(g.member(k, index, i)); };
  std::string s;
  if (n <= 4) {
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + member(i);
    return s;
  }
  if (stride == 1) return member(0) + ".." + member(n - 1);
  if (stride > 0) return member(0) + "," + member(1) + ".." + member(n - 1);
  return member(0) + "," + member(1) + "," + member(2) + "," + member(3) + ",...," + member(n - 1);
}

Placement make_placement(const TopologySettings& o, const Grid& g) {
  if (o.hostfile.empty()) return Placement::block(g.world_size(), o.ranks_per_node);
  std::istringstream in(analysis::read_input_file(o.hostfile, "hostfile"));
  const auto hosts = topology::parse_hostfile(in, o.hostfile, g.world_size());
  if (static_cast<int>(hosts.size()) != g.world_size())
    throw UsageError("hostfile '" + o.hostfile + "' lists " + std::to_string(hosts.size()) + " ranks but " +
                     g.product_name() + " = " + std::to_string(g.world_size()));
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

void print_header(const TopologySettings& o, const Grid& g, const Placement& pl, const topology::PlacementSummary& s) {
  const auto size = [](const char* name, int n) { return std::string(name) + "=" + std::to_string(n) + " "; };
  std::cout << "# pipebench topology: " << size("t", g.t()) << (five_axes(g) ? size("cp", g.cp()) : "")
            << size("p", g.p()) << size("d", g.d()) << (five_axes(g) ? size("ep", g.ep()) : "") << "v=" << g.v()
            << ", " << g.world_size() << " ranks, order " << g.order() << " (fastest-varying first)\n"
            << "# " << g.rank_formula() << "\n";
  if (five_axes(g))
    std::cout << "# expert layers: " << size("etp", g.t()) << size("ep", g.ep()) << size("edp", g.edp())
              << "p=" << g.p() << ", " << g.expert_rank_formula() << "\n";
  std::cout << "# placement: " << placement_text(o, pl, s) << "\n";
  std::vector<std::vector<std::string>> place;
  for (GroupKind k : shown_kinds(g)) {
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
}

void print_rows(const TopologySettings& o, const Grid& g, const Placement& pl, const std::vector<int>& rows) {
  std::vector<Column> columns{{"rank", ""}, {"node", ""}, {"tp", ""}};
  if (five_axes(g)) columns.push_back({"cp", ""});
  columns.insert(columns.end(), {{"pp", ""}, {"dp", ""}});
  if (five_axes(g)) columns.insert(columns.end(), {{"etp", ""}, {"ep", ""}, {"edp", ""}});
  for (GroupKind k : row_kinds(g)) columns.push_back({std::string(topology::group_kind_name(k)) + "-group", ""});
  std::vector<std::vector<std::string>> map;
  for (int r : rows) {
    const auto c = g.coords(r);
    std::vector<std::string> row{std::to_string(r),
                                 o.hostfile.empty() ? std::to_string(pl.node_of(r)) : pl.node_name(pl.node_of(r)),
                                 std::to_string(c.tp)};
    if (five_axes(g)) row.push_back(std::to_string(c.cp));
    row.insert(row.end(), {std::to_string(c.pp), std::to_string(c.dp)});
    if (five_axes(g)) row.insert(row.end(), {std::to_string(c.etp), std::to_string(c.ep), std::to_string(c.edp)});
    for (GroupKind k : row_kinds(g)) row.push_back(members_text(g, k, g.group_index(k, r)));
    map.push_back(std::move(row));
  }
  std::cout << Table(columns).render(map);
}

void print_text(const TopologySettings& o, const Grid& g, const Placement& pl, const topology::PlacementSummary& s,
                const std::vector<int>& rows) {
  print_header(o, g, pl, s);
  const bool large = g.world_size() > kMaxRowsShown;
  if (large) {
    std::cout << "# first groups of each kind\n";
    std::vector<std::vector<std::string>> groups;
    for (GroupKind k : shown_kinds(g))
      for (int i = 0; i < std::min(kGroupsShown, g.num_groups(k)); ++i)
        groups.push_back({topology::group_kind_name(k), std::to_string(i), members_text(g, k, i)});
    std::cout << Table({{"group", "", false}, {"index", ""}, {"members", ""}}).render(groups);
  }
  if (!rows.empty()) print_rows(o, g, pl, rows);
  if (large && o.ranks.empty())
    std::cout << "# " << g.world_size() << " ranks: one row per rank is printed up to " << kMaxRowsShown
              << " ranks; pass --rank R (repeatable) for a rank's row, or --json for the whole mapping\n";
}

// A string as JSON; bytes that are not UTF-8 (a host name from a hostfile) become U+FFFD, not an error.
std::string json_string(const std::string& text) {
  return nlohmann::ordered_json(text).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// The object's scalar keys, as j.dump(1) prints them: those of the t x p x d grid, then the five axes'
// (JSON only adds keys, docs/json.md), all before the long lists.
nlohmann::ordered_json json_head(const TopologySettings& o, const Grid& g, const Placement& pl,
                                 const topology::PlacementSummary& s) {
  using topology::Axis;
  nlohmann::ordered_json j;
  j["t"] = g.t();
  j["p"] = g.p();
  j["d"] = g.d();
  j["v"] = g.v();
  j["world_size"] = g.world_size();
  j["order"] = g.order();
  j["rank_formula"] = g.rank_formula();
  for (Axis a : {Axis::tp, Axis::pp, Axis::dp, Axis::cp, Axis::ep}) j["strides"][topology::axis_name(a)] = g.stride(a);
  j["nodes"] = s.nodes;
  j["ranks_per_node"] = pl.ranks_per_node() ? nlohmann::ordered_json(pl.ranks_per_node()) : nlohmann::ordered_json();
  j["hostfile"] = o.hostfile.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.hostfile);
  j["min_ranks_per_node"] = s.min_ranks_per_node;
  j["max_ranks_per_node"] = s.max_ranks_per_node;
  for (GroupKind k : json_kinds(g)) {
    const auto& gp = s[k];
    j["placement"][json_name(k)] = {
        {"groups", gp.groups}, {"size", gp.size}, {"spanning_nodes", gp.spanning}, {"max_nodes", gp.max_nodes}};
  }
  j["pp_links"] = s.pp_links;
  j["pp_links_cross_node"] = s.pp_links_cross;
  j["pp_wrap_links"] = s.pp_wrap_links;
  j["pp_wrap_links_cross_node"] = s.pp_wrap_cross;
  j["warnings"] = s.warnings;
  j["cp"] = g.cp();
  j["ep"] = g.ep();
  j["edp"] = g.edp();
  j["expert_rank_formula"] = g.expert_rank_formula();
  for (auto [a, name] : {std::pair{Axis::tp, "etp"}, {Axis::ep, "ep"}, {Axis::dp, "edp"}, {Axis::pp, "pp"}})
    j["expert_strides"][name] = g.expert_stride(a);
  return j;
}

// What j.dump(1) prints, with the O(world) lists (ranks, groups) written as they go instead of held
// as a tree (about 1.5 kB a rank).
void print_json(const TopologySettings& o, const Grid& g, const Placement& pl, const topology::PlacementSummary& s,
                const std::vector<int>& rows) {
  std::string head = json_head(o, g, pl, s).dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  head.resize(head.size() - 2);  // reopen the object: drop "\n}"
  std::ostream& os = std::cout;
  os << head << ",\n \"ranks\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int r = rows[i];
    const auto c = g.coords(r);
    const int node = pl.node_of(r);
    os << (i ? "," : "") << "\n  {\n   \"rank\": " << r << ",\n   \"node\": " << node
       << ",\n   \"host\": " << json_string(pl.node_name(node)) << ",\n   \"tp\": " << c.tp
       << ",\n   \"pp\": " << c.pp << ",\n   \"dp\": " << c.dp;
    const std::vector<GroupKind> kinds = json_kinds(g);
    for (std::size_t n = 0; n < kinds.size(); ++n) {
      if (n == topology::kGroupKinds.size())  // the coordinates of the five axes before their groups
        os << ",\n   \"cp\": " << c.cp << ",\n   \"ep\": " << c.ep << ",\n   \"etp\": " << c.etp
           << ",\n   \"edp\": " << c.edp;
      os << ",\n   \"" << json_name(kinds[n]) << "_group\": " << g.group_index(kinds[n], r);
    }
    os << "\n  }";
  }
  os << (rows.empty() ? "]" : "\n ]") << ",\n \"groups\": {";
  bool first_kind = true;
  for (GroupKind k : json_kinds(g)) {
    os << (first_kind ? "" : ",") << "\n  \"" << json_name(k) << "\": [";
    first_kind = false;
    for (int gi = 0; gi < g.num_groups(k); ++gi) {
      os << (gi ? "," : "") << "\n   [";
      bool first = true;
      g.for_each_member(k, gi, [&](int m) { os << (first ? "" : ",") << "\n    " << m, first = false; });
      os << "\n   ]";
    }
    os << "\n  ]";
  }
  os << "\n }\n}\n";
}

void run(const TopologySettings& o) {
  const Grid g(o.sizes, o.v, o.order);
  if (o.json)  // it lists every rank (and every group member) whatever --rank says
    analysis::check_listed_items(g.world_size(), "--json of " + g.product_name() + " = " +
                                                     std::to_string(g.world_size()) + " ranks",
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
}

}  // namespace

void add_topology_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("topology", "Print the rank mapping (t x cp x p x d, experts t x ep x edp x p) and "
                                             "its placement on nodes (no MPI)");
  auto o = std::make_shared<TopologySettings>();
  const CLI::Option* sizes[] = {add(*cmd, flag::tensor, o->sizes.t), add(*cmd, flag::pipeline, o->sizes.p),
                                add(*cmd, flag::data, o->sizes.d)};
  add(*cmd, flag::chunks, o->v)->description("Chunks per pipeline rank v (interleaved schedules)");
  const LayoutOptions layout = add_layout_flags(*cmd, o->mappings, o->order, o->sizes.cp, o->sizes.ep);
  layout.mapping->description("One TxPxD mapping, instead of -t -p -d");
  auto* rpn = add(*cmd, {"--ranks-per-node", "Ranks per node, numbered node by node"}, o->ranks_per_node);
  add(*cmd, {"--hostfile", "Machine file: one `host` or `host:n` per line, ranks in order"}, o->hostfile)->excludes(rpn);
  add_each(*cmd, {"--rank", "Print this rank's row (repeatable, or a comma list)", 0}, o->ranks);
  add(*cmd, flag::json, o->json)->description("Print one JSON object (keys in docs/topology.md)");
  cmd->callback([o, rpn, sizes, layout] {
    o->ranks_per_node_given = rpn->count() > 0;
    if (!o->mappings.empty()) {
      const Mapping& m = o->mappings.front();
      if (o->mappings.size() > 1) throw UsageError("--mapping takes one TxPxD here: pipebench topology shows one layout");
      for (const CLI::Option* s : sizes)
        if (s->count() > 0)
          throw UsageError("--mapping " + to_string(m) + " and " + s->get_name() +
                           " both give the sizes: give --mapping TxPxD or -t -p -d, not both");
      o->sizes.t = m.t, o->sizes.p = m.p, o->sizes.d = m.d;
    }
    if (layout.order->count() == 0) o->order = topology::default_order(o->sizes.cp, o->sizes.ep);
    run(*o);
  });
}

}  // namespace pipebench::bench
