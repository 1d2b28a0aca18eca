// Each kernel in double precision: forward against a direct host computation, backward (I and W) against
// central finite differences of a scalar objective f = sum(w * output) with fixed random weights w, so
// the output gradient is w. Tolerance 1e-6 of the largest gradient: central differences with eps = 1e-6
// have truncation error ~1e-12 and rounding error ~1e-10 here.
#include "helpers.hpp"

#include "kernels/attention.hpp"
#include "kernels/cross_entropy.hpp"
#include "kernels/embedding.hpp"
#include "kernels/gelu.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/linear.hpp"

namespace pipebench::kernels::test {
namespace {

constexpr double kTol = 1e-6;

TEST(KernelGradients, LayerNorm) {
  const int n = 3, h = 7;
  auto x = random_view(VD::Mat("x", n, h), 1, 2.0, 0.5);
  auto gamma = random_view(VD::Vec("g", h), 2, 0.5, 1.0);
  auto beta = random_view(VD::Vec("b", h), 3, 0.5);
  VD::Mat y("y", n, h), xhat("xhat", n, h);
  VD::Vec rstd("rstd", n);
  const auto w = random_vec(n * h, 4, 1.0);

  layernorm_forward<double, Exec>(x, gamma, beta, y, xhat, rstd);
  const auto xs = host(x), gs = host(gamma), bs = host(beta), ys = host(y);
  std::vector<double> want(ys.size());
  for (int r = 0; r < n; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < h; ++j) mean += xs[r * h + j] / h;
    for (int j = 0; j < h; ++j) var += (xs[r * h + j] - mean) * (xs[r * h + j] - mean) / h;
    for (int j = 0; j < h; ++j) want[r * h + j] = (xs[r * h + j] - mean) / std::sqrt(var + 1e-5) * gs[j] + bs[j];
  }
  expect_close(ys, want, 1e-12, "forward");

  VD::Mat dy("dy", n, h), dx("dx", n, h), residual("residual", n, h);
  set(dy, w);
  layernorm_backward_input<double, Exec>(dy, xhat, rstd, gamma, VD::ConstMat(), dx);
  VD::Vec dgamma("dgamma", h), dbeta("dbeta", h);
  layernorm_backward_weight<double, Exec>(dy, xhat, dgamma, dbeta);

  auto f = [&](const auto& view) {
    return [&, view](const std::vector<double>& p) {
      set(view, p);
      VD::Mat yy("yy", n, h), xh("xh", n, h);
      VD::Vec rs("rs", n);
      layernorm_forward<double, Exec>(x, gamma, beta, yy, xh, rs);
      return dot(host(yy), w);
    };
  };
  auto px = host(x), pg = host(gamma), pb = host(beta);
  expect_close(host(dx), numeric_gradient(px, f(x)), kTol, "dx");
  expect_close(host(dgamma), numeric_gradient(pg, f(gamma)), kTol, "dgamma");
  expect_close(host(dbeta), numeric_gradient(pb, f(beta)), kTol, "dbeta");

  // The residual form adds its input exactly; W accumulates (+=).
  random_view(residual, 5, 1.0);
  VD::Mat dx_res("dx_res", n, h);
  layernorm_backward_input<double, Exec>(dy, xhat, rstd, gamma, residual, dx_res);
  const auto r = host(residual), d = host(dx), dr = host(dx_res);
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_EQ(dr[i], r[i] + d[i]);
  const auto g1 = host(dgamma);
  layernorm_backward_weight<double, Exec>(dy, xhat, dgamma, dbeta);
  const auto g2 = host(dgamma);
  for (std::size_t i = 0; i < g1.size(); ++i) EXPECT_DOUBLE_EQ(g2[i], 2 * g1[i]);
}

TEST(KernelGradients, Linear) {
  const int n = 4, in = 5, out = 3;
  auto x = random_view(VD::Mat("x", n, in), 11, 1.0);
  auto w = random_view(VD::Mat("w", in, out), 12, 1.0);
  auto b = random_view(VD::Vec("b", out), 13, 1.0);
  const auto wy = random_vec(n * out, 14, 1.0);
  VD::Mat y("y", n, out);
  linear_forward<double, Exec>(x, w, b, y);
  const auto xs = host(x), ws = host(w), bs = host(b);
  std::vector<double> want(n * out);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < out; ++c) {
      want[r * out + c] = bs[c];
      for (int k = 0; k < in; ++k) want[r * out + c] += xs[r * in + k] * ws[k * out + c];
    }
  expect_close(host(y), want, 1e-13, "forward");

  VD::Mat dy("dy", n, out), dx("dx", n, in), dw("dw", in, out);
  VD::Vec db("db", out);
  set(dy, wy);
  linear_backward_input<double, Exec>(dy, w, dx);
  linear_backward_weight<double, Exec>(x, dy, dw, db);
  auto f = [&](const auto& view) {
    return [&, view](const std::vector<double>& p) {
      set(view, p);
      VD::Mat yy("yy", n, out);
      linear_forward<double, Exec>(x, w, b, yy);
      return dot(host(yy), wy);
    };
  };
  auto px = host(x), pw = host(w), pb = host(b);
  expect_close(host(dx), numeric_gradient(px, f(x)), kTol, "dx");
  expect_close(host(dw), numeric_gradient(pw, f(w)), kTol, "dW");
  expect_close(host(db), numeric_gradient(pb, f(b)), kTol, "db");
}

TEST(KernelGradients, Gelu) {
  const int n = 3, c = 8;
  auto u = random_view(VD::Mat("u", n, c), 21, 3.0);
  const auto w = random_vec(n * c, 22, 1.0);
  VD::Mat g("g", n, c), dg("dg", n, c);
  gelu_forward<double, Exec>(u, g);
  const auto us = host(u);
  std::vector<double> want(us.size());
  for (std::size_t i = 0; i < us.size(); ++i) {
    const double v = us[i];
    want[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  expect_close(host(g), want, 1e-14, "forward");
  set(dg, w);
  gelu_backward_input<double, Exec>(u, dg);
  auto pu = host(u);
  expect_close(host(dg), numeric_gradient(pu, [&](const std::vector<double>& p) {
                 set(u, p);
                 VD::Mat gg("gg", n, c);
                 gelu_forward<double, Exec>(u, gg);
                 return dot(host(gg), w);
               }),
               kTol, "du");
}

TEST(KernelGradients, HeadLayoutIsContiguousPerSequenceAndHead) {
  // qkv column (part, head, j) of row (bi, i) lands at part[bi * heads + head][i][j].
  const int b = 2, s = 3, heads = 2, d = 2, hd = heads * d;
  VD::Mat qkv("qkv", b * s, 3 * hd);
  std::vector<double> vals(qkv.span());
  for (std::size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<double>(i);
  set(qkv, vals);
  VD::Heads q("q", b * heads, s, d), k("k", b * heads, s, d), v("v", b * heads, s, d);
  split_heads<double, Exec>(qkv, b, s, heads, d, 0.5, q, k, v);
  const auto qs = host(q), ks = host(k), vs = host(v);
  for (int bi = 0; bi < b; ++bi)
    for (int hh = 0; hh < heads; ++hh)
      for (int i = 0; i < s; ++i)
        for (int j = 0; j < d; ++j) {
          const std::size_t at = ((bi * heads + hh) * s + i) * d + j, row = bi * s + i, col = hh * d + j;
          EXPECT_EQ(qs[at], 0.5 * vals[row * 3 * hd + col]);
          EXPECT_EQ(ks[at], vals[row * 3 * hd + hd + col]);
          EXPECT_EQ(vs[at], vals[row * 3 * hd + 2 * hd + col]);
        }
  VD::Mat merged("merged", b * s, hd);
  merge_heads<double, Exec>(k, b, s, heads, d, merged);
  for (int r = 0; r < b * s; ++r)
    for (int c = 0; c < hd; ++c) EXPECT_EQ(host(merged)[r * hd + c], vals[r * 3 * hd + hd + c]);
}

TEST(KernelGradients, CausalAttention) {
  const int z = 3, s = 4, d = 3;
  auto q = random_view(VD::Heads("q", z, s, d), 31, 1.5);
  auto k = random_view(VD::Heads("k", z, s, d), 32, 1.5);
  auto v = random_view(VD::Heads("v", z, s, d), 33, 1.0);
  const auto w = random_vec(z * s * d, 34, 1.0);
  VD::Heads probs("p", z, s, s), o("o", z, s, d);
  attention_forward<double, Exec>(q, k, v, probs, o);

  const auto qs = host(q), ks = host(k), vs = host(v);
  std::vector<double> want(z * s * d, 0.0);
  for (int zi = 0; zi < z; ++zi)
    for (int i = 0; i < s; ++i) {
      std::vector<double> e(i + 1);
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= i; ++j) {
        e[j] = 0;
        for (int c = 0; c < d; ++c) e[j] += qs[(zi * s + i) * d + c] * ks[(zi * s + j) * d + c];
        mx = std::max(mx, e[j]);
      }
      for (int j = 0; j <= i; ++j) sum += (e[j] = std::exp(e[j] - mx));
      for (int j = 0; j <= i; ++j)
        for (int c = 0; c < d; ++c) want[(zi * s + i) * d + c] += e[j] / sum * vs[(zi * s + j) * d + c];
    }
  expect_close(host(o), want, 1e-13, "forward");
  const auto ps = host(probs);
  for (int zi = 0; zi < z; ++zi)
    for (int i = 0; i < s; ++i)
      for (int j = i + 1; j < s; ++j) EXPECT_EQ(ps[(zi * s + i) * s + j], 0.0) << "future position not masked";

  VD::Heads dout("do", z, s, d), dq("dq", z, s, d), dk("dk", z, s, d), dv("dv", z, s, d);
  set(dout, w);
  attention_backward_input<double, Exec>(q, k, v, probs, dout, dq, dk, dv);
  auto f = [&](const VD::Heads& which) {
    return [&, which](const std::vector<double>& p) {
      set(which, p);
      VD::Heads oo("oo", z, s, d);
      attention_forward<double, Exec>(q, k, v, VD::Heads(), oo);
      return dot(host(oo), w);
    };
  };
  auto pq = host(q), pk = host(k), pv = host(v);
  expect_close(host(dq), numeric_gradient(pq, f(q)), kTol, "dq");
  expect_close(host(dk), numeric_gradient(pk, f(k)), kTol, "dk");
  expect_close(host(dv), numeric_gradient(pv, f(v)), kTol, "dv");

  // Recomputing the probabilities (selective recomputation) gives the same bits as storing them.
  VD::Heads dq2("dq2", z, s, d), dk2("dk2", z, s, d), dv2("dv2", z, s, d);
  attention_backward_input<double, Exec>(q, k, v, VD::Heads(), dout, dq2, dk2, dv2);
  EXPECT_EQ(host(dq2), host(dq));
  EXPECT_EQ(host(dk2), host(dk));
  EXPECT_EQ(host(dv2), host(dv));
}

TEST(KernelGradients, Embedding) {
  const TokenSource src{7, 3, 2, 4, 5, {}};  // seed, micro-batch, b, s, V
  const int n = src.batch * src.seq, h = 3;
  auto wte = random_view(VD::Mat("wte", src.vocab, h), 41, 1.0);
  auto wpe = random_view(VD::Mat("wpe", src.seq, h), 42, 1.0);
  const auto w = random_vec(n * h, 43, 1.0);
  VD::Mat x("x", n, h);
  embedding_forward<double, Exec>(src, wte, wpe, x);
  const auto te = host(wte), pe = host(wpe), xs = host(x);
  for (int r = 0; r < n; ++r) {
    const int tok = token_at(src.seed, src.micro_batch, r / src.seq, r % src.seq, src.vocab);
    ASSERT_GE(tok, 0);
    ASSERT_LT(tok, src.vocab);
    for (int j = 0; j < h; ++j) EXPECT_EQ(xs[r * h + j], te[tok * h + j] + pe[(r % src.seq) * h + j]);
  }
  VD::Mat dx("dx", n, h), dwte("dwte", src.vocab, h), dwpe("dwpe", src.seq, h);
  set(dx, w);
  embedding_backward_weight<double, Exec>(src, dx, dwte, dwpe);
  auto f = [&](const VD::Mat& which) {
    return [&, which](const std::vector<double>& p) {
      set(which, p);
      VD::Mat xx("xx", n, h);
      embedding_forward<double, Exec>(src, wte, wpe, xx);
      return dot(host(xx), w);
    };
  };
  auto pt = host(wte), pp = host(wpe);
  expect_close(host(dwte), numeric_gradient(pt, f(wte)), kTol, "dwte");
  expect_close(host(dwpe), numeric_gradient(pp, f(wpe)), kTol, "dwpe");
}

TEST(KernelGradients, CrossEntropy) {
  const TokenSource src{9, 1, 2, 3, 6, {}};
  const int n = src.batch * src.seq, vocab = src.vocab;
  const auto logits0 = random_vec(n * vocab, 51, 3.0);
  VD::Mat logits("logits", n, vocab);
  set(logits, logits0);
  const double loss = cross_entropy_forward<double, Exec>(src, logits);
  double want = 0;
  for (int r = 0; r < n; ++r) {
    const int target = token_at(src.seed, src.micro_batch, r / src.seq, r % src.seq + 1, vocab);
    double sum = 0;
    for (int j = 0; j < vocab; ++j) sum += std::exp(logits0[r * vocab + j]);
    want += (std::log(sum) - logits0[r * vocab + target]) / n;
  }
  EXPECT_NEAR(loss, want, 1e-13);
  auto p = logits0;
  expect_close(host(logits), numeric_gradient(p, [&](const std::vector<double>& x) {
                 VD::Mat l("l", n, vocab);
                 set(l, x);
                 return cross_entropy_forward<double, Exec>(src, l);
               }),
               kTol, "dlogits");
}

}  // namespace
}  // namespace pipebench::kernels::test
