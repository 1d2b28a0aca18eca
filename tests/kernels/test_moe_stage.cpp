// The MoE transformer stage (kernels/moe_stage.hpp) on one rank, in double precision: its parameters
// are the cost model's (stage_params with MoE layers every --moe-every), what its stash holds after F
// and after I is the memory formula at the micro-batch's routing (moe_layer_stash for an MoE layer, the
// dense layer's for the others) under every recomputation mode, and recomputation changes no bit of the
// loss, the aux loss and the gradients. A missing aux loss, router or expert gradient shows up in the
// finite-difference test of the layer (test_moe.cpp) and in the whole-model tests (test_moe_model.cpp).
#include "helpers.hpp"

#include "analysis/error.hpp"
#include "analysis/transformer/activations.hpp"
#include "analysis/transformer/params.hpp"
#include "kernels/transformer_stage.hpp"

namespace pipebench::kernels::test {
namespace {

namespace tf = analysis::transformer;
using StageD = TransformerStage<double>;

TransformerConfig moe_model(Recompute mode) {
  TransformerConfig c = TransformerConfig::whole_model(16, 2, 8, 2, 13, 3);  // layers 0 and 2 MoE
  c.experts = 4, c.top_k = 2, c.expert_ffn = 24, c.shared_experts = 1, c.moe_every = 2;
  c.capacity_factor = 1.0, c.aux_loss_coeff = 0.01;
  c.recompute = mode;
  return c;
}

struct Outcome {
  double loss = 0, aux = 0;
  long dropped = 0;
  std::vector<double> grads;
};

// Micro-batch 0 through F, I and W: the stash after F and after I is the formula's, with the balanced
// MoE layers replaced by those at the routing the stash holds (none before I under full recomputation,
// whose F keeps the layer input only), and nothing is left after W.
// `e`: the stage's value bytes (8 fp64, 4 fp32); a 16-bit stash (c.stash16) keeps 2-byte values.
template <class Stage>
void expect_stash_is_the_formula(Stage& st, const TransformerConfig& c, Recompute mode, std::uint64_t e = 8) {
  const tf::Split split = c.split();
  const StageMemory m = estimate_memory(c, e);
  const std::uint64_t v = c.stash16 != Half::none ? 2 : e;
  const tf::Stash balanced = tf::moe_layer_stash(c, split, mode, tf::balanced_moe_rows(c, split), v);
  auto formula = [&](bool after_i) {
    const auto rows = st.moe_rows(0);
    std::uint64_t b = after_i ? m.weight_stash : m.forward_stash;
    for (std::size_t i = 0; i < 2; ++i) {
      const tf::Stash at = i < rows.size() ? tf::moe_layer_stash(c, split, mode, rows[i], v) : balanced;
      b = b - (after_i ? balanced.weight : balanced.forward) + (after_i ? at.weight : at.forward);
    }
    return b;
  };
  st.forward(0);
  EXPECT_EQ(st.stash_bytes(0), formula(false));
  st.backward_input(0);
  EXPECT_EQ(st.moe_rows(0).size(), 2u);
  EXPECT_EQ(st.stash_bytes(0), formula(true));
  st.backward_weight(0);
  EXPECT_EQ(st.stash_bytes(0), 0u);
}

TEST(MoeStage, ParametersAndStashAreTheFormulaAndRecomputationChangesNothing) {
  Outcome none;
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    SCOPED_TRACE(analysis::recompute_name(mode));
    const TransformerConfig c = moe_model(mode);
    StageD st(c);
    EXPECT_EQ(st.parameter_count(), tf::stage_params(c, c.split(), c.parts()));
    expect_stash_is_the_formula(st, c, mode);
    st.forward(1);
    st.backward(1);
    const Outcome r{st.loss(0) + st.loss(1), st.aux_loss(0) + st.aux_loss(1), st.dropped_tokens(), host(st.gradients())};
    EXPECT_GT(r.aux, 0);
    if (mode == Recompute::none) {
      none = r;
      continue;
    }
    EXPECT_EQ(r.loss, none.loss);
    EXPECT_EQ(r.aux, none.aux);
    EXPECT_EQ(r.dropped, none.dropped);
    EXPECT_EQ(r.grads, none.grads);
  }
}

// A bf16 run's float stage keeps its MoE layers' activations, gates and router gradient in 16 bits (the
// index vectors in 4 bytes): the stash is the 2-byte formula in every mode (kernels/stash16.hpp).
TEST(MoeStage, SixteenBitStashIsTheTwoByteFormula) {
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    SCOPED_TRACE(analysis::recompute_name(mode));
    TransformerConfig c = moe_model(mode);
    c.stash16 = Half::bf16;
    TransformerStage<float> st(c);
    expect_stash_is_the_formula(st, c, mode, 4);
  }
}

// Tensor-parallel (t = 2, sequence-parallel; expert tensor parallelism = t): each tp rank's parameters
// and stash are the formulas' (stage_params, moe_layer_stash at the rows its stash holds), in every
// recomputation mode. The collectives are stand-ins of the right sizes (a gather repeats this rank's
// block, a scatter takes it): the bytes, not the values, are what this test checks.
TEST(MoeStage, TensorParallelParametersAndStashAreTheFormula) {
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full})
    for (int rank : {0, 1}) {
      SCOPED_TRACE(std::string(analysis::recompute_name(mode)) + " tp rank " + std::to_string(rank));
      TransformerConfig c = moe_model(mode);
      c.tp_size = 2, c.tp_rank = rank, c.sequence_parallel = true;
      StageD st(c);
      st.set_sequence_parallel(
          [](const StageD::Matrix& send, const StageD::Matrix& recv, TpPoint) {
            for (std::size_t k = 0; k < recv.span() / send.span(); ++k)
              Kokkos::deep_copy(Kokkos::View<double*>(recv.data() + k * send.span(), send.span()),
                                Kokkos::View<const double*>(send.data(), send.span()));
          },
          [rank](const StageD::Matrix& send, const StageD::Matrix& recv, TpPoint) {
            Kokkos::deep_copy(Kokkos::View<double*>(recv.data(), recv.span()),
                              Kokkos::View<const double*>(send.data() + rank * recv.span(), recv.span()));
          });
      EXPECT_EQ(st.parameter_count(), tf::stage_params(c, c.split(), c.parts()));
      expect_stash_is_the_formula(st, c, mode);
    }
}

// The whole model with an MoE layer (0) and a dense one (1) on one stage: every gradient, the router's
// and the experts' included, against central finite differences of the objective, the cross-entropy
// plus the aux loss (its coefficient included). Weights random, so that no gain or bias is neutral.
TEST(MoeStage, WholeModelObjectiveMatchesFiniteDifferences) {
  TransformerConfig c = TransformerConfig::whole_model(8, 2, 4, 2, 7, 2);
  c.experts = 4, c.top_k = 2, c.expert_ffn = 6, c.shared_experts = 1, c.moe_every = 2, c.aux_loss_coeff = 0.05;
  StageD st(c);
  set(st.weights(), random_vec(st.weights().extent(0), 5, 0.4));
  st.forward(3);
  st.backward(3);
  const auto grads = host(st.gradients());
  auto pw = host(st.weights());
  const auto numeric = numeric_gradient(pw, [&](const std::vector<double>& p) {
    set(st.weights(), p);
    st.zero_grad();  // forgets the aux loss of the previous forward
    st.forward(3);
    st.discard(3);
    return st.loss(3) + st.aux_loss(3);
  });
  for (const ParamInfo& p : st.parameters()) {
    const std::vector<double> a(grads.begin() + p.offset, grads.begin() + p.offset + p.size()),
        n(numeric.begin() + p.offset, numeric.begin() + p.offset + p.size());
    expect_close(a, n, 1e-6, p.name.c_str());
  }
}

// t > 1 needs sequence parallelism (Megatron-LM's rule) and F divisible by t; cp > 1 is refused.
TEST(MoeStage, TheKernelsRefuseExpertsWithTensorParallelismWithoutSequenceParallelOrWithContextParallelism) {
  TransformerConfig c = moe_model(Recompute::none);
  c.tp_size = 2;
  EXPECT_THROW(validate(c), UsageError);
  c.sequence_parallel = true;
  EXPECT_NO_THROW(validate(c));
  c.expert_ffn = 2 * c.expert_ffn_size() + 1;
  EXPECT_THROW(validate(c), UsageError);
  c.tp_size = 1, c.sequence_parallel = false, c.expert_ffn = 24;
  c.context_parallel = 2;
  EXPECT_THROW(validate(c), UsageError);
}

}  // namespace
}  // namespace pipebench::kernels::test
