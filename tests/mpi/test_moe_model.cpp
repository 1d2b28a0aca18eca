// The MoE transformer (kernels/moe_stage.hpp) on real ranks against the whole model on one rank holding
// every expert (whole_model.hpp), fp64, 1e-10 relative to the largest value: the loss, the aux loss,
// the dropped routes, every gradient of every rank's parameters (its routed experts at their global
// index) and the weights after 3 Adam steps, for expert parallelism over the data-parallel replicas
// under several schedules (1F1B, interleaved, ZB-H1, DualPipeV, DualPipe), dropless and with a capacity
// factor, softmax and sigmoid routers, shared experts, dense and MoE layers alternating, and full
// recomputation; DualPipe(V) with the expert overlap on (their pairs' passes take turns at each
// exchange, kernels/interleave.hpp: the records must show one micro-batch's exchange in flight while
// the other's is posted) and off (none may). A combine that loses one token's row, or an expert
// gradient reduction that leaves out half the experts' values, must not match; an exchange never
// waited for stops the step.
//
// Run on 2, 4 and 8 ranks: 1x1x2 ep2 on 2; 1x2x2 ep2, 1x1x4 ep4, 1x1x4 ep2 (expert-data-parallel 2)
// and 2x1x2 ep2 on 4; 2x2x2 ep2 on 8 (t x p x d). With t = 2 the experts are tensor-parallel under
// sequence parallelism (kernels/moe.hpp), each rank's slices compared at their place in the whole.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "bench/run/executor.hpp"
#include "bench/run/plan.hpp"
#include "bench/run/zero_formula.hpp"
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
  int t, p, d, ep;
};

std::vector<Layout> layouts_of_this_world() {
  const std::vector<Layout> all = {{1, 1, 2, 2}, {1, 2, 2, 2}, {1, 1, 4, 4}, {1, 1, 4, 2}, {2, 1, 2, 2}, {2, 2, 2, 2}};
  std::vector<Layout> out;
  for (const auto& l : all)
    if (l.t * l.p * l.d == world_size()) out.push_back(l);
  return out;
}

std::string name_of(const Layout& l) {
  return std::to_string(l.t) + "x" + std::to_string(l.p) + "x" + std::to_string(l.d) + " ep" + std::to_string(l.ep);
}

struct Options {
  std::string schedule = "1f1b";
  kernels::Optimizer optimizer = kernels::Optimizer::adam;
  double lr = 1e-2, weight_decay = 0.1;
  bool tie = false;
  int steps = 3;
  double capacity = 0;
  analysis::transformer::Router router = analysis::transformer::Router::softmax;
  kernels::Recompute recompute = kernels::Recompute::none;
  bool lose_combine = false, half_expert_reduce = false;  // the broken runs
  bool skip_wait = false;  // broken: every rank's first combine is never waited for
  bool ep_overlap = true;  // DualPipe(V)'s pairs interleave their passes (kernels/interleave.hpp)
  int moe_every = 2;       // 1: every layer MoE, so both passes of a pair exchange
  // ZeRO (bench/run/executor_zero.cpp): the dense buckets sharded over dp, the routed experts' over
  // expert-dp; the drop hooks of ExecutorConfig (-1: none).
  int zero = 0, buckets = 0;
  bool reshard_after_forward = true, prefetch = true;
  int drop_gather = -1, drop_scatter = -1, drop_expert_gather = -1, drop_expert_scatter = -1;
};

kernels::TransformerWorkloadConfig tiny_model(const Layout& l, const Options& o) {
  kernels::TransformerWorkloadConfig c;
  c.hidden = 8;
  c.heads = 2;
  c.seq = 8;
  c.micro_batch = 1;
  c.vocab = 16;
  c.layers = 2 * l.p;  // layers 0, 2, ... MoE (--moe-every 2), the others dense
  c.seed = 11;
  c.fp64 = true;
  c.optimizer = o.optimizer;
  c.lr = o.lr;
  c.weight_decay = o.weight_decay;
  c.recompute = o.recompute;
  c.moe.experts = 4;
  c.moe.top_k = 2;
  c.moe.expert_ffn = 12;
  c.moe.shared_experts = 1;
  c.moe.moe_every = o.moe_every;
  c.moe.router = o.router;
  c.moe.capacity_factor = o.capacity;
  c.moe.aux_loss_coeff = 0.1;
  c.ep_size = l.ep;
  c.ep_overlap = o.ep_overlap;
  return c;
}

struct Distributed {
  topology::Coords me;
  analysis::Schedule schedule;
  kernels::TransformerWorkloadConfig config;
  std::unique_ptr<kernels::Workload> work;
  std::unique_ptr<comm::Communicator> pp;
  std::vector<bench::CommRecord> comms;  // the last step's
  kernels::ZeroGroups groups;            // this rank's dp and expert-dp sizes and ranks
  bench::StepTiming timing;              // the last step's
};

Distributed run(const Layout& l, const Options& o, int m) {
  const topology::Grid grid(topology::Sizes{l.t, 1, l.p, l.d, l.ep});
  using topology::GroupKind;
  topology::MpiGrid mg(grid, MPI_COMM_WORLD,
                       {GroupKind::tp, GroupKind::pp, GroupKind::dp, GroupKind::ep, GroupKind::expert_dp});
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  Distributed r;
  r.me = mg.coords();
  r.pp = comm::make_communicator("mpi", mg.comm(GroupKind::pp).get(), "pp");
  auto dp = comm::make_communicator("mpi", mg.comm(GroupKind::dp).get(), "dp");
  std::unique_ptr<comm::Communicator> tp;
  if (l.t > 1) tp = comm::make_communicator("mpi", mg.comm(GroupKind::tp).get(), "tp");
  auto ep = comm::make_communicator("mpi", mg.comm(GroupKind::ep).get(), "ep");
  auto edp = comm::make_communicator("mpi", mg.comm(GroupKind::expert_dp).get(), "expert-dp");
  r.schedule = analysis::make_schedule({o.schedule, l.p, m});
  r.config = tiny_model(l, o);
  r.config.ep_rank = r.me.ep;
  r.config.tp_size = l.t;
  r.config.tp_rank = r.me.tp;
  r.config.sequence_parallel = l.t > 1;  // required with experts at t > 1
  r.config.mb_offset = r.me.dp * m;
  std::unique_ptr<bench::Executor> exec;
  kernels::EpOps ops;
  void* lost = nullptr;  // the receive of the combine that loses its first row (world rank 0, once)
  int lost_handle = -1, skipped = -1;
  bool lost_once = false;
  ops.post = [&](const void* s, const std::vector<std::size_t>& sb, void* rv, const std::vector<std::size_t>& rb, int st,
                 int mb, int kind) {
    const bool lose = o.lose_combine && !lost_once && !lost && kind == 1 && mg.rank() == 0 && rb[0] >= 8 * sizeof(double);
    if (o.skip_wait && kind == 1 && skipped < 0) {
      // Buffers that outlive the test: MPI may still move the exchange nobody completes.
      static std::vector<char> send, recv;
      send.assign(static_cast<const char*>(s), static_cast<const char*>(s) + std::accumulate(sb.begin(), sb.end(), 0ul));
      recv.resize(std::accumulate(rb.begin(), rb.end(), 0ul));
      return skipped = exec->ep_post(send.data(), sb, recv.data(), rb, st, mb, kind);
    }
    const int h = exec->ep_post(s, sb, rv, rb, st, mb, kind);
    if (lose) lost = rv, lost_handle = h;
    return h;
  };
  ops.wait = [&](int h) {
    if (h == skipped) return;  // the broken run: posted, never waited for
    exec->ep_wait(h);
    if (lost && h == lost_handle) std::fill_n(static_cast<double*>(lost), 8, 0.0), lost = nullptr, lost_once = true;
  };
  const kernels::TpAllReduce all_reduce = [&exec](void* data, std::size_t n, int e) {
    exec->tp_allreduce(data, n, e);
  };
  kernels::TpSequenceOps seq;
  seq.all_gather = [&exec](const void* send, void* recv, std::size_t n, int e) {
    exec->tp_allgather(send, recv, n, e);
  };
  seq.reduce_scatter = [&exec](const void* send, void* recv, std::size_t n, int e) {
    exec->tp_reduce_scatter(send, recv, n, e);
  };
  r.work = kernels::make_transformer_workload(r.config, r.schedule, r.pp->rank(), all_reduce, seq, {}, ops);
  bench::ExecutorConfig ec;
  ec.ep = ep.get();
  ec.expert_dp = edp->size() > 1 ? edp.get() : nullptr;
  ec.test_half_expert_reduce = o.half_expert_reduce;
  ec.zero = o.zero;
  ec.dp_buckets = o.buckets;
  ec.reshard_after_forward = o.reshard_after_forward;
  ec.prefetch = o.prefetch;
  ec.test_drop_gather = o.drop_gather;
  ec.test_drop_reduce_scatter = o.drop_scatter;
  ec.test_drop_expert_gather = o.drop_expert_gather;
  ec.test_drop_expert_reduce_scatter = o.drop_expert_scatter;
  r.groups = {dp->size(), dp->rank(), edp->size(), edp->rank()};
  exec = std::make_unique<bench::Executor>(r.schedule, *r.pp, tp.get(), dp.get(), *world, *r.work, ec);
  for (int k = 0; k < o.steps; ++k) r.timing = exec->run_step(k, nullptr, k + 1 == o.steps ? &r.comms : nullptr);
  return r;
}

// The expert exchanges of `comms` during which an exchange of another (stage, micro-batch) was posted:
// DualPipe's pair computing one micro-batch while the other's is in flight. Each was waited for after
// its post (a record is noted at its wait).
double interleaved_exchanges(const std::vector<bench::CommRecord>& comms) {
  double n = 0;
  for (const auto& r : comms) {
    if (r.group != bench::CommGroup::ep) continue;
    EXPECT_LE(r.t_posted, r.t_wait);
    bool any = false;
    for (const auto& q : comms)
      any = any || (q.group == bench::CommGroup::ep && (q.mb != r.mb || q.stage != r.stage) && q.t_posted > r.t_posted &&
                    q.t_posted < r.t_wait);
    n += any;
  }
  return n;
}

double sum_over_ranks(double x) {
  double all = 0;
  MPI_Allreduce(&x, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

// Whether every rank's gradients, weights, the loss, the aux loss and the dropped routes equal the
// whole model's; with `expect`, each mismatch is also a failure.
bool matches(const Layout& l, const Options& o, int m, bool expect = true) {
  const Distributed r = run(l, o, m);
  const Reference ref = whole_model(r.config, l.d * m, o);
  const analysis::Schedule& s = r.schedule;
  const auto split = kernels::stage_layers(r.config, s.stages_per_pipe());
  double worst_g = 0, worst_w = 0;
  std::string where;
  for (int st : s.stages_of_rank(r.pp->rank())) {
    const auto table = kernels::parameter_table(kernels::stage_config(r.config, split, s.depth_of_stage(st)));
    // What the rank holds (Workload::copy_state): under ZeRO its gradients are summed in its shards only
    // (the dense ones of dp, the routed experts' of expert-dp), and ZeRO-3 keeps the weights of its shards.
    const std::size_t count = r.work->grad_bytes(st) / sizeof(double);
    std::vector<double> g(count), w(count);
    r.work->copy_state(st, g.data(), w.data());
    std::vector<bool> mine(count, o.zero == 0);
    std::size_t first = count, n = 0;
    if (!r.work->expert_grads(st, first, n)) first = count;
    if (o.zero)
      for (const auto& z : kernels::stage_zero_shards(count, first, std::max(o.buckets, 1), r.groups))
        for (std::size_t i = z.lo; i < z.hi; ++i) mine[i] = true;
    for (const auto& prm : table)
      for (std::size_t i = 0; i < prm.size(); ++i) {  // the names carry the experts' global indices
        const std::size_t gi = ref.offset.at(prm.name) + global_index(prm, l.t, r.me.tp, i);
        const std::size_t k = prm.offset + i;
        const double dg = std::abs(g[k] - ref.grads[gi]), dw = std::abs(w[k] - ref.weights[gi]);
        if (mine[k] && !(dg <= worst_g)) worst_g = dg, where = prm.name;
        if ((o.zero < 3 || mine[k]) && !(dw <= worst_w)) worst_w = dw, where = prm.name;
      }
  }
  double loss = 0, count = 0, aux = 0, dropped = 0;
  // A tp group's ranks each hold the whole micro-batch's loss, aux loss and drops: tp rank 0's count.
  for (const auto& f : r.work->step_figures()) {
    if (r.me.tp != 0) break;
    using K = kernels::Workload::FigureKind;
    if (f.kind == K::loss_sum) loss += f.value;
    if (f.kind == K::loss_count) count += f.value;
    if (f.kind == K::moe_aux_loss_sum) aux += f.value;
    if (f.kind == K::moe_dropped_tokens) dropped += f.value;
  }
  loss = sum_over_ranks(loss), count = sum_over_ranks(count), aux = sum_over_ranks(aux), dropped = sum_over_ranks(dropped);
  const bool figures_ok = std::abs(loss / count - ref.loss) <= 1e-10 * std::abs(ref.loss) &&
                          std::abs(aux / count - ref.aux) <= 1e-10 * std::abs(ref.aux) &&
                          dropped == static_cast<double>(ref.dropped);
  int ok = worst_g <= 1e-10 * ref.grad_scale && worst_w <= 1e-10 * ref.weight_scale && figures_ok, every = 0;
  MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (expect) {
    EXPECT_GT(ref.grad_scale, 0);
    EXPECT_GT(ref.aux, 0);
    EXPECT_LE(worst_g, 1e-10 * ref.grad_scale) << "gradient of " << where << " on pp " << r.me.pp << " dp " << r.me.dp;
    EXPECT_LE(worst_w, 1e-10 * ref.weight_scale);
    EXPECT_EQ(count, static_cast<double>(l.d * m));
    EXPECT_NEAR(loss / count, ref.loss, 1e-10 * std::abs(ref.loss));
    EXPECT_NEAR(aux / count, ref.aux, 1e-10 * std::abs(ref.aux));
    EXPECT_EQ(dropped, static_cast<double>(ref.dropped));
    if (o.capacity > 0) {
      EXPECT_GT(ref.dropped, 0) << "the capacity factor drops nothing: the case tests nothing";
    }
    double exchanges = 0;  // a pipeline rank may hold dense layers only
    for (const auto& c : r.comms) exchanges += c.group == bench::CommGroup::ep;
    EXPECT_GT(sum_over_ranks(exchanges), 0) << "no expert all-to-all in the records";
    const double interleaved = sum_over_ranks(interleaved_exchanges(r.comms));
    if (o.ep_overlap && o.schedule.rfind("dualpipe", 0) == 0) {
      if (o.moe_every == 1) {  // else a pair may hold one MoE pass, whose partner computes unseen here
        EXPECT_GT(interleaved, 0) << "no exchange of a pair was in flight while the other micro-batch posted one";
      }
    } else {
      EXPECT_EQ(interleaved, 0) << "an exchange was still in flight when another was posted";
    }
  }
  return every == 1;
}

}  // namespace

TEST(MoeModel, AdamStepsMatchTheWholeModelDroplessAndWithCapacity) {
  const auto layouts = layouts_of_this_world();
  for (const auto& l : layouts)
    for (double capacity : {0.0, 1.0}) {
      if (capacity == 0 && &l != &layouts.front() && l.t == 1) continue;  // dropless once per world size: time
      SCOPED_TRACE(name_of(l) + " capacity " + std::to_string(capacity));
      Options o;
      o.capacity = capacity;
      matches(l, o, 2 * l.p);
    }
}

// Sigmoid router with full recomputation (the exchanges run again inside I) and split backward.
TEST(MoeModel, MatchesWithSigmoidRouterRecomputationAndSplitBackward) {
  for (const auto& l : layouts_of_this_world()) {
    SCOPED_TRACE(name_of(l));
    Options o;
    o.router = analysis::transformer::Router::sigmoid;
    o.recompute = kernels::Recompute::full;
    o.schedule = "zb-h1";
    o.capacity = 1.0;
    o.steps = 2;
    matches(l, o, 2 * l.p);
  }
}

// The pipelined layouts (p = 2) under the schedules whose action orders differ most: the exchanges sit
// inside a stage's F and I, so interleaved chunks, deferred W, V shapes and DualPipe's two copies must
// not change a bit of them.
TEST(MoeModel, MatchesTheWholeModelUnderPipelineSchedules) {
  for (const auto& l : layouts_of_this_world()) {
    if (l.p == 1) continue;
    for (const std::string& name : std::vector<std::string>{"interleaved", "zb-h1", "dualpipev", "dualpipe"}) {
      SCOPED_TRACE(name_of(l) + " " + name);
      // DualPipe(V)'s pairs with the overlap on and off, with MoE and dense layers alternating (one
      // pass of a pair may then exchange nothing) and with every layer MoE (both passes exchange).
      for (int every : {2, 1})
        for (bool overlap : {true, false}) {
          const bool pairs = name.rfind("dualpipe", 0) == 0;
          if ((!overlap || every == 1) && !pairs) continue;
          if (!overlap && every == 2) continue;
          SCOPED_TRACE(std::string(overlap ? "ep overlap on" : "ep overlap off") + ", moe every " + std::to_string(every));
          Options o;
          o.schedule = name;
          o.steps = 2;
          o.ep_overlap = overlap;
          o.moe_every = every;
          matches(l, o, name == "dualpipe" ? 2 * l.p : 4 * l.p);
        }
    }
  }
}

// Every exchange is waited for inside the action that posted it: one that never is stops the step on
// every rank (the executor's check), rather than leaving a receive buffer that nothing completed.
TEST(MoeModel, AnExchangeNeverWaitedForIsAnError) {
  for (const auto& l : layouts_of_this_world()) {
    if (l.p > 1) continue;  // every rank fails in its first action: no rank waits for a message
    SCOPED_TRACE(name_of(l));
    Options o;
    o.steps = 1;
    o.skip_wait = true;
    try {
      run(l, o, 2);
      ADD_FAILURE() << "the step ended with an exchange not waited for";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("but never waited for"), std::string::npos) << e.what();
    }
  }
}

TEST(MoeModel, ALostCombineRowOrAHalfReducedExpertGradientDoesNotMatch) {
  for (const auto& l : layouts_of_this_world()) {
    SCOPED_TRACE(name_of(l));
    Options lose;
    lose.steps = 1;
    lose.lose_combine = true;
    EXPECT_FALSE(matches(l, lose, 2 * l.p, false));
    if (l.d / l.ep == 1) continue;  // no expert-data-parallel group: nothing reduced
    Options half;
    half.steps = 1;
    half.half_expert_reduce = true;
    EXPECT_FALSE(matches(l, half, 2 * l.p, false));
  }
}

// ZeRO 1, 2 and 3 with experts (docs/transformer.md "ZeRO"): the dense buckets of a stage are sharded
// over the data-parallel group, the routed experts' over the expert-data-parallel group (whole on each
// rank where it is one rank: 1x1x2 ep2, 1x1x4 ep4), and each rank's shards equal the whole model after 3
// Adam steps, under 1F1B and ZB-H1 (split W), and with p = 2 interleaved 1F1B and DualPipeV, with and
// without buckets, ZeRO-3 with reshard after forward or kept until the backward, with or without prefetch.
namespace {
// Experts replicated (ep = 1): their gradients reduce over the whole data-parallel group.
std::vector<Layout> zero_layouts() {
  std::vector<Layout> out = layouts_of_this_world();
  if (world_size() == 2) out.push_back({1, 1, 2, 1});
  return out;
}
Options zero_options(int zero, const std::string& sched, int variant) {
  Options o;
  o.schedule = sched;
  o.lr = 1e-3;
  o.zero = zero;
  o.buckets = variant == 1 ? 2 : 0;
  o.reshard_after_forward = variant != 2;
  o.prefetch = variant != 1;
  return o;
}
}  // namespace

TEST(MoeModel, Zero123MatchTheWholeModelWithTheExpertsShardedOverExpertDp) {
  for (const auto& l : zero_layouts()) {
    std::vector<std::string> schedules{"1f1b", "zb-h1"};
    if (l.p > 1) schedules.insert(schedules.end(), {"interleaved", "dualpipev"});
    for (const std::string& sched : schedules)
      for (int zero : {1, 2, 3}) {
        const int variant = (zero + static_cast<int>(sched.size())) % 3;  // each layout sees every variant
        SCOPED_TRACE(name_of(l) + " " + sched + " zero-" + std::to_string(zero) + " variant " + std::to_string(variant));
        Options o = zero_options(zero, sched, variant);
        if (l.ep == 1) o.ep_overlap = false;
        const int m = sched == "dualpipev" ? 4 * l.p : 2 * l.p;
        if (l.ep > 1)
          matches(l, o, m);
        else  // no expert exchange to count: the figures alone
          EXPECT_TRUE(matches(l, o, m, false));
      }
  }
}

// Where the expert-data-parallel group has more than one rank (1x1x4 ep2), one expert bucket's
// reduce-scatter (ZeRO-2, 3) or one stage gather without its expert buckets (ZeRO-1's after the step,
// ZeRO-3's before an action) must not match; the same run without the drop does.
TEST(MoeModel, ZeroWithoutOneExpertGatherOrReduceScatterDoesNotMatch) {
  for (const auto& l : zero_layouts()) {
    if (l.d / l.ep < 2) continue;
    SCOPED_TRACE(name_of(l));
    for (int zero : {1, 2, 3}) {
      SCOPED_TRACE("zero-" + std::to_string(zero));
      Options o = zero_options(zero, "1f1b", 0);
      EXPECT_TRUE(matches(l, o, 2 * l.p, false));
      Options gather = o;
      gather.drop_expert_gather = zero == 3 ? 1 : 0;
      EXPECT_FALSE(matches(l, gather, 2 * l.p, false)) << "an expert gather dropped";
      Options scatter = o;
      scatter.drop_expert_scatter = 0;
      EXPECT_FALSE(matches(l, scatter, 2 * l.p, false)) << "an expert reduce-scatter dropped";
    }
  }
}

// What each rank holds after its steps (weights, gradients, Adam's state, measured from its
// allocations) is kernels::state_bytes at its dp and expert-dp ranks, and the busiest rank's is the
// run's state_formula; the data-parallel bytes per step of each kind (all-reduce, reduce-scatter,
// all-gather, the expert buckets' included) and ZeRO-3's most gathered bytes held, the largest over the
// ranks, are the run's zero_formula (bench/run/zero_formula.hpp), for ZeRO 0 to 3.
TEST(MoeModel, ZeroStateAndTrafficAreTheFormula) {
  using K = kernels::Workload::FigureKind;
  for (const auto& l : zero_layouts())
    for (int zero : {0, 1, 2, 3}) {
      SCOPED_TRACE(name_of(l) + " zero-" + std::to_string(zero));
      Options o = zero_options(zero, "1f1b", 1);
      o.steps = 2;
      if (l.ep == 1) o.ep_overlap = false;
      const Distributed r = run(l, o, 2 * l.p);
      std::map<K, double> got;
      for (const auto& f : r.work->step_figures()) got[f.kind] = f.value;
      const kernels::StateBytes want = kernels::state_bytes(r.config, r.schedule, r.pp->rank(), zero, 2, r.groups);
      EXPECT_EQ(got.at(K::weight_bytes), static_cast<double>(want.weights));
      EXPECT_EQ(got.at(K::gradient_bytes), static_cast<double>(want.gradients));
      EXPECT_EQ(got.at(K::optimizer_state_bytes), static_cast<double>(want.optimizer));
      bench::RunSettings rs;
      rs.workload = bench::WorkloadKind::transformer;
      rs.zero = zero;
      rs.dp_buckets = o.buckets;
      rs.ep = l.ep;
      rs.gather_prefetch = o.prefetch;
      bench::Plan pl;
      pl.mapping = {l.t, l.p, l.d};
      pl.schedule = r.schedule;
      pl.model = r.config;
      const kernels::StateBytes most = bench::state_formula(rs, pl);
      const bench::ZeroFormula f = bench::zero_formula(rs, pl);
      double mine[7] = {got.at(K::weight_bytes), got.at(K::gradient_bytes), got.at(K::optimizer_state_bytes), 0, 0, 0,
                        r.timing.gathered_peak};
      for (const auto& c : r.comms) {
        if (c.group != bench::CommGroup::dp) continue;
        const int k = c.kind == bench::CommKind::AllReduce ? 3 : c.kind == bench::CommKind::ReduceScatter ? 4 : 5;
        mine[k] += static_cast<double>(c.bytes);
      }
      double all[7];
      MPI_Allreduce(mine, all, 7, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      EXPECT_EQ(all[0], static_cast<double>(most.weights));
      EXPECT_EQ(all[1], static_cast<double>(most.gradients));
      EXPECT_EQ(all[2], static_cast<double>(most.optimizer));
      EXPECT_EQ(all[3], f.all_reduced);
      EXPECT_EQ(all[4], f.reduce_scattered);
      EXPECT_EQ(all[5], f.all_gathered);
      EXPECT_EQ(all[6], f.gathered_peak);
      if (zero == 0) {
        EXPECT_GT(f.all_reduced, 0);
      } else {
        EXPECT_GT(f.reduce_scattered, 0);
      }
    }
}
