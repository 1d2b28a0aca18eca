#pragma once
// The only MPI-aware part of topology/: this rank's coordinates, its communicators of the kinds asked
// for (tp, pp and dp unless told otherwise) and the node each rank sits on, built from a Grid and a
// world communicator.
#include <mpi.h>

#include <vector>

#include "topology/grid.hpp"
#include "topology/placement.hpp"

namespace pipebench::topology {

// Owns an MPI communicator and frees it once (never after MPI_Finalize). Move-only.
class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {}
  ~MpiComm();
  MpiComm(MpiComm&& o) noexcept : comm_(o.comm_) { o.comm_ = MPI_COMM_NULL; }
  MpiComm& operator=(MpiComm&& o) noexcept;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

class MpiGrid {
 public:
  // Collective over `world`. Throws UsageError on every rank, before any communication, when the
  // world size differs from t*cp*p*d. Rank r of `world` is global rank r of the grid. One
  // MPI_Comm_split per kind in `kinds` (in that order, the same on every rank): what is not asked for
  // costs nothing.
  explicit MpiGrid(const Grid& grid, MPI_Comm world = MPI_COMM_WORLD,
                   const std::vector<GroupKind>& kinds = {kGroupKinds.begin(), kGroupKinds.end()});

  const Grid& grid() const { return grid_; }
  int rank() const { return rank_; }
  const Coords& coords() const { return coords_; }
  // Rank i of comm(k) is member i of this rank's group, i.e. grid().group(k, rank())[i]. Error for a
  // kind the constructor was not asked for.
  const MpiComm& comm(GroupKind k) const;
  // Ranks sharing this rank's node (MPI_COMM_TYPE_SHARED).
  const MpiComm& node_comm() const { return node_; }
  // Node of every global rank (nodes numbered by their lowest rank) with the nodes' host names.
  const Placement& placement() const { return placement_; }

 private:
  Grid grid_;
  int rank_ = 0;
  Coords coords_;
  std::array<MpiComm, kNumGroupKinds> comms_;
  std::array<bool, kNumGroupKinds> built_{};
  MpiComm node_;
  Placement placement_;
};

}  // namespace pipebench::topology
