// The MoE layer (kernels/moe.hpp, kernels/moe_routing.hpp) in double precision: the routing's rules
// (ties, capacity, the aux loss) on hand-made logits, the forward against a direct per-token host
// computation, and every gradient (input, router, each expert's and shared expert's weights and biases)
// against central finite differences of f = sum(w * y) + aux_scale * aux_loss, aux loss included.
#include "helpers.hpp"

#include "analysis/transformer/activations.hpp"
#include "analysis/transformer/params.hpp"
#include "kernels/moe.hpp"

#include <cmath>

namespace pipebench::kernels::test {
namespace {

using Moe = analysis::transformer::Moe;
using Router = analysis::transformer::Router;
using Layer = MoeLayer<double, Exec>;

Moe moe_of(int experts, int k, Router router, double capacity, double aux, int shared = 0) {
  Moe m;
  m.experts = experts, m.top_k = k, m.router = router, m.capacity_factor = capacity, m.aux_loss_coeff = aux;
  m.shared_experts = shared;
  return m;
}

TEST(MoeRouting, EqualLogitsGoToTheLowerExpertIndex) {
  const Moe m = moe_of(4, 2, Router::softmax, 0, 0);
  const MoeRouting r = route({1, 3, 3, 3, /**/ 0, 0, 0, 0}, 2, m);
  EXPECT_EQ(r.expert, (std::vector<int>{1, 2, 0, 1}));
  EXPECT_DOUBLE_EQ(r.gate[0], 0.5);
  EXPECT_EQ(r.routed, (std::vector<int>{1, 2, 1, 0}));
  EXPECT_EQ(r.count, r.routed);
  EXPECT_EQ(r.dropped, 0);
  // Expert-major, tokens ascending: expert 0 token 1, expert 1 tokens 0 and 1, expert 2 token 0.
  EXPECT_EQ(r.slot, (std::vector<int>{1, 3, 0, 2}));
}

TEST(MoeRouting, CapacityKeepsTheLargestGatesAndDropsTheRest) {
  // 4 tokens, top-1 of 2 experts, C = 0.5: ceil(0.5 * 4 / 2) = 1 token per expert. Every token prefers
  // expert 0; the one with the largest gate (token 2) keeps it, the other three are dropped.
  const Moe m = moe_of(2, 1, Router::sigmoid, 0.5, 0);
  const MoeRouting r = route({1, 0, 2, 0, 5, 0, 2, 0}, 4, m);
  EXPECT_EQ(r.count, (std::vector<int>{1, 0}));
  EXPECT_EQ(r.dropped, 3);
  EXPECT_EQ(r.slot, (std::vector<int>{-1, -1, 0, -1}));
  EXPECT_DOUBLE_EQ(r.gate[2], 1 / (1 + std::exp(-5.0)));  // top-1 sigmoid: not renormalised
  // Ties in the gate: the earlier token keeps its place (tokens 0 and 2 pick expert 1 with equal gates,
  // tokens 1 and 3 expert 0).
  const MoeRouting t = route({0, 1, 2, 0, 0, 1, 2, 0}, 4, m);
  EXPECT_EQ(t.slot, (std::vector<int>{1, 0, -1, -1}));
}

TEST(MoeRouting, AuxLossIsSwitchTransformersFormula) {
  // alpha E / (k n^2) sum_e c_e sum_t P[t, e], by hand for 2 tokens, 2 experts, top-1 softmax.
  const Moe m = moe_of(2, 1, Router::softmax, 0, 0.1);
  const MoeRouting r = route({0, std::log(3.0), 0, 0}, 2, m);  // P = (1/4, 3/4) and (1/2, 1/2)
  EXPECT_EQ(r.routed, (std::vector<int>{1, 1}));           // token 1's tie goes to expert 0
  EXPECT_NEAR(r.aux_loss, 0.1 * 2 / (1 * 4.0) * (1 * (0.25 + 0.5) + 1 * (0.75 + 0.5)), 1e-15);
  // Balanced routing (one token per expert): the loss is alpha whatever the scores, since each token's P
  // sums to 1.
  EXPECT_NEAR(route({1, 0, 0, 1}, 2, moe_of(2, 1, Router::softmax, 0, 1)).aux_loss, 1.0, 1e-15);
}

TEST(MoeRouting, DispatchPlanIsSourceMajorAndTheStackExpertMajor) {
  // ep 2, E 4: this rank sends 2 + 1 rows to rank 0's experts and 0 + 3 to rank 1's; its own two
  // experts get 1 and 2 rows from source 0, 2 and 2 from source 1.
  const MoeDispatch d = plan_dispatch({2, 1, 0, 3}, {1, 2, 2, 2}, 2);
  EXPECT_EQ(d.send_rows, (std::vector<std::size_t>{3, 3}));
  EXPECT_EQ(d.recv_rows, (std::vector<std::size_t>{3, 4}));
  EXPECT_EQ(d.rows, 4);  // local expert 1: 2 + 2 rows; expert 0 (1 + 2) padded to 4
  // Arrivals: source 0's expert 0 (a0), its expert 1 (a1, a2), source 1's expert 0 (a3, a4), expert 1
  // (a5, a6); the stack holds expert 0's from both sources, then expert 1's.
  EXPECT_EQ(d.stack_row_of, (std::vector<int>{0, 4, 5, 1, 2, 6, 7}));
  EXPECT_EQ(d.arrival_of, (std::vector<int>{0, 3, 4, -1, 1, 2, 5, 6}));
}

TEST(MoeRouting, TensorParallelDispatchGathersTheTpBlocksPaddedToTheLargest) {
  // ep 2, t 2, E 4, this rank tp rank 1. Counts in [source][tp shard][local expert]: source 0 shard 0
  // {1, 0}, shard 1 {2, 1}; source 1 shard 0 {0, 3}, shard 1 {0, 0}. This rank receives shard 1's rows
  // (3 from source 0, none from 1); block 0 holds 4 rows, block 1 3, padded to 4.
  const MoeDispatch d = plan_dispatch({1, 2, 0, 1}, {1, 0, 2, 1, 0, 3, 0, 0}, 2, 2, 1);
  EXPECT_EQ(d.send_rows, (std::vector<std::size_t>{3, 1}));
  EXPECT_EQ(d.recv_rows, (std::vector<std::size_t>{3, 0}));
  EXPECT_EQ(d.block, 4);
  EXPECT_EQ(d.rows, 4);  // local expert 1: 3 + 1 rows; expert 0 (1 + 2) padded to 4
  // Gathered rows: block 0 a0 (source 0, expert 0), a1-a3 (source 1, expert 1); block 1 a4, a5
  // (source 0, expert 0), a6 (source 0, expert 1), a7 padding. The stack: expert 0's rows by block,
  // then expert 1's.
  EXPECT_EQ(d.stack_row_of, (std::vector<int>{0, 4, 5, 6, 1, 2, 7, -1}));
  EXPECT_EQ(d.arrival_of, (std::vector<int>{0, 4, 5, -1, 1, 2, 3, 6}));
}

// A layer with random weights (router scaled up so that the top-k choice is clear of ties).
Layer make_layer(int h, std::int64_t f, const Moe& m, std::uint64_t seed) {
  Layer l(h, m, f);
  Layer::Weights& w = l.weights();
  random_view(w.router, seed, 2.0);
  for (auto* e : {&w.routed, &w.shared}) {
    random_view(e->w1, seed + 1, 0.5), random_view(e->b1, seed + 2, 0.2);
    random_view(e->w2, seed + 3, 0.5), random_view(e->b2, seed + 4, 0.2);
  }
  return l;
}

double gelu(double u) { return 0.5 * u * (1 + std::tanh(std::sqrt(2 / M_PI) * (u + 0.044715 * u * u * u))); }

// One expert z of stack e on one token row x: gelu(x W1 + b1) W2 + b2, added times g into y.
void expert_ref(const Layer::Experts& e, int z, int h, int f, const double* x, double g, double* y) {
  const auto w1 = host(e.w1), b1 = host(e.b1), w2 = host(e.w2), b2 = host(e.b2);
  std::vector<double> a(f);
  for (int j = 0; j < f; ++j) {
    double u = b1[z * f + j];
    for (int i = 0; i < h; ++i) u += x[i] * w1[(z * h + i) * f + j];
    a[j] = gelu(u);
  }
  for (int c = 0; c < h; ++c) {
    double o = b2[z * h + c];
    for (int j = 0; j < f; ++j) o += a[j] * w2[(z * f + j) * h + c];
    y[c] += g * o;
  }
}

struct Case {
  Moe moe;
  const char* name;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MoeLayerCase : public ::testing::TestWithParam<Case> {};

TEST_P(MoeLayerCase, ForwardIsEachTokensGatedExperts) {
  const Moe m = GetParam().moe;
  const int n = 7, h = 5, f = 6;
  Layer l = make_layer(h, f, m, 31);
  auto x = random_view(VD::Mat("x", n, h), 32, 1.0);
  VD::Mat y("y", n, h);
  Layer::Stash st;
  l.forward(x, y, st);
  const MoeRouting& r = st.routing;
  const auto xs = host(x), wr = host(l.weights().router);
  std::vector<double> want(n * h, 0.0), logits(n * m.experts, 0.0);
  for (int t = 0; t < n; ++t)
    for (int e = 0; e < m.experts; ++e)
      for (int i = 0; i < h; ++i) logits[t * m.experts + e] += xs[t * h + i] * wr[i * m.experts + e];
  const MoeRouting again = route(logits, n, m);  // the routing from host-computed logits
  EXPECT_EQ(again.expert, r.expert);
  EXPECT_EQ(again.slot, r.slot);
  for (int t = 0; t < n; ++t) {
    for (int j = 0; j < m.top_k; ++j)
      if (r.slot[t * m.top_k + j] >= 0)
        expert_ref(l.weights().routed, r.expert[t * m.top_k + j], h, f, &xs[t * h], r.gate[t * m.top_k + j], &want[t * h]);
    for (int s = 0; s < m.shared_experts; ++s) expert_ref(l.weights().shared, s, h, f, &xs[t * h], 1, &want[t * h]);
  }
  expect_close(host(y), want, 1e-13, "forward");
  if (m.capacity_factor > 0) {
    EXPECT_GT(r.dropped, 0) << "the case should drop tokens";
  }
}

TEST_P(MoeLayerCase, GradientsMatchFiniteDifferencesAuxLossIncluded) {
  const Moe m = GetParam().moe;
  const int n = 7, h = 5, f = 6;
  const double aux_scale = 0.75;
  Layer l = make_layer(h, f, m, 41);
  auto x = random_view(VD::Mat("x", n, h), 42, 1.0);
  const auto w = random_vec(n * h, 43, 1.0);
  VD::Mat y("y", n, h), dy("dy", n, h), dx("dx", n, h);
  set(dy, w);
  Layer::Stash st;
  l.forward(x, y, st);
  const std::vector<int> chosen = st.routing.expert, kept = st.routing.slot;
  l.backward_input(st, dy, dx, aux_scale);
  l.backward_weight(st);

  auto objective = [&](const auto& view) {
    return [&, view](const std::vector<double>& p) {
      set(view, p);
      VD::Mat yy("yy", n, h);
      Layer::Stash s;
      l.forward(x, yy, s);
      // The finite differences must not cross a routing decision.
      EXPECT_EQ(s.routing.expert, chosen);
      EXPECT_EQ(s.routing.slot, kept);
      return dot(host(yy), w) + aux_scale * s.routing.aux_loss;
    };
  };
  auto px = host(x);
  expect_close(host(dx), numeric_gradient(px, objective(x)), 1e-6, "dx");
  Layer::Weights& wt = l.weights();
  Layer::Weights& g = l.grads();
  auto pr = host(wt.router);
  expect_close(host(g.router), numeric_gradient(pr, objective(wt.router)), 1e-6, "d router");
  std::vector<std::pair<Layer::Experts*, Layer::Experts*>> stacks{{&wt.routed, &g.routed}};
  if (m.shared_experts > 0) stacks.push_back({&wt.shared, &g.shared});
  for (auto [we, ge] : stacks) {
    auto p1 = host(we->w1), q1 = host(we->b1), p2 = host(we->w2), q2 = host(we->b2);
    expect_close(host(ge->w1), numeric_gradient(p1, objective(we->w1)), 1e-6, "dW1");
    expect_close(host(ge->b1), numeric_gradient(q1, objective(we->b1)), 1e-6, "db1");
    expect_close(host(ge->w2), numeric_gradient(p2, objective(we->w2)), 1e-6, "dW2");
    expect_close(host(ge->b2), numeric_gradient(q2, objective(we->b2)), 1e-6, "db2");
  }
}

// The memory formulas (analysis/transformer/): the layer's weights (and so its gradients and Adam's
// two values of state per weight) are moe_params, and what its stash holds from F to I and from I to
// W is moe_stash at the micro-batch's routed rows.
TEST_P(MoeLayerCase, MemoryIsTheFormula) {
  const Moe m = GetParam().moe;
  const int n = 7, h = 5, f = 6;
  Layer l = make_layer(h, f, m, 51);
  analysis::transformer::Shape shape;
  static_cast<Moe&>(shape) = m;
  shape.hidden = h, shape.expert_ffn = f, shape.seq = n, shape.micro_batch = 1;
  std::size_t weights = 0;
  Layer::Weights& w = l.weights();
  weights += w.router.span();
  for (auto* e : {&w.routed, &w.shared}) weights += e->w1.span() + e->w2.span() + e->b1.span() + e->b2.span();
  EXPECT_EQ(weights, analysis::transformer::moe_params(shape));
  auto x = random_view(VD::Mat("x", n, h), 52, 1.0);
  VD::Mat y("y", n, h), dy("dy", n, h), dx("dx", n, h);
  set(dy, random_vec(n * h, 53, 1.0));
  Layer::Stash st;
  l.forward(x, y, st);
  const analysis::transformer::MoeRows rows{static_cast<std::uint64_t>(st.routing.kept()),
                                            st.dispatch.stack_row_of.size(), static_cast<std::uint64_t>(st.dispatch.rows)};
  const analysis::transformer::Stash want = analysis::transformer::moe_stash(shape, {}, rows, sizeof(double));
  EXPECT_EQ(Layer::stash_bytes(st), want.forward);
  l.backward_input(st, dy, dx, 1);
  EXPECT_EQ(Layer::stash_bytes(st), want.weight);
  l.backward_weight(st);
  EXPECT_EQ(Layer::stash_bytes(st), 0u);
}

TEST(MoeMemory, BalancedRowsAndExpertsPerRank) {
  analysis::transformer::Shape m;
  m.experts = 4, m.top_k = 2, m.hidden = 8, m.seq = 8, m.micro_batch = 1;
  analysis::transformer::Split ep2;
  ep2.ep = 2;
  // n k / E = 4 routes per expert from each source; 2 local experts, 2 sources.
  const auto r = analysis::transformer::balanced_moe_rows(m, ep2);
  EXPECT_EQ(r.kept, 16u);
  EXPECT_EQ(r.arrivals, 16u);
  EXPECT_EQ(r.rows, 8u);
  m.capacity_factor = 0.5;  // ceil(0.5 * 16 / 4) = 2 per expert and source
  EXPECT_EQ(analysis::transformer::balanced_moe_rows(m, ep2).kept, 8u);
  EXPECT_EQ(analysis::transformer::balanced_moe_rows(m, ep2).rows, 4u);
  // Router 8 x 4 replicated, 2 of the 4 experts' MLPs (fc1 8 x 32 + 32, fc2 32 x 8 + 8) per ep rank.
  const std::uint64_t one = 8 * 32 + 32 + 32 * 8 + 8;
  EXPECT_EQ(analysis::transformer::moe_params(m, ep2), 32 + 2 * one);
  EXPECT_EQ(analysis::transformer::moe_params(m), 32 + 4 * one);
}

INSTANTIATE_TEST_SUITE_P(
    Routers, MoeLayerCase,
    ::testing::Values(Case{moe_of(4, 2, Router::softmax, 0, 0.05), "softmax_top2_dropless"},
                      Case{moe_of(4, 2, Router::sigmoid, 1.0, 0.05, 1), "sigmoid_top2_capacity_shared"},
                      Case{moe_of(3, 1, Router::softmax, 1.0, 0.1), "softmax_top1_capacity"},
                      Case{moe_of(4, 1, Router::sigmoid, 0, 0.02, 2), "sigmoid_top1_two_shared"}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace pipebench::kernels::test
