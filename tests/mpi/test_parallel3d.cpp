// 3D parallelism (t x p x d) on real ranks against the whole model on one rank, over the same global
// batch (d replicas x m micro-batches): the loss, every gradient of every rank's slice, and the weights
// after several optimizer steps (SGD, Adam, Adam with ZeRO-1, tied embeddings); model FLOPs counted
// once whatever the mapping replicates. fp64, 1e-10 relative to the largest value.
//
// Run on 2, 4 and 8 ranks: each world size takes the mappings of its size among 2x1x1, 1x2x1, 1x1x2,
// 2x2x1, 2x1x2, 1x2x2 and 2x2x2.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/zero.hpp"
#include "bench/run/executor.hpp"
#include "comm/factory.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/transformer_stage.hpp"
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

struct Mapping3 {
  int t, p, d;
};

std::vector<Mapping3> mappings_of_this_world() {
  std::vector<Mapping3> all = {{2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 1}, {2, 1, 2}, {1, 2, 2}, {2, 2, 2}};
  std::vector<Mapping3> out;
  for (const auto& m : all)
    if (m.t * m.p * m.d == world_size()) out.push_back(m);
  return out;
}

kernels::TransformerWorkloadConfig tiny_model(const Mapping3& mp) {
  kernels::TransformerWorkloadConfig c;
  c.hidden = 16;
  c.heads = 2;
  c.seq = 8;
  c.micro_batch = 1;
  c.vocab = 32;
  c.layers = 2 * mp.p;
  c.seed = 11;
  c.fp64 = true;
  c.tp_size = mp.t;
  return c;
}

struct Options {
  std::string schedule = "1f1b";
  kernels::Optimizer optimizer = kernels::Optimizer::sgd;
  double lr = 0;
  double weight_decay = 0;
  int zero = 0;  // the ZeRO stage (a bool sets 1)
  bool reshard_after_forward = true, prefetch = true;  // ZeRO-3
  int drop_dp_gather = -1, drop_dp_scatter = -1;       // ExecutorConfig's test hooks
  int buckets = 0;
  bool tie = false;
  bool vocab_parallel = true;
  bool layers_auto = false, embedding_stage = false, head_stage = false;
  int steps = 1;
  bool sequence_parallel = false;
  // Sequence parallelism broken on purpose: the k-th reduce-scatter (drop_scatter = k) or all-gather
  // (drop_gather = k) of each step keeps this rank's own block instead of exchanging (-1: none).
  int drop_scatter = -1, drop_gather = -1;
  std::vector<bench::ActionRecord>* actions = nullptr;  // the last step's records, if wanted
  std::vector<bench::CommRecord>* comms = nullptr;
  bench::StepTiming* timing = nullptr;  // the last step's
  kernels::Precision precision = kernels::Precision::fp64;
  bool grad_reduce_bf16 = false;  // --grad-reduce-dtype bf16
  int overflow_rank = -1, overflow_step = -1;  // fp16: this world rank reports an overflow in this step
};

// One distributed run of `o.steps` steps. `after_step` runs on every rank after each step.
struct Distributed {
  topology::Coords me;
  analysis::Schedule schedule;
  kernels::TransformerWorkloadConfig config;
  std::unique_ptr<kernels::Workload> work;
  std::unique_ptr<comm::Communicator> pp;
};

template <class AfterStep>
Distributed run(const Mapping3& mp, const Options& o, int m, AfterStep after_step) {
  const topology::Grid grid(mp.t, mp.p, mp.d);
  topology::MpiGrid mg(grid, MPI_COMM_WORLD);
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  Distributed r;
  r.me = mg.coords();
  r.pp = comm::make_communicator("mpi", mg.comm(topology::GroupKind::pp).get(), "pp");
  std::unique_ptr<comm::Communicator> tp, dp;
  if (mp.t > 1) tp = comm::make_communicator("mpi", mg.comm(topology::GroupKind::tp).get(), "tp");
  if (mp.d > 1) dp = comm::make_communicator("mpi", mg.comm(topology::GroupKind::dp).get(), "dp");
  r.schedule = analysis::make_schedule({o.schedule, mp.p, m});
  r.config = tiny_model(mp);
  r.config.tp_rank = r.me.tp;
  r.config.mb_offset = r.me.dp * m;
  r.config.optimizer = o.optimizer;
  r.config.lr = o.lr;
  r.config.weight_decay = o.weight_decay;
  r.config.tie_embeddings = o.tie;
  r.config.vocab_parallel = o.vocab_parallel;
  r.config.layers_auto = o.layers_auto;
  r.config.embedding_stage = o.embedding_stage;
  r.config.head_stage = o.head_stage;
  r.config.sequence_parallel = o.sequence_parallel;
  kernels::set_precision(r.config, o.precision);
  r.config.grad_reduce_bf16 = o.grad_reduce_bf16;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (world_rank == o.overflow_rank) r.config.test_overflow_step = o.overflow_step;
  std::unique_ptr<bench::Executor> exec;
  const kernels::TpAllReduce fn = [&exec](void* data, std::size_t n, int e) { exec->tp_allreduce(data, n, e); };
  kernels::TpSequenceOps seq;
  int gathers = 0, scatters = 0;
  const int tp_rank = r.me.tp;
  seq.all_gather = [&](const void* send, void* recv, std::size_t n, int e) {
    if (gathers++ != o.drop_gather) return exec->tp_allgather(send, recv, n, e);
    for (int k = 0; k < mp.t; ++k) std::memcpy(static_cast<char*>(recv) + k * n, send, n);
  };
  seq.reduce_scatter = [&](const void* send, void* recv, std::size_t n, int e) {
    if (scatters++ != o.drop_scatter) return exec->tp_reduce_scatter(send, recv, n, e);
    std::memcpy(recv, static_cast<const char*>(send) + tp_rank * n, n);
  };
  r.work = kernels::make_transformer_workload(r.config, r.schedule, r.pp->rank(), fn, seq);
  bench::ExecutorConfig ec;
  ec.dp_buckets = o.buckets;
  ec.zero = o.zero;
  ec.reshard_after_forward = o.reshard_after_forward;
  ec.prefetch = o.prefetch;
  ec.test_drop_gather = o.drop_dp_gather;
  ec.test_drop_reduce_scatter = o.drop_dp_scatter;
  exec = std::make_unique<bench::Executor>(r.schedule, *r.pp, tp.get(), dp.get(), *world, *r.work, ec);
  for (int k = 0; k < o.steps; ++k) {
    gathers = scatters = 0;
    const bool last = k + 1 == o.steps;
    if (o.actions) o.actions->clear();
    if (o.comms) o.comms->clear();
    const bench::StepTiming t = exec->run_step(k, last ? o.actions : nullptr, last ? o.comms : nullptr);
    if (last && o.timing) *o.timing = t;
    after_step(r);
  }
  return r;
}

// The stage's gradients and weights as the rank holds them (Workload::copy_state): the whole buffers,
// or under ZeRO-2 and 3 its shards, NaN elsewhere.
template <class T>
std::pair<std::vector<T>, std::vector<T>> state_of(const kernels::Workload& w, int st) {
  std::pair<std::vector<T>, std::vector<T>> out;
  out.first.resize(w.grad_bytes(st) / sizeof(T));
  out.second.resize(out.first.size());
  w.copy_state(st, out.first.data(), out.second.data());
  return out;
}

// Compares every rank's gradients (its ZeRO-1 shards only, where sharded) and weights with the
// reference, and the mean loss over the global batch. With `expect` false, only returns whether every
// rank matched (a broken run that must not).
bool expect_matches(const Mapping3& mp, const Options& o, int m, bool expect = true) {
  const Distributed r = run(mp, o, m, [](const Distributed&) {});
  const Reference ref = whole_model(r.config, mp.d * m, o);
  const analysis::Schedule& s = r.schedule;
  const auto split = kernels::stage_layers(r.config, s.stages_per_pipe());
  double worst_g = 0, worst_w = 0;
  std::string where_g, where_w;
  for (int st : s.stages_of_rank(r.pp->rank())) {
    const auto table = kernels::parameter_table(kernels::stage_config(r.config, split, s.depth_of_stage(st)));
    const auto [g, w] = state_of<double>(*r.work, st);
    const std::size_t count = g.size();
    std::vector<bool> mine(count, !(o.zero && mp.d > 1));
    if (o.zero && mp.d > 1)
      for (const auto& z : kernels::zero_shards(count, std::max(o.buckets, 1), mp.d, r.me.dp))
        for (std::size_t i = z.lo; i < z.hi; ++i) mine[i] = true;
    for (const auto& prm : table) {
      const std::size_t base = ref.offset.at(prm.name);
      for (std::size_t i = 0; i < prm.size(); ++i) {
        const std::size_t gi = base + global_index(prm, mp.t, r.me.tp, i);
        const double dg = std::abs(g[prm.offset + i] - ref.grads[gi]);
        const double dw = std::abs(w[prm.offset + i] - ref.weights[gi]);
        if (mine[prm.offset + i] && !(dg <= worst_g)) worst_g = dg, where_g = prm.name;
        // ZeRO-3 keeps the weights of its shards only between steps.
        if ((o.zero < 3 || mine[prm.offset + i]) && !(dw <= worst_w)) worst_w = dw, where_w = prm.name;
      }
    }
  }
  const pipebench::testing::LossSums all = pipebench::testing::loss_sums(*r.work, r.me.tp);
  if (!expect) {
    int ok = worst_g <= 1e-10 * ref.grad_scale && worst_w <= 1e-10 * ref.weight_scale &&
             std::abs(all.mean() - ref.loss) <= 1e-10 * std::abs(ref.loss);
    int every = 0;
    MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return every == 1;
  }
  EXPECT_GT(ref.grad_scale, 0);
  EXPECT_LE(worst_g, 1e-10 * ref.grad_scale) << "gradient of " << where_g << ", rank " << r.me.tp << "," << r.me.pp
                                             << "," << r.me.dp;
  EXPECT_LE(worst_w, 1e-10 * ref.weight_scale) << "weight of " << where_w << ", rank " << r.me.tp << "," << r.me.pp
                                               << "," << r.me.dp;
  // The loss: tensor rank 0 of each last stage, summed over replicas.
  EXPECT_EQ(all.count, mp.d * m);
  EXPECT_NEAR(all.mean(), ref.loss, 1e-10 * std::abs(ref.loss));
  return true;
}

std::string name_of(const Mapping3& mp) {
  return std::to_string(mp.t) + "x" + std::to_string(mp.p) + "x" + std::to_string(mp.d);
}

}  // namespace

TEST(Parallel3d, SgdGradientsAndWeightsMatchTheWholeModel) {
  for (const auto& mp : mappings_of_this_world())
    for (const char* sched : {"1f1b", "zb-h1"})
      for (bool vp : {true, false}) {
      if (!vp && mp.t == 1) continue;
      SCOPED_TRACE(name_of(mp) + " " + sched + (vp ? "" : " replicated vocabulary"));
      Options o;
      o.vocab_parallel = vp;
      o.schedule = sched;
      o.lr = 0.05;
      o.steps = 2;
      expect_matches(mp, o, 2 * mp.p);
    }
}

TEST(Parallel3d, AdamStepsMatchTheWholeModelWithAndWithoutZero1) {
  for (const auto& mp : mappings_of_this_world())
    for (bool zero : {false, true})
      for (int buckets : {0, 3}) {
        SCOPED_TRACE(name_of(mp) + (zero ? " zero-1" : "") + " buckets " + std::to_string(buckets));
        Options o;
        o.optimizer = kernels::Optimizer::adam;
        o.lr = 1e-3;
        o.weight_decay = 0.1;
        o.zero = zero;
        o.buckets = buckets;
        o.steps = 3;
        expect_matches(mp, o, 2 * mp.p);
      }
}

// Adam's state per rank, measured from the views it holds, is the formula: 2 values per parameter of
// the rank's stages, 1/d of them (its shards) under ZeRO-1, the shards of the d ranks adding up to all.
TEST(Parallel3d, OptimizerStateBytesAreTheFormula) {
  for (const auto& mp : mappings_of_this_world())
    for (bool zero : {false, true}) {
      SCOPED_TRACE(name_of(mp) + (zero ? " zero-1" : ""));
      Options o;
      o.optimizer = kernels::Optimizer::adam;
      o.zero = zero;
      o.buckets = 2;
      const Distributed r = run(mp, o, 2 * mp.p, [](const Distributed&) {});
      double measured = -1;
      for (const auto& f : r.work->step_figures())
        if (f.kind == kernels::Workload::FigureKind::optimizer_state_bytes) measured = f.value;
      const int pp = r.pp->rank();
      const auto formula = kernels::optimizer_state_bytes(r.config, r.schedule, pp, zero, 2, mp.d, r.me.dp);
      EXPECT_EQ(measured, static_cast<double>(formula));
      const auto whole = kernels::optimizer_state_bytes(r.config, r.schedule, pp, false, 2, mp.d, 0);
      std::uint64_t shards = 0;
      for (int k = 0; k < mp.d; ++k) shards += kernels::optimizer_state_bytes(r.config, r.schedule, pp, zero, 2, mp.d, k);
      EXPECT_EQ(shards, zero && mp.d > 1 ? whole : mp.d * whole);
      if (zero && mp.d > 1) {
        EXPECT_LE(formula, whole / mp.d + 2 * 8 * 2);  // ceil per bucket, 2 buckets
      }
    }
}

TEST(Parallel3d, TiedEmbeddingsMatchTheWholeModelAndStayBitwiseEqual) {
  for (const auto& mp : mappings_of_this_world())
    for (const char* sched : {"1f1b", "zbv"})
      for (bool zero : {false, true}) {
        if (std::string(sched) == "zbv" && mp.p == 1) continue;
        SCOPED_TRACE(name_of(mp) + " " + sched + (zero ? " zero-1" : ""));
        Options o;
        o.schedule = sched;
        o.optimizer = kernels::Optimizer::adam;
        o.lr = 1e-3;
        o.zero = zero;
        o.tie = true;
        o.steps = 3;
        expect_matches(mp, o, 2 * mp.p);
        // After every step, the first stage's embedding and the last stage's copy are bitwise equal.
        int steps_checked = 0;
        run(mp, o, 2 * mp.p, [&](const Distributed& r) {
          const analysis::Schedule& s = r.schedule;
          const int last = s.num_stages() - 1, a = s.stage_rank[0], b = s.stage_rank[last];
          const int me = r.pp->rank();
          std::size_t off = 0, n = 0;
          std::vector<double> copy;
          if (me == b && r.work->tied_copy(last, off, n)) {
            const auto* w = static_cast<const double*>(r.work->weight_data(last)) + off;
            copy.assign(w, w + n);
            if (a != b) r.pp->send(copy.data(), n * sizeof(double), a, 99);
          }
          if (me == a && r.work->tied_copy(0, off, n)) {
            const auto* w = static_cast<const double*>(r.work->weight_data(0)) + off;
            if (a != b) {
              copy.resize(n);
              r.pp->recv(copy.data(), n * sizeof(double), b, 99);
            }
            ASSERT_EQ(copy.size(), n);
            EXPECT_EQ(std::memcmp(copy.data(), w, n * sizeof(double)), 0) << "after step " << steps_checked;
          }
          ++steps_checked;
        });
      }
}

// Model FLOPs of a step, summed over every rank, are the formula's (docs/formulas.md) for the global
// batch: each operation once, the replicated output layer included, whatever t, p and d replicate.
TEST(Parallel3d, ModelFlopsAreCountedOnce) {
  for (const auto& mp : mappings_of_this_world())
    for (bool tie : {false, true})
      for (bool vp : {true, false}) {
      SCOPED_TRACE(name_of(mp) + (tie ? " tied" : "") + (vp ? "" : " replicated vocabulary"));
      Options o;
      o.tie = tie;
      o.vocab_parallel = vp;
      const int m = 2 * mp.p;
      const Distributed r = run(mp, o, m, [](const Distributed&) {});
      double mine = 0, all = 0;
      for (const auto& f : r.work->step_figures())
        if (f.kind == kernels::Workload::FigureKind::model_flops) mine += f.value;
      MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      const auto& c = r.config;
      const double G = static_cast<double>(mp.d) * m * c.micro_batch, L = c.layers, s = c.seq, h = c.hidden,
                   V = c.vocab;
      const double formula = 72 * G * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
      EXPECT_NEAR(all, formula, 1e-12 * formula);
    }
}

// Vocabulary-parallel, the last stage holds V/t columns of logits gradients per micro-batch, never
// the full [b*s, V]: its stash is the formula's with V/t, on each of the t ranks.
TEST(Parallel3d, VocabularyParallelStashHoldsItsShareOfTheLogits) {
  if (world_size() != 2) GTEST_SKIP() << "2 tensor-parallel ranks";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  using St = kernels::TransformerStage<double>;
  kernels::TransformerConfig c = kernels::TransformerConfig::whole_model(16, 2, 8, 2, 64, 1);
  c.tp_size = 2;
  c.tp_rank = rank;
  std::size_t stash[2] = {0, 0};
  for (bool vp : {false, true}) {
    c.vocab_parallel = vp;
    St stage(c, [](const St::Matrix& m, kernels::TpPoint) {
      MPI_Allreduce(MPI_IN_PLACE, m.data(), static_cast<int>(m.span()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    });
    stage.forward(0);
    const auto mem = kernels::estimate_memory(c, sizeof(double));
    EXPECT_EQ(stage.stash_bytes(0), mem.forward_stash);
    stash[vp ? 1 : 0] = stage.stash_bytes(0);
    stage.backward_input(0);
    EXPECT_EQ(stage.stash_bytes(0), mem.weight_stash);
    stage.backward_weight(0);
    EXPECT_EQ(mem.parameters * sizeof(double), stage.weights().span() * sizeof(double));
  }
  // b*s = 16 rows of logits gradients: 64 columns replicated, 32 split.
  EXPECT_EQ(stash[0] - stash[1], 16u * (64 - 32) * sizeof(double));
}

// --layers-per-stage auto: the last stage, which also holds the output layer and the loss, gets as few
// layers as minimise the largest stage's FLOPs (h = 256, V = 32768, 8 layers on 4 stages: the head is
// about ten layers' worth, so the last stage keeps one layer). One layer's F+I+W: 72nh^2 + 12nsh; the
// head's: 6nhV.
TEST(Parallel3d, BalancedSplitsFollowTheFlops) {
  kernels::TransformerWorkloadConfig c;
  c.hidden = 256;
  c.heads = 8;
  c.seq = 128;
  c.vocab = 32768;
  c.layers = 8;
  EXPECT_EQ(kernels::stage_layers(c, 4), (std::vector<int>{2, 2, 2, 2}));
  c.layers_auto = true;
  EXPECT_EQ(kernels::stage_layers(c, 4), (std::vector<int>{2, 3, 2, 1}));
  c.vocab = 256;  // a small head: the even split stays
  EXPECT_EQ(kernels::stage_layers(c, 4), (std::vector<int>{2, 2, 2, 2}));
  c.vocab = 2048;  // 0.6 of a layer: giving a layer up would leave a stage of 3
  EXPECT_EQ(kernels::stage_layers(c, 4), (std::vector<int>{2, 2, 2, 2}));
  c.vocab = 4096;  // 1.2 layers: now it pays
  EXPECT_EQ(kernels::stage_layers(c, 4), (std::vector<int>{2, 3, 2, 1}));
  c.layers_auto = false;
  c.head_stage = true;
  EXPECT_EQ(kernels::stage_layers(c, 4), (std::vector<int>{2, 4, 2, 0}));
  c.embedding_stage = true;
  EXPECT_EQ(kernels::stage_layers(c, 4), (std::vector<int>{0, 4, 4, 0}));
  c.layers_per_stage = {0, 5, 3, 0};
  EXPECT_EQ(kernels::stage_layers(c, 4), (std::vector<int>{0, 5, 3, 0}));
  c.layers_per_stage = {1, 4, 3, 0};
  EXPECT_THROW(kernels::stage_layers(c, 4), UsageError);
  c.layers_per_stage.clear();
  EXPECT_THROW(kernels::stage_layers(c, 2), UsageError);  // both end stages and nothing left for layers
}

// Balanced and split-off stages compute the same model: exact against the whole model.
TEST(Parallel3d, BalancedAndSplitOffStagesMatchTheWholeModel) {
  for (const auto& mp : mappings_of_this_world()) {
    if (mp.p == 1) continue;
    for (const char* sched : {"1f1b", "interleaved"})
      for (int mode = 0; mode < 3; ++mode) {
        SCOPED_TRACE(name_of(mp) + " " + sched + " mode " + std::to_string(mode));
        Options o;
        o.schedule = sched;
        o.lr = 0.05;
        o.steps = 2;
        o.layers_auto = mode == 0;
        o.embedding_stage = mode == 1;
        o.head_stage = mode == 2;
        expect_matches(mp, o, 2 * mp.p);
      }
  }
}

// Sequence parallelism (--sequence-parallel): the loss, every gradient and the weights after the steps
// equal the whole model's, for every mapping with t = 2, under schedules with split and combined
// backward passes, one and two chunks per rank, with and without the vocabulary split, and with Adam
// and ZeRO-1.
TEST(Parallel3d, SequenceParallelMatchesTheWholeModel) {
  for (const auto& mp : mappings_of_this_world()) {
    if (mp.t == 1) continue;
    for (const char* sched : {"1f1b", "zb-h1", "interleaved", "zbv"})
      for (bool vp : {true, false}) {
        const std::string name = sched;
        if (mp.p == 1 && (name == "interleaved" || name == "zbv")) continue;
        if (!vp && name != "1f1b") continue;
        SCOPED_TRACE(name_of(mp) + " " + sched + (vp ? "" : " replicated vocabulary") + " sequence-parallel");
        Options o;
        o.sequence_parallel = true;
        o.vocab_parallel = vp;
        o.schedule = sched;
        o.lr = 0.05;
        o.steps = 2;
        expect_matches(mp, o, 2 * mp.p);
      }
    SCOPED_TRACE(name_of(mp) + " adam zero-1 sequence-parallel");
    Options o;
    o.sequence_parallel = true;
    o.optimizer = kernels::Optimizer::adam;
    o.lr = 1e-3;
    o.weight_decay = 0.1;
    o.zero = true;
    o.buckets = 2;
    o.steps = 3;
    expect_matches(mp, o, 2 * mp.p);
  }
}

// Without one of its collectives the run is wrong: the comparison above can fail.
TEST(Parallel3d, SequenceParallelWithoutOneCollectiveDoesNotMatch) {
  for (const auto& mp : mappings_of_this_world()) {
    if (mp.t == 1 || mp.d > 1) continue;
    for (int which = 0; which < 2; ++which) {
      SCOPED_TRACE(name_of(mp) + (which ? " one all-gather dropped" : " one reduce-scatter dropped"));
      Options o;
      o.sequence_parallel = true;
      o.lr = 0.05;
      (which ? o.drop_gather : o.drop_scatter) = 1;
      EXPECT_FALSE(expect_matches(mp, o, 2 * mp.p, false));
    }
  }
}

namespace {

// Bytes a stage holds from its F to its I per micro-batch, fp64, from the closed forms of
// docs/formulas.md ("Activation memory with sequence parallelism"), for the tiny model.
double forward_stash_formula(const kernels::TransformerConfig& c, bool sp) {
  const double t = c.tp_size, h = c.hidden, s = c.seq, b = c.micro_batch, a = c.heads, V = c.local_vocab();
  const double n = s * b, e = 8;
  const double k = sp ? 1 / t : 1;  // the share of the rows a rank holds outside the TP blocks
  // xhat1, xhat2 (k n h); the gathered QKV and fc1 inputs (n h); Q, K, V, ctx, u, g (12 n h/t); the
  // probabilities; rstd1, rstd2 (k n). The head: xhat (k n h), y (n h), rstd (k n), logits (n V/t).
  double layer = n * h * (2 * k + 2 + 12 / t) + b * a / t * s * s + 2 * n * k;
  double head = n * h * k + n * h + n * k + n * V;
  return e * (c.num_layers * layer + (c.head ? head : 0));
}

}  // namespace

// The activation memory a rank holds at its peak, measured from the views its stages hold, equals the
// formula with and without sequence parallelism: under 1f1b, the stage at depth k holds p - k
// micro-batches' forward stashes.
TEST(Parallel3d, SequenceParallelActivationMemoryIsTheFormula) {
  for (const auto& mp : mappings_of_this_world()) {
    if (mp.t == 1 || mp.p == 1) continue;
    for (bool sp : {false, true}) {
      SCOPED_TRACE(name_of(mp) + (sp ? " sequence-parallel" : ""));
      std::vector<bench::ActionRecord> actions;
      Options o;
      o.sequence_parallel = sp;
      o.actions = &actions;
      const Distributed r = run(mp, o, 2 * mp.p, [](const Distributed&) {});
      std::int64_t peak = 0;
      for (const auto& a : actions) peak = std::max(peak, a.activation_bytes);
      const analysis::Schedule& s = r.schedule;
      const auto split = kernels::stage_layers(r.config, s.stages_per_pipe());
      const int depth = s.depth_of_stage(s.stages_of_rank(r.pp->rank()).front());
      const auto c = kernels::stage_config(r.config, split, depth);
      const double formula = (mp.p - depth) * forward_stash_formula(c, sp);
      EXPECT_EQ(static_cast<double>(peak), formula) << "depth " << depth;
      EXPECT_EQ(static_cast<double>(kernels::estimate_memory(c, 8).forward_stash), forward_stash_formula(c, sp));
    }
  }
}

// Communication volume: an all-reduce of B bytes moves 2(t-1)/t B per rank, an all-gather or a
// reduce-scatter of B bytes (the whole buffer) (t-1)/t B. Counted from the comm records, the
// sequence-parallel step moves what the all-reduce step moves, plus the one all-reduce of the
// LayerNorms' weight gradients per stage (4h per layer, 2h for the head's).
TEST(Parallel3d, SequenceParallelCommunicationVolumeEqualsTheAllReduceCase) {
  for (const auto& mp : mappings_of_this_world()) {
    if (mp.t == 1 || mp.d > 1) continue;
    double volume[2] = {0, 0};
    int gathers = 0, scatters = 0;
    Distributed last;
    for (bool sp : {false, true}) {
      SCOPED_TRACE(name_of(mp) + (sp ? " sequence-parallel" : ""));
      std::vector<bench::CommRecord> comms;
      Options o;
      o.sequence_parallel = sp;
      o.comms = &comms;
      last = run(mp, o, 2 * mp.p, [](const Distributed&) {});
      for (const auto& c : comms) {
        if (c.group != bench::CommGroup::tp) continue;
        if (c.kind == bench::CommKind::AllReduce) volume[sp] += 2.0 * static_cast<double>(c.bytes);
        if (c.kind == bench::CommKind::AllGather) volume[sp] += static_cast<double>(c.bytes), gathers += sp;
        if (c.kind == bench::CommKind::ReduceScatter) volume[sp] += static_cast<double>(c.bytes), scatters += sp;
      }
    }
    const auto split = kernels::stage_layers(last.config, last.schedule.stages_per_pipe());
    double layernorm = 0;
    for (int st : last.schedule.stages_of_rank(last.pp->rank())) {
      const auto c = kernels::stage_config(last.config, split, last.schedule.depth_of_stage(st));
      layernorm += 8.0 * (4 * c.hidden * c.num_layers + (c.head ? 2 * c.hidden : 0));
    }
    EXPECT_GT(gathers, 0);
    EXPECT_EQ(gathers, scatters);  // one for each, per layer, per pass
    EXPECT_EQ(volume[1], volume[0] + 2 * layernorm);
  }
}

// DualPipe's two model copies: stage k of each copy sees half the micro-batches; their gradients are
// summed before the optimizer step, so after several steps both copies hold the same weights (bitwise)
// and match the whole model over the global batch.
TEST(Parallel3d, DualPipeCopiesStepTogether) {
  for (const auto& mp : mappings_of_this_world()) {
    if (mp.p == 1) continue;
    for (int variant = 0; variant < 2; ++variant) {
      SCOPED_TRACE(name_of(mp) + (variant ? " adam zero-1" : " sgd"));
      Options o;
      o.schedule = "dualpipe";
      o.steps = 3;
      if (variant) {
        o.optimizer = kernels::Optimizer::adam;
        o.lr = 1e-3;
        o.zero = true;
        o.buckets = 2;
      } else {
        o.lr = 0.05;
      }
      expect_matches(mp, o, 2 * mp.p);
      run(mp, o, 2 * mp.p, [&](const Distributed& r) {
        // Every stage's weights against its twin's (the same depth in the other copy), wherever it is.
        const analysis::Schedule& s = r.schedule;
        const int per = s.stages_per_pipe(), me = r.pp->rank();
        const auto stages = s.stages_of_rank(me);
        std::vector<std::vector<double>> other(stages.size());
        std::vector<comm::Request> reqs;
        for (std::size_t i = 0; i < stages.size(); ++i) {
          const int st = stages[i], twin = st < per ? st + per : st - per, peer = s.stage_rank[twin];
          const std::size_t n = r.work->grad_bytes(st) / sizeof(double);
          const auto* w = static_cast<const double*>(r.work->weight_data(st));
          if (peer == me) {
            const auto* v = static_cast<const double*>(r.work->weight_data(twin));
            other[i].assign(v, v + n);
            continue;
          }
          other[i].resize(n);
          const int out = 500 + s.depth_of_stage(st) * 2 + (st < per ? 0 : 1), in = out ^ 1;
          reqs.push_back(r.pp->irecv(other[i].data(), n * sizeof(double), peer, in));
          reqs.push_back(r.pp->isend(w, n * sizeof(double), peer, out));
        }
        r.pp->wait_all(reqs);
        for (std::size_t i = 0; i < stages.size(); ++i)
          EXPECT_EQ(std::memcmp(other[i].data(), r.work->weight_data(stages[i]), other[i].size() * sizeof(double)), 0)
              << "stage " << stages[i];
      });
    }
  }
}

// ZeRO-2 and ZeRO-3 (docs/run.md "ZeRO"): fp64 Adam steps over 1x1x2, 1x1x4, 1x2x2, 2x1x2 and 2x2x2 equal
// the whole model (gradients and weights of each rank's shards), under 1F1B, ZB-H1 (split W) and
// interleaved 1F1B, with and without buckets, reshard after forward and prefetch.
namespace {
std::vector<Mapping3> zero_mappings() {
  std::vector<Mapping3> out;
  for (const Mapping3& m : std::vector<Mapping3>{{1, 1, 2}, {1, 1, 4}, {1, 2, 2}, {2, 1, 2}, {2, 2, 2}})
    if (m.t * m.p * m.d == world_size()) out.push_back(m);
  return out;
}
Options zero_options(int zero, const std::string& sched) {
  Options o;
  o.schedule = sched;
  o.optimizer = kernels::Optimizer::adam;
  o.lr = 1e-3;
  o.weight_decay = 0.1;
  o.zero = zero;
  o.steps = 3;
  return o;
}
}  // namespace

TEST(Parallel3d, Zero2And3MatchTheWholeModel) {
  for (const auto& mp : zero_mappings())
    for (const char* sched : {"1f1b", "zb-h1", "interleaved"})
      for (int zero : {2, 3})
        for (int variant = 0; variant < (zero == 3 ? 3 : 2); ++variant) {
          if (std::string(sched) == "interleaved" && mp.p == 1) continue;
          Options o = zero_options(zero, sched);
          o.buckets = variant == 1 ? 3 : 0;
          o.reshard_after_forward = variant != 2;
          o.prefetch = variant != 1;
          SCOPED_TRACE(name_of(mp) + " " + sched + " zero-" + std::to_string(zero) + " buckets " +
                       std::to_string(o.buckets) + (o.reshard_after_forward ? "" : " kept until backward") +
                       (o.prefetch ? "" : " no prefetch"));
          expect_matches(mp, o, 2 * mp.p);
        }
}

// Without one weight gather (ZeRO-3) or one gradient reduce-scatter (ZeRO-2, 3) the run no longer matches.
TEST(Parallel3d, ZeroWithoutOneGatherOrReduceScatterDoesNotMatch) {
  for (const auto& mp : zero_mappings()) {
    SCOPED_TRACE(name_of(mp));
    Options o = zero_options(3, "1f1b");
    EXPECT_TRUE(expect_matches(mp, o, 2 * mp.p, false));
    o.drop_dp_gather = 1;
    EXPECT_FALSE(expect_matches(mp, o, 2 * mp.p, false)) << "a gather dropped";
    for (int zero : {2, 3}) {
      Options q = zero_options(zero, "zb-h1");
      q.drop_dp_scatter = 0;
      EXPECT_FALSE(expect_matches(mp, q, 2 * mp.p, false)) << "a reduce-scatter dropped, zero-" << zero;
    }
  }
}

// ZeRO-3's traffic per step is the gather plan's (analysis/zero.hpp): its gathers of each stage's
// buckets (bytes as nccl-tests counts them: the gathered output), one reduce-scatter per bucket, and no
// all-gather after the step; the gathered weights held at once, measured, are its formula.
TEST(Parallel3d, Zero3TrafficAndGatheredBytesAreTheFormula) {
  for (const auto& mp : zero_mappings())
    for (const char* sched : {"1f1b", "zb-h1", "interleaved"})
      for (int variant = 0; variant < 3; ++variant) {
        if (std::string(sched) == "interleaved" && mp.p == 1) continue;
        Options o = zero_options(3, sched);
        o.steps = 1;
        o.buckets = 2;
        o.reshard_after_forward = variant != 1;
        o.prefetch = variant != 2;
        SCOPED_TRACE(name_of(mp) + " " + sched + " variant " + std::to_string(variant));
        std::vector<bench::CommRecord> comms;
        bench::StepTiming timing;
        o.comms = &comms;
        o.timing = &timing;
        const Distributed r = run(mp, o, 2 * mp.p, [](const Distributed&) {});
        const analysis::Schedule& s = r.schedule;
        const int me = r.pp->rank();
        const analysis::GatherPlan plan = analysis::gather_plan(s, me, o.reshard_after_forward);
        std::vector<double> stage_bytes(static_cast<std::size_t>(s.num_stages()), 0);
        std::map<int, double> padded;  // per stage: the gathered bytes of its buckets
        for (int st : s.stages_of_rank(me)) {
          stage_bytes[static_cast<std::size_t>(st)] = static_cast<double>(r.work->grad_bytes(st));
          for (const auto& z : kernels::zero_shards(r.work->grad_bytes(st) / 8, 2, mp.d, r.me.dp))
            padded[st] += static_cast<double>(z.shard * static_cast<std::size_t>(mp.d) * 8);
        }
        double gathered = 0, scattered = 0, want_gathered = 0, want_scattered = 0;
        int gathers = 0;
        for (const auto& c : comms) {
          if (c.group != bench::CommGroup::dp) continue;
          if (c.kind == bench::CommKind::AllGather) gathered += static_cast<double>(c.bytes), ++gathers;
          if (c.kind == bench::CommKind::ReduceScatter) scattered += static_cast<double>(c.bytes);
          EXPECT_NE(c.kind, bench::CommKind::AllReduce);
        }
        for (const auto& g : plan.gather_before)
          for (int st : g) want_gathered += padded.at(st);
        for (const auto& [st, b] : padded) want_scattered += b;
        EXPECT_EQ(gathers, 2 * plan.gathers());
        EXPECT_EQ(gathered, want_gathered);
        EXPECT_EQ(scattered, want_scattered);
        EXPECT_EQ(timing.gathered_peak, analysis::gathered_peak_bytes(plan, stage_bytes, o.prefetch));
        EXPECT_GE(timing.gather_waited, 0);
      }
}

// ZeRO-3 under every schedule of the catalog with p > 1 (DualPipe's two model copies, ZB-V's V, split W),
// with tied embeddings where the schedule allows them: the whole model, to 1e-10.
TEST(Parallel3d, Zero3MatchesTheWholeModelUnderEverySchedule) {
  for (const auto& mp : zero_mappings()) {
    if (mp.p == 1) continue;
    for (const analysis::ScheduleRow& row : analysis::schedule_catalog()) {
      SCOPED_TRACE(name_of(mp) + " " + row.name);
      Options o = zero_options(3, row.name);
      o.buckets = 2;
      o.steps = 2;
      o.tie = row.pipes == 1;  // DualPipe's two copies would hold four: refused
      expect_matches(mp, o, row.pipes == 2 ? 2 * mp.p : 4 * mp.p);
    }
  }
}

// What each rank holds after its steps, measured from its allocations (whole buffers and the compact
// shards of kernels/zero_state.hpp), is kernels::state_bytes for ZeRO 0 to 3 in fp64 and bf16: the
// weights (whole, or 1/d under ZeRO-3), the gradients (1/d from ZeRO-2), the fp32 main weights of a
// 16-bit run and Adam's state (1/d from ZeRO-1). The shards of the d ranks add up to the whole.
TEST(Parallel3d, StateBytesAreTheFormulaForEveryZeroStageAndPrecision) {
  using K = kernels::Workload::FigureKind;
  for (const auto& mp : zero_mappings())
    for (kernels::Precision precision : {kernels::Precision::fp64, kernels::Precision::bf16})
      for (int zero : {0, 1, 2, 3}) {
        SCOPED_TRACE(name_of(mp) + " " + kernels::to_string(precision) + " zero-" + std::to_string(zero));
        Options o = zero_options(zero, "1f1b");
        o.precision = precision;
        o.buckets = 2;
        o.steps = 2;
        const Distributed r = run(mp, o, 2 * mp.p, [](const Distributed&) {});
        std::map<K, double> got;
        for (const auto& f : r.work->step_figures()) got[f.kind] = f.value;
        const int pp = r.pp->rank();
        const kernels::StateBytes want = kernels::state_bytes(r.config, r.schedule, pp, zero, 2, mp.d, r.me.dp);
        const bool half = precision == kernels::Precision::bf16;
        EXPECT_EQ(got.at(K::weight_bytes), static_cast<double>(want.weights));
        EXPECT_EQ(got.at(K::gradient_bytes), static_cast<double>(want.gradients));
        EXPECT_EQ(got.at(K::optimizer_state_bytes), static_cast<double>(want.optimizer));
        EXPECT_EQ(got.count(K::main_weight_bytes) ? got.at(K::main_weight_bytes) : 0.0, static_cast<double>(want.main_weights));
        EXPECT_EQ(want.main_weights > 0, half);
        // The formula itself: the whole stage's bytes, or shards that add up to them.
        const kernels::StateBytes whole = kernels::state_bytes(r.config, r.schedule, pp, 0, 2, mp.d, 0);
        std::uint64_t weights = 0, grads = 0;
        for (int k = 0; k < mp.d; ++k) {
          const kernels::StateBytes b = kernels::state_bytes(r.config, r.schedule, pp, zero, 2, mp.d, k);
          weights += b.weights, grads += b.gradients;
        }
        EXPECT_EQ(weights, zero >= 3 ? whole.weights : mp.d * whole.weights);
        EXPECT_EQ(grads, zero >= 2 ? whole.gradients : mp.d * whole.gradients);
        std::uint64_t stages = 0, params = 0, shard_params = 0;
        for (int st : r.schedule.stages_of_rank(pp)) {
          stages += r.work->grad_bytes(st);
          const std::size_t n = r.work->grad_bytes(st) / (half ? 4 : 8);
          params += n;
          for (const auto& z : kernels::zero_shards(n, 2, mp.d, r.me.dp)) shard_params += z.hi - z.lo;
        }
        EXPECT_EQ(whole.gradients, stages);
        // A 16-bit run keeps its weights in 16 bits, 2 bytes a parameter (whole, or its shards under
        // ZeRO-3), and decodes each action's chunk to fp32: with 1F1B's one chunk a rank, 4 bytes a
        // parameter of it at most (kernels/half_weights.hpp).
        if (half) {
          EXPECT_EQ(got.at(K::weight_bytes), 2.0 * static_cast<double>(zero >= 3 ? shard_params : params));
          EXPECT_EQ(got.at(K::decoded_weight_bytes), static_cast<double>(want.decoded));
          EXPECT_EQ(want.decoded, 4 * params);
        } else {
          EXPECT_EQ(got.count(K::decoded_weight_bytes), 0u);
          EXPECT_EQ(want.decoded, 0u);
        }
      }
}

// 16-bit storage (--precision bf16|fp16, docs/transformer.md "16-bit training state").
namespace {
// Every rank's weights (without ZeRO-3), those of its shards, and the mean loss, as floats.
struct HalfRun {
  std::vector<float> weights, shards;
  double loss = 0;
  std::vector<kernels::Workload::Figure> figures;
};
HalfRun half_run(const Mapping3& mp, const Options& o, int m) {
  const Distributed r = run(mp, o, m, [](const Distributed&) {});
  HalfRun out;
  for (int st : r.schedule.stages_of_rank(r.pp->rank())) {
    const std::vector<float> w = state_of<float>(*r.work, st).second;
    if (o.zero < 3) out.weights.insert(out.weights.end(), w.begin(), w.end());
    for (const auto& z : kernels::zero_shards(w.size(), std::max(o.buckets, 1), mp.d, r.me.dp))
      out.shards.insert(out.shards.end(), w.begin() + static_cast<std::ptrdiff_t>(z.lo), w.begin() + static_cast<std::ptrdiff_t>(z.hi));
  }
  out.figures = r.work->step_figures();
  out.loss = pipebench::testing::loss_sums(*r.work, r.me.tp).mean();
  return out;
}
double figure(const HalfRun& r, kernels::Workload::FigureKind k) {
  for (const auto& f : r.figures)
    if (f.kind == k) return f.value;
  return -1;
}
}  // namespace

// With two replicas every sum over them is a + b, in any order: the ZeRO stages of a bf16 run (the
// all-reduce, or the reduce-scatter with gathered 16-bit weights) end with bitwise the same weights.
TEST(Parallel3d, Bf16ZeroStagesAreBitwiseEqualWithTwoReplicas) {
  for (const auto& mp : zero_mappings()) {
    if (mp.d != 2) continue;
    SCOPED_TRACE(name_of(mp));
    Options o = zero_options(0, "1f1b");
    o.precision = kernels::Precision::bf16;
    o.buckets = 2;
    const HalfRun base = half_run(mp, o, 2 * mp.p);
    for (int zero : {1, 2, 3}) {
      o.zero = zero;
      const HalfRun z = half_run(mp, o, 2 * mp.p);
      EXPECT_EQ(z.loss, base.loss) << "zero-" << zero;
      EXPECT_EQ(z.shards, base.shards) << "zero-" << zero;
      if (zero < 3) {
        EXPECT_EQ(z.weights, base.weights) << "zero-" << zero;
      }
    }
  }
}

// A bf16 run's weight gathers move its 16-bit weights, 2 bytes a value: ZeRO-1's all-gather after the
// step and ZeRO-3's before each action move half the bytes of the fp32 run's (same model, same plan),
// each the formula's count of padded values times 2, and ZeRO-3 holds its gathered 16-bit stages at
// half fp32's peak; the reduce-scatters keep fp32 gradients. A dropped 16-bit gather (NaN outside the
// rank's shard) spoils the run.
TEST(Parallel3d, Bf16GathersMoveTwoBytesAValue) {
  for (const auto& mp : zero_mappings())
    for (int zero : {1, 3}) {
      SCOPED_TRACE(name_of(mp) + " zero-" + std::to_string(zero));
      auto dp_bytes = [](const std::vector<bench::CommRecord>& comms, bench::CommKind kind) {
        double b = 0;
        for (const auto& c : comms)
          if (c.group == bench::CommGroup::dp && c.kind == kind) b += static_cast<double>(c.bytes);
        return b;
      };
      Options o = zero_options(zero, "1f1b");
      o.buckets = 2;
      o.steps = 2;
      std::vector<bench::CommRecord> comms;
      bench::StepTiming timing;
      o.comms = &comms;
      o.timing = &timing;
      o.precision = kernels::Precision::fp32;
      run(mp, o, 2 * mp.p, [](const Distributed&) {});
      const double fp32_gathered = dp_bytes(comms, bench::CommKind::AllGather);
      const double fp32_scattered = dp_bytes(comms, bench::CommKind::ReduceScatter), fp32_peak = timing.gathered_peak;
      o.precision = kernels::Precision::bf16;
      const Distributed r = run(mp, o, 2 * mp.p, [](const Distributed&) {});
      const double gathered = dp_bytes(comms, bench::CommKind::AllGather);
      EXPECT_GT(gathered, 0);
      EXPECT_EQ(2 * gathered, fp32_gathered);
      EXPECT_EQ(dp_bytes(comms, bench::CommKind::ReduceScatter), fp32_scattered);
      const int me = r.pp->rank();
      const analysis::GatherPlan plan = analysis::gather_plan(r.schedule, me, true);
      std::map<int, double> padded;  // per stage: the padded values of its buckets
      for (int st : r.schedule.stages_of_rank(me))
        for (const auto& z : kernels::zero_shards(r.work->grad_bytes(st) / 4, 2, mp.d, r.me.dp))
          padded[st] += static_cast<double>(z.shard * static_cast<std::size_t>(mp.d));
      double want = 0;
      if (zero == 1)
        for (const auto& [st, n] : padded) want += 2 * n;
      else
        for (const auto& g : plan.gather_before)
          for (int st : g) want += 2 * padded.at(st);
      EXPECT_EQ(gathered, want);
      EXPECT_EQ(2 * timing.gathered_peak, fp32_peak);
      if (zero == 3) {
        EXPECT_GT(timing.gathered_peak, 0);
        o.comms = nullptr;
        const double loss = half_run(mp, o, 2 * mp.p).loss;
        o.drop_dp_gather = 1;
        EXPECT_NE(half_run(mp, o, 2 * mp.p).loss, loss) << "a 16-bit gather dropped";
      }
    }
}

// --grad-reduce-dtype bf16: the gradients' reduction moves half the bytes of fp32's and rounds its sums
// to bfloat16 (the weights after the steps differ from the fp32 reduction's); with two replicas each sum
// is one rounding of a + b, so every ZeRO stage still ends with bitwise the same weights.
TEST(Parallel3d, Bf16GradientReductionHalvesTheBytesAndRoundsTheSums) {
  for (const auto& mp : zero_mappings()) {
    if (mp.d != 2) continue;
    SCOPED_TRACE(name_of(mp));
    auto dp_bytes = [](const std::vector<bench::CommRecord>& comms) {
      std::int64_t b = 0;
      for (const auto& c : comms)
        if (c.group == bench::CommGroup::dp && c.kind != bench::CommKind::AllGather) b += c.bytes;
      return b;
    };
    Options o = zero_options(0, "1f1b");
    o.precision = kernels::Precision::bf16;
    o.buckets = 2;
    std::vector<bench::CommRecord> comms;
    o.comms = &comms;
    const HalfRun fp32 = half_run(mp, o, 2 * mp.p);
    const std::int64_t fp32_bytes = dp_bytes(comms);
    EXPECT_GT(fp32_bytes, 0);
    o.grad_reduce_bf16 = true;
    const HalfRun base = half_run(mp, o, 2 * mp.p);
    EXPECT_EQ(2 * dp_bytes(comms), fp32_bytes);
    EXPECT_NE(base.shards, fp32.shards) << "the bfloat16 reduction rounded nothing";
    for (int zero : {1, 2, 3}) {
      o.zero = zero;
      const HalfRun z = half_run(mp, o, 2 * mp.p);
      EXPECT_EQ(z.shards, base.shards) << "zero-" << zero;
      EXPECT_EQ(z.loss, base.loss) << "zero-" << zero;
    }
  }
}

// A bf16 step against the fp64 whole model: with d replicas and no pipeline split (no 16-bit message),
// the loss differs only through the weights' rounding, |w' - w| <= u |w| with u = 2^-8 (bfloat16's 8
// significant bits, round to nearest), so to first order |L' - L| <= u sum_i |dL/dw_i| |w_i|
// (docs/transformer.md); asserted with a factor 2 for the second order and fp32's own error. The bound
// is a worst case: the measured difference is some hundred times below it.
TEST(Parallel3d, Bf16LossIsWithinTheRoundingBoundOfTheWholeModel) {
  for (const auto& mp : zero_mappings()) {
    if (mp.p != 1) continue;
    SCOPED_TRACE(name_of(mp));
    Options o;  // SGD at lr 0: the reference's weights are the initial ones
    o.precision = kernels::Precision::bf16;
    const HalfRun h = half_run(mp, o, 2);
    Options ref_options;
    const Distributed r = run(mp, ref_options, 2, [](const Distributed&) {});
    const Reference ref = whole_model(r.config, mp.d * 2, ref_options);
    double sensitivity = 0;
    for (std::size_t i = 0; i < ref.grads.size(); ++i) sensitivity += std::abs(ref.grads[i] * ref.weights[i]);
    const double bound = 2 * std::ldexp(1.0, -8) * sensitivity;
    // Not fp32's difference (about 1e-8 here, below 2^-20 relative): bf16's rounding is there.
    EXPECT_GT(std::abs(h.loss - ref.loss), std::ldexp(std::abs(ref.loss), -20)) << "bf16 changed nothing";
    EXPECT_LE(std::abs(h.loss - ref.loss), bound) << "bound " << bound;
  }
}

// fp16: an overflow on one rank skips the step on every rank and halves the scale; the skipped step
// leaves no trace (Adam's count included), so 3 steps with one skipped equal 2 steps (the same batch).
TEST(Parallel3d, Fp16OverflowSkipsTheStepOnEveryRank) {
  for (const auto& mp : zero_mappings()) {
    SCOPED_TRACE(name_of(mp));
    Options o = zero_options(0, "1f1b");
    o.precision = kernels::Precision::fp16;
    o.steps = 2;
    const HalfRun two = half_run(mp, o, 2 * mp.p);
    o.steps = 3;
    o.overflow_rank = world_size() - 1;
    o.overflow_step = 1;
    const HalfRun skipped = half_run(mp, o, 2 * mp.p);
    EXPECT_EQ(figure(skipped, kernels::Workload::FigureKind::skipped_steps), 1);
    EXPECT_EQ(figure(skipped, kernels::Workload::FigureKind::loss_scale), 32768);
    EXPECT_EQ(figure(two, kernels::Workload::FigureKind::loss_scale), 65536);
    EXPECT_EQ(skipped.weights, two.weights);
    EXPECT_FALSE(two.weights.empty());
    EXPECT_EQ(skipped.loss, two.loss);
  }
}

// Issue 24's figure: a bf16 run against the fp32 run of the same model over 50 Adam steps (lr 1e-2, the
// same global batch every step, so the loss falls as the model learns it). Printed as a curve; asserted:
// both learn (the last loss under half the first), bf16 differs from fp32 (its rounding is there) and stays
// within 10 % of it at every step (a bound from the runs, not derived: 0.5 % on 1x1x2 and 2x1x2, 6.2 % on
// 1x1x4 at step 24, where the two trajectories cross a bump of the loss; docs/transformer.md).
TEST(Parallel3d, Bf16LossCurveFollowsFp32OverFiftyAdamSteps) {
  for (const auto& mp : zero_mappings()) {
    if (mp.p != 1) continue;
    SCOPED_TRACE(name_of(mp));
    auto curve = [&](kernels::Precision precision) {
      Options o = zero_options(mp.d > 1 ? 1 : 0, "1f1b");
      o.lr = 1e-2;
      o.steps = 50;
      o.precision = precision;
      std::vector<double> loss;
      run(mp, o, 2, [&](const Distributed& r) { loss.push_back(pipebench::testing::loss_sums(*r.work, r.me.tp).mean()); });
      return loss;
    };
    const std::vector<double> fp32 = curve(kernels::Precision::fp32), bf16 = curve(kernels::Precision::bf16);
    ASSERT_EQ(fp32.size(), 50u);
    ASSERT_EQ(bf16.size(), 50u);
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k < fp32.size(); ++k) {
      const double rel = std::abs(bf16[k] - fp32[k]) / fp32[k];
      if (rel > worst) worst = rel, at = k;
    }
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 0) {
      std::printf("# %s loss by step (fp32 / bf16):", name_of(mp).c_str());
      for (std::size_t k = 0; k + 1 < fp32.size(); k += 7) std::printf(" %zu:%.4f/%.4f", k + 1, fp32[k], bf16[k]);
      std::printf(" 50:%.4f/%.4f; largest relative difference %.3g at step %zu\n", fp32.back(), bf16.back(), worst,
                  at + 1);
    }
    EXPECT_LT(fp32.back(), fp32.front() / 2);
    EXPECT_LT(bf16.back(), bf16.front() / 2);
    EXPECT_GT(worst, 0.0) << "bf16 changed nothing";
    EXPECT_LT(worst, 0.10);
  }
}
