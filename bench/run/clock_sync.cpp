#include "bench/run/clock_sync.hpp"

#include <mpi.h>

#include <limits>

#include "comm/tags.hpp"

namespace pipebench::bench {

namespace {

using comm::tags::kClockPing;
using comm::tags::kClockPong;
using comm::tags::kClockResult;
using comm::tags::kClockTurn;

// Switches a communicator to busy polling for the lifetime of the guard.
class BusyPolling {
 public:
  explicit BusyPolling(comm::Communicator& c) : c_(c), saved_(c.wait_policy()) {
    comm::WaitPolicy busy = saved_;
    busy.poll_interval = busy.max_poll_interval = std::chrono::microseconds(0);
    c_.set_wait_policy(busy);
  }
  ~BusyPolling() { c_.set_wait_policy(saved_); }
  BusyPolling(const BusyPolling&) = delete;
  BusyPolling& operator=(const BusyPolling&) = delete;

 private:
  comm::Communicator& c_;
  comm::WaitPolicy saved_;
};

}  // namespace

ClockOffset estimate_clock_offset(comm::Communicator& world, const std::function<int(int)>& node_of, int rounds) {
  const int me = world.rank(), n = world.size();
  const auto shares_clock = [&](int r) { return node_of && node_of(r) == node_of(0); };
  ClockOffset result;
  if (me != 0 && shares_clock(me)) return result;  // rank 0's node: the same clock
  char token = 0;
  if (me == 0) {
    for (int r = 1; r < n; ++r) {
      if (shares_clock(r)) continue;
      world.send(&token, 1, r, kClockTurn);
      BusyPolling busy(world);
      double best_rtt = std::numeric_limits<double>::infinity(), best_offset = 0;
      for (int k = 0; k < rounds; ++k) {
        double remote = 0;
        const double t1 = MPI_Wtime();
        world.send(&token, 1, r, kClockPing);
        world.recv(&remote, sizeof remote, r, kClockPong);
        const double t3 = MPI_Wtime();
        if (t3 - t1 < best_rtt) {
          best_rtt = t3 - t1;
          best_offset = 0.5 * (t1 + t3) - remote;  // remote read its clock half-way through, at best
        }
      }
      const double out[2] = {best_offset, 0.5 * best_rtt};
      world.send(out, sizeof out, r, kClockResult);
    }
    return result;
  }
  world.recv(&token, 1, 0, kClockTurn);
  BusyPolling busy(world);
  for (int k = 0; k < rounds; ++k) {
    world.recv(&token, 1, 0, kClockPing);
    const double t2 = MPI_Wtime();
    world.send(&t2, sizeof t2, 0, kClockPong);
  }
  double in[2] = {0, 0};
  world.recv(in, sizeof in, 0, kClockResult);
  result.offset = in[0];
  result.uncertainty = in[1];
  return result;
}

}  // namespace pipebench::bench
