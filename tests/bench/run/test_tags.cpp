// The executor's MPI tags must fit the library's MPI_TAG_UB (issue 8): a configuration whose largest
// tag, 2 * m * stages - 1, would not fit is refused before anything runs (exit 2), naming it.
#include <gtest/gtest.h>

#include <string>

#include "analysis/error.hpp"
#include "bench/run/configuration.hpp"

using namespace pipebench;
using namespace pipebench::bench;

TEST(Tags, ConfigurationWhoseTagsPassTheBoundIsRefused) {
  RunSettings rs;
  rs.schedules = {"1f1b"};
  rs.microbatches = {4096, 4097};  // p = 4: largest tags 32767 and 32775
  const auto plans = plan_sweep(rs, 4);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_NO_THROW(check_tags({plans[0]}, 32767));
  try {
    check_tags(plans, 32767);
    FAIL() << "accepted tag 32775";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("configuration 1f1b 1x4x1 m=4097: its pipeline messages need MPI tags up to 32775"),
              std::string::npos) << what;
    EXPECT_NE(what.find("MPI_TAG_UB 32767"), std::string::npos) << what;
  }
}
