#pragma once
// Where ranks sit on nodes, and what that means for each kind of group: how many groups of each kind
// span more than one node, and how many pipeline neighbour links cross the network. Work is linear in
// the number of ranks per distinct kind (with cp = ep = 1 only tp, pp and dp are distinct; 16,384
// ranks: about half a millisecond).
#include <array>
#include <istream>
#include <string>
#include <vector>

#include "topology/grid.hpp"

namespace pipebench::topology {

class Placement {
 public:
  // Ranks numbered node by node, `ranks_per_node` each (Slurm's block distribution); the last node may
  // be partly filled. UsageError when ranks_per_node < 1.
  static Placement block(int world_size, int ranks_per_node);
  // One host name per rank; nodes are numbered in order of first appearance.
  static Placement from_hosts(const std::vector<std::string>& host_of_rank);
  // Node index of every rank (0..names.size()-1) and each node's name. Error on an index out of range.
  static Placement from_nodes(std::vector<int> node_of_rank, std::vector<std::string> node_names);

  int world_size() const { return world_; }
  int num_nodes() const { return nodes_; }
  int node_of(int rank) const { return block_ > 0 ? rank / block_ : node_[static_cast<std::size_t>(rank)]; }
  std::string node_name(int node) const;  // the host name, or "node<N>" for block placements
  int ranks_per_node() const { return block_; }  // 0 unless a block placement

 private:
  int world_ = 0;
  int nodes_ = 0;
  int block_ = 0;
  std::vector<int> node_;  // per rank, host placements only
  std::vector<std::string> names_;
};

// Reads an MPICH-style machine file: one `host` or `host:n` per line (n ranks on that host, filled in
// order), `#` starts a comment. Returns the host of each rank. UsageError naming `source` and the line
// for a bad count or an empty file, and as soon as it lists more than `max_ranks` ranks (before holding
// them).
std::vector<std::string> parse_hostfile(std::istream& in, const std::string& source,
                                        long long max_ranks = Grid::kMaxWorldSize);

struct GroupPlacement {
  GroupKind kind = GroupKind::tp;
  int groups = 0;     // number of groups of this kind
  int size = 0;       // ranks per group
  int spanning = 0;   // groups whose members sit on more than one node
  int max_nodes = 0;  // most nodes any one group touches
};

struct PlacementSummary {
  int world_size = 0;
  int nodes = 0;
  int min_ranks_per_node = 0, max_ranks_per_node = 0;
  std::array<GroupPlacement, kNumGroupKinds> kinds{};  // indexed by GroupKind
  // Pipeline neighbours: the (pp i, pp i+1) pairs of every pipeline group, and those on different nodes.
  long long pp_links = 0, pp_links_cross = 0;
  // With v > 1 and p > 2 interleaved schedules also send from pp p-1 back to pp 0 (one link per group).
  long long pp_wrap_links = 0, pp_wrap_cross = 0;
  std::vector<std::string> warnings;  // one line each, without a prefix

  const GroupPlacement& operator[](GroupKind k) const { return kinds[static_cast<std::size_t>(k)]; }
};

// Error when the placement's world size differs from the grid's.
PlacementSummary summarize(const Grid& grid, const Placement& placement);

}  // namespace pipebench::topology
