// The wait policy, tested against a fake backend whose requests complete at a chosen time: polling,
// timeouts and their messages, and that a waiting thread sleeps instead of spinning.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

using namespace pipebench::comm;
using clock_type = std::chrono::steady_clock;

namespace {

// Completes once `ready` has passed; counts its polls.
class TimedOp : public detail::PendingOp {
 public:
  TimedOp(clock_type::time_point ready, int* polls) : ready_(ready), polls_(polls) {}
  bool poll() override {
    ++*polls_;
    return clock_type::now() >= ready_;
  }

 private:
  clock_type::time_point ready_;
  int* polls_;
};

class FakeComm final : public Communicator {
 public:
  explicit FakeComm(const WaitPolicy& p) : Communicator("pp", p) {}
  const char* backend() const override { return "fake"; }
  int rank() const override { return 1; }
  int size() const override { return 4; }
  int world_rank() const override { return 5; }
  int world_rank_of(int peer) const override { return 4 + peer; }

  // A request that completes `after` from now.
  Request later(RequestInfo info, std::chrono::duration<double> after) {
    return Request(info, std::make_unique<TimedOp>(
                             clock_type::now() + std::chrono::duration_cast<clock_type::duration>(after), &polls));
  }
  Request isend(const void*, std::size_t bytes, int peer, int tag) override {
    return later({Op::send, peer, tag, bytes}, std::chrono::duration<double>(0));
  }
  Request irecv(void*, std::size_t bytes, int peer, int tag) override {
    return later({Op::recv, peer, tag, bytes}, std::chrono::duration<double>(0));
  }
  Request iallreduce_sum(void*, std::size_t count, DType t) override {
    return later({Op::allreduce, -1, -1, count * dtype_size(t)}, std::chrono::duration<double>(0));
  }
  Request iallgather(const void*, void*, std::size_t b) override {
    return later({Op::allgather, -1, -1, b * 4}, std::chrono::duration<double>(0));
  }
  Request ireduce_scatter_sum(const void*, void*, std::size_t c, DType t) override {
    return later({Op::reduce_scatter, -1, -1, c * dtype_size(t) * 4}, std::chrono::duration<double>(0));
  }
  Request ibarrier() override { return later({Op::barrier, -1, -1, 0}, std::chrono::duration<double>(0)); }
  Buffer allocate(std::size_t) override { return {}; }
  void copy_to_buffer(void*, const void*, std::size_t) override {}
  void copy_from_buffer(void*, const void*, std::size_t) override {}

  int polls = 0;
};

WaitPolicy policy(int poll_us, double timeout_s) {
  WaitPolicy p;
  p.poll_interval = std::chrono::microseconds(poll_us);
  p.timeout = std::chrono::duration<double>(timeout_s);
  return p;
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

TEST(Request, DefaultIsCompleteAndPollDropsFinishedOp) {
  Request empty;
  EXPECT_TRUE(empty.done());
  FakeComm c(policy(50, 1));
  Request r = c.later({Op::send, 2, 3, 8}, std::chrono::duration<double>(0));
  EXPECT_FALSE(r.done());
  EXPECT_TRUE(c.test(r));
  EXPECT_TRUE(r.done());
  EXPECT_TRUE(c.test(r));
  EXPECT_EQ(c.polls, 1);  // a finished request is not polled again
}

TEST(Wait, ReturnsWhenTheOperationCompletes) {
  FakeComm c(policy(100, 5));
  Request r = c.later({Op::recv, 0, 7, 64}, std::chrono::milliseconds(20));
  c.wait(r);
  EXPECT_TRUE(r.done());
  // About 20 ms / (100 us + scheduling) polls: far fewer than a spinning loop would make.
  EXPECT_GE(c.polls, 2);
  EXPECT_LT(c.polls, 400);
}

TEST(Wait, TimeoutNamesRankOperationPeerAndTag) {
  FakeComm c(policy(50, 0.05));
  Request r = c.later({Op::recv, 2, 99, 1024}, std::chrono::hours(1));
  try {
    c.wait(r);
    FAIL() << "no timeout";
  } catch (const TimeoutError& e) {
    EXPECT_EQ(e.rank(), 5);
    EXPECT_EQ(e.comm_name(), "pp");
    EXPECT_EQ(e.request().peer, 2);
    EXPECT_EQ(e.request().tag, 99);
    EXPECT_GE(e.waited_s(), 0.05);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("rank 5: timed out after ", 0), 0u) << what;
    EXPECT_NE(what.find(" s waiting for recv from rank 2 (global 6) of 'pp' (4 ranks, fake), tag 99, 1024 bytes"),
              std::string::npos)
        << what;
  }
  EXPECT_FALSE(r.done());
}

TEST(Wait, WaitAllCompletesAllAndNamesFirstPendingOnTimeout) {
  FakeComm c(policy(50, 0.05));
  std::vector<Request> rs;
  rs.push_back(c.later({Op::send, 0, 1, 8}, std::chrono::milliseconds(5)));
  rs.push_back(c.later({Op::recv, 3, 2, 8}, std::chrono::milliseconds(10)));
  c.wait_all(rs);
  for (auto& r : rs) EXPECT_TRUE(r.done());

  rs.clear();
  rs.push_back(c.later({Op::send, 0, 1, 8}, std::chrono::milliseconds(0)));
  rs.push_back(c.later({Op::allreduce, -1, -1, 4096}, std::chrono::hours(1)));
  rs.push_back(c.later({Op::recv, 3, 2, 16}, std::chrono::hours(1)));
  try {
    c.wait_all(rs);
    FAIL() << "no timeout";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("waiting for 2 requests, the first still pending: allreduce of 'pp' (4 "
                                         "ranks, fake), 4096 bytes"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(rs[0].done());
}

// A poll interval longer than the timeout must not stretch the wait (issue 8, item 2: `--timeout 3s
// --poll-us 100000000` never ended): every sleep is cut to the time left. Before the fix each of these
// waits slept an hour, and ctest's TIMEOUT failed the test.
TEST(Wait, SleepNeverOutlastsTheTimeLeft) {
  WaitPolicy p = policy(0, 0.05);
  p.poll_interval = p.max_poll_interval = std::chrono::hours(1);
  FakeComm c(p);
  Request r = c.later({Op::recv, 2, 99, 8}, std::chrono::hours(2));
  EXPECT_THROW(c.wait(r), TimeoutError);
  std::vector<Request> rs;
  rs.push_back(c.later({Op::recv, 2, 98, 8}, std::chrono::hours(2)));
  EXPECT_THROW(c.wait_all(rs), TimeoutError);
  // An explicit limit (the waits on rank 0 use twice the timeout) is cut the same way.
  EXPECT_THROW(c.wait(r, std::chrono::duration<double>(0.05)), TimeoutError);
}

// A 0.3 s wait under the default policy costs a small fraction of a core, and the interval grows: a
// fixed 50 us interval would poll some 2,000-5,000 times in 0.3 s, the growing one about 500 times.
TEST(Wait, SleepsInsteadOfSpinning) {
  FakeComm c(WaitPolicy{});
  Request r = c.later({Op::recv, 0, 1, 8}, std::chrono::milliseconds(300));
  const double cpu0 = cpu_seconds();
  c.wait(r);
  const double cpu = cpu_seconds() - cpu0;
  EXPECT_LT(cpu, 0.2 * 0.3) << c.polls << " polls";
  EXPECT_LT(c.polls, 1000);
}

TEST(WaitPolicy, IntervalGrowsWithTheWaitUpToTheCap) {
  const WaitPolicy p;  // 50 us, growing to 1 ms
  using us = std::chrono::microseconds;
  using s = std::chrono::duration<double>;
  EXPECT_EQ(p.sleep_after(s(0)), us(50));
  EXPECT_EQ(p.sleep_after(s(0.0032)), us(50));  // 3.2 ms / 64
  EXPECT_EQ(p.sleep_after(s(0.0128)), us(200));
  EXPECT_EQ(p.sleep_after(s(0.064)), us(1000));
  EXPECT_EQ(p.sleep_after(s(30)), us(1000));
  WaitPolicy fixed;
  fixed.max_poll_interval = fixed.poll_interval;
  EXPECT_EQ(fixed.sleep_after(s(30)), us(50));
}

TEST(WaitPolicy, RejectsNegativeIntervalAndNonPositiveTimeout) {
  EXPECT_THROW(FakeComm(policy(-1, 1)), pipebench::UsageError);
  EXPECT_THROW(FakeComm(policy(50, 0)), pipebench::UsageError);
  EXPECT_THROW(FakeComm(policy(2000, 1)), pipebench::UsageError);  // above the 1 ms cap
  FakeComm c(policy(0, 1));
  EXPECT_EQ(c.wait_policy().poll_interval.count(), 0);
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_STREQ(dtype_name(DType::f64), "double");
  EXPECT_STREQ(op_name(Op::reduce_scatter), "reduce_scatter");
}
