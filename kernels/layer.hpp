#pragma once
// One GPT-style pre-LayerNorm decoder layer, split into F, I and W:
//   x2  = x + proj(attention(qkv(LN1(x))))            proj: row-parallel, all-reduced before its bias
//   out = x2 + fc2(gelu(fc1(LN2(x2))))                fc2: row-parallel, all-reduced before its bias
// What each pass stores and frees is listed on LayerStash; docs/transformer.md turns it into bytes.
#include "kernels/attention.hpp"
#include "kernels/context_parallel.hpp"
#include "kernels/flash_attention_backward.hpp"
#include "kernels/gelu.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/linear.hpp"
#include "kernels/sequence_parallel.hpp"

#include <functional>

namespace pipebench::kernels {

// The four points where Megatron's tensor parallelism all-reduces [b*s, h] partial sums: after the two
// row-parallel products in F, and after the input gradients of the two column-parallel products in I.
// With the vocabulary split over the ranks (TransformerConfig::vocab_parallel) three more: the
// embedding's partial lookups [b*s, h] (F), the parallel cross-entropy's row maxima [b*s, t] and its
// sums [b*s, 2] (F), and the head's input gradient [b*s, h] (I).
enum class TpPoint {
  attention_out_forward,
  mlp_out_forward,
  mlp_in_backward,
  qkv_in_backward,
  embedding_forward,
  loss_max_forward,
  loss_sum_forward,
  head_in_backward,
  // Sequence parallelism (kernels/sequence_parallel.hpp): the all-gathers before the column-parallel
  // QKV and fc1 (F) and their mirrors in I, after fc2's and the projection's input gradients; the head's
  // all-gather of its LayerNorm output (F), the first stage's all-gather of its output gradient (I).
  // The reduce-scatters use the all-reduce points they replace.
  qkv_in_forward,
  mlp_in_forward,
  mlp_out_backward,
  attention_out_backward,
  head_in_forward,
  embedding_backward,
  // Sequence-parallel, once per step: the LayerNorms' weight gradients, which each rank computes from
  // its s/t positions only, summed over the group (TransformerStage::sum_sequence_parallel_grads).
  layernorm_grads
};

template <class S, class E>
using AllReduceHook = std::function<void(const typename Views<S, E>::Mat& partial, TpPoint where)>;

struct LayerShape {
  int batch = 0, seq = 0, hidden = 0;  // b, s, h
  int heads = 0;                       // heads on this tensor-parallel rank, a/t
  int head_dim = 0;                    // d = h/a
  bool fused_attention = false;        // kernels/flash_attention.hpp instead of kernels/attention.hpp
  std::size_t rows() const { return static_cast<std::size_t>(batch) * seq; }
  std::size_t local() const { return static_cast<std::size_t>(heads) * head_dim; }  // h/t
  std::size_t stacks() const { return static_cast<std::size_t>(batch) * heads; }    // b*a/t
};

// Views of one layer's parameters (or of their gradients: same shapes), inside the stage's flat buffer.
template <class S, class E>
struct LayerParams {
  using V = Views<S, E>;
  typename V::Vec ln1_g, ln1_b, bqkv, bo, ln2_g, ln2_b, b1, b2;
  typename V::Mat wqkv;  // [h, 3h/t], columns (q|k|v, head, j)
  typename V::Mat wo;    // [h/t, h]
  typename V::Mat w1;    // [h, 4h/t]
  typename V::Mat w2;    // [4h/t, h]
};

// Per layer and micro-batch. F stores the first block (full recomputation: `input` only); I frees
// rstd1, rstd2, q, k, v, probs and u and adds the second block; W frees everything.
template <class S, class E>
struct LayerStash {
  using V = Views<S, E>;
  typename V::Act input;               // full recomputation: the layer input, F -> I
  typename V::Mat xhat1, y1;           // LN1 normalised input (I, W) and output = QKV input (W)
  typename V::Vec rstd1;               // I
  typename V::Heads q, k, v, probs;    // I; probs absent under selective recomputation
  typename V::Mat lse;                 // I, context-parallel (instead of probs): [b*a/t, s/cp]
  typename V::Mat ctx;                 // attention output = projection input (W)
  typename V::Mat xhat2, y2;           // as LN1
  typename V::Vec rstd2;               // I
  typename V::Mat u;                   // fc1 output, GELU input (I)
  typename V::Mat g;                   // GELU output = fc2 input (W)
  // Stored by I for W: the output gradients of qkv, LN1, proj (= dx2), LN2, fc1, fc2 (= dout).
  typename V::Mat dqkv, dy1, dx2, dy2, du;
  typename V::Act dout;

  std::size_t bytes() const {
    return bytes_of(input) + bytes_of(xhat1) + bytes_of(y1) + bytes_of(rstd1) + bytes_of(q) + bytes_of(k) +
           bytes_of(v) + bytes_of(probs) + bytes_of(lse) + bytes_of(ctx) + bytes_of(xhat2) + bytes_of(y2) +
           bytes_of(rstd2) + bytes_of(u) + bytes_of(g) + bytes_of(dqkv) + bytes_of(dy1) + bytes_of(dx2) + bytes_of(dy2) +
           bytes_of(du) + bytes_of(dout);
  }
  // The members a 16-bit run keeps in 16 bits (kernels/stash16.hpp): all but the statistics; `true`
  // marks a gradient.
  template <class F>
  void each16(F&& f) {
    f(input), f(xhat1), f(y1), f(q), f(k), f(v), f(probs), f(ctx), f(xhat2), f(y2), f(u), f(g);
    f(dqkv, true), f(dy1, true), f(dx2, true), f(dy2, true), f(du, true), f(dout, true);  // gradients
  }
};

// The hook may hand the buffer to MPI or NCCL: the kernels that produced it must have finished.
template <class S, class E>
void all_reduce(const AllReduceHook<S, E>& hook, const typename Views<S, E>::Mat& m, TpPoint where) {
  if (!hook) return;
  E().fence();
  hook(m, where);
}

// F's first half, up to the MLP's input: fills `st` to y2 (probabilities only if keep_probs) and returns
// x2 = x + proj(...) + bo, this rank's rows (an MoE layer, kernels/moe_stage.hpp, feeds y2 to its experts).
template <class S, class E>
typename Views<S, E>::Mat layer_attention_forward(const LayerShape& sh, const LayerParams<S, E>& w,
                                                  const typename Views<S, E>::Act& in, LayerStash<S, E>& st,
                                                  bool keep_probs, const AllReduceHook<S, E>& hook,
                                                  const SeqParallel<S, E>* sp, const ContextParallel<S, E>* cp) {
  using V = Views<S, E>;
  using Mat = typename V::Mat;
  using Vec = typename V::Vec;
  using Heads = typename V::Heads;
  const std::size_t n = sh.rows(), h = static_cast<std::size_t>(sh.hidden), ht = sh.local(), z = sh.stacks();
  const std::size_t s = static_cast<std::size_t>(sh.seq), d = static_cast<std::size_t>(sh.head_dim);
  const S scale = S(1) / math::sqrt(static_cast<S>(sh.head_dim));
  // Sequence-parallel: the residual stream, the LayerNorms and the bias + residual additions run on
  // this rank's m = n/t rows; the linears' inputs are gathered to all n rows.
  const std::size_t m = sp ? sp->local_rows() : n;
  const Mat x = as_matrix<Mat>(in, m, h);

  st.xhat1 = alloc<Mat>("pipebench::xhat1", m, h);
  st.rstd1 = alloc<Vec>("pipebench::rstd1", m);
  {
    const Mat y1 = alloc<Mat>("pipebench::y1", m, h);
    layernorm_forward<S, E>(x, w.ln1_g, w.ln1_b, y1, st.xhat1, st.rstd1);
    st.y1 = sp ? sp->gather(y1, TpPoint::qkv_in_forward) : y1;
  }
  {
    const Mat qkv = alloc<Mat>("pipebench::qkv", n, 3 * ht);
    linear_forward<S, E>(st.y1, w.wqkv, w.bqkv, qkv);
    st.q = alloc<Heads>("pipebench::q", z, s, d);
    st.k = alloc<Heads>("pipebench::k", z, s, d);
    st.v = alloc<Heads>("pipebench::v", z, s, d);
    split_heads<S, E>(qkv, sh.batch, sh.seq, sh.heads, sh.head_dim, scale, st.q, st.k, st.v);
  }
  if (keep_probs && !cp) st.probs = alloc<Heads>("pipebench::probs", z, s, s);
  {
    const Heads o = alloc<Heads>("pipebench::attention_out", z, s, d);
    if (cp) {
      st.lse = alloc<Mat>("pipebench::cp_lse", z, s);
      cp_attention_forward<S, E>(*cp, st.q, st.k, st.v, st.lse, o);
    } else if (sh.fused_attention)
      flash_attention_forward<S, E>(st.q, st.k, st.v, o);
    else
      attention_forward<S, E>(st.q, st.k, st.v, st.probs, o);
    st.ctx = alloc<Mat>("pipebench::ctx", n, ht);
    merge_heads<S, E>(o, sh.batch, sh.seq, sh.heads, sh.head_dim, st.ctx);
  }
  Mat x2 = alloc<Mat>("pipebench::x2", n, h);
  linear_forward<S, E>(st.ctx, w.wo, typename V::ConstVec(), x2);
  if (sp)
    x2 = sp->scatter(x2, TpPoint::attention_out_forward);
  else
    all_reduce<S, E>(hook, x2, TpPoint::attention_out_forward);
  st.xhat2 = alloc<Mat>("pipebench::xhat2", m, h);
  st.rstd2 = alloc<Vec>("pipebench::rstd2", m);
  {
    const Mat y2 = alloc<Mat>("pipebench::y2", m, h);
    residual_layernorm_forward<S, E>(x2, w.bo, x, w.ln2_g, w.ln2_b, y2, st.xhat2, st.rstd2);  // x2 += bo + x first
    st.y2 = sp ? sp->gather(y2, TpPoint::mlp_in_forward) : y2;
  }
  return x2;
}

// F. Fills `st` (probabilities only if keep_probs) and returns the layer output.
template <class S, class E>
typename Views<S, E>::Act layer_forward(const LayerShape& sh, const LayerParams<S, E>& w,
                                        const typename Views<S, E>::Act& in, LayerStash<S, E>& st, bool keep_probs,
                                        const AllReduceHook<S, E>& hook, const SeqParallel<S, E>* sp = nullptr,
                                        const ContextParallel<S, E>* cp = nullptr) {
  using V = Views<S, E>;
  using Mat = typename V::Mat;
  const std::size_t n = sh.rows(), h = static_cast<std::size_t>(sh.hidden), ht = sh.local();
  const std::size_t m = sp ? sp->local_rows() : n;
  const Mat x2 = layer_attention_forward<S, E>(sh, w, in, st, keep_probs, hook, sp, cp);
  st.u = alloc<Mat>("pipebench::u", n, 4 * ht);
  linear_forward<S, E>(st.y2, w.w1, typename V::ConstVec(), st.u);
  st.g = alloc<Mat>("pipebench::g", n, 4 * ht);
  bias_gelu_forward<S, E>(st.u, w.b1, st.g);

  const auto out = alloc<typename V::Act>("pipebench::layer_out", static_cast<std::size_t>(sh.batch), m / sh.batch, h);
  const Mat om = as_matrix<Mat>(out, m, h);
  if (sp) {
    const Mat partial = alloc<Mat>("pipebench::fc2_partial", n, h);
    linear_forward<S, E>(st.g, w.w2, typename V::ConstVec(), partial);
    sp->scatter(partial, TpPoint::mlp_out_forward, om);
  } else {
    linear_forward<S, E>(st.g, w.w2, typename V::ConstVec(), om);
    all_reduce<S, E>(hook, om, TpPoint::mlp_out_forward);
  }
  add_bias_residual<S, E>(om, w.b2, x2);
  return out;
}

template <class S, class E>
typename Views<S, E>::Act layer_attention_backward_input(const LayerShape& sh, const LayerParams<S, E>& w,
                                                         LayerStash<S, E>& st, const typename Views<S, E>::Mat& dy_local,
                                                         const AllReduceHook<S, E>& hook, const SeqParallel<S, E>* sp,
                                                         const ContextParallel<S, E>* cp);
template <class S, class E>
void layer_attention_backward_weight(const LayerParams<S, E>& gw, LayerStash<S, E>& st);

// I: input gradient from the output gradient `dout`; keeps what W needs.
template <class S, class E>
typename Views<S, E>::Act layer_backward_input(const LayerShape& sh, const LayerParams<S, E>& w,
                                               LayerStash<S, E>& st, const typename Views<S, E>::Act& dout,
                                               const AllReduceHook<S, E>& hook, const SeqParallel<S, E>* sp = nullptr,
                                               const ContextParallel<S, E>* cp = nullptr) {
  using V = Views<S, E>;
  using Mat = typename V::Mat;
  const std::size_t n = sh.rows(), h = static_cast<std::size_t>(sh.hidden), ht = sh.local();
  const std::size_t s = static_cast<std::size_t>(sh.seq);
  const std::size_t m = sp ? sp->local_rows() : n;
  const Mat dy_local = as_matrix<Mat>(dout, m, h);
  if (sp) {  // the mirror of F's reduce-scatter: W needs the gradient of every row
    st.dout = alloc<typename V::Act>("pipebench::dout_full", static_cast<std::size_t>(sh.batch), s, h);
    sp->gather(dy_local, TpPoint::mlp_out_backward, as_matrix<Mat>(st.dout, n, h));
  } else {
    st.dout = dout;
  }
  const Mat dy = as_matrix<Mat>(st.dout, n, h);

  st.du = alloc<Mat>("pipebench::du", n, 4 * ht);
  linear_backward_input<S, E>(dy, w.w2, st.du);
  gelu_backward_input<S, E>(st.u, st.du);
  st.u = Mat();
  st.dy2 = alloc<Mat>("pipebench::dy2", n, h);
  linear_backward_input<S, E>(st.du, w.w1, st.dy2);
  if (sp)
    st.dy2 = sp->scatter(st.dy2, TpPoint::mlp_in_backward);
  else
    all_reduce<S, E>(hook, st.dy2, TpPoint::mlp_in_backward);
  return layer_attention_backward_input<S, E>(sh, w, st, dy_local, hook, sp, cp);
}

// I's second half, from st.dy2 (the MLP input's gradient) and dy_local (the output gradient of this
// rank's rows, the residual's): the layer input's gradient.
template <class S, class E>
typename Views<S, E>::Act layer_attention_backward_input(const LayerShape& sh, const LayerParams<S, E>& w,
                                                         LayerStash<S, E>& st, const typename Views<S, E>::Mat& dy_local,
                                                         const AllReduceHook<S, E>& hook, const SeqParallel<S, E>* sp,
                                                         const ContextParallel<S, E>* cp) {
  using V = Views<S, E>;
  using Mat = typename V::Mat;
  using Heads = typename V::Heads;
  const std::size_t n = sh.rows(), h = static_cast<std::size_t>(sh.hidden), ht = sh.local(), z = sh.stacks();
  const std::size_t s = static_cast<std::size_t>(sh.seq), d = static_cast<std::size_t>(sh.head_dim);
  const S scale = S(1) / math::sqrt(static_cast<S>(sh.head_dim));
  const std::size_t m = sp ? sp->local_rows() : n;
  Mat dx2_local = alloc<Mat>("pipebench::dx2", m, h);
  layernorm_backward_input<S, E>(st.dy2, st.xhat2, st.rstd2, w.ln2_g, dy_local, dx2_local);
  st.rstd2 = typename V::Vec();
  st.dx2 = sp ? sp->gather(dx2_local, TpPoint::attention_out_backward) : dx2_local;
  {
    const Heads dctx = alloc<Heads>("pipebench::dctx", z, s, d);
    {
      const Mat dm = alloc<Mat>("pipebench::dctx_merged", n, ht);
      linear_backward_input<S, E>(st.dx2, w.wo, dm);
      unmerge_heads<S, E>(dm, sh.batch, sh.seq, sh.heads, sh.head_dim, dctx);
    }
    const Heads dq = alloc<Heads>("pipebench::dq", z, s, d);
    const Heads dk = alloc<Heads>("pipebench::dk", z, s, d);
    const Heads dv = alloc<Heads>("pipebench::dv", z, s, d);
    if (sh.fused_attention || cp) {  // F's output again, as heads, for the rows' D_i = sum dO O
      const Heads o = alloc<Heads>("pipebench::attention_out", z, s, d);
      unmerge_heads<S, E>(st.ctx, sh.batch, sh.seq, sh.heads, sh.head_dim, o);
      if (cp)
        cp_attention_backward<S, E>(*cp, st.q, st.k, st.v, o, st.lse, dctx, dq, dk, dv);
      else
        flash_attention_backward<S, E>(st.q, st.k, st.v, o, dctx, dq, dk, dv);
    } else {
      attention_backward_input<S, E>(st.q, st.k, st.v, st.probs, dctx, dq, dk, dv);
    }
    st.q = st.k = st.v = st.probs = Heads();
    st.lse = Mat();
    st.dqkv = alloc<Mat>("pipebench::dqkv", n, 3 * ht);
    merge_heads_qkv<S, E>(dq, dk, dv, sh.batch, sh.seq, sh.heads, sh.head_dim, scale, st.dqkv);
  }
  st.dy1 = alloc<Mat>("pipebench::dy1", n, h);
  linear_backward_input<S, E>(st.dqkv, w.wqkv, st.dy1);
  if (sp)
    st.dy1 = sp->scatter(st.dy1, TpPoint::qkv_in_backward);
  else
    all_reduce<S, E>(hook, st.dy1, TpPoint::qkv_in_backward);
  const auto din = alloc<typename V::Act>("pipebench::layer_din", static_cast<std::size_t>(sh.batch), m / sh.batch, h);
  layernorm_backward_input<S, E>(st.dy1, st.xhat1, st.rstd1, w.ln1_g, dx2_local, as_matrix<Mat>(din, m, h));
  st.rstd1 = typename V::Vec();
  return din;
}

// W: accumulates into the gradient views `gw`, releasing each stored tensor after its last use.
template <class S, class E>
void layer_backward_weight(const LayerShape& sh, const LayerParams<S, E>& gw, LayerStash<S, E>& st) {
  using V = Views<S, E>;
  using Mat = typename V::Mat;
  linear_backward_weight<S, E>(st.g, as_matrix<Mat>(st.dout, sh.rows(), static_cast<std::size_t>(sh.hidden)), gw.w2,
                               gw.b2);
  st.g = Mat();
  st.dout = typename V::Act();
  linear_backward_weight<S, E>(st.y2, st.du, gw.w1, gw.b1);
  st.y2 = st.du = Mat();
  layer_attention_backward_weight<S, E>(gw, st);
}

// W's second half: LN2, the projection, QKV and LN1 (what an MoE layer's W shares with the dense one).
template <class S, class E>
void layer_attention_backward_weight(const LayerParams<S, E>& gw, LayerStash<S, E>& st) {
  using Mat = typename Views<S, E>::Mat;
  layernorm_backward_weight<S, E>(st.dy2, st.xhat2, gw.ln2_g, gw.ln2_b);
  st.dy2 = st.xhat2 = Mat();
  linear_backward_weight<S, E>(st.ctx, st.dx2, gw.wo, gw.bo);
  st.ctx = st.dx2 = Mat();
  linear_backward_weight<S, E>(st.y1, st.dqkv, gw.wqkv, gw.bqkv);
  st.y1 = st.dqkv = Mat();
  layernorm_backward_weight<S, E>(st.dy1, st.xhat1, gw.ln1_g, gw.ln1_b);
  st.dy1 = st.xhat1 = Mat();
}

}  // namespace pipebench::kernels
