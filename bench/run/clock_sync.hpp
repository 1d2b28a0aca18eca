#pragma once
// MPI_Wtime is not globally synchronised in general (docs/formulas.md, "Clock alignment"): each rank's offset to rank 0 is
// estimated from ping-pongs, keeping the exchange with the smallest round trip (Cristian's method).
#include <functional>

#include "comm/communicator.hpp"

namespace pipebench::bench {

struct ClockOffset {
  double offset = 0;       // seconds to add to this rank's MPI_Wtime to get rank 0's
  double uncertainty = 0;  // half the best round trip: the offset is right within +-uncertainty
};

// Collective over `world`. Ranks on rank 0's node share its clock (MPI_Wtime reads the host's
// monotonic clock): their offset is 0, exactly. `node_of(rank)` says where each rank runs (every rank
// knows it from the placement, so no collective is needed to find out); null measures every rank (the
// tests check the estimate against the known 0). Rank 0 exchanges `rounds` ping-pongs with each rank
// of another node in turn; the two ranks of an exchange poll without sleeping (the others sleep while
// they wait for their turn), so only two processes busy-wait at a time on an oversubscribed node.
// Only point-to-point messages with rank 0 travel: a rank that stops is named by the peer that waits.
ClockOffset estimate_clock_offset(comm::Communicator& world, const std::function<int(int)>& node_of, int rounds = 10);

}  // namespace pipebench::bench
