#include <gtest/gtest.h>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"

using namespace pipebench::analysis;

TEST(Generators, OneFOneBMatchesMegatronWarmup) {
  // p=4, m=6: rank r runs p-r forwards before its first backward.
  const Schedule s = make_schedule({"1f1b", 4, 6});
  EXPECT_EQ(to_grid(s),
            "rank 0: 0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0B3 0B4 0B5\n"
            "rank 1: 1F0 1F1 1F2 1B0 1F3 1B1 1F4 1B2 1F5 1B3 1B4 1B5\n"
            "rank 2: 2F0 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2B5\n"
            "rank 3: 3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5\n");
}

TEST(Generators, RejectsBadParameters) {
  EXPECT_THROW(make_schedule({"nope", 2, 2}), pipebench::UsageError);
  EXPECT_THROW(make_schedule({"gpipe", 0, 2}), pipebench::UsageError);
  EXPECT_THROW(make_schedule({"gpipe", 2, 0}), pipebench::UsageError);
  EXPECT_THROW(make_schedule({"gpipe", 2, 2, 2}), pipebench::UsageError);  // v is fixed at 1
  try {
    make_schedule({"nope", 2, 2});
  } catch (const pipebench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("allowed: gpipe, 1f1b"), std::string::npos) << e.what();
  }
}
