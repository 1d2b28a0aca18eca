// 16-bit activations (docs/transformer.md "16-bit training state"): in a bf16 run the activation memory
// each rank holds at its peak, measured from the views its stages hold, is the 16-bit formula that the
// run prints beside it (2-byte values, the per-row statistics and the logits gradient in fp32), in every
// recompute mode, pipeline-, tensor- (with and without sequence parallelism), data- and
// context-parallel; and the formula is the closed form of docs/transformer.md.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "analysis/recompute.hpp"
#include "bench/run/configuration.hpp"
#include "bench/run/job.hpp"
#include "kernels/transformer_workload.hpp"
#include "world.hpp"

using namespace pipebench;
using namespace pipebench::bench;
using pipebench::testing::world_size;

namespace {

RunSettings tiny_bf16() {
  RunSettings c;
  c.workload = WorkloadKind::transformer;
  c.warmup = 0;
  c.steps = 1;
  c.timeout = seconds(30);
  c.model.hidden = 16;
  c.model.heads = 4;
  c.model.seq = 8;
  c.model.micro_batch = 1;
  c.model.vocab = 32;
  c.model.layers = 2 * world_size();
  c.precision = kernels::Precision::bf16;
  kernels::set_precision(c.model, c.precision);
  return c;
}

std::optional<Measurement> run_one(RunSettings c, const std::string& schedule, Mapping mp, comm::Communicator& world) {
  c.schedules = {schedule};
  c.mappings = {mp};
  c.microbatches = {2 * mp.p};
  auto plans = plan_sweep(c, world_size());
  EXPECT_EQ(plans.size(), 1u);
  comm::Roll roll(world, host_name());
  SweepComms sweep(c, {plans.at(0)}, world, roll);
  start_configuration(sweep, plans.at(0), false);
  return run_configuration(c, plans.at(0), sweep);
}

// Every rank's measured peak equals the formula's, and the formula is the 16-bit one (less than fp32's).
void expect_peaks_are_the_formula(const RunSettings& c, const std::string& schedule, Mapping mp, comm::Communicator& world) {
  const auto o = run_one(c, schedule, mp, world);
  if (world.rank() != 0) return;
  ASSERT_TRUE(o);
  for (const auto& rs : o->run.ranks) {
    EXPECT_GT(rs.peak_activation_bytes, 0) << "rank " << rs.global_rank;
    EXPECT_EQ(rs.peak_activation_bytes, rs.predicted_activation_bytes) << "rank " << rs.global_rank;
  }
}

}  // namespace

// Context-parallel (the whole world one cp group), the log-sum-exp per query row and head stays fp32.
// One test: Kokkos starts once per process.
TEST(Bf16Activations, MeasuredPeakIsTheSixteenBitFormula) {
  const int n = world_size();
  const kernels::KokkosSession kokkos(1);
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  const std::vector<Mapping> mappings = {{1, n, 1}, {n, 1, 1}, {1, 1, n}};
  for (const Mapping& mp : mappings)
    for (const char* schedule : {"1f1b", "zb-h1"}) {
      if (mp.p == 1 && std::string(schedule) != "1f1b") continue;
      for (bool sp : {false, true}) {
        if (sp && mp.t == 1) continue;
        for (auto r : {kernels::Recompute::none, kernels::Recompute::selective, kernels::Recompute::full}) {
          SCOPED_TRACE(std::to_string(mp.t) + "x" + std::to_string(mp.p) + "x" + std::to_string(mp.d) + " " + schedule +
                       (sp ? " sequence-parallel" : "") + " recompute " + analysis::recompute_name(r));
          RunSettings c = tiny_bf16();
          c.model.recompute = r;
          c.model.sequence_parallel = sp;
          c.model.vocab_parallel = mp.t > 1;
          expect_peaks_are_the_formula(c, schedule, mp, *world);
        }
      }
    }
  for (auto r : {kernels::Recompute::none, kernels::Recompute::full}) {
    SCOPED_TRACE(std::string("cp ") + std::to_string(n) + " recompute " + analysis::recompute_name(r));
    RunSettings c = tiny_bf16();
    c.cp = n;
    c.model.seq = 8 * n;
    c.model.recompute = r;
    expect_peaks_are_the_formula(c, "1f1b", {1, 1, 1}, *world);
  }
}

// The formula itself, one layer, t = 1, from docs/transformer.md: F to I s b h (8 + 24 + 2 a s/h) + 8 s b
// without recomputation, s b h (8 + 24) + 8 s b selective, 2 s b h full; I to W 40 s b h.
TEST(Bf16Activations, LayerFormulaIsTheClosedForm) {
  kernels::TransformerConfig c = kernels::TransformerConfig::whole_model(64, 4, 32, 2, 128, 1);
  c.stash16 = kernels::Half::bf16;
  const double s = c.seq, b = c.micro_batch, h = c.hidden, a = c.heads;
  const double none = s * b * h * (8 + 24 + 2 * a * s / h) + 8 * s * b, selective = s * b * h * (8 + 24) + 8 * s * b;
  const std::pair<kernels::Recompute, double> rows[] = {
      {kernels::Recompute::none, none}, {kernels::Recompute::selective, selective}, {kernels::Recompute::full, 2 * s * b * h}};
  for (const auto& [r, forward] : rows) {
    c.recompute = r;
    const kernels::StageMemory m = kernels::estimate_memory(c, 4);
    EXPECT_EQ(static_cast<double>(m.layer_forward_stash), forward) << analysis::recompute_name(r);
    EXPECT_EQ(static_cast<double>(m.layer_weight_stash), 40 * s * b * h) << analysis::recompute_name(r);
  }
}
