// The arithmetic of `pipebench comm` (comm/bench_model.hpp): exact values, no MPI.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "comm/bench_model.hpp"

using namespace pipebench::comm;
using namespace pipebench::comm::bench;

namespace {

std::string usage_error(void (*f)()) {
  try {
    f();
  } catch (const pipebench::UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(CommBenchModel, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::all_reduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::all_reduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::all_gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::reduce_scatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::alltoall, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::reduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::sendrecv, 8), 1.0);
}

TEST(CommBenchModel, SizesAsNcclTestsMakesThem) {
  EXPECT_EQ(size_list(8, 128, 2, 0), (std::vector<std::uint64_t>{8, 16, 32, 64, 128}));
  EXPECT_EQ(size_list(8, 100, 4, 0), (std::vector<std::uint64_t>{8, 32}));
  EXPECT_EQ(size_list(100, 400, 2, 100), (std::vector<std::uint64_t>{100, 200, 300, 400}));
  EXPECT_EQ(size_list(64, 64, 2, 0), (std::vector<std::uint64_t>{64}));
}

TEST(CommBenchModel, BadSweepsAreOneLine) {
  EXPECT_EQ(usage_error([] { check_sweep(1024, 8, 2, 0); }),
            "-b 1024 (minimum bytes) is above -e 8 (maximum bytes): give -b <= -e");
  EXPECT_EQ(usage_error([] { check_sweep(8, 1024, 1, 0); }),
            "-f 1 is not allowed: the size factor must be 2 or more (or give -i BYTES)");
  EXPECT_EQ(usage_error([] { check_sweep(8, 1024, 1, 8); }), "no error");  // -i instead of -f
  EXPECT_NE(usage_error([] { check_sweep(1, 1ull << 40, 1, 1); }).find("more than 4096 sizes"), std::string::npos);
}

TEST(CommBenchModel, ShapesRoundToWholeBlocks) {
  // all_gather on 4 ranks of floats: 100 B -> 96 B = 24 elements, 6 per member.
  Shape s = shape_of(BenchOp::all_gather, 100, 4, 4);
  EXPECT_EQ(s.bytes, 96u);
  EXPECT_EQ(s.count, 24u);
  EXPECT_EQ(s.block, 6u);
  EXPECT_EQ(s.send_elems, 6u);
  EXPECT_EQ(s.recv_elems, 24u);
  s = shape_of(BenchOp::reduce_scatter, 8, 4, 4);  // below one block: one element per member
  EXPECT_EQ(s.bytes, 16u);
  EXPECT_EQ(s.block, 1u);
  s = shape_of(BenchOp::all_reduce, 10, 8, 4);
  EXPECT_EQ(s.bytes, 8u);
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.block, 1u);
}

TEST(CommBenchModel, FitRecoversAlphaAndBeta) {
  // t = 2 us + bytes / 10 GB/s, exactly.
  std::vector<std::uint64_t> b{8, 1024, 65536, 1 << 20, 1 << 24};
  std::vector<double> t;
  for (auto x : b) t.push_back(2e-6 + static_cast<double>(x) / 1e10);
  const Fit f = fit_alpha_beta(b, t);
  EXPECT_NEAR(f.alpha_s, 2e-6, 1e-12);
  EXPECT_NEAR(f.beta_Bps / 1e10, 1.0, 1e-9);
  EXPECT_LT(f.max_rel_error, 1e-9);
  EXPECT_EQ(f.points, 5);
}

TEST(CommBenchModel, FitReportsItsWorstError) {
  // Two sizes 10 % off a line the other points agree on: the worst relative error says so.
  std::vector<std::uint64_t> b{1000, 2000, 4000, 8000};
  std::vector<double> t{1.1e-6 + 0.1e-6, 1.2e-6, 1.4e-6, 1.8e-6};
  const Fit f = fit_alpha_beta(b, t);
  EXPECT_GT(f.max_rel_error, 0.03);
  EXPECT_LT(f.max_rel_error, 0.15);
  EXPECT_GT(f.alpha_s, 0);
}

TEST(CommBenchModel, FitOfOneSizeIsABandwidth) {
  const Fit f = fit_alpha_beta({1000}, {1e-6});
  EXPECT_EQ(f.alpha_s, 0);
  EXPECT_NEAR(f.beta_Bps, 1e9, 1);
  EXPECT_EQ(f.points, 1);
  EXPECT_EQ(fit_alpha_beta({}, {}).points, 0);
}

TEST(CommBenchModel, GroupTimesTakeTheSlowestMember) {
  // Ranks 0,1 in group 0 and 2,3 in group 1; rank 3 did not take part.
  const std::vector<double> t{1.0, 3.0, 2.0, -1};
  const GroupTimes g = group_times(t, {{0, 1}, {2, 3}});
  EXPECT_EQ(g.groups, 2);
  EXPECT_EQ(g.slowest, 3.0);
  EXPECT_EQ(g.fastest, 2.0);
  const GroupTimes one = group_times({1.0, 3.0, -1, -1}, {{0, 1}, {2, 3}});
  EXPECT_EQ(one.groups, 1);
  EXPECT_EQ(one.fastest, 3.0);
}

TEST(CommBenchModel, CheckValuesSurviveEveryType) {
  unsigned char buf[64];
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32})
    for (double v : {0.0, 1.0, 3.0, 96.0, 255.0, -1.0}) {
      store_value(t, buf, 3, v);
      EXPECT_EQ(load_value(t, buf, 3), v) << dtype_name(t) << " " << v;
    }
  EXPECT_EQ(reduce_pattern(ReduceOp::sum, 4, 0), 0 + 1 + 2 + 3);
  EXPECT_EQ(reduce_pattern(ReduceOp::max, 3, 2), 3);  // (2,3,0)
  EXPECT_EQ(reduce_pattern(ReduceOp::min, 3, 2), 0);
}

TEST(CommBenchModel, NamesParseBack) {
  for (BenchOp op : kBenchOps) EXPECT_EQ(parse_bench_op(bench_op_name(op)), op);
  EXPECT_EQ(usage_error([] { parse_bench_op("allreduce"); }),
            "operation 'allreduce' is not allowed: expected one of all_reduce, all_gather, reduce_scatter, broadcast, "
            "reduce, alltoall, sendrecv, latency, bw, bibw");
  EXPECT_EQ(parse_group_choice("pp-pairs"), GroupChoice::pp_pairs);
  EXPECT_EQ(usage_error([] { parse_group_choice("xp"); }),
            "--group 'xp' is not allowed: expected one of world, tp, pp, dp, pp-pairs, cp, dp-cp, tp-cp, ep, "
            "expert-tp, expert-dp, tp-ep");
}

// Each choice but the world runs over one kind of the grid, named as the grid names it.
TEST(CommBenchModel, GroupChoicesAreTheGridsKinds) {
  using pipebench::topology::GroupKind;
  for (GroupChoice g : kGroupChoices) {
    EXPECT_EQ(parse_group_choice(group_choice_name(g)), g);
    if (g != GroupChoice::world && g != GroupChoice::pp_pairs) {
      EXPECT_STREQ(group_choice_name(g), pipebench::topology::group_kind_name(group_kind(g)));
    }
  }
  EXPECT_EQ(group_kind(GroupChoice::cp), GroupKind::cp);
  EXPECT_EQ(group_kind(GroupChoice::ep), GroupKind::ep);
  EXPECT_EQ(group_kind(GroupChoice::dp_cp), GroupKind::dp_cp);
  EXPECT_EQ(group_kind(GroupChoice::expert_dp), GroupKind::expert_dp);
  EXPECT_EQ(group_kind(GroupChoice::pp_pairs), GroupKind::pp);
  EXPECT_THROW(group_kind(GroupChoice::world), pipebench::Error);
}
