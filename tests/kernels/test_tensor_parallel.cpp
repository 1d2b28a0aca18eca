// The tensor-parallel hook: called at Megatron's four points, and sufficient for t > 1. Two tensor-
// parallel ranks are simulated in one process by replaying: each round runs both ranks from scratch up to
// the next all-reduce point, the partial sums are added, and the next round feeds the sums back.
#include "helpers.hpp"

#include "kernels/transformer_stage.hpp"

#include <map>

namespace pipebench::kernels::test {
namespace {

using StageD = TransformerStage<double>;

TransformerConfig one_layer(int tp_size, int tp_rank) {
  TransformerConfig c = TransformerConfig::whole_model(8, 4, 3, 2, 5, 2);
  c.first_layer = 1;
  c.num_layers = 1;
  c.embedding = c.head = false;
  c.tp_size = tp_size;
  c.tp_rank = tp_rank;
  return c;
}

TEST(TensorParallelHook, CalledAtTheFourMegatronPoints) {
  for (Recompute mode : {Recompute::none, Recompute::full}) {
    TransformerConfig c = one_layer(1, 0);
    c.num_layers = 2;
    c.first_layer = 0;
    c.recompute = mode;
    std::vector<TpPoint> calls;
    StageD st(c, [&](const StageD::Matrix& m, TpPoint p) {
      EXPECT_EQ(m.extent(0), 6u);  // b*s rows of h
      EXPECT_EQ(m.extent(1), 8u);
      calls.push_back(p);
    });
    const auto x = random_view(StageD::Activations("x", 2, 3, 8), 1, 1.0);
    st.forward(0, x);
    const std::vector<TpPoint> f = {TpPoint::attention_out_forward, TpPoint::mlp_out_forward};
    EXPECT_EQ(calls, (std::vector<TpPoint>{f[0], f[1], f[0], f[1]}));
    calls.clear();
    st.backward_input(0, x);
    const std::vector<TpPoint> i = {TpPoint::mlp_in_backward, TpPoint::qkv_in_backward};
    if (mode == Recompute::full)  // each layer's forward reruns, with its all-reduces, before its I
      EXPECT_EQ(calls, (std::vector<TpPoint>{f[0], f[1], i[0], i[1], f[0], f[1], i[0], i[1]}));
    else
      EXPECT_EQ(calls, (std::vector<TpPoint>{i[0], i[1], i[0], i[1]}));
    calls.clear();
    st.backward_weight(0);
    EXPECT_TRUE(calls.empty());
  }
}

struct Pause {};

struct RankResult {
  std::vector<double> out, dx, weights, grads;
  std::vector<ParamInfo> table;
};

// Runs F, I, W of both ranks of a t=2 layer with a real (simulated) all-reduce.
std::vector<RankResult> run_two_ranks(const StageD::Activations& x, const StageD::Activations& dy) {
  std::vector<std::vector<double>> sums;  // agreed all-reduce results, in call order
  for (;;) {
    std::vector<RankResult> res(2);
    std::vector<std::vector<double>> partial(2);
    bool done = true;
    for (int r = 0; r < 2; ++r) {
      std::size_t calls = 0;
      StageD st(one_layer(2, r), [&](const StageD::Matrix& m, TpPoint) {
        if (calls == sums.size()) {
          partial[r] = host(m);
          throw Pause{};
        }
        set(m, sums[calls++]);
      });
      try {
        res[r].out = host(st.forward(0, x));
        res[r].dx = host(st.backward(0, dy));
        res[r].weights = host(st.weights());
        res[r].grads = host(st.gradients());
        res[r].table = st.parameters();
      } catch (const Pause&) {
        done = false;
      }
    }
    if (done) return res;
    std::vector<double> sum(partial[0].size());
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = partial[0][i] + partial[1][i];
    sums.push_back(sum);
  }
}

// Heads split over two ranks, with the hook summing partials, reproduce the unsplit layer: outputs,
// input gradients, and each rank's weights and gradients are its slice of the unsplit ones (up to the
// summation order of the split products: 1e-12 relative in double).
TEST(TensorParallelHook, TwoRanksReproduceTheUnsplitLayer) {
  const auto x = random_view(StageD::Activations("x", 2, 3, 8), 1, 1.0);
  const auto dy = random_view(StageD::Activations("dy", 2, 3, 8), 2, 1.0);
  StageD whole(one_layer(1, 0));
  const auto out = host(whole.forward(0, x));
  const auto dx = host(whole.backward(0, dy));
  const auto w = host(whole.weights()), g = host(whole.gradients());
  std::map<std::string, ParamInfo> by_name;
  for (const ParamInfo& p : whole.parameters()) by_name[p.name] = p;

  const std::vector<RankResult> ranks = run_two_ranks(x, dy);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("tp rank " + std::to_string(r));
    expect_close(ranks[r].out, out, 1e-12, "output");
    expect_close(ranks[r].dx, dx, 1e-12, "input gradient");
    for (const ParamInfo& p : ranks[r].table) {
      const ParamInfo& q = by_name.at(p.name);
      std::vector<double> want_w, want_g, got_w, got_g;
      for (std::size_t i = 0; i < p.rows; ++i)
        for (std::size_t j = 0; j < p.cols; ++j) {
          std::size_t gi = i, gj = j;
          if (p.split == ParamInfo::Split::rows) gi += r * p.rows;
          if (p.split == ParamInfo::Split::columns) gj += r * p.cols;
          const std::size_t part = p.cols / 3;  // q, k, v blocks of this rank's heads
          if (p.split == ParamInfo::Split::qkv_columns) gj = (j / part) * (q.cols / 3) + r * part + j % part;
          want_w.push_back(w[q.offset + gi * q.cols + gj]);
          want_g.push_back(g[q.offset + gi * q.cols + gj]);
          got_w.push_back(ranks[r].weights[p.offset + i * p.cols + j]);
          got_g.push_back(ranks[r].grads[p.offset + i * p.cols + j]);
        }
      EXPECT_EQ(got_w, want_w) << p.name;
      expect_close(got_g, want_g, 1e-12, p.name.c_str());  // replicated ones (LayerNorm, row biases) in full
    }
  }
}

}  // namespace
}  // namespace pipebench::kernels::test
