// The interleaver of DualPipe's overlapped pair (kernels/interleave.hpp): two passes take turns at
// each exchange, every exchange is waited for after it was posted and while the other pass computed,
// each pass's own order is what it is alone, and an error in a pass comes back to the caller.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/interleave.hpp"

namespace pipebench::kernels {
namespace {

struct Event {
  int pass;
  std::string what;  // "compute k", "post k", "wait k"
};

// A pass of `exchanges` exchanges, each after a piece of compute, and a last piece after them.
std::function<void()> pass(Interleaver& il, std::vector<Event>& log, int who, int exchanges) {
  return [&il, &log, who, exchanges] {
    for (int k = 0; k < exchanges; ++k) {
      log.push_back({who, "compute " + std::to_string(k)});
      il.exchange([&] { return log.push_back({who, "post " + std::to_string(k)}), k; },
                  [&](int handle) { log.push_back({who, "wait " + std::to_string(handle)}); });
    }
    log.push_back({who, "compute " + std::to_string(exchanges)});
  };
}

std::vector<std::string> of(const std::vector<Event>& log, int who) {
  std::vector<std::string> out;
  for (const Event& e : log)
    if (e.pass == who) out.push_back(e.what);
  return out;
}

int at(const std::vector<Event>& log, int who, const std::string& what) {
  for (std::size_t i = 0; i < log.size(); ++i)
    if (log[i].pass == who && log[i].what == what) return static_cast<int>(i);
  return -1;
}

TEST(Interleaver, EachExchangeIsWaitedForAfterItsPostWhileTheOtherPassComputes) {
  for (const auto& [na, nb] : std::vector<std::pair<int, int>>{{3, 3}, {4, 2}, {1, 5}, {2, 0}}) {
    SCOPED_TRACE(std::to_string(na) + " and " + std::to_string(nb) + " exchanges");
    Interleaver il;
    std::vector<Event> alone, both;
    {
      Interleaver none;  // outside run(): each exchange posted and waited for at once
      pass(none, alone, 0, na)();
      pass(none, alone, 1, nb)();
    }
    il.run(pass(il, both, 0, na), pass(il, both, 1, nb));
    EXPECT_FALSE(il.running());
    // Each pass did exactly what it does alone, in the same order: the same arithmetic.
    EXPECT_EQ(of(both, 0), of(alone, 0));
    EXPECT_EQ(of(both, 1), of(alone, 1));
    for (int who : {0, 1}) {
      const int n = who == 0 ? na : nb, other_n = who == 0 ? nb : na;
      for (int k = 0; k < n; ++k) {
        const int post = at(both, who, "post " + std::to_string(k)), wait = at(both, who, "wait " + std::to_string(k));
        ASSERT_GE(post, 0);
        ASSERT_GT(wait, post) << "pass " << who << " waited for exchange " << k << " before posting it, or never";
        // While it was in flight the other pass computed, unless that one had ended before the post.
        const int other_end = at(both, 1 - who, "compute " + std::to_string(other_n));
        if (other_end > post || other_end < 0) {
          bool computed = false;
          for (int i = post + 1; i < wait; ++i) computed = computed || both[i].pass != who;
          EXPECT_TRUE(computed) << "pass " << who << "'s exchange " << k << " hid nothing";
        }
      }
    }
    // The first pass starts; it is the first to post, and the second computes before the first waits.
    EXPECT_EQ(both.front().pass, 0);
    EXPECT_GT(il.switches(), 0);
  }
}

TEST(Interleaver, APassThatThrowsEndsThePairAndTheErrorReachesTheCaller) {
  Interleaver il;
  std::vector<Event> log;
  const std::function<void()> bad = [&] {
    il.exchange([] { return 0; }, [](int) {});
    throw std::runtime_error("pass failed");
  };
  EXPECT_THROW(il.run(bad, pass(il, log, 1, 3)), std::runtime_error);
  EXPECT_FALSE(il.running());
  log.clear();  // usable again
  il.run(pass(il, log, 0, 2), pass(il, log, 1, 2));
  EXPECT_EQ(of(log, 0).size(), 7u);  // 2 x (compute, post, wait) + compute
  EXPECT_EQ(of(log, 1).size(), 7u);
}

}  // namespace
}  // namespace pipebench::kernels
