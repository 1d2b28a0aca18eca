#include "comm/bench_harness.hpp"

#include "comm/mpi_communicator.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace pipebench::comm::bench {

namespace {

using clock = std::chrono::steady_clock;
constexpr int kDataTag = 11, kAckTag = 12;

double seconds_since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }

}  // namespace

namespace {

// One buffer's bytes: the larger of the send and the receive side of the largest size.
std::size_t buffer_size(const Spec& spec, std::uint64_t max_bytes, int n) {
  const std::size_t es = dtype_size(spec.dtype);
  const Shape big = shape_of(spec.op, max_bytes, es, n, spec.imbalance);
  return std::max(big.count, big.recv_elems) * es;
}

}  // namespace

std::uint64_t Harness::buffer_bytes(const Spec& spec, std::uint64_t max_bytes, int n) {
  // send, recv (and recv2 for pp-pairs), and the host vector of ones they are filled from.
  return buffer_size(spec, max_bytes, n) * (spec.group == GroupChoice::pp_pairs ? 4u : 3u);
}

Harness::Harness(Communicator& group, Communicator& world, const Spec& spec, bool takes_part, std::uint64_t max_bytes)
    : group_(group),
      world_(world),
      spec_(spec),
      row_(op_row(spec.op)),
      takes_part_(takes_part),
      me_(group.rank()),
      n_(group.size()) {
  if (auto* mpi = dynamic_cast<MpiCommunicator*>(&group_); mpi && spec_.blocking) mpi->set_blocking_collectives(true);
  if (!takes_part_) return;
  const std::size_t bytes = buffer_size(spec_, max_bytes, n_);
  send_ = group_.allocate(bytes);
  recv_ = group_.allocate(bytes);
  if (spec_.group == GroupChoice::pp_pairs) recv2_ = group_.allocate(bytes);
  ack_ = group_.allocate(4);
  // Written once, as a bare loop's buffers are: calloc'd pages never written all map the one zero
  // page, whose reads stay in cache and would flatter every copy out of them.
  const std::vector<unsigned char> ones(bytes, 1);
  for (Buffer* b : {&send_, &recv_, &recv2_})
    if (b->data()) group_.copy_to_buffer(b->data(), ones.data(), bytes);
}

int Harness::partner() const {
  const int p = me_ ^ 1;
  return p < n_ ? p : -1;
}

Request Harness::post_collective(const Shape& s, bool ip) {
  return row_.post({group_, send_.data(), recv_.data(), s, ip, spec_.dtype, spec_.redop, spec_.root, spec_.imbalance});
}

// sendrecv: to the right neighbour, from the left one (a ring, as nccl-tests'). pp-pairs: to and from
// both pipeline neighbours at once, the two directions of a 1F1B steady state.
void Harness::exchange(std::size_t bytes, std::vector<Request>& out) {
  group_.group_start();
  if (spec_.group == GroupChoice::pp_pairs) {
    if (me_ > 0) out.push_back(group_.irecv(recv_.data(), bytes, me_ - 1, kDataTag));
    if (me_ + 1 < n_) out.push_back(group_.irecv(recv2_.data(), bytes, me_ + 1, kDataTag));
    if (me_ > 0) out.push_back(group_.isend(send_.data(), bytes, me_ - 1, kDataTag));
    if (me_ + 1 < n_) out.push_back(group_.isend(send_.data(), bytes, me_ + 1, kDataTag));
  } else {
    out.push_back(group_.irecv(recv_.data(), bytes, (me_ + n_ - 1) % n_, kDataTag));
    out.push_back(group_.isend(send_.data(), bytes, (me_ + 1) % n_, kDataTag));
  }
  group_.group_end();
}

double Harness::time_collective(const Shape& s, bool ip) {
  const std::size_t bytes = s.bytes;
  const bool batch = std::string(group_.backend()) == "nccl";  // a stream runs them in turn: post all, wait once
  std::vector<Request> rs;
  auto once = [&] {
    if (row_.run == Run::ring) {
      exchange(bytes, rs);
    } else {
      rs.push_back(post_collective(s, ip));
    }
    if (!batch) {
      group_.wait_all(rs);
      rs.clear();
    }
    beat();
  };
  for (int i = 0; i < spec_.warmup; ++i) once();
  group_.wait_all(rs);
  rs.clear();
  // Test-only: PIPEBENCH_TEST_COMM_STOP=R stops world rank R (SIGSTOP) after its warm-up, so that the
  // tests see the others' wait end the job within --timeout (tests/cli/comm.cmake).
  if (const char* stop = std::getenv("PIPEBENCH_TEST_COMM_STOP"); stop && std::atoi(stop) == world_.rank()) std::raise(SIGSTOP);
  if (spec_.per_iter) {
    std::vector<double>& times = iter_s_[ip ? 1 : 0];
    for (int i = 0; i < spec_.iters; ++i) {
      const auto t = clock::now();
      once();
      group_.wait_all(rs);
      rs.clear();
      times.push_back(seconds_since(t));
    }
    double sum = 0;
    for (double x : times) sum += x;
    return sum / spec_.iters;
  }
  const auto t0 = clock::now();
  for (int i = 0; i < spec_.iters; ++i) once();
  group_.wait_all(rs);
  return seconds_since(t0) / spec_.iters;
}

void Harness::fill(void* dev, std::uint64_t elems, const std::vector<double>& values) {
  const std::size_t es = dtype_size(spec_.dtype);
  std::vector<unsigned char> host(elems * es);
  for (std::uint64_t i = 0; i < elems; ++i) store_value(spec_.dtype, host.data(), i, i < values.size() ? values[i] : -1);
  group_.copy_to_buffer(dev, host.data(), host.size());
}

std::int64_t Harness::count_wrong(const void* dev, std::uint64_t offset, const std::vector<double>& expected) {
  const std::size_t es = dtype_size(spec_.dtype);
  std::vector<unsigned char> host(expected.size() * es);
  group_.copy_from_buffer(host.data(), static_cast<const char*>(dev) + offset * es, host.size());
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (load_value(spec_.dtype, host.data(), i) != expected[i]) ++wrong;
  return wrong;
}

std::int64_t Harness::check_collective(const Shape& s, bool ip) {
  fill(recv_.data(), std::max(s.count, s.recv_elems), {});  // -1 everywhere: nothing stale passes
  Expectation e = row_.expect({group_, send_.data(), recv_.data(), s, ip, spec_.dtype, spec_.redop, spec_.root, spec_.imbalance});
  fill(ip ? recv_.data() : send_.data(), e.input.size(), e.input);
  Request r = post_collective(s, ip);
  group_.wait(r);
  // Test-only: PIPEBENCH_TEST_COMM_WRONG=1 makes member 0 expect one value that no backend gives, so
  // the tests see a wrong element counted, printed and turned into exit code 1 (tests/cli/comm.cmake).
  if (const char* t = std::getenv("PIPEBENCH_TEST_COMM_WRONG"); t && std::string(t) == "1" && me_ == 0 && !e.expected.empty())
    e.expected[0] = 1000;
  return e.expected.empty() ? 0 : count_wrong(recv_.data(), e.at, e.expected);
}

// Each member's pattern from its neighbour(s): the left one on the ring, both under pp-pairs.
std::int64_t Harness::check_exchange(const Shape& s) {
  const auto pat = [&s](int r) { return patterns(r, 0, s.count); };
  fill(recv_.data(), s.count, {});
  fill(send_.data(), s.count, pat(me_));
  const bool pairs = spec_.group == GroupChoice::pp_pairs;
  if (pairs) fill(recv2_.data(), s.count, {});
  std::vector<Request> rs;
  exchange(s.bytes, rs);
  group_.wait_all(rs);
  if (!pairs) return count_wrong(recv_.data(), 0, pat((me_ + n_ - 1) % n_));
  std::int64_t wrong = 0;
  if (me_ > 0) wrong += count_wrong(recv_.data(), 0, pat(me_ - 1));
  if (me_ + 1 < n_) wrong += count_wrong(recv2_.data(), 0, pat(me_ + 1));
  return wrong;
}

// OSU: latency (Run::ping_pong) = half a round trip of a ping-pong; bw and bibw (Run::window): windows
// of the row's `window` messages, then a 4-byte acknowledgement (one direction) or the window of the
// other direction. Returns the time of one message: the one-way time, or the window's time / window.
double Harness::time_p2p(std::size_t bytes) {
  const int peer = partner();
  const bool first = me_ < peer;
  const int rounds = spec_.warmup + spec_.iters;
  std::vector<Request> rs;
  // A ping-pong alternates strictly: with blocking MPI (spec.blocking) it is MPI_Send/MPI_Recv, as
  // osu_latency's; the windows of bw and bibw stay non-blocking, as osu_bw's.
  auto* mpi = dynamic_cast<MpiCommunicator*>(&group_);
  const bool ping_pong = row_.run == Run::ping_pong;
  const bool blocking_p2p = mpi && spec_.blocking && ping_pong;
  if (blocking_p2p) mpi->set_blocking_point_to_point(true);
  const double per_message = ping_pong ? 2.0 : static_cast<double>(row_.window);
  clock::time_point t0 = clock::now(), round = t0;
  for (int i = 0; i < rounds; ++i) {
    if (i == spec_.warmup) t0 = clock::now();
    if (spec_.per_iter && i > spec_.warmup) iter_s_[0].push_back(seconds_since(round) / per_message);
    round = clock::now();
    beat();
    if (ping_pong) {
      if (first) {
        Request s = group_.isend(send_.data(), bytes, peer, kDataTag);
        group_.wait(s);
        Request r = group_.irecv(recv_.data(), bytes, peer, kDataTag);
        group_.wait(r);
      } else {
        Request r = group_.irecv(recv_.data(), bytes, peer, kDataTag);
        group_.wait(r);
        Request s = group_.isend(send_.data(), bytes, peer, kDataTag);
        group_.wait(s);
      }
      continue;
    }
    // Two ways, each window closes the other's; one way (osu_bw), an acknowledgement closes it.
    const bool both = row_.directions == 2;
    const bool sends = both || first;
    const bool receives = both || !first;
    group_.group_start();
    for (int k = 0; k < row_.window; ++k) {
      if (receives) rs.push_back(group_.irecv(recv_.data(), bytes, peer, kDataTag));
      if (sends) rs.push_back(group_.isend(send_.data(), bytes, peer, kDataTag));
    }
    group_.group_end();
    group_.wait_all(rs);
    rs.clear();
    if (!both) {
      Request a = first ? group_.irecv(ack_.data(), 4, peer, kAckTag) : group_.isend(ack_.data(), 4, peer, kAckTag);
      group_.wait(a);
    }
  }
  const double elapsed = seconds_since(t0);
  if (spec_.per_iter && spec_.iters > 0) iter_s_[0].push_back(seconds_since(round) / per_message);
  if (blocking_p2p) mpi->set_blocking_point_to_point(false);
  return elapsed / (spec_.iters * per_message);
}

std::int64_t Harness::check_p2p(std::size_t bytes) {
  const int peer = partner();
  const std::uint64_t c = bytes / dtype_size(spec_.dtype);
  const std::vector<double> mine = patterns(me_, 0, c), theirs = patterns(peer, 0, c);
  fill(send_.data(), c, mine);
  fill(recv_.data(), c, {});
  std::vector<Request> rs;
  group_.group_start();
  rs.push_back(group_.irecv(recv_.data(), bytes, peer, kDataTag));
  rs.push_back(group_.isend(send_.data(), bytes, peer, kDataTag));
  group_.group_end();
  group_.wait_all(rs);
  return count_wrong(recv_.data(), 0, theirs);
}

Sample Harness::run(std::uint64_t requested_bytes) {
  Sample out;
  for (auto& t : iter_s_) t.clear();
  // Every group starts together, as in training; the waiting ranks (--one-group) meet here too.
  world_.barrier();
  if (!takes_part_) return out;
  const Shape s = shape_of(spec_.op, requested_bytes, dtype_size(spec_.dtype), n_, spec_.imbalance);
  if (pairs_members(row_)) {
    if (partner() < 0) return out;
    if (spec_.check) out.wrong[0] = check_p2p(s.bytes);
    out.time_s[0] = time_p2p(s.bytes);
    return out;
  }
  for (int v = 0; v < (row_.in_place ? 2 : 1); ++v) {
    if (spec_.check) out.wrong[v] = row_.run == Run::ring ? check_exchange(s) : check_collective(s, v == 1);
    out.time_s[v] = time_collective(s, v == 1);
  }
  return out;
}

std::vector<Sample> gather_samples(Communicator& world, const Sample& mine) {
  std::vector<Sample> all(static_cast<std::size_t>(world.size()));
  Request r = world.iallgather(&mine, all.data(), sizeof(Sample));
  world.wait(r);
  return all;
}

std::vector<std::vector<double>> gather_iterations(Communicator& world, const Harness& mine, int iters) {
  const std::size_t n = static_cast<std::size_t>(iters);
  std::vector<double> own(2 * n, -1);  // -1: not measured here
  for (int v = 0; v < 2; ++v)
    for (std::size_t i = 0; i < mine.iterations(v).size() && i < n; ++i) own[v * n + i] = mine.iterations(v)[i];
  std::vector<double> all(own.size() * static_cast<std::size_t>(world.size()));
  Request r = world.iallgather(own.data(), all.data(), own.size() * sizeof(double));
  world.wait(r);
  std::vector<std::vector<double>> out(2);
  for (int v = 0; v < 2; ++v) {
    for (std::size_t i = 0; i < n; ++i) {
      double slowest = -1;
      for (std::size_t k = 0; k < static_cast<std::size_t>(world.size()); ++k) slowest = std::max(slowest, all[k * own.size() + v * n + i]);
      if (slowest >= 0) out[v].push_back(slowest);
    }
  }
  return out;
}

}  // namespace pipebench::comm::bench
