// --layers-per-stage auto: the split chosen from given per-layer, embedding and head costs
// (kernels::balance_layers, deterministic), which costs stage_layers uses (--balance), and the
// calibration step that measures them.
#include <gtest/gtest.h>

#include "analysis/error.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::kernels {
namespace {

using Split = std::vector<int>;

TEST(Balance, SplitMinimisesTheSlowestStage) {
  // A head worth 9.8 layers (h = 256, V = 32768 by FLOPs): the last stage keeps one layer.
  EXPECT_EQ(balance_layers(8, 4, 1, 0, 9.8), (Split{2, 3, 2, 1}));
  // An embedding worth 2.5 layers too: the first stage gives one up as well.
  EXPECT_EQ(balance_layers(8, 4, 1, 2.5, 9.8), (Split{1, 3, 3, 1}));
  // Costs that leave the even split best keep it.
  EXPECT_EQ(balance_layers(8, 4, 1, 0.1, 0.5), (Split{2, 2, 2, 2}));
  // Only the ratios matter (milliseconds or FLOPs).
  EXPECT_EQ(balance_layers(8, 4, 2e-3, 5e-3, 19.6e-3), (Split{1, 3, 3, 1}));
  // Two stages: the first takes the layers the head's cost leaves it (3 + 0 against 2 + 2).
  EXPECT_EQ(balance_layers(5, 2, 1, 0, 2), (Split{3, 2}));
  EXPECT_EQ(balance_layers(12, 2, 1, 0, 6), (Split{9, 3}));
  EXPECT_EQ(balance_layers(7, 1, 1, 3, 3), (Split{7}));
  // Every stage keeps at least one layer, whatever the head costs.
  EXPECT_EQ(balance_layers(4, 4, 1, 0, 100), (Split{1, 1, 1, 1}));
  EXPECT_THROW(balance_layers(3, 4, 1, 0, 0), UsageError);
}

TransformerWorkloadConfig big_vocabulary() {
  TransformerWorkloadConfig c;
  c.hidden = 256;
  c.heads = 8;
  c.seq = 128;
  c.vocab = 32768;
  c.layers = 8;
  c.layers_auto = true;
  return c;
}

TEST(Balance, StageLayersUsesMeasuredCostsOrFlops) {
  TransformerWorkloadConfig c = big_vocabulary();
  // No calibration for this tensor-parallel size: FLOPs (the head is 9.8 layers).
  EXPECT_EQ(stage_layers(c, 4), (Split{2, 3, 2, 1}));
  // Measured: a head as cheap as a layer and an expensive embedding.
  c.measured_costs[1] = {1e-3, 3e-3, 1e-3};
  EXPECT_EQ(stage_layers(c, 4), (Split{1, 3, 3, 1}));  // 4 3 3 2: the first stage gives up a layer
  c.measured_costs.clear();
  c.measured_costs[2] = {1e-3, 3e-3, 1e-3};  // another t: not this model's
  EXPECT_EQ(stage_layers(c, 4), (Split{2, 3, 2, 1}));
  c.measured_costs[1] = {1e-3, 3e-3, 1e-3};
  c.balance = Balance::flops;  // measured costs are ignored
  EXPECT_EQ(stage_layers(c, 4), (Split{2, 3, 2, 1}));
  // A head stage of its own: the head's cost is off the layers' stages.
  c.balance = Balance::measured;
  c.head_stage = true;
  EXPECT_EQ(stage_layers(c, 4), (Split{1, 4, 3, 0}));  // 4 4 3
}

TEST(Balance, CalibrationMeasuresEveryPart) {
  TransformerWorkloadConfig c;
  c.hidden = 16;
  c.heads = 2;
  c.seq = 8;
  c.vocab = 64;
  c.layers = 4;
  const StageCosts k = measure_stage_costs(c, 3);
  EXPECT_GT(k.layer, 0);
  EXPECT_GT(k.embedding, 0);
  EXPECT_GT(k.head, 0);
}

}  // namespace
}  // namespace pipebench::kernels
