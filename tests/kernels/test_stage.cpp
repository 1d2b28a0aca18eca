// TransformerStage: whole-layer and whole-model gradients against finite differences (double), the I/W
// split, recomputation modes, measured stash bytes against the documented formula, stage splitting.
#include "helpers.hpp"

#include "analysis/error.hpp"
#include "kernels/transformer_stage.hpp"

#include <map>

namespace pipebench::kernels::test {
namespace {

using StageD = TransformerStage<double>;
using StageF = TransformerStage<float>;

TransformerConfig tiny_layer() {
  TransformerConfig c = TransformerConfig::whole_model(8, 2, 5, 2, 11, 1);
  c.embedding = c.head = false;
  return c;
}

// Replaces the GPT initialisation (LayerNorm gains 1, biases 0) by random values, so that a gradient
// formula that forgot a gain or a bias could not pass.
template <class Stage>
void randomise_weights(Stage& st, std::uint64_t seed) {
  set(st.weights(), random_vec(st.weights().extent(0), seed, 0.4));
}

// Gradient of every weight and of the input of a single layer, f = sum(w * output).
TEST(StageGradients, OneLayerMatchesFiniteDifferences) {
  const TransformerConfig c = tiny_layer();
  StageD st(c);
  randomise_weights(st, 1);
  StageD::Activations x("x", 2, 5, 8), w("w", 2, 5, 8);
  random_view(x, 2, 1.0);
  random_view(w, 3, 1.0);
  const auto ws = host(w);
  st.forward(0, x);
  const auto dx = host(st.backward(0, w));
  const auto grads = host(st.gradients());

  auto f = [&](const auto& view) {
    return [&, view](const std::vector<double>& p) {
      set(view, p);
      const double v = dot(host(st.forward(1, x)), ws);
      st.discard(1);
      return v;
    };
  };
  auto px = host(x), pw = host(st.weights());
  expect_close(dx, numeric_gradient(px, f(x)), 1e-6, "input gradient");
  const auto numeric = numeric_gradient(pw, f(st.weights()));
  for (const ParamInfo& p : st.parameters()) {
    const std::vector<double> a(grads.begin() + p.offset, grads.begin() + p.offset + p.size()),
        n(numeric.begin() + p.offset, numeric.begin() + p.offset + p.size());
    expect_close(a, n, 1e-6, p.name.c_str());
  }
}

// The whole model on one stage: embedding, two layers, final LayerNorm, projection, loss.
TEST(StageGradients, WholeModelLossMatchesFiniteDifferences) {
  const TransformerConfig c = TransformerConfig::whole_model(8, 2, 4, 2, 7, 2);
  StageD st(c);
  randomise_weights(st, 5);
  EXPECT_TRUE(st.forward(3).data() == nullptr);  // the last stage's output is its loss
  EXPECT_TRUE(st.backward(3).data() == nullptr);  // the first stage has no input gradient
  const auto grads = host(st.gradients());
  auto pw = host(st.weights());
  const auto numeric = numeric_gradient(pw, [&](const std::vector<double>& p) {
    set(st.weights(), p);
    st.forward(3);  // the same micro-batch, hence the same tokens
    st.discard(3);
    return st.loss(3);
  });
  for (const ParamInfo& p : st.parameters()) {
    const std::vector<double> a(grads.begin() + p.offset, grads.begin() + p.offset + p.size()),
        n(numeric.begin() + p.offset, numeric.begin() + p.offset + p.size());
    expect_close(a, n, 1e-6, p.name.c_str());
  }
}

// A middle stage (no embedding, no head) of float, with inputs and output gradients made up.
TransformerConfig middle_stage() {
  TransformerConfig c = TransformerConfig::whole_model(16, 4, 8, 2, 13, 4);
  c.first_layer = 1;
  c.num_layers = 2;
  c.embedding = c.head = false;
  return c;
}

// I followed by W is the full backward, also when the I and W of different micro-batches interleave as
// in the zero-bubble schedules: bitwise, because both orders run the same kernels on the same stored
// tensors and accumulate the weight gradients of micro-batches 0 and 1 in the same order.
TEST(StageSplitBackward, InputThenWeightEqualsFullBackwardBitwise) {
  const TransformerConfig c = middle_stage();
  StageF full(c), split(c);
  StageF::Activations x[2], dy[2];
  for (int mb = 0; mb < 2; ++mb) {
    x[mb] = random_view(StageF::Activations("x", 2, 8, 16), 10 + mb, 1.0);
    dy[mb] = random_view(StageF::Activations("dy", 2, 8, 16), 20 + mb, 1.0);
  }
  std::vector<double> dx_full[2], dx_split[2];
  for (int mb = 0; mb < 2; ++mb) {
    EXPECT_EQ(host(full.forward(mb, x[mb])), host(split.forward(mb, x[mb])));
  }
  for (int mb = 0; mb < 2; ++mb) dx_full[mb] = host(full.backward(mb, dy[mb]));
  for (int mb = 0; mb < 2; ++mb) dx_split[mb] = host(split.backward_input(mb, dy[mb]));
  EXPECT_GT(split.stash_bytes(0), 0u);
  for (int mb = 0; mb < 2; ++mb) split.backward_weight(mb);
  for (int mb = 0; mb < 2; ++mb) EXPECT_EQ(dx_split[mb], dx_full[mb]);
  EXPECT_EQ(host(split.gradients()), host(full.gradients()));
  EXPECT_EQ(split.grad_norm(), full.grad_norm());
  EXPECT_GT(full.grad_norm(), 0.0);
  EXPECT_EQ(split.bytes_held(), bytes_of(split.weights()) + bytes_of(split.gradients()));
}

TEST(StageSplitBackward, WeightGradientsAccumulateOverMicroBatches) {
  const TransformerConfig c = middle_stage();
  StageF once(c), twice(c);
  const auto x = random_view(StageF::Activations("x", 2, 8, 16), 1, 1.0);
  const auto dy = random_view(StageF::Activations("dy", 2, 8, 16), 2, 1.0);
  once.forward(0, x);
  once.backward(0, dy);
  for (int mb = 0; mb < 2; ++mb) {
    twice.forward(mb, x);
    twice.backward(mb, dy);
  }
  const auto g1 = host(once.gradients()), g2 = host(twice.gradients());
  for (std::size_t i = 0; i < g1.size(); ++i) ASSERT_EQ(g2[i], 2 * g1[i]) << i;  // g + g is exact
  twice.zero_grad();
  EXPECT_EQ(twice.grad_norm(), 0.0);
}

struct ModeRun {
  double loss = 0;
  std::vector<double> grads;
  std::size_t after_f = 0, after_i = 0, after_w = 0, held_two_in_flight = 0, peak = 0;
};

ModeRun run_mode(Recompute mode) {
  TransformerConfig c = TransformerConfig::whole_model(16, 4, 8, 2, 13, 2);
  c.recompute = mode;
  ModeRun r;
  const StageF* self = nullptr;
  // The hook runs in the middle of every F and I: sample what the stage holds there.
  StageF st(c, [&](const StageF::Matrix&, TpPoint) { r.peak = std::max(r.peak, self->bytes_held()); });
  self = &st;
  st.forward(0);
  st.forward(1);
  r.after_f = st.stash_bytes(0);
  r.held_two_in_flight = st.bytes_held();
  st.backward_input(0);
  r.after_i = st.stash_bytes(0);
  st.backward_weight(0);
  r.after_w = st.stash_bytes(0);
  st.backward(1);
  r.loss = st.loss(0) + st.loss(1);
  r.grads = host(st.gradients());
  EXPECT_EQ(st.bytes_held(), bytes_of(st.weights()) + bytes_of(st.gradients()));
  return r;
}

// Recomputation reruns the same kernels on the same inputs, so loss and gradients are bitwise those of no
// recomputation; the stash is what docs/transformer.md's formula says, to the byte.
TEST(Recomputation, SameLossAndGradientsAndFormulaStash) {
  const ModeRun none = run_mode(Recompute::none);
  TransformerConfig c = TransformerConfig::whole_model(16, 4, 8, 2, 13, 2);
  std::map<Recompute, std::size_t> stash;
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    SCOPED_TRACE(analysis::recompute_name(mode));
    c.recompute = mode;
    const StageMemory m = estimate_memory(c);
    const ModeRun r = run_mode(mode);
    EXPECT_EQ(r.loss, none.loss);
    EXPECT_EQ(r.grads, none.grads);
    EXPECT_EQ(r.after_f, m.forward_stash);
    EXPECT_EQ(r.after_i, m.weight_stash);
    EXPECT_EQ(r.after_w, 0u);
    EXPECT_EQ(r.held_two_in_flight, m.weights + m.grads + 2 * m.forward_stash);
    EXPECT_LE(r.peak, m.total(2) - m.workspace);  // the stash part of the bound holds mid-I too
    EXPECT_GT(r.peak, m.weights + m.grads + 2 * std::min(m.forward_stash, m.weight_stash));
    stash[mode] = r.after_f;
  }
  // b=2, s=8, h=16, a=4, V=13: 2 layers x {18560, 16512, 1024} + head 2944 (transformer.md's formula).
  EXPECT_EQ(stash[Recompute::none], 2u * 18560 + 2944);
  EXPECT_EQ(stash[Recompute::selective], 2u * 16512 + 2944);
  EXPECT_EQ(stash[Recompute::full], 2u * 1024 + 2944);
}

// Two stages of two layers chained by hand are the four-layer model: same weights, same data, same loss
// and gradients, bitwise (the split changes no kernel and no summation order).
TEST(StageSplit, TwoStagesEqualOneStage) {
  const TransformerConfig whole = TransformerConfig::whole_model(16, 4, 8, 2, 13, 4);
  TransformerConfig first = whole, last = whole;
  first.num_layers = 2;
  first.head = false;
  last.first_layer = 2;
  last.num_layers = 2;
  last.embedding = false;
  StageF one(whole), a(first), b(last);
  for (int mb = 0; mb < 2; ++mb) {
    one.forward(mb);
    b.forward(mb, a.forward(mb));
  }
  for (int mb = 0; mb < 2; ++mb) {
    one.backward(mb);
    a.backward(mb, b.backward(mb));
  }
  EXPECT_EQ(b.loss(0), one.loss(0));
  EXPECT_EQ(b.loss(1), one.loss(1));
  EXPECT_NE(one.loss(0), one.loss(1));  // different tokens per micro-batch

  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_name;  // weights, grads
  for (StageF* st : {&a, &b}) {
    const auto w = host(st->weights()), g = host(st->gradients());
    for (const ParamInfo& p : st->parameters())
      by_name[p.name] = {std::vector<double>(w.begin() + p.offset, w.begin() + p.offset + p.size()),
                         std::vector<double>(g.begin() + p.offset, g.begin() + p.offset + p.size())};
  }
  const auto w = host(one.weights()), g = host(one.gradients());
  ASSERT_EQ(by_name.size(), one.parameters().size());
  for (const ParamInfo& p : one.parameters()) {
    SCOPED_TRACE(p.name);
    ASSERT_EQ(by_name.count(p.name), 1u);
    EXPECT_EQ(by_name[p.name].first, std::vector<double>(w.begin() + p.offset, w.begin() + p.offset + p.size()));
    EXPECT_EQ(by_name[p.name].second, std::vector<double>(g.begin() + p.offset, g.begin() + p.offset + p.size()));
  }
  EXPECT_NEAR(std::hypot(a.grad_norm(), b.grad_norm()), one.grad_norm(), 1e-12 * one.grad_norm());
}

// A caller that wraps its own receive buffers (unmanaged views) may reuse them as soon as a call returns:
// whatever the stage keeps of them until W must be its own copy.
TEST(StageSplitBackward, UnmanagedBuffersMayBeReusedAfterTheCall) {
  TransformerConfig c = middle_stage();
  c.recompute = Recompute::full;  // keeps the input from F to I as well
  StageF ref(c), st(c);
  const auto x = random_view(StageF::Activations("x", 2, 8, 16), 1, 1.0);
  const auto dy = random_view(StageF::Activations("dy", 2, 8, 16), 2, 1.0);
  const StageF::Activations buffer("buffer", 2, 8, 16);
  const StageF::Activations wrapped(buffer.data(), 2, 8, 16);  // unmanaged alias
  EXPECT_EQ(wrapped.use_count(), 0);
  ref.forward(0, x);
  Kokkos::deep_copy(wrapped, x);
  st.forward(0, wrapped);
  Kokkos::deep_copy(wrapped, 0.0f);  // the caller reuses its buffer
  const auto dx_ref = host(ref.backward_input(0, dy));
  Kokkos::deep_copy(wrapped, dy);
  const auto dx = host(st.backward_input(0, wrapped));
  Kokkos::deep_copy(wrapped, 0.0f);
  EXPECT_EQ(dx, dx_ref);
  ref.backward_weight(0);
  st.backward_weight(0);
  EXPECT_EQ(host(st.gradients()), host(ref.gradients()));
}

TEST(StageErrors, CallsOutOfOrderAndWrongShapesAreRefused) {
  StageF st(middle_stage());
  const auto x = random_view(StageF::Activations("x", 2, 8, 16), 1, 1.0);
  EXPECT_THROW(st.backward_input(0, x), Error);
  EXPECT_THROW(st.forward(0, StageF::Activations("bad", 2, 8, 15)), Error);
  EXPECT_THROW(st.forward(0), Error);  // a middle stage needs an input
  st.forward(0, x);
  EXPECT_THROW(st.forward(0, x), Error);      // still in flight
  EXPECT_THROW(st.backward_weight(0), Error);  // I first
  EXPECT_THROW(st.backward_input(0, StageF::Activations("bad", 1, 8, 16)), Error);
  st.backward_input(0, x);
  EXPECT_THROW(st.backward_input(0, x), Error);
  st.backward_weight(0);
  EXPECT_THROW(st.loss(0), Error);  // not the last stage
  EXPECT_EQ(st.stash_bytes(0), 0u);
}

TEST(StageErrors, BadConfigurationThrowsBeforeAllocating) {
  // Would need terabytes if it got as far as allocating.
  TransformerConfig c = TransformerConfig::whole_model(1 << 20, 3, 1 << 16, 64, 1 << 20, 96);
  EXPECT_THROW(StageF{c}, UsageError);
}

}  // namespace
}  // namespace pipebench::kernels::test
