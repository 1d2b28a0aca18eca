// Context parallelism on real ranks against the whole model on one rank (whole_model.hpp), fp64,
// 1e-10 relative to the largest value: the loss over the global batch, every gradient of every rank's
// slice and the weights after several Adam steps, for the ring and the all-gather exchange and for
// zigzag and contiguous chunks, alone and beside t, p and d. A ring that leaves out one step must not
// match, and each rank sends the bytes of the traffic formula.
//
// Run on 2, 4 and 8 ranks: each world size takes the layouts of its size among 1x1x1 cp2, 1x1x1 cp4,
// 1x2x1 cp2, 2x1x1 cp2, 1x1x2 cp2 and 2x2x1 cp2 (t x p x d, cp).
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/transformer/context_parallel.hpp"
#include "bench/run/context_parallel.hpp"
#include "bench/run/executor.hpp"
#include "comm/factory.hpp"
#include "kernels/transformer_workload.hpp"
#include "kokkos_env.hpp"
#include "topology/mpi_grid.hpp"
#include "whole_model.hpp"

using namespace pipebench;
using pipebench::testing::global_index;
using pipebench::testing::Reference;
using pipebench::testing::whole_model;
using pipebench::testing::world_size;

namespace {

struct Layout {
  int t, p, d, cp;
};

std::vector<Layout> layouts_of_this_world() {
  const std::vector<Layout> all = {{1, 1, 1, 2}, {1, 1, 1, 4}, {1, 2, 1, 2}, {2, 1, 1, 2}, {1, 1, 2, 2}, {2, 2, 1, 2}};
  std::vector<Layout> out;
  for (const auto& l : all)
    if (l.t * l.p * l.d * l.cp == world_size()) out.push_back(l);
  return out;
}

std::string name_of(const Layout& l) {
  return std::to_string(l.t) + "x" + std::to_string(l.p) + "x" + std::to_string(l.d) + " cp" + std::to_string(l.cp);
}

struct Options {
  kernels::CpComm exchange = kernels::CpComm::ring;
  kernels::CpChunks chunks = kernels::CpChunks::zigzag;
  std::string schedule = "1f1b";
  kernels::Optimizer optimizer = kernels::Optimizer::adam;
  double lr = 1e-3, weight_decay = 0.1;
  bool tie = false, sequence_parallel = false;
  int zero = 0;  // the ZeRO stage, over the dp-cp group
  int buckets = 0;
  bool reshard_after_forward = true;
  kernels::Recompute recompute = kernels::Recompute::none;
  int steps = 3;
  int skip_ring_step = -1;  // kernels::CpOps: the broken ring
};

kernels::TransformerWorkloadConfig tiny_model(const Layout& l, const Options& o) {
  kernels::TransformerWorkloadConfig c;
  c.hidden = 16;
  c.heads = 2;
  c.seq = 16;  // 2 cp chunks of 2 positions at cp = 4, split again by t = 2 under sequence parallelism
  c.micro_batch = 2;
  c.vocab = 32;
  c.layers = 2 * l.p;
  c.seed = 11;
  c.fp64 = true;
  c.tp_size = l.t;
  c.context_parallel = l.cp;
  c.cp_comm = o.exchange;
  c.cp_chunks = o.chunks;
  c.optimizer = o.optimizer;
  c.lr = o.lr;
  c.weight_decay = o.weight_decay;
  c.tie_embeddings = o.tie;
  c.sequence_parallel = o.sequence_parallel;
  c.recompute = o.recompute;
  return c;
}

struct Distributed {
  topology::Coords me;
  int dp_cp_rank = 0;
  analysis::Schedule schedule;
  kernels::TransformerWorkloadConfig config;
  std::unique_ptr<kernels::Workload> work;
  std::unique_ptr<comm::Communicator> pp;
  bench::CpTraffic traffic;  // bytes this rank sent over the cp group in the last step
  std::vector<bench::ActionRecord> actions;  // the last step's
};

Distributed run(const Layout& l, const Options& o, int m) {
  const topology::Grid grid(topology::Sizes{l.t, l.cp, l.p, l.d, 1});
  using topology::GroupKind;
  topology::MpiGrid mg(grid, MPI_COMM_WORLD, {GroupKind::tp, GroupKind::pp, GroupKind::dp, GroupKind::cp, GroupKind::dp_cp});
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  Distributed r;
  r.me = mg.coords();
  r.pp = comm::make_communicator("mpi", mg.comm(GroupKind::pp).get(), "pp");
  auto cp = comm::make_communicator("mpi", mg.comm(GroupKind::cp).get(), "cp");
  std::unique_ptr<comm::Communicator> tp, dp_cp;
  if (l.t > 1) tp = comm::make_communicator("mpi", mg.comm(GroupKind::tp).get(), "tp");
  // Megatron-Core reduces the gradients (and shards ZeRO's state) over the cp x d ranks of a replica.
  dp_cp = comm::make_communicator("mpi", mg.comm(GroupKind::dp_cp).get(), "dp-cp");
  r.dp_cp_rank = dp_cp->rank();
  r.schedule = analysis::make_schedule({o.schedule, l.p, m});
  r.config = tiny_model(l, o);
  r.config.tp_rank = r.me.tp;
  r.config.cp_rank = r.me.cp;
  r.config.mb_offset = r.me.dp * m;
  std::unique_ptr<bench::Executor> exec;
  const kernels::TpAllReduce fn = [&exec](void* data, std::size_t n, int e) { exec->tp_allreduce(data, n, e); };
  kernels::TpSequenceOps seq;
  seq.all_gather = [&exec](const void* s, void* rv, std::size_t n, int e) { exec->tp_allgather(s, rv, n, e); };
  seq.reduce_scatter = [&exec](const void* s, void* rv, std::size_t n, int e) { exec->tp_reduce_scatter(s, rv, n, e); };
  auto traffic = std::make_shared<bench::CpTraffic>();
  kernels::CpOps ops = bench::make_cp_ops(*cp, traffic);
  ops.skip_ring_step = o.skip_ring_step;
  r.work = kernels::make_transformer_workload(r.config, r.schedule, r.pp->rank(), fn, seq, ops);
  bench::ExecutorConfig ec;
  ec.zero = o.zero;
  ec.dp_buckets = o.buckets;
  ec.reshard_after_forward = o.reshard_after_forward;
  exec = std::make_unique<bench::Executor>(r.schedule, *r.pp, tp.get(), dp_cp->size() > 1 ? dp_cp.get() : nullptr,
                                           *world, *r.work, ec);
  for (int k = 0; k < o.steps; ++k) {
    *traffic = {};
    exec->run_step(k, k + 1 == o.steps ? &r.actions : nullptr, nullptr);
  }
  r.traffic = *traffic;
  return r;
}

// Whether every rank's gradients (its ZeRO-1 shards only, where sharded), weights and the mean loss
// equal the whole model's; with `expect`, each mismatch is also a failure.
bool matches(const Layout& l, const Options& o, int m, bool expect = true) {
  const Distributed r = run(l, o, m);
  const Reference ref = whole_model(r.config, l.d * m, o);
  const analysis::Schedule& s = r.schedule;
  const auto split = kernels::stage_layers(r.config, s.stages_per_pipe());
  const int replicas = l.cp * l.d;
  double worst_g = 0, worst_w = 0;
  std::string where;
  for (int st : s.stages_of_rank(r.pp->rank())) {
    const auto table = kernels::parameter_table(kernels::stage_config(r.config, split, s.depth_of_stage(st)));
    // What the rank holds (Workload::copy_state): under ZeRO-2 and 3 its shards, NaN elsewhere.
    const std::size_t count = r.work->grad_bytes(st) / sizeof(double);
    std::vector<double> g(count), w(count);
    r.work->copy_state(st, g.data(), w.data());
    std::vector<bool> mine(count, !o.zero);
    if (o.zero)
      for (const auto& z : kernels::zero_shards(count, std::max(o.buckets, 1), replicas, r.dp_cp_rank))
        for (std::size_t i = z.lo; i < z.hi; ++i) mine[i] = true;
    for (const auto& prm : table)
      for (std::size_t i = 0; i < prm.size(); ++i) {
        const std::size_t gi = ref.offset.at(prm.name) + global_index(prm, l.t, r.me.tp, i);
        const double dg = std::abs(g[prm.offset + i] - ref.grads[gi]);
        const double dw = std::abs(w[prm.offset + i] - ref.weights[gi]);
        if (mine[prm.offset + i] && !(dg <= worst_g)) worst_g = dg, where = prm.name;
        if ((o.zero < 3 || mine[prm.offset + i]) && !(dw <= worst_w)) worst_w = dw;
      }
  }
  // Every cp rank of a last stage reports the mean over its positions: the mean of those is the loss.
  const pipebench::testing::LossSums all = pipebench::testing::loss_sums(*r.work, r.me.tp);
  const bool loss_ok = std::abs(all.mean() - ref.loss) <= 1e-10 * std::abs(ref.loss);
  int ok = worst_g <= 1e-10 * ref.grad_scale && worst_w <= 1e-10 * ref.weight_scale && loss_ok, every = 0;
  MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (expect) {
    EXPECT_GT(ref.grad_scale, 0);
    EXPECT_LE(worst_g, 1e-10 * ref.grad_scale) << "gradient of " << where << " on tp " << r.me.tp << " cp " << r.me.cp
                                               << " pp " << r.me.pp << " dp " << r.me.dp;
    EXPECT_LE(worst_w, 1e-10 * ref.weight_scale);
    EXPECT_EQ(all.count, static_cast<double>(replicas * m));
    EXPECT_NEAR(all.mean(), ref.loss, 1e-10 * std::abs(ref.loss));
  }
  return every == 1;
}

}  // namespace

TEST(ContextParallel, AdamStepsMatchTheWholeModelForBothExchangesAndChunkings) {
  for (const auto& l : layouts_of_this_world())
    for (auto exchange : {kernels::CpComm::ring, kernels::CpComm::allgather})
      for (auto chunks : {kernels::CpChunks::zigzag, kernels::CpChunks::contiguous}) {
        SCOPED_TRACE(name_of(l) + " " + kernels::cp_comm_name(exchange) + " " + kernels::cp_chunks_name(chunks));
        Options o;
        o.exchange = exchange;
        o.chunks = chunks;
        matches(l, o, 2 * l.p);
      }
}

// With sequence parallelism (t = 2), ZeRO-1 over the dp-cp group, tied embeddings, split backward
// (zb-h1) and full recomputation, which reruns the exchange inside I.
TEST(ContextParallel, MatchesWithSequenceParallelZero1TiedEmbeddingsAndRecomputation) {
  for (const auto& l : layouts_of_this_world()) {
    SCOPED_TRACE(name_of(l));
    Options o;
    o.sequence_parallel = l.t > 1;
    o.zero = 1;
    o.tie = true;
    o.schedule = "zb-h1";
    matches(l, o, 2 * l.p);
    Options full;
    full.recompute = kernels::Recompute::full;
    full.exchange = kernels::CpComm::allgather;
    matches(l, full, 2 * l.p);
  }
}

// ZeRO-2 and ZeRO-3 shard over the cp d ranks of a replica (Megatron-Core's dp-cp group): each rank's
// shards of the gradients and (ZeRO-3) of the weights equal the whole model after 3 Adam steps, under
// 1F1B and ZB-H1, with buckets, ZeRO-3 with and without reshard after forward.
TEST(ContextParallel, Zero2And3OverTheDpCpGroupMatchTheWholeModel) {
  for (const auto& l : layouts_of_this_world())
    for (const char* sched : {"1f1b", "zb-h1"})
      for (int zero : {2, 3}) {
        SCOPED_TRACE(name_of(l) + " " + sched + " zero-" + std::to_string(zero));
        Options o;
        o.schedule = sched;
        o.zero = zero;
        o.buckets = 2;
        o.reshard_after_forward = std::string(sched) == "1f1b";
        matches(l, o, 2 * l.p);
      }
}

// Every schedule of the catalog over the pipelined layouts (p = 2): the exchange sits inside a stage's
// attention, so the order of the actions (interleaved chunks, split W, V shapes, DualPipe's two copies)
// must not change a bit of it.
TEST(ContextParallel, MatchesTheWholeModelUnderEverySchedule) {
  for (const auto& l : layouts_of_this_world()) {
    if (l.p == 1) continue;
    for (const analysis::ScheduleRow& row : analysis::schedule_catalog()) {
      SCOPED_TRACE(name_of(l) + " " + row.name);
      Options o;
      o.schedule = row.name;
      o.steps = 2;
      matches(l, o, row.pipes == 2 ? 2 * l.p : 4 * l.p);
    }
  }
}

TEST(ContextParallel, ARingWithoutOneStepDoesNotMatch) {
  for (const auto& l : layouts_of_this_world()) {
    SCOPED_TRACE(name_of(l));
    Options o;
    o.steps = 1;
    o.skip_ring_step = l.cp - 1;
    EXPECT_FALSE(matches(l, o, 2 * l.p, false));
  }
}

// Activation memory: the peak a rank measured in 1F1B (p - depth micro-batches in flight, each its whole
// forward stash) is the cost model's, and a layer's stash is the hand count of the kernels' LayerStash at
// t = 1: b s/cp rows of xhat1, y1, q, k, v, ctx, xhat2, y2 (h each), u, g (4h each), 1/std twice and
// the log-sum-exp of each of the a heads, 8-byte values: 8 b (s/cp) (16 h + 2 + a).
TEST(ContextParallel, ActivationMemoryIsTheFormula) {
  for (const auto& l : layouts_of_this_world())
    for (auto exchange : {kernels::CpComm::ring, kernels::CpComm::allgather}) {
      SCOPED_TRACE(name_of(l) + " " + kernels::cp_comm_name(exchange));
      Options o;
      o.exchange = exchange;
      o.steps = 1;
      const Distributed r = run(l, o, 2 * l.p);
      const analysis::Schedule& s = r.schedule;
      const auto split = kernels::stage_layers(r.config, s.stages_per_pipe());
      const int depth = s.depth_of_stage(s.stages_of_rank(r.pp->rank()).front());
      const auto c = kernels::stage_config(r.config, split, depth);
      const kernels::StageMemory mem = kernels::estimate_memory(c, 8);
      std::int64_t peak = 0;
      for (const auto& a : r.actions) peak = std::max(peak, a.activation_bytes);
      EXPECT_EQ(peak, static_cast<std::int64_t>((l.p - depth) * mem.forward_stash));
      if (l.t == 1) {
        EXPECT_EQ(mem.layer_forward_stash,
                  8ull * c.micro_batch * (c.seq / l.cp) * (16ull * c.hidden + 2 + static_cast<unsigned>(c.heads)));
      }
    }
}

// Traffic: the bytes each rank sent over the cp group in a step are, per layer it holds and micro-batch,
// the cost model's (analysis/transformer/context_parallel.hpp), with and without full recomputation.
TEST(ContextParallel, BytesSentPerLayerAreTheFormula) {
  for (const auto& l : layouts_of_this_world())
    for (auto exchange : {kernels::CpComm::ring, kernels::CpComm::allgather})
      for (auto recompute : {kernels::Recompute::none, kernels::Recompute::full}) {
        SCOPED_TRACE(name_of(l) + " " + kernels::cp_comm_name(exchange) + " " + analysis::recompute_name(recompute));
        Options o;
        o.exchange = exchange;
        o.recompute = recompute;
        o.steps = 1;
        const int m = 2 * l.p;
        const Distributed r = run(l, o, m);
        const analysis::Schedule& s = r.schedule;
        const auto split = kernels::stage_layers(r.config, s.stages_per_pipe());
        int layers = 0;
        for (int st : s.stages_of_rank(r.pp->rank())) layers += split[s.depth_of_stage(st)];
        const auto c = kernels::stage_config(r.config, split, 0);
        const auto sent = analysis::transformer::cp_sent_per_layer(c, c.split(), exchange, recompute,
                                                                   analysis::transformer::Convention::pipebench, 8);
        const std::uint64_t expected = static_cast<std::uint64_t>(layers) * m * (sent.forward + sent.backward);
        const bench::CpTraffic& got = r.traffic;
        if (exchange == kernels::CpComm::ring) {
          EXPECT_EQ(got.ring, expected);
          EXPECT_EQ(got.all_gather + got.reduce_scatter, 0u);
        } else {
          EXPECT_EQ(got.all_gather + got.reduce_scatter, expected);
          EXPECT_EQ(got.ring, 0u);
        }
        // The block: K and V of b s/cp positions, h/t wide, 8 bytes.
        EXPECT_EQ(analysis::transformer::cp_kv_block_bytes(c, c.split(), 8),
                  2ull * c.micro_batch * (c.seq / l.cp) * (c.hidden / l.t) * 8);
      }
}
