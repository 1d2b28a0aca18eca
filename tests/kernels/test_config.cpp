// Configuration validation and the shape-only formulas: parameters, stash bytes and FLOPs, checked
// against docs/formulas.md's literature formulas and against numbers worked out by hand.
#include <gtest/gtest.h>

#include "analysis/error.hpp"
#include "kernels/parameters.hpp"
#include "kernels/transformer_config.hpp"

#include <cmath>

namespace pipebench::kernels {
namespace {

TransformerConfig ok() { return TransformerConfig::whole_model(64, 8, 32, 2, 100, 4); }

void expect_usage_error(const TransformerConfig& c, const std::string& fragment) {
  try {
    validate(c);
    ADD_FAILURE() << "no error, expected one mentioning '" << fragment << "'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(TransformerConfig, BadValuesAreNamed) {
  EXPECT_NO_THROW(validate(ok()));
  TransformerConfig c = ok();
  c.heads = 6;
  expect_usage_error(c, "--heads 6 is not allowed: must divide --hidden 64");
  c = ok();
  c.tp_size = 3;
  expect_usage_error(c, "tensor-parallel size t = 3 is not allowed: must divide --heads 8");
  c = ok();
  c.tp_size = 2;
  c.tp_rank = 2;
  expect_usage_error(c, "tensor-parallel rank 2 is outside [0, 2)");
  const std::pair<int TransformerConfig::*, const char*> sizes[] = {
      {&TransformerConfig::hidden, "--hidden 0"}, {&TransformerConfig::heads, "--heads 0"},
      {&TransformerConfig::seq, "--seq 0"},       {&TransformerConfig::micro_batch, "--micro-batch-size 0"},
      {&TransformerConfig::vocab, "--vocab 0"},   {&TransformerConfig::layers, "--layers 0"},
      {&TransformerConfig::tp_size, "tensor-parallel size t = 0"}};
  for (const auto& [field, name] : sizes) {
    c = ok();
    c.*field = 0;
    expect_usage_error(c, std::string(name) + " is not allowed: must be >= 1");
  }
  c = ok();
  c.first_layer = 2;
  c.embedding = false;
  expect_usage_error(c, "stage layers [2, 6) are not inside the model's 4 layers");
  c = ok();
  c.first_layer = 1;
  c.num_layers = 3;
  expect_usage_error(c, "the embedding belongs to the stage that starts at layer 0, not at layer 1");
  c = ok();
  c.num_layers = 3;
  expect_usage_error(c, "the head belongs to the stage that ends at layer 4, not at layer 3");
  c = ok();
  c.num_layers = 0;
  c.embedding = c.head = false;
  expect_usage_error(c, "a stage with 0 layers must hold the embedding or the head");
  c = ok();
  c.micro_batch = 1 << 16;
  c.seq = 1 << 16;
  expect_usage_error(c, "micro-batch size x sequence length = 4294967296 exceeds");
}

// What the cost model describes but the kernels do not run is refused by name, never run as something
// else: a field the kernels ignored would make their counted FLOPs and bytes disagree with the model's.
TEST(TransformerConfig, RefusesWhatTheKernelsCannotRun) {
  TransformerConfig c = ok();
  c.kv_heads = 8;  // = heads: plain multi-head attention
  c.ffn = 256;     // = 4h
  EXPECT_NO_THROW(validate(c));
  c = ok();
  c.kv_heads = 2;
  expect_usage_error(c, "--kv-heads 2 is not allowed: the transformer kernels run multi-head attention only");
  c = ok();
  c.gated_mlp = true;
  expect_usage_error(c, "a gated MLP (SwiGLU) is not allowed: the transformer kernels run a GELU MLP");
  c = ok();
  c.ffn = 128;
  expect_usage_error(c, "--ffn 128 is not allowed: the transformer kernels run an MLP of 4 x --hidden = 256");
  c = ok();
  c.experts = 4;
  c.top_k = 2;
  EXPECT_NO_THROW(validate(c));  // MoE layers at t = 1 (kernels/moe_stage.hpp)
  c.tp_size = 2;
  expect_usage_error(c, "--experts 4 with t = 2 without --sequence-parallel is not allowed: MoE layers under tensor "
                        "parallelism need sequence parallelism, as in Megatron-LM (add --sequence-parallel)");
  c.sequence_parallel = true;
  EXPECT_NO_THROW(validate(c));  // tensor-parallel experts under sequence parallelism
  c.expert_ffn = 3;
  expect_usage_error(c, "tensor-parallel size t = 2 is not allowed: must divide the MLP size 3");  // the cost model's
  c = ok();
  c.learned_positions = false;
  expect_usage_error(c, "a model without learned positions is not allowed");
  c = ok();
  c.context_parallel = 2;
  c.attention = Attention::fused;
  expect_usage_error(c, "--attention fused with --context-parallel 2 is not allowed: the transformer kernels run "
                        "context-parallel attention unfused");
  EXPECT_THROW(estimate_memory(c), UsageError);
  EXPECT_THROW(stage_flops(c), UsageError);
  c.attention = Attention::unfused;
  EXPECT_NO_THROW(validate(c));
  c.context_parallel = 32;  // s = 32: one position per rank is fine in one contiguous chunk, not in two
  expect_usage_error(c, "--seq 32 with --context-parallel 32 and --cp-chunks zigzag is not allowed: s must be a "
                        "multiple of 2 x cp = 64");
  c.cp_chunks = CpChunks::contiguous;
  EXPECT_NO_THROW(validate(c));
  c = ok();  // s = 32 over cp = 4: 8 positions, which t = 8 splits but t = 16 would not; 8 heads allow t = 8
  c.context_parallel = 4;
  c.tp_size = 8;
  c.sequence_parallel = true;
  EXPECT_NO_THROW(validate(c));
  c.context_parallel = 8;  // 4 positions per rank over t = 8
  expect_usage_error(c, "--sequence-parallel with --context-parallel 8 and t = 8 is not allowed: the s/cp = 4 "
                        "positions of a rank must split evenly over t");
}

TEST(TransformerConfig, ParameterCountIsTheLiteratureFormulaPlusTheUntiedHead) {
  // docs/formulas.md: 12 L h^2 (1 + 13/(12h) + (V+s)/(12 L h)) with tied embeddings and no final LayerNorm;
  // this model adds an untied output projection (V h) and the final LayerNorm (2h).
  const double L = 4, h = 64, V = 100, s = 32;
  const double literature = 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h));
  const StageMemory m = estimate_memory(ok());
  EXPECT_EQ(static_cast<double>(m.parameters), literature + V * h + 2 * h);
  EXPECT_EQ(m.weights, 4 * m.parameters);
  EXPECT_EQ(m.grads, m.weights);
  std::uint64_t table = 0;
  for (const ParamInfo& p : parameter_table(ok())) table += p.size();
  EXPECT_EQ(table, m.parameters);
}

TEST(TransformerConfig, StashFormulaPerLayer) {
  // fp32, b=2, s=32, h=64, a=8, t=1: s b h = 4096.
  //   none:      s b h (64 + 4 a s / h) + 8 s b = 4096 * 80 + 512
  //   selective: s b h * 64 + 8 s b;  full: 4 s b h;  after I (all modes): 80 s b h.
  TransformerConfig c = ok();
  EXPECT_EQ(estimate_memory(c).layer_forward_stash, 4096u * 80 + 512);
  EXPECT_EQ(estimate_memory(c).layer_weight_stash, 4096u * 80);
  c.recompute = Recompute::selective;
  EXPECT_EQ(estimate_memory(c).layer_forward_stash, 4096u * 64 + 512);
  c.recompute = Recompute::full;
  EXPECT_EQ(estimate_memory(c).layer_forward_stash, 4096u * 4);
  EXPECT_EQ(estimate_memory(c).layer_weight_stash, 4096u * 80);
  // Tensor parallel t=2: s b h (16 + 48/t + 4 a s/(h t)) + 8 s b.
  c = ok();
  c.tp_size = 2;
  EXPECT_EQ(estimate_memory(c).layer_forward_stash, 4096u * (16 + 24 + 8) + 512);
  // Whole model: 4 layers + head (xhat, y, dlogits, rstd) ; after I + embedding gradient.
  c = ok();
  const StageMemory m = estimate_memory(c);
  const std::uint64_t n = 64, h = 64, V = 100;
  EXPECT_EQ(m.forward_stash, 4 * (4096u * 80 + 512) + 4 * (2 * n * h + n + n * V));
  EXPECT_EQ(m.weight_stash, 4 * 4096u * 80 + 4 * (3 * n * h + n * V) + 4 * n * h);
  ASSERT_GT(m.weight_stash, m.forward_stash);
  EXPECT_EQ(m.total(3), m.weights + m.grads + 3 * m.weight_stash + m.forward_stash + m.workspace);
  EXPECT_EQ(m.total(0), m.weights + m.grads + m.workspace);
  EXPECT_GT(m.workspace, 0u);
}

TEST(TransformerConfig, FlopsAreTheLiteratureFormula) {
  // docs/formulas.md: 72 G L s h^2 (1 + s/(6h) + V/(12 h L)) per iteration of G sequences, no recompute.
  const TransformerConfig c = ok();
  const double G = c.micro_batch, L = c.layers, s = c.seq, h = c.hidden, V = c.vocab;
  const StageFlops f = stage_flops(c);
  EXPECT_DOUBLE_EQ(f.total(), 72 * G * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L)));
  EXPECT_EQ(f.recompute, 0.0);
  EXPECT_DOUBLE_EQ(f.backward_weight, 24 * G * s * h * h * L + 2 * G * s * h * V);
  TransformerConfig full = c;
  full.recompute = Recompute::full;
  const StageFlops ff = stage_flops(full);
  EXPECT_DOUBLE_EQ(ff.recompute, f.forward - 2 * G * s * h * V);  // the layers' forward, not the head's
  EXPECT_DOUBLE_EQ(ff.backward_input, f.backward_input + ff.recompute);
  TransformerConfig sel = c;
  sel.recompute = Recompute::selective;
  EXPECT_DOUBLE_EQ(stage_flops(sel).recompute, L * 2 * G * s * s * h);  // Q K^T again
  TransformerConfig tp = c;
  tp.tp_size = 4;
  tp.head = tp.embedding = false;
  TransformerConfig t1 = tp;
  t1.tp_size = 1;
  EXPECT_DOUBLE_EQ(stage_flops(tp).total() * 4, stage_flops(t1).total());
}

}  // namespace
}  // namespace pipebench::kernels
