// The MPI backend on real ranks: exact payloads, reductions and uneven all-to-all-v blocks, on the
// world and on a grid's pp communicator; a receive that is never matched times out naming its peer and tag; a long wait sleeps.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "comm/factory.hpp"
#include "comm/float16.hpp"
#include "topology/mpi_grid.hpp"

using namespace pipebench::comm;
using pipebench::topology::Grid;
using pipebench::topology::GroupKind;
using pipebench::topology::MpiGrid;

namespace {

std::unique_ptr<Communicator> world(double timeout_s = 20) {
  CommOptions o;
  o.wait.timeout = std::chrono::duration<double>(timeout_s);
  return make_communicator("mpi", MPI_COMM_WORLD, "world", o);
}

std::vector<unsigned char> pattern(int from, std::size_t n) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(from * 31 + static_cast<int>(i) * 7);
  return v;
}

// Both directions at once: each rank sends to its right and left neighbours and receives from both.
void ring(Communicator& c, std::size_t bytes) {
  const int n = c.size(), r = c.rank(), right = (r + 1) % n, left = (r + n - 1) % n;
  const auto mine = pattern(c.world_rank(), bytes);
  std::vector<unsigned char> from_left(bytes), from_right(bytes);
  std::vector<Request> rs;
  rs.push_back(c.irecv(from_left.data(), bytes, left, 1));
  rs.push_back(c.irecv(from_right.data(), bytes, right, 2));
  rs.push_back(c.isend(mine.data(), bytes, right, 1));
  rs.push_back(c.isend(mine.data(), bytes, left, 2));
  c.wait_all(rs);
  EXPECT_EQ(from_left, pattern(c.world_rank_of(left), bytes));
  EXPECT_EQ(from_right, pattern(c.world_rank_of(right), bytes));
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

TEST(MpiComm, RingPayloadsSmallAndLarge) {
  auto c = world();
  EXPECT_STREQ(c->backend(), "mpi");
  ring(*c, 1);
  ring(*c, 1000);
  ring(*c, 1 << 20);  // past MPICH's eager limit: the rendezvous path progresses under polling too
}

TEST(MpiComm, RingOnPipelineCommunicatorOfAGrid) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n % 2) GTEST_SKIP();
  const MpiGrid mg(Grid(2, n / 2, 1));
  auto pp = make_communicator("mpi", mg.comm(GroupKind::pp).get(), "pp");
  EXPECT_EQ(pp->size(), n / 2);
  EXPECT_EQ(pp->rank(), mg.coords().pp);
  EXPECT_EQ(pp->world_rank_of(pp->size() - 1), mg.grid().group(GroupKind::pp, mg.rank()).back());
  ring(*pp, 4096);
}

TEST(MpiComm, AllReduceFloatAndDoubleExact) {
  auto c = world();
  const int n = c->size(), r = c->rank();
  std::vector<float> f(1000);
  std::vector<double> d(1000);
  for (int i = 0; i < 1000; ++i) {
    f[static_cast<std::size_t>(i)] = static_cast<float>(r + i);
    d[static_cast<std::size_t>(i)] = 0.5 * (r + 1) + i;
  }
  c->allreduce_sum(f.data(), f.size(), DType::f32);
  Request rq = c->iallreduce_sum(d.data(), d.size(), DType::f64);
  EXPECT_EQ(rq.info().bytes, 8000u);
  c->wait(rq);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(f[static_cast<std::size_t>(i)], static_cast<float>(n * (n - 1) / 2 + n * i));
    EXPECT_EQ(d[static_cast<std::size_t>(i)], 0.25 * n * (n + 1) + n * i);
  }
}

// 16-bit reductions (user operations, comm/mpi_communicator.cpp): sums of small integers are exact in
// bfloat16 and half whatever the order; 1 + 2^-9 from two members rounds to 1 in bfloat16 (its unit at 1 is
// 2^-7) but not in float, so the sum is rounded to 16 bits; max and min of the same values.
TEST(MpiComm, SixteenBitReductionsRoundEachSum) {
  auto c = world();
  const int n = c->size(), r = c->rank();
  for (DType t : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(t));
    auto enc = [t](float x) { return t == DType::bf16 ? to_bf16(x) : to_half(x); };
    auto dec = [t](std::uint16_t x) { return t == DType::bf16 ? from_bf16(x) : from_half(x); };
    std::vector<std::uint16_t> v(64), mx(64), out(64 / static_cast<std::size_t>(n) + 1);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = mx[i] = enc(static_cast<float>(r + static_cast<int>(i % 7)));
    c->allreduce_sum(v.data(), v.size(), t);
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(dec(v[i]), static_cast<float>(n * (n - 1) / 2 + n * static_cast<int>(i % 7)));
    // Member 0 gives 1, member 1 gives 2^-9, the others 0 (exact in any order).
    const float mine = r == 0 ? 1.0f : r == 1 ? std::ldexp(1.0f, -9) : 0.0f;
    std::vector<std::uint16_t> in(64, enc(mine));
    const std::size_t per = 64 / static_cast<std::size_t>(n);
    Request rs = c->ireduce_scatter_sum(in.data(), out.data(), per, t);
    c->wait(rs);
    const float exact = n == 1 ? 1.0f : 1.0f + std::ldexp(1.0f, -9);
    EXPECT_EQ(dec(out[0]), t == DType::bf16 ? 1.0f : exact);  // half's unit at 1 is 2^-10: 1 + 2^-9 is a half
    Request rm = c->iallreduce(mx.data(), mx.data(), mx.size(), t, ReduceOp::max);
    c->wait(rm);
    EXPECT_EQ(dec(mx[3]), static_cast<float>(n - 1 + 3));
  }
}

TEST(MpiComm, AllGatherAndReduceScatterExact) {
  auto c = world();
  const int n = c->size(), r = c->rank();
  const auto mine = pattern(r, 3);
  std::vector<unsigned char> all(3 * static_cast<std::size_t>(n));
  Request g = c->iallgather(mine.data(), all.data(), 3);
  EXPECT_EQ(g.info().bytes, 3u * static_cast<unsigned>(n));
  c->wait(g);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(std::vector<unsigned char>(all.begin() + 3 * i, all.begin() + 3 * (i + 1)), pattern(i, 3));

  // send[j] = (r+1)*(j+1): member i gets sum_r (r+1)*(j+1) = n(n+1)/2 * (j+1) for j in its block.
  const std::size_t per = 5;
  std::vector<double> send(per * static_cast<std::size_t>(n)), recv(per);
  for (std::size_t j = 0; j < send.size(); ++j) send[j] = (r + 1) * static_cast<double>(j + 1);
  Request rs = c->ireduce_scatter_sum(send.data(), recv.data(), per, DType::f64);
  c->wait(rs);
  for (std::size_t j = 0; j < per; ++j)
    EXPECT_EQ(recv[j], n * (n + 1) / 2.0 * static_cast<double>(static_cast<std::size_t>(r) * per + j + 1));
  c->barrier();
}

// Uneven blocks, some empty: rank r sends member j (r + j) % 3 bytes of its pattern, from the offset
// where block j starts, and so receives (i + r) % 3 bytes from each member i.
TEST(MpiComm, AlltoallvUnevenBlocksExact) {
  auto c = world();
  const int n = c->size(), r = c->rank();
  std::vector<std::size_t> sb, rb;
  for (int j = 0; j < n; ++j) sb.push_back(static_cast<std::size_t>((r + j) % 3)), rb.push_back(static_cast<std::size_t>((j + r) % 3));
  std::size_t total_out = 0, total_in = 0;
  for (std::size_t b : sb) total_out += b;
  for (std::size_t b : rb) total_in += b;
  const auto mine = pattern(r, total_out);
  std::vector<unsigned char> got(total_in + 1, 0xee);  // one byte past the end must stay untouched
  Request q = c->ialltoallv(mine.data(), sb, got.data(), rb);
  EXPECT_EQ(q.info().bytes, total_out);
  c->wait(q);
  std::size_t at = 0;
  for (int i = 0; i < n; ++i) {
    std::size_t from = 0;  // where member i's block for this rank starts in its send buffer
    for (int j = 0; j < r; ++j) from += static_cast<std::size_t>((i + j) % 3);
    const auto theirs = pattern(i, from + rb[static_cast<std::size_t>(i)]);
    for (std::size_t k = 0; k < rb[static_cast<std::size_t>(i)]; ++k) EXPECT_EQ(got[at + k], theirs[from + k]) << "from " << i;
    at += rb[static_cast<std::size_t>(i)];
  }
  EXPECT_EQ(got.back(), 0xee);
  EXPECT_THROW(c->ialltoallv(mine.data(), std::vector<std::size_t>(static_cast<std::size_t>(n) + 1, 0), got.data(), rb),
               pipebench::Error);
  c->barrier();
}

TEST(MpiComm, ShortMessageIsReportedNotSilentlyAccepted) {
  auto c = world();
  if (c->rank() == 0) {
    std::vector<char> small(8, 'x');
    c->send(small.data(), small.size(), 1, 5);
  } else if (c->rank() == 1) {
    std::vector<char> big(16);
    try {
      c->recv(big.data(), big.size(), 0, 5);
      ADD_FAILURE() << "no error";
    } catch (const pipebench::Error& e) {
      EXPECT_NE(std::string(e.what()).find("recv from rank 0 (global 0) of 'world'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("16 bytes: received 8 bytes"), std::string::npos) << e.what();
    }
  }
  c->barrier();
}

// Rank 0 waits for a message rank 1 never sends; the others carry on.
TEST(MpiComm, UnmatchedReceiveTimesOutNamingPeerAndTag) {
  auto c = world(0.3);
  if (c->rank() == 0) {
    std::vector<char> buf(64);
    Request r = c->irecv(buf.data(), buf.size(), 1, 99);
    try {
      c->wait(r);
      ADD_FAILURE() << "no timeout";
    } catch (const TimeoutError& e) {
      EXPECT_EQ(e.rank(), 0);
      EXPECT_EQ(e.request().peer, 1);
      EXPECT_EQ(e.request().tag, 99);
      EXPECT_GE(e.waited_s(), 0.3);
      EXPECT_LT(e.waited_s(), 5.0);
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("rank 0: timed out after", 0), 0u) << what;
      EXPECT_NE(what.find("waiting for recv from rank 1 (global 1) of 'world' (" + std::to_string(c->size()) +
                          " ranks, mpi), tag 99, 64 bytes"),
                std::string::npos)
          << what;
    }
  }  // the abandoned receive is cancelled here, so nothing can land in `buf` later
  c->set_wait_policy(WaitPolicy{});
  c->barrier();
}

// Every rank but 1 waits 0.5 s for a message from rank 1 (4 ranks: 3 waiters and a sleeper on 2
// cores). Each waiter's whole process must use under 20 % of a core meanwhile.
TEST(MpiComm, LongWaitDoesNotSpin) {
  auto c = world();
  const int n = c->size(), r = c->rank();
  int token = 0;
  c->barrier();
  if (r == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::vector<Request> rs;
    for (int i = 0; i < n; ++i)
      if (i != 1) rs.push_back(c->isend(&r, sizeof r, i, 3));
    c->wait_all(rs);
  } else {
    const double cpu0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    c->recv(&token, sizeof token, 1, 3);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = process_cpu_seconds() - cpu0;
    EXPECT_EQ(token, 1);
    EXPECT_GT(wall, 0.4);
    EXPECT_LT(cpu, 0.2 * wall) << "rank " << r << ": " << cpu << " s CPU in " << wall << " s";
  }
}

TEST(MpiComm, FactoryNamesUnknownAndUnbuiltBackends) {
  try {
    make_communicator("gloo", MPI_COMM_WORLD, "world");
    ADD_FAILURE() << "no error";
  } catch (const pipebench::UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("unknown communication backend 'gloo': allowed mpi", 0), 0u) << e.what();
  }
#ifndef PIPEBENCH_HAVE_NCCL
  EXPECT_THROW(make_communicator("nccl", MPI_COMM_WORLD, "world"), pipebench::UsageError);
#endif
  auto c = world();
  EXPECT_THROW(c->isend(nullptr, 0, c->size(), 0), pipebench::Error);
  EXPECT_THROW(c->irecv(nullptr, 0, 0, -1), pipebench::Error);
}
