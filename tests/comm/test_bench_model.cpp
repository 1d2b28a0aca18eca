// The arithmetic of `pipebench comm` (comm/bench_model.hpp) and its operations' table
// (comm/bench_ops.hpp): exact values, no MPI.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "comm/bench_model.hpp"
#include "comm/bench_ops.hpp"

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

// What docs/comm-bench.md and nccl-tests' doc/PERFORMANCE.md say of each operation, written out here
// apart from the table (comm/bench_ops.cpp) that it checks.
struct Expected {
  const char* name;
  double factor[3];  // busbw / algbw for n = 2, 4, 8
  // shape_of for 100 B of floats on 4 members
  std::uint64_t bytes, count, block, send, recv;
  bool in_place, root, reduces;
  Run run;
  Table table;
  int directions, window;
};
// all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall (n-1)/n; the others 1.
const Expected kExpected[] = {
    {"all_reduce", {1.0, 1.5, 1.75}, 100, 25, 25, 25, 25, true, false, true, Run::collective, Table::nccl_tests, 1, 0},
    {"all_gather", {0.5, 0.75, 0.875}, 96, 24, 6, 6, 24, true, false, false, Run::collective, Table::nccl_tests, 1, 0},
    {"reduce_scatter", {0.5, 0.75, 0.875}, 96, 24, 6, 24, 6, true, false, true, Run::collective, Table::nccl_tests, 1, 0},
    {"broadcast", {1, 1, 1}, 100, 25, 25, 25, 25, true, true, false, Run::collective, Table::nccl_tests, 1, 0},
    {"reduce", {1, 1, 1}, 100, 25, 25, 25, 25, true, true, true, Run::collective, Table::nccl_tests, 1, 0},
    {"alltoall", {0.5, 0.75, 0.875}, 96, 24, 6, 24, 24, false, false, false, Run::collective, Table::nccl_tests, 1, 0},
    {"sendrecv", {1, 1, 1}, 100, 25, 25, 25, 25, false, false, false, Run::ring, Table::nccl_tests, 1, 0},
    {"latency", {1, 1, 1}, 100, 25, 25, 25, 25, false, false, false, Run::ping_pong, Table::osu_latency, 1, 0},
    {"bw", {1, 1, 1}, 100, 25, 25, 25, 25, false, false, false, Run::window, Table::osu_bandwidth, 1, 64},
    {"bibw", {1, 1, 1}, 100, 25, 25, 25, 25, false, false, false, Run::window, Table::osu_bandwidth, 2, 64},
    // Even (imbalance 1) it is alltoall: member 0's receive buffer is n blocks.
    {"alltoallv", {0.5, 0.75, 0.875}, 96, 24, 6, 24, 24, false, false, false, Run::collective, Table::nccl_tests, 1, 0},
};

const Expected* expected_of(const std::string& name) {
  for (const Expected& e : kExpected)
    if (name == e.name) return &e;
  return nullptr;
}

// Member `rank` of `size` on `backend`: records the collective posted on it, and completes nothing.
class Recorder final : public Communicator {
 public:
  Recorder(int rank, int size, const char* backend) : Communicator("g", WaitPolicy{}), rank_(rank), size_(size), backend_(backend) {}
  const char* backend() const override { return backend_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int world_rank() const override { return rank_; }
  int world_rank_of(int peer) const override { return peer; }
  Request isend(const void*, std::size_t, int, int) override { return {}; }
  Request irecv(void*, std::size_t, int, int) override { return {}; }
  Request iallreduce_sum(void*, std::size_t, DType) override { return {}; }
  Request ireduce_scatter_sum(const void*, void*, std::size_t, DType) override { return {}; }
  Request ibarrier() override { return {}; }
  Buffer allocate(std::size_t) override { return {}; }
  void copy_to_buffer(void*, const void*, std::size_t) override {}
  void copy_from_buffer(void*, const void*, std::size_t) override {}

  Request iallreduce(const void* s, void* r, std::size_t k, DType, ReduceOp) override { return note("all_reduce", s, r, k); }
  Request iallgather(const void* s, void* r, std::size_t bytes) override { return note("all_gather", s, r, bytes); }
  Request ireduce_scatter(const void* s, void* r, std::size_t k, DType, ReduceOp) override {
    return note("reduce_scatter", s, r, k);
  }
  Request ibroadcast(const void* s, void* r, std::size_t k, DType, int at) override { return note("broadcast", s, r, k, at); }
  Request ireduce(const void* s, void* r, std::size_t k, DType, ReduceOp, int at) override {
    return note("reduce", s, r, k, at);
  }
  Request ialltoall(const void* s, void* r, std::size_t k, DType) override { return note("alltoall", s, r, k); }
  // n: the elements this member receives from each member (of 4-byte floats).
  Request ialltoallv(const void* s, const std::vector<std::size_t>& sb, void* r, const std::vector<std::size_t>& rb) override {
    send_bytes = sb, recv_bytes = rb;
    return note("alltoallv", s, r, rb.at(0) / 4);
  }
  std::vector<std::size_t> send_bytes, recv_bytes;

  std::string called;  // the last call
  const void* send = nullptr;
  const void* recv = nullptr;
  std::size_t n = 0;
  int root = -1;

 private:
  Request note(const char* what, const void* s, const void* r, std::size_t count, int at = -1) {
    called = what, send = s, recv = r, n = count, root = at;
    return {};
  }
  int rank_, size_;
  const char* backend_;
};

std::vector<double> pattern_of(int rank, std::uint64_t from, std::uint64_t n) {
  std::vector<double> v;
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(pattern(rank, from + i));
  return v;
}

}  // namespace

// Every enumerator has its row, in order, and nothing answers for a value without one: no default.
TEST(CommBenchOps, TableCoversEveryOperation) {
  std::size_t i = 0;
  for (const OpRow& o : op_rows()) {
    EXPECT_EQ(static_cast<std::size_t>(o.op), i++) << o.name;
    EXPECT_EQ(&op_row(o.op), &o) << o.name;
    EXPECT_EQ(find_op(o.name), &o) << o.name;
    EXPECT_EQ(parse_bench_op(o.name), o.op);
    EXPECT_STREQ(bench_op_name(o.op), o.name);
  }
  EXPECT_EQ(i, kBenchOpCount);
  EXPECT_EQ(i, std::size(kExpected));
  EXPECT_EQ(find_op("allreduce"), nullptr);
  for (const BenchOp none : {BenchOp::count, static_cast<BenchOp>(99)}) {
    EXPECT_THROW(op_row(none), pipebench::Error);
    EXPECT_THROW(bus_factor(none, 4), pipebench::Error);
    EXPECT_THROW(shape_of(none, 100, 4, 4), pipebench::Error);
  }
}

TEST(CommBenchOps, EveryRowIsWhatTheDocsSay) {
  for (const OpRow& o : op_rows()) {
    const Expected* e = expected_of(o.name);
    ASSERT_NE(e, nullptr) << o.name << ": a row without its expected facts here";
    const int ns[3] = {2, 4, 8};
    for (int k = 0; k < 3; ++k) EXPECT_DOUBLE_EQ(bus_factor(o.op, ns[k]), e->factor[k]) << o.name << " n=" << ns[k];
    EXPECT_EQ(bus_factor(o.op, 0), 0.0) << o.name;
    const Shape s = shape_of(o.op, 100, 4, 4);
    EXPECT_EQ(s.bytes, e->bytes) << o.name;
    EXPECT_EQ(s.count, e->count) << o.name;
    EXPECT_EQ(s.block, e->block) << o.name;
    EXPECT_EQ(s.send_elems, e->send) << o.name;
    EXPECT_EQ(s.recv_elems, e->recv) << o.name;
    EXPECT_EQ(o.in_place, e->in_place) << o.name;
    EXPECT_EQ(o.root, e->root) << o.name;
    EXPECT_EQ(o.reduces, e->reduces) << o.name;
    EXPECT_EQ(o.run, e->run) << o.name;
    EXPECT_EQ(table_of(o), e->table) << o.name;
    EXPECT_EQ(o.directions, e->directions) << o.name;
    EXPECT_EQ(o.window, e->window) << o.name;
    EXPECT_EQ(o.backends, kMpi | kNccl) << o.name;  // both backends run every operation
    EXPECT_EQ(o.post != nullptr, o.run == Run::collective) << o.name;
    EXPECT_EQ(o.expect != nullptr, o.run == Run::collective) << o.name;
  }
  EXPECT_EQ(bus_factor(BenchOp::all_reduce, 1), 0.0);
  EXPECT_EQ(op_names(point_to_point, " or "), "sendrecv, latency, bw or bibw");
  EXPECT_EQ(op_names(pairs_members, " or "), "latency, bw or bibw");
}

// Each collective row's call: its own communicator function, the receive buffer as input in place
// (all_gather's own block of it), and the count nccl-tests passes (elements, all_gather's bytes).
TEST(CommBenchOps, CollectivesPostTheirOwnCall) {
  float send[24], recv[24];
  for (const OpRow& o : op_rows()) {
    if (o.run != Run::collective) continue;
    const Shape s = shape_of(o.op, 96, 4, 4);
    for (bool ip : {false, true}) {
      if (ip && !o.in_place) continue;
      Recorder c(1, 4, "mpi");
      o.post({c, send, recv, s, ip, DType::f32, ReduceOp::sum, 2});
      EXPECT_EQ(c.called, o.name);
      const void* in = !ip ? static_cast<const void*>(send) : o.op == BenchOp::all_gather ? recv + 6 : recv;
      EXPECT_EQ(c.send, in) << o.name << (ip ? " in place" : "");
      EXPECT_EQ(c.recv, recv) << o.name;
      const std::size_t n = o.op == BenchOp::all_gather ? 24 : o.blocked ? 6 : 24;
      EXPECT_EQ(c.n, n) << o.name;
      EXPECT_EQ(c.root, o.root ? 2 : -1) << o.name;
    }
  }
}

// The data checks of the collectives on member 1 of 4 (root 2): the values 0..3 of pattern() sum to 6.
TEST(CommBenchOps, CollectivesExpectWhatTheyReceive) {
  float send[24], recv[24];
  const auto expect = [&](BenchOp op, int rank, bool ip, const char* backend = "mpi") {
    Recorder c(rank, 4, backend);
    return op_row(op).expect({c, send, recv, shape_of(op, 96, 4, 4), ip, DType::f32, ReduceOp::sum, 2});
  };
  const std::vector<double> sums(24, 6.0);
  Expectation e = expect(BenchOp::all_reduce, 1, false);
  EXPECT_EQ(e.input, pattern_of(1, 0, 24));
  EXPECT_EQ(e.expected, sums);
  e = expect(BenchOp::all_gather, 1, false);
  EXPECT_EQ(e.input, pattern_of(1, 0, 6));
  std::vector<double> all;
  for (int j = 0; j < 4; ++j) {
    const auto b = pattern_of(j, 0, 6);
    all.insert(all.end(), b.begin(), b.end());
  }
  EXPECT_EQ(e.expected, all);
  e = expect(BenchOp::all_gather, 1, true);  // its block in place, the others -1
  std::vector<double> whole(24, -1);
  for (int i = 0; i < 6; ++i) whole[6 + i] = pattern(1, i);
  EXPECT_EQ(e.input, whole);
  e = expect(BenchOp::reduce_scatter, 1, false);
  EXPECT_EQ(e.input, pattern_of(1, 0, 24));
  EXPECT_EQ(e.expected, std::vector<double>(6, 6.0));
  EXPECT_EQ(e.at, 0u);
  EXPECT_EQ(expect(BenchOp::reduce_scatter, 1, true).at, 0u);          // MPI_IN_PLACE: in front
  EXPECT_EQ(expect(BenchOp::reduce_scatter, 1, true, "nccl").at, 6u);  // NCCL: at its own block
  EXPECT_EQ(expect(BenchOp::broadcast, 1, false).expected, pattern_of(2, 0, 24));
  EXPECT_TRUE(expect(BenchOp::reduce, 1, false).expected.empty());  // off the root: nothing
  EXPECT_EQ(expect(BenchOp::reduce, 2, true).expected, sums);
  all.clear();
  for (int j = 0; j < 4; ++j) {
    const auto b = pattern_of(j, 6, 6);  // block 1 of every member's pattern
    all.insert(all.end(), b.begin(), b.end());
  }
  EXPECT_EQ(expect(BenchOp::alltoall, 1, false).expected, all);
  EXPECT_EQ(expect(BenchOp::alltoallv, 1, false).expected, all);  // imbalance 1: alltoall's
}

// alltoallv on 4 members of 6-element blocks: member 0 gets imbalance x 6 elements of each member, the
// others share the rest, every member's whole send buffer of 24 sent.
TEST(CommBenchOps, AlltoallvSendsTheBusiestMemberItsImbalance) {
  EXPECT_EQ(uneven_blocks(6, 4, 2.0), (std::vector<std::uint64_t>{12, 4, 4, 4}));
  EXPECT_EQ(uneven_blocks(6, 4, 1.5), (std::vector<std::uint64_t>{9, 5, 5, 5}));
  EXPECT_EQ(uneven_blocks(5, 4, 1.0), (std::vector<std::uint64_t>{5, 5, 5, 5}));
  EXPECT_EQ(uneven_blocks(5, 4, 4.0), (std::vector<std::uint64_t>{20, 0, 0, 0}));
  EXPECT_EQ(uneven_blocks(7, 3, 1.5), (std::vector<std::uint64_t>{11, 5, 5}));  // 10.5 rounds to 11
  // 1.5: blocks 9, 5, 5, 5 (offsets not multiples of the pattern's period 4).
  const Shape s = shape_of(BenchOp::alltoallv, 96, 4, 4, 1.5);
  EXPECT_EQ(s.recv_elems, 36u);  // member 0: 4 x 9
  float send[24], recv[36];
  for (int rank : {0, 2}) {
    Recorder c(rank, 4, "mpi");
    op_row(BenchOp::alltoallv).post({c, send, recv, s, false, DType::f32, ReduceOp::sum, 0, 1.5});
    EXPECT_EQ(c.send_bytes, (std::vector<std::size_t>{36, 20, 20, 20}));
    EXPECT_EQ(c.recv_bytes, std::vector<std::size_t>(4, rank == 0 ? 36 : 20));
    // Member 2 expects elements 14..18 of every member's pattern.
    const Expectation e = op_row(BenchOp::alltoallv).expect({c, send, recv, s, false, DType::f32, ReduceOp::sum, 0, 1.5});
    std::vector<double> want;
    for (int j = 0; j < 4; ++j) {
      const auto b = rank == 0 ? pattern_of(j, 0, 9) : pattern_of(j, 14, 5);
      want.insert(want.end(), b.begin(), b.end());
    }
    EXPECT_EQ(e.expected, want) << "member " << rank;
  }
}

TEST(CommBenchModel, ShapesRoundToWholeBlocks) {
  Shape s = shape_of(BenchOp::reduce_scatter, 8, 4, 4);  // below one block: one element per member
  EXPECT_EQ(s.bytes, 16u);
  EXPECT_EQ(s.block, 1u);
  s = shape_of(BenchOp::all_reduce, 10, 8, 4);
  EXPECT_EQ(s.bytes, 8u);
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.block, 1u);
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
  EXPECT_EQ(usage_error([] { parse_bench_op("allreduce"); }),
            "operation 'allreduce' is not allowed: expected one of all_reduce, all_gather, reduce_scatter, broadcast, "
            "reduce, alltoall, sendrecv, latency, bw, bibw, alltoallv");
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
