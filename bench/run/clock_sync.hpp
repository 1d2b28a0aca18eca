#pragma once
// MPI_Wtime is not globally synchronised in general (docs/formulas.md, "Clock alignment"): each rank's offset to rank 0 is
// estimated from ping-pongs, keeping the exchange with the smallest round trip (Cristian's method).
#include "comm/communicator.hpp"

namespace pipebench::bench {

struct ClockOffset {
  double offset = 0;       // seconds to add to this rank's MPI_Wtime to get rank 0's
  double uncertainty = 0;  // half the best round trip: the offset is right within +-uncertainty
};

// Collective over `world`. Ranks on rank 0's host share its clock (MPI_Wtime reads the host's
// monotonic clock): their offset is 0, exactly. Rank 0 exchanges `rounds` ping-pongs with each rank of
// another host in turn; the two ranks of an exchange poll without sleeping (the others sleep while they
// wait for their turn), so only two processes busy-wait at a time on an oversubscribed node.
// `same_host_shortcut = false` measures every rank (the tests check the estimate against the known 0).
ClockOffset estimate_clock_offset(comm::Communicator& world, int rounds = 10, bool same_host_shortcut = true);

}  // namespace pipebench::bench
