// A model pipelined over the ranks, under every schedule, computes the same loss and the same weight
// gradients as the whole model on one rank.
//
// Tolerance: 1e-10 relative to the largest gradient, in double precision. The pipelined run performs
// the same operations on the same data; only the order in which micro-batch gradients are accumulated
// (and, for DualPipe, the sum of the two model copies' gradients) differs between schedules, which
// perturbs results at the level of m * 1e-16.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/catalog.hpp"
#include "bench/run/executor.hpp"
#include "comm/factory.hpp"
#include "kernels/transformer_stage.hpp"
#include "kernels/transformer_workload.hpp"
#include "kokkos_env.hpp"

using namespace pipebench;
using pipebench::testing::world_size;

namespace {

struct Reference {
  std::map<std::string, std::vector<double>> grads;  // by parameter name
  double loss = 0;
};

// The whole model on this rank: every micro-batch's F and B, gradients accumulated.
Reference whole_model(const kernels::TransformerWorkloadConfig& c, int m) {
  kernels::TransformerConfig t = kernels::TransformerConfig::whole_model(c.hidden, c.heads, c.seq, c.micro_batch, c.vocab, c.layers);
  t.seed = c.seed;
  kernels::TransformerStage<double> model(t);
  Reference ref;
  for (int mb = 0; mb < m; ++mb) {
    model.forward(mb);
    ref.loss += model.loss(mb) / m;
    model.backward(mb);
  }
  for (const auto& p : model.parameters())
    ref.grads[p.name].assign(model.gradients().data() + p.offset, model.gradients().data() + p.offset + p.size());
  return ref;
}

}  // namespace

TEST(TransformerPipeline, EveryScheduleMatchesTheWholeModel) {
  const int p = world_size();
  const int m = 2 * p;
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  auto pp = comm::make_communicator("mpi", MPI_COMM_WORLD, "pp");
  for (const auto& info : analysis::schedule_catalog()) {
    if (info.name == "dualpipe" && p % 2) continue;
    SCOPED_TRACE(info.name);
    const analysis::Schedule s = analysis::make_schedule({info.name, p, m});
    kernels::TransformerWorkloadConfig c;
    c.hidden = 16;
    c.heads = 2;
    c.seq = 8;
    c.micro_batch = 2;
    c.vocab = 32;
    c.layers = s.stages_per_pipe() + 1;  // an uneven split: one stage gets two layers
    c.seed = 7;
    c.fp64 = true;
    auto work = kernels::make_transformer_workload(c, s, pp->rank(), {});
    bench::Executor exec(s, *pp, nullptr, nullptr, *world, *work);
    exec.run_step(0, nullptr, nullptr);

    // Gradients of every stage, summed over ranks in the whole model's layout. DualPipe's two copies
    // each hold the sum of both after the step (Executor::sync_copies): copy 0's are counted.
    const Reference ref = whole_model(c, m);
    std::map<std::string, std::size_t> offset;
    std::size_t total = 0;
    for (const auto& [name, g] : ref.grads) {
      offset[name] = total;
      total += g.size();
    }
    std::vector<double> mine(total, 0.0), all(total, 0.0);
    const auto split = kernels::split_layers(c.layers, s.stages_per_pipe(), {});
    for (int st : s.stages_of_rank(pp->rank())) {
      if (s.pipe_of_stage(st) > 0) continue;
      const auto params = kernels::parameter_table(kernels::stage_config(c, split, s.depth_of_stage(st)));
      const auto* g = static_cast<const double*>(work->grad_data(st));
      for (const auto& prm : params)
        for (std::size_t i = 0; i < prm.size(); ++i) mine[offset.at(prm.name) + i] += g[prm.offset + i];
    }
    MPI_Allreduce(mine.data(), all.data(), static_cast<int>(total), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double loss[2] = {0, 0}, loss_all[2] = {0, 0};
    for (const auto& f : work->step_figures()) {
      if (f.kind == kernels::Workload::FigureKind::loss_sum) loss[0] += f.value;
      if (f.kind == kernels::Workload::FigureKind::loss_count) loss[1] += f.value;
    }
    MPI_Allreduce(loss, loss_all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    EXPECT_EQ(loss_all[1], m);
    EXPECT_NEAR(loss_all[0] / loss_all[1], ref.loss, 1e-12 * std::abs(ref.loss));
    double scale = 0;
    for (const auto& [name, g] : ref.grads)
      for (double x : g) scale = std::max(scale, std::abs(x));
    ASSERT_GT(scale, 0);
    for (const auto& [name, g] : ref.grads) {
      double worst = 0;
      for (std::size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(all[offset.at(name) + i] - g[i]));
      EXPECT_LE(worst, 1e-10 * scale) << name;
    }
  }
}
