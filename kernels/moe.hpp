#pragma once
// The mixture-of-experts layer (docs/transformer.md "Mixture of experts"), in place of a layer's MLP:
//   F  logits = x Wr [n, E]; routing on the host (kernels/moe_routing.hpp: top-k, gates, capacity, aux
//      loss); the kept routes' tokens gathered expert-major into one [E, rows, h] stack (rows: the
//      largest expert's count, the others padded with zero rows); every expert's GELU MLP
//      o = gelu(xp W1 + b1) W2 + b2 as two batched products over all experts (kernels/gemm_batched.hpp:
//      one call each, not one per expert); the combine y[t] = sum_j gate[t, j] o[slot(t, j)]. Shared
//      experts (DeepSeek-MoE) are a second stack of S MLPs that every token passes with gate 1.
//   I  d o = gate * dy (0 on padding and dropped rows), the gates' gradients dy . o, back through the
//      experts' MLPs to the permuted rows and un-permuted into dx; the router's logits' gradient (gates
//      and aux loss) on the host, then dx += dlogits Wr^T.
//   W  dWr += x^T dlogits; per expert dW1 += xp^T du, db1 += colsum du, dW2 += a^T do, db2 += colsum do,
//      as batched products (padding rows are zero in do and du, so they add nothing).
// The weight gradients are deferrable like the dense W: I leaves what W needs in the stash.
// Expert parallelism will put the all-to-all between the gather and the experts and between the experts
// and the combine; the layer here holds all E experts.
#include <cstdint>
#include <vector>

#include "kernels/gelu.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_batched.hpp"
#include "kernels/moe_routing.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

template <class S, class E>
class MoeLayer {
 public:
  using V = Views<S, E>;
  using D = typename V::Device;
  using St = Stack<S, D>;
  using Index = Kokkos::View<int*, Kokkos::LayoutRight, D>;
  // Z MLPs of one size: W1 [Z, h, F], b1 [Z, F], W2 [Z, F, h], b2 [Z, h].
  struct Experts {
    St w1, w2;
    typename V::Mat b1, b2;
  };
  struct Weights {
    typename V::Mat router;  // [h, E], no bias (Megatron-Core's router)
    Experts routed, shared;
  };
  // One stack's activations: input rows, fc1's pre-activation, GELU, output; and I's output gradient and
  // fc1's pre-activation gradient, which W reads.
  struct Acts {
    St x, u, a, o, dout, du;
  };
  // What one micro-batch's F leaves for its I and W.
  struct Stash {
    MoeRouting routing;
    std::vector<double> logits;
    typename V::ConstMat x;
    Acts routed, shared;
    Index row_token;  // [E * rows] the token of each stack row, -1 on padding
    Index route_row;  // [n * k] each route's stack row, -1 when dropped
    typename V::Vec route_gate;  // [n * k] the gate of each route, 0 when dropped
    typename V::Mat dlogits;     // [n, E], from I for W
    int rows = 0;
  };

  MoeLayer(int hidden, const analysis::transformer::Moe& moe, std::int64_t ffn)
      : h_(hidden), f_(static_cast<int>(ffn)), moe_(moe), w_(make()), g_(make()) {}
  Weights& weights() { return w_; }
  Weights& grads() { return g_; }
  const analysis::transformer::Moe& config() const { return moe_; }

  // y = MoE(x) for x [n, h]; st keeps x's view (the caller keeps x alive until W).
  void forward(const typename V::ConstMat& x, const typename V::Mat& y, Stash& st) const {
    const int n = static_cast<int>(x.extent(0)), e = moe_.experts;
    st.x = x;
    typename V::Mat logits("moe.logits", n, e);
    gemm('N', 'N', S(1), x, w_.router, S(0), logits);
    st.logits = to_host(logits);
    st.routing = route(st.logits, n, moe_);
    index(st);
    st.routed.x = St("moe.xp", e, st.rows, h_);
    gather(x, st.row_token, st.routed.x);
    mlp_forward(w_.routed, st.routed);
    combine(st.routed.o, st.route_row, st.route_gate, moe_.top_k, y);
    if (moe_.shared_experts == 0) return;
    st.shared.x = St("moe.xs", moe_.shared_experts, n, h_);
    replicate(x, st.shared.x);
    mlp_forward(w_.shared, st.shared);
    add_stack_sum(st.shared.o, y);
  }

  // dx = d(objective)/dx from dy [n, h]; the aux loss enters the objective times aux_scale.
  void backward_input(Stash& st, const typename V::ConstMat& dy, const typename V::Mat& dx, double aux_scale) const {
    const int n = st.routing.tokens, e = moe_.experts, k = moe_.top_k;
    Acts& r = st.routed;
    r.dout = St("moe.dout", e, st.rows, h_);
    scatter_gate(dy, st.row_token, st.route_row, st.route_gate, k, r.dout);
    typename V::Vec dgate("moe.dgate", static_cast<std::size_t>(n) * k);
    gate_gradients(dy, r.o, st.route_row, k, dgate);
    St dxp("moe.dxp", e, st.rows, h_);
    mlp_backward_input(w_.routed, r, dxp);
    uncombine(dxp, st.route_row, k, dx);
    if (moe_.shared_experts > 0) {
      st.shared.dout = St("moe.dos", moe_.shared_experts, n, h_);
      replicate(dy, st.shared.dout);
      St dxs("moe.dxs", moe_.shared_experts, n, h_);
      mlp_backward_input(w_.shared, st.shared, dxs);
      add_stack_sum(dxs, dx);
    }
    const std::vector<double> dl = router_backward(st.routing, st.logits, to_host(dgate), moe_, aux_scale);
    st.dlogits = typename V::Mat("moe.dlogits", n, e);
    from_host(dl, st.dlogits);
    gemm('N', 'T', S(1), st.dlogits, w_.router, S(1), dx);
  }

  // Accumulates (+=) the weight gradients of the micro-batch whose I left st, then releases st's buffers.
  void backward_weight(Stash& st) {
    gemm('T', 'N', S(1), st.x, st.dlogits, S(1), g_.router);
    mlp_backward_weight(st.routed, g_.routed);
    if (moe_.shared_experts > 0) mlp_backward_weight(st.shared, g_.shared);
    st = Stash();
  }

 private:
  Experts experts(int z) const {
    return {St("moe.w1", z, h_, f_), St("moe.w2", z, f_, h_), typename V::Mat("moe.b1", z, f_),
            typename V::Mat("moe.b2", z, h_)};
  }
  Weights make() const {
    return {typename V::Mat("moe.router", h_, moe_.experts), experts(moe_.experts), experts(moe_.shared_experts)};
  }

  template <class View>
  static std::vector<double> to_host(const View& v) {
    auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    return std::vector<double>(m.data(), m.data() + m.span());
  }
  template <class View>
  static void from_host(const std::vector<double>& x, const View& v) {
    auto m = Kokkos::create_mirror_view(v);
    for (std::size_t i = 0; i < x.size(); ++i) m.data()[i] = static_cast<S>(x[i]);
    Kokkos::deep_copy(E(), v, m);
  }

  // The device's index views of the routing: stack rows are expert-major, each expert padded to `rows`.
  void index(Stash& st) const {
    const MoeRouting& r = st.routing;
    const int e = r.experts, k = r.top_k, n = r.tokens;
    st.rows = *std::max_element(r.count.begin(), r.count.end());
    std::vector<int> row_token(static_cast<std::size_t>(e) * st.rows, -1), route_row(r.slot.size(), -1);
    std::vector<double> gate(r.slot.size(), 0.0);
    for (int t = 0; t < n; ++t)
      for (int j = 0; j < k; ++j) {
        const int route = t * k + j, slot = r.slot[route];
        if (slot < 0) continue;
        const int x = r.expert[route], row = x * st.rows + (slot - r.offset[x]);
        row_token[row] = t, route_row[route] = row, gate[route] = r.gate[route];
      }
    st.row_token = Index("moe.row_token", row_token.size());
    st.route_row = Index("moe.route_row", route_row.size());
    st.route_gate = typename V::Vec("moe.route_gate", gate.size());
    auto copy_ints = [](const std::vector<int>& src, const Index& dst) {
      auto m = Kokkos::create_mirror_view(dst);
      for (std::size_t i = 0; i < src.size(); ++i) m(i) = src[i];
      Kokkos::deep_copy(E(), dst, m);
    };
    copy_ints(row_token, st.row_token);
    copy_ints(route_row, st.route_row);
    from_host(gate, st.route_gate);
  }

  // xp[row] = x[row_token[row]], 0 on padding.
  void gather(const typename V::ConstMat& x, const Index& row_token, const St& xp) const {
    const int h = h_;
    typename V::Mat rows_of = as_matrix<typename V::Mat>(xp, xp.extent(0) * xp.extent(1), h);
    Kokkos::parallel_for(
        "pipebench::moe_gather", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(rows_of.extent(0)), h}),
        KOKKOS_LAMBDA(int row, int c) {
          const int t = row_token(row);
          rows_of(row, c) = t < 0 ? S(0) : x(t, c);
        });
  }

  // Each of the Z slices of `s` = x.
  static void replicate(const typename V::ConstMat& x, const St& s) {
    const int n = static_cast<int>(x.extent(0)), h = static_cast<int>(x.extent(1));
    Kokkos::parallel_for(
        "pipebench::moe_replicate", Kokkos::MDRangePolicy<E, Kokkos::Rank<3>>({0, 0, 0}, {int(s.extent(0)), n, h}),
        KOKKOS_LAMBDA(int z, int t, int c) { s(z, t, c) = x(t, c); });
  }

  // y += sum over z of s[z].
  static void add_stack_sum(const St& s, const typename V::Mat& y) {
    const int z = static_cast<int>(s.extent(0));
    Kokkos::parallel_for(
        "pipebench::moe_stack_sum", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(y.extent(0)), int(y.extent(1))}),
        KOKKOS_LAMBDA(int t, int c) {
          S sum = 0;
          for (int i = 0; i < z; ++i) sum += s(i, t, c);
          y(t, c) += sum;
        });
  }

  // u[z] += b[z] by rows.
  static void add_bias(const St& u, const typename V::Mat& b) {
    Kokkos::parallel_for(
        "pipebench::moe_bias",
        Kokkos::MDRangePolicy<E, Kokkos::Rank<3>>({0, 0, 0}, {int(u.extent(0)), int(u.extent(1)), int(u.extent(2))}),
        KOKKOS_LAMBDA(int z, int i, int c) { u(z, i, c) += b(z, c); });
  }

  // db[z] += the column sums of d[z] (each element summed by one thread, in row order).
  static void add_column_sums(const St& d, const typename V::Mat& db) {
    const int rows = static_cast<int>(d.extent(1));
    Kokkos::parallel_for(
        "pipebench::moe_column_sums", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(d.extent(0)), int(d.extent(2))}),
        KOKKOS_LAMBDA(int z, int c) {
          S sum = 0;
          for (int i = 0; i < rows; ++i) sum += d(z, i, c);
          db(z, c) += sum;
        });
  }

  typename V::Mat flat(const St& s, int cols) const {
    return as_matrix<typename V::Mat>(s, s.extent(0) * s.extent(1), static_cast<std::size_t>(cols));
  }

  void mlp_forward(const Experts& w, Acts& a) const {
    const std::size_t z = a.x.extent(0), rows = a.x.extent(1);
    a.u = St("moe.u", z, rows, f_), a.a = St("moe.a", z, rows, f_), a.o = St("moe.o", z, rows, h_);
    gemm_batched<S, D>('N', 'N', S(1), a.x, w.w1, S(0), a.u);
    add_bias(a.u, w.b1);
    gelu_forward<S, E>(flat(a.u, f_), flat(a.a, f_));
    gemm_batched<S, D>('N', 'N', S(1), a.a, w.w2, S(0), a.o);
    add_bias(a.o, w.b2);
  }

  // From a.dout: a.du (fc1's pre-activation gradient) and dx, the rows' input gradient.
  void mlp_backward_input(const Experts& w, Acts& a, const St& dx) const {
    a.du = St("moe.du", a.x.extent(0), a.x.extent(1), f_);
    gemm_batched<S, D>('N', 'T', S(1), a.dout, w.w2, S(0), a.du);
    gelu_backward_input<S, E>(flat(a.u, f_), flat(a.du, f_));
    gemm_batched<S, D>('N', 'T', S(1), a.du, w.w1, S(0), dx);
  }

  static void mlp_backward_weight(const Acts& a, Experts& g) {
    gemm_batched<S, D>('T', 'N', S(1), a.x, a.du, S(1), g.w1);
    add_column_sums(a.du, g.b1);
    gemm_batched<S, D>('T', 'N', S(1), a.a, a.dout, S(1), g.w2);
    add_column_sums(a.dout, g.b2);
  }

  // y[t] = sum over t's kept routes j, in rank order, of gate * o[row].
  void combine(const St& o, const Index& route_row, const typename V::Vec& gate, int k, const typename V::Mat& y) const {
    const typename V::Mat of = flat(o, h_);
    Kokkos::parallel_for(
        "pipebench::moe_combine", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(y.extent(0)), h_}),
        KOKKOS_LAMBDA(int t, int c) {
          S sum = 0;
          for (int j = 0; j < k; ++j) {
            const int row = route_row(t * k + j);
            if (row >= 0) sum += gate(t * k + j) * of(row, c);
          }
          y(t, c) = sum;
        });
  }

  // dx[t] = sum over t's kept routes of dxp[row] (the combine's transpose without the gates).
  void uncombine(const St& dxp, const Index& route_row, int k, const typename V::Mat& dx) const {
    const typename V::Mat df = flat(dxp, h_);
    Kokkos::parallel_for(
        "pipebench::moe_uncombine", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(dx.extent(0)), h_}),
        KOKKOS_LAMBDA(int t, int c) {
          S sum = 0;
          for (int j = 0; j < k; ++j) {
            const int row = route_row(t * k + j);
            if (row >= 0) sum += df(row, c);
          }
          dx(t, c) = sum;
        });
  }

  // dout[row] = gate * dy[token], 0 on padding and dropped rows.
  void scatter_gate(const typename V::ConstMat& dy, const Index& row_token, const Index& route_row,
                    const typename V::Vec& gate, int k, const St& dout) const {
    const typename V::Mat df = flat(dout, h_);
    Kokkos::deep_copy(E(), df, S(0));
    Kokkos::parallel_for(
        "pipebench::moe_scatter_gate", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(dy.extent(0)) * k, h_}),
        KOKKOS_LAMBDA(int route, int c) {
          const int row = route_row(route);
          if (row >= 0) df(row, c) = gate(route) * dy(row_token(row), c);
        });
  }

  // dgate[route] = dy[t] . o[row], 0 when dropped.
  void gate_gradients(const typename V::ConstMat& dy, const St& o, const Index& route_row, int k,
                      const typename V::Vec& dgate) const {
    const typename V::Mat of = flat(o, h_);
    const int h = h_;
    Kokkos::parallel_for(
        "pipebench::moe_gate_gradients", Kokkos::RangePolicy<E>(0, int(dgate.extent(0))), KOKKOS_LAMBDA(int route) {
          const int row = route_row(route), t = route / k;
          S sum = 0;
          if (row >= 0)
            for (int c = 0; c < h; ++c) sum += dy(t, c) * of(row, c);
          dgate(route) = sum;
        });
  }

  int h_, f_;
  analysis::transformer::Moe moe_;
  Weights w_, g_;
};

}  // namespace pipebench::kernels
