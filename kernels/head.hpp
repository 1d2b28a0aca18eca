#pragma once
// The last stage's head: final LayerNorm, output projection to the vocabulary (its own weight, or the
// token embedding's when tied), mean cross-entropy; vocabulary-parallel, the projection's columns
// and the loss split over the tensor-parallel ranks.
//   F stores xhat, rstd, y (the projection's input) and dlogits; I frees rstd and stores dy (the
//   LayerNorm's output gradient); W frees everything. Sequence-parallel, xhat, rstd and dy hold this
//   rank's s/t positions and y is gathered to all of them.
#include "kernels/cross_entropy.hpp"
#include "kernels/layer.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/linear.hpp"

namespace pipebench::kernels {

template <class S, class E>
struct HeadParams {
  typename Views<S, E>::Vec ln_g, ln_b;
  typename Views<S, E>::Mat out;  // [h, V]; tied: the token embedding [V, h], used transposed
  bool tied = false;
  // Vocabulary-parallel: `out` holds the vocabulary [v0, v0 + V/t) of this rank of t.
  bool vocab_split = false;
  int v0 = 0, tp_size = 1, tp_rank = 0;
};

template <class S, class E>
struct HeadStash {
  typename Views<S, E>::Mat xhat, y, dlogits, dy;
  typename Views<S, E>::Vec rstd;
  std::size_t bytes() const { return bytes_of(xhat) + bytes_of(y) + bytes_of(dlogits) + bytes_of(dy) + bytes_of(rstd); }
  // The members a 16-bit run keeps in 16 bits (kernels/stash16.hpp): not rstd, nor dlogits, which is the
  // loss's softmax, kept in fp32 as Megatron's cross-entropy keeps it.
  template <class F>
  void each16(F&& f) {
    f(xhat), f(y), f(dy, true);
  }
};

// Returns the mean loss of the micro-batch. `reduce(m, point)` sums m over the tensor-parallel group
// (vocabulary-parallel only; a TpPoint).
template <class S, class E, class Reduce>
double head_forward(const TokenSource& src, const HeadParams<S, E>& w, const typename Views<S, E>::Act& in,
                    HeadStash<S, E>& st, const Reduce& reduce, const SeqParallel<S, E>* sp = nullptr) {
  using Mat = typename Views<S, E>::Mat;
  // Sequence-parallel: the final LayerNorm runs on this rank's m rows and its output is gathered.
  const std::size_t ml = in.extent(0) * in.extent(1), h = in.extent(2), vocab = w.out.extent(w.tied ? 0 : 1);
  const std::size_t n = sp ? ml * static_cast<std::size_t>(sp->t) : ml;
  st.xhat = alloc<Mat>("pipebench::head_xhat", ml, h);
  st.rstd = alloc<typename Views<S, E>::Vec>("pipebench::head_rstd", ml);
  {
    const Mat y = alloc<Mat>("pipebench::head_y", ml, h);
    layernorm_forward<S, E>(as_matrix<Mat>(in, ml, h), w.ln_g, w.ln_b, y, st.xhat, st.rstd);
    st.y = sp ? sp->gather(y, TpPoint::head_in_forward) : y;
  }
  st.dlogits = alloc<Mat>("pipebench::dlogits", n, vocab);
  if (w.tied)
    gemm('N', 'T', S(1), st.y, w.out, S(0), st.dlogits);
  else
    linear_forward<S, E>(st.y, w.out, typename Views<S, E>::ConstVec(), st.dlogits);
  if (!w.vocab_split) return cross_entropy_forward<S, E>(src, st.dlogits);
  return parallel_cross_entropy_forward<S, E>(src, st.dlogits, w.v0, w.tp_size, w.tp_rank, [&](const Mat& m, int k) {
    reduce(m, k == 0 ? TpPoint::loss_max_forward : TpPoint::loss_sum_forward);
  });
}

template <class S, class E, class Reduce>
typename Views<S, E>::Act head_backward_input(const HeadParams<S, E>& w, HeadStash<S, E>& st, std::size_t batch,
                                              const Reduce& reduce, const SeqParallel<S, E>* sp = nullptr) {
  using Mat = typename Views<S, E>::Mat;
  const std::size_t m = st.xhat.extent(0), h = st.xhat.extent(1), n = st.y.extent(0);
  st.dy = alloc<Mat>("pipebench::head_dy", n, h);
  if (w.tied)
    gemm('N', 'N', S(1), st.dlogits, w.out, S(0), st.dy);
  else
    linear_backward_input<S, E>(st.dlogits, w.out, st.dy);
  if (sp && w.vocab_split) {
    st.dy = sp->scatter(st.dy, TpPoint::head_in_backward);  // F's all-gather mirrored
  } else if (sp) {
    const Mat local = alloc<Mat>("pipebench::head_dy_local", m, h);  // replicated: this rank's rows
    sp->take(st.dy, local);
    st.dy = local;
  } else if (w.vocab_split) {
    reduce(st.dy, TpPoint::head_in_backward);  // each rank's vocabulary contributes a part
  }
  const auto dx = alloc<typename Views<S, E>::Act>("pipebench::head_dx", batch, m / batch, h);
  layernorm_backward_input<S, E>(st.dy, st.xhat, st.rstd, w.ln_g, typename Views<S, E>::ConstMat(),
                                 as_matrix<Mat>(dx, m, h));
  st.rstd = typename Views<S, E>::Vec();
  return dx;
}

template <class S, class E>
void head_backward_weight(const HeadParams<S, E>& gw, HeadStash<S, E>& st) {
  using Mat = typename Views<S, E>::Mat;
  if (gw.tied)
    gemm('T', 'N', S(1), st.dlogits, st.y, S(1), gw.out);  // d(emb) [V, h] += dlogits^T y
  else
    linear_backward_weight<S, E>(st.y, st.dlogits, gw.out, typename Views<S, E>::Vec());
  st.y = st.dlogits = Mat();
  layernorm_backward_weight<S, E>(st.dy, st.xhat, gw.ln_g, gw.ln_b);
  st.dy = st.xhat = Mat();
}

}  // namespace pipebench::kernels
