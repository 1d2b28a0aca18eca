#include "topology/mpi_grid.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "analysis/error.hpp"

namespace pipebench::topology {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(std::string(what) + " failed: " + std::string(msg, static_cast<std::size_t>(len)));
}

}  // namespace

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

MpiComm& MpiComm::operator=(MpiComm&& o) noexcept {
  if (this != &o) {
    MpiComm dying(comm_);
    comm_ = o.comm_;
    o.comm_ = MPI_COMM_NULL;
  }
  return *this;
}

const MpiComm& MpiGrid::comm(GroupKind k) const {
  if (!built_[static_cast<std::size_t>(k)])
    throw Error(std::string("the ") + group_kind_name(k) + " communicator was not built: pass the kind to MpiGrid");
  return comms_[static_cast<std::size_t>(k)];
}

int MpiComm::rank() const {
  int r = -1;
  if (comm_ != MPI_COMM_NULL) MPI_Comm_rank(comm_, &r);
  return r;
}

int MpiComm::size() const {
  int n = 0;
  if (comm_ != MPI_COMM_NULL) MPI_Comm_size(comm_, &n);
  return n;
}

MpiGrid::MpiGrid(const Grid& grid, MPI_Comm world, const std::vector<GroupKind>& kinds) : grid_(grid) {
  int size = 0;
  MPI_Comm_size(world, &size);
  MPI_Comm_rank(world, &rank_);
  if (size != grid.world_size())
    throw UsageError(grid.product_name() + " = " + std::to_string(grid.world_size()) + " (t=" +
                     std::to_string(grid.t()) + (grid.cp() > 1 ? ", cp=" + std::to_string(grid.cp()) : "") +
                     ", p=" + std::to_string(grid.p()) + ", d=" + std::to_string(grid.d()) + ") but the job has " +
                     std::to_string(size) + " ranks");
  coords_ = grid.coords(rank_);

  // Colour = group number, key = position in the group: communicator rank i is member i, so group
  // order and communicator order agree.
  for (GroupKind k : kinds) {
    const auto i = static_cast<std::size_t>(k);
    if (built_[i]) continue;
    MPI_Comm c = MPI_COMM_NULL;
    check(MPI_Comm_split(world, grid.group_index(k, rank_), grid.coord(k, rank_), &c), "MPI_Comm_split");
    comms_[i] = MpiComm(c);
    built_[i] = true;
  }

  // Nodes: one leader per shared-memory domain numbers the nodes (by lowest rank, as block placement
  // does) and shares its host name; everyone then learns the node of every rank. Only ints travel
  // world-wide, so this stays cheap at 16k ranks.
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  node_ = MpiComm(node);
  const bool leader = node_.rank() == 0;
  MPI_Comm lc = MPI_COMM_NULL;
  check(MPI_Comm_split(world, leader ? 0 : MPI_UNDEFINED, rank_, &lc), "MPI_Comm_split");
  MpiComm leaders(lc);

  int info[2] = {0, 0};  // node index, number of nodes
  std::vector<char> names;
  if (leader) {
    info[0] = leaders.rank();
    info[1] = leaders.size();
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(host, &len);
    names.resize(static_cast<std::size_t>(info[1]) * MPI_MAX_PROCESSOR_NAME);
    check(MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                        leaders.get()),
          "MPI_Allgather");
  }
  check(MPI_Bcast(info, 2, MPI_INT, 0, node_.get()), "MPI_Bcast");
  names.resize(static_cast<std::size_t>(info[1]) * MPI_MAX_PROCESSOR_NAME);
  check(MPI_Bcast(names.data(), static_cast<int>(names.size()), MPI_CHAR, 0, node_.get()), "MPI_Bcast");

  std::vector<int> node_of(static_cast<std::size_t>(size));
  check(MPI_Allgather(&info[0], 1, MPI_INT, node_of.data(), 1, MPI_INT, world), "MPI_Allgather");
  std::vector<std::string> hosts(static_cast<std::size_t>(info[1]));
  for (std::size_t n = 0; n < hosts.size(); ++n) {
    const char* name = names.data() + n * MPI_MAX_PROCESSOR_NAME;
    hosts[n].assign(name, std::find(name, name + MPI_MAX_PROCESSOR_NAME, '\0'));
  }
  placement_ = Placement::from_nodes(std::move(node_of), std::move(hosts));
}

}  // namespace pipebench::topology
