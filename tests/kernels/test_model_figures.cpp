// Each kernel's counted FLOPs and measured stash bytes against the cost model (analysis/transformer/,
// convention pipebench), for tensor-parallel sizes 1 and 2, every recomputation, sequence and
// vocabulary parallelism, and end stages: the products the stage really runs (kernels/gemm.hpp's
// GemmTally), attributed to the operation whose weight they multiply, and the bytes its views hold
// after F and after I.
#include "helpers.hpp"

#include "analysis/transformer/activations.hpp"
#include "analysis/transformer/flops.hpp"
#include "kernels/gemm.hpp"
#include "kernels/transformer_stage.hpp"

#include <functional>
#include <map>
#include <string>

namespace pipebench::kernels::test {
namespace {

namespace tf = analysis::transformer;

enum class Pass { F, I, W };

// FLOPs per operation of one pass, as the stage performed them.
struct Counted {
  std::map<tf::Op, double> ops;  // the weight products, and the attention's under Op::scores
  double total = 0, reductions = 0;
};

// The operation a weight belongs to and its [in, out] as its F and I see it. The tied head multiplies by
// the token embedding's [V, h] transposed, and its W accumulates into it as [V, h] = [out, in].
bool weight_of(const ParamInfo& w, tf::Op* op, std::size_t* in, std::size_t* out, bool* tied) {
  *tied = w.name == "embedding.tokens";
  const std::pair<std::string, tf::Op> suffixes[] = {{".qkv.weight", tf::Op::qkv}, {".proj.weight", tf::Op::proj},
                                                     {".fc1.weight", tf::Op::fc1}, {".fc2.weight", tf::Op::fc2},
                                                     {"head.out.weight", tf::Op::head}};
  if (*tied) {
    *op = tf::Op::head, *in = w.cols, *out = w.rows;
    return true;
  }
  for (const auto& [suffix, o] : suffixes)
    if (w.name.size() >= suffix.size() && w.name.compare(w.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      *op = o, *in = w.rows, *out = w.cols;
      return true;
    }
  return false;
}

// A weight product has the n tokens on one side and the weight's [in, out] on the others: F is
// [n, in] x [in, out], I [n, out] x [out, in], W [in, n] x [n, out]. Every other product is the
// attention's (s rows; n = b s with b = 2 is never s), counted under Op::scores.
tf::Op attribute(const GemmTally::Product& p, Pass pass, std::size_t n, const std::vector<ParamInfo>& table) {
  for (const ParamInfo& w : table) {
    tf::Op op = tf::Op::scores;
    std::size_t in = 0, out = 0;
    bool tied = false;
    if (!weight_of(w, &op, &in, &out, &tied)) continue;
    const bool f = pass == Pass::F && p.m == n && p.k == in && p.n == out;
    const bool i = pass == Pass::I && p.m == n && p.k == out && p.n == in;
    const bool wt = pass == Pass::W && p.k == n && p.m == (tied ? out : in) && p.n == (tied ? in : out);
    if (f || i || wt) return op;
  }
  return tf::Op::scores;
}

template <class Stage>
Counted count(Stage& st, Pass pass, const std::function<void()>& run) {
  GemmTally tally;
  {
    CountGemms counting(tally);
    run();
  }
  Counted c;
  const std::size_t n = static_cast<std::size_t>(st.config().micro_batch) * static_cast<std::size_t>(st.config().seq);
  for (const auto& p : tally.products) {
    c.ops[attribute(p, pass, n, st.parameters())] += p.flops();
    c.total += p.flops();
  }
  c.reductions = tally.reductions;
  return c;
}

// The model's per-operation figures for the stage, one pass.
std::map<tf::Op, double> expected(const TransformerConfig& c, Pass pass) {
  const auto of = [pass](const tf::Flops& f) {
    return pass == Pass::F ? f.forward : pass == Pass::I ? f.backward_input : f.backward_weight;
  };
  std::map<tf::Op, double> ops;
  for (const tf::OpFlops& o : tf::layer_ops(c, c.split(), c.recompute, tf::Convention::pipebench))
    ops[o.op == tf::Op::values ? tf::Op::scores : o.op] += c.num_layers * of(o.flops);
  if (c.head) ops[tf::Op::head] += of(tf::head_flops(c, c.split()));
  for (auto it = ops.begin(); it != ops.end();) it = it->second == 0 ? ops.erase(it) : std::next(it);
  return ops;
}

template <class S>
void check_stage(const TransformerConfig& c) {
  using Stage = TransformerStage<S>;
  Stage st(c, [](const typename Stage::Matrix&, TpPoint) {});  // the sums do not change a product's size
  if (c.seq_split())
    st.set_sequence_parallel([](const typename Stage::Matrix&, const typename Stage::Matrix&, TpPoint) {},
                             [](const typename Stage::Matrix&, const typename Stage::Matrix&, TpPoint) {});
  const std::size_t b = static_cast<std::size_t>(c.micro_batch), sl = static_cast<std::size_t>(c.local_seq()),
                    h = static_cast<std::size_t>(c.hidden);
  const typename Stage::Activations x = random_view(typename Stage::Activations("x", b, sl, h), 1, 1.0);
  const typename Stage::Activations dy = random_view(typename Stage::Activations("dy", b, sl, h), 2, 1.0);
  const Counted f = count(st, Pass::F, [&] { c.embedding ? st.forward(0) : st.forward(0, x); });
  const std::size_t after_f = st.stash_bytes(0);
  const Counted i = count(st, Pass::I, [&] { c.head ? st.backward_input(0) : st.backward_input(0, dy); });
  const std::size_t after_i = st.stash_bytes(0);
  const Counted w = count(st, Pass::W, [&] { st.backward_weight(0); });

  // FLOPs: every pass's total, and per operation where shapes tell the operations apart (under full
  // recomputation I also reruns fc1's forward, the shape of fc2's input gradient).
  const tf::Flops model = tf::stage_flops(c, c.split(), c.parts(), c.recompute, tf::Convention::pipebench);
  EXPECT_EQ(f.total, model.forward);
  EXPECT_EQ(i.total, model.backward_input);
  EXPECT_EQ(w.total, model.backward_weight);
  EXPECT_EQ(f.ops, expected(c, Pass::F));
  if (c.recompute != Recompute::full) {
    EXPECT_EQ(i.ops, expected(c, Pass::I));
  }
  EXPECT_EQ(w.ops, expected(c, Pass::W));
  EXPECT_EQ(f.reductions, 0.0);  // bias and LayerNorm gradients are W's element-wise work, never products
  if (c.num_layers > 0 || c.head) {
    EXPECT_GT(w.reductions, 0.0);
  }

  // Bytes: the stash the views hold, against the model's table.
  const std::uint64_t e = sizeof(S);
  tf::Stash want;
  const tf::Stash layer = tf::stash(c, c.split(), c.recompute, tf::Part::layer, e);
  want.forward = c.num_layers * layer.forward, want.weight = c.num_layers * layer.weight;
  for (const auto& [held, part] : {std::pair{c.embedding, tf::Part::embedding}, std::pair{c.head, tf::Part::head}})
    if (held) {
      const tf::Stash s = tf::stash(c, c.split(), c.recompute, part, e);
      want.forward += s.forward, want.weight += s.weight;
    }
  EXPECT_EQ(after_f, want.forward);
  EXPECT_EQ(after_i, want.weight);
  EXPECT_EQ(st.stash_bytes(0), 0u);
}

// b = 2, s = 10, h = 24, a = 4 (d = 6), V = 14, 3 layers: every dimension of a product is distinct.
TransformerConfig base() { return TransformerConfig::whole_model(24, 4, 10, 2, 14, 3); }

std::string name(const TransformerConfig& c) {
  return "t=" + std::to_string(c.tp_size) + " rank " + std::to_string(c.tp_rank) + " layers [" +
         std::to_string(c.first_layer) + ", " + std::to_string(c.first_layer + c.num_layers) + ")" +
         (c.embedding ? " embedding" : "") + (c.head ? " head" : "") + (c.sequence_parallel ? " sp" : "") +
         (c.vocab_split() ? " vocab-parallel" : "") + (c.tie_embeddings ? " tied" : "") + " " +
         analysis::recompute_name(c.recompute);
}

std::vector<TransformerConfig> configurations() {
  std::vector<TransformerConfig> out;
  for (const Recompute r : analysis::kRecomputes)
    for (const int variant : {0, 1, 2, 3, 4, 5}) {
      TransformerConfig c = base();
      c.recompute = r;
      if (variant >= 1) c.tp_size = 2, c.tp_rank = variant % 2;
      if (variant == 2) c.vocab_parallel = true, c.sequence_parallel = true;
      if (variant == 3) c.vocab_parallel = true, c.first_layer = 1, c.num_layers = 1, c.embedding = c.head = false;
      if (variant == 4) c.vocab_parallel = true, c.tie_embeddings = true, c.first_layer = 3, c.num_layers = 0,
                    c.embedding = false;  // the head alone, with the tied copy
      if (variant == 5) c.num_layers = 0, c.head = false, c.sequence_parallel = true;  // the embedding alone
      out.push_back(c);
    }
  return out;
}

TEST(ModelFigures, CountedFlopsAndStashBytesAreTheModels) {
  for (const TransformerConfig& c : configurations()) {
    SCOPED_TRACE(name(c));
    check_stage<float>(c);
    check_stage<double>(c);
  }
}

}  // namespace
}  // namespace pipebench::kernels::test
