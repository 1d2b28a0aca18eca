#pragma once
// The mixture-of-experts layer (docs/transformer.md "Mixture of experts"), in place of a layer's MLP:
//   F  logits = x Wr [n, E]; routing on the host (kernels/moe_routing.hpp: top-k, gates, capacity, aux
//      loss); the kept routes' tokens permuted expert-major; under expert parallelism the counts per
//      expert are exchanged first, then the rows go to the ep rank that holds their expert (dispatch,
//      an all-to-all-v); the local experts' rows as one [E/ep, rows, h] stack (rows: the largest local
//      expert's count, the others padded with zero rows); each local expert's GELU MLP
//      o = gelu(x W1 + b1) W2 + b2 as two batched products (kernels/gemm_batched.hpp: one call each,
//      not one per expert); the outputs back to their tokens' ranks (combine: the reverse all-to-all-v)
//      and y[t] = sum_j gate[t, j] o[route (t, j)]. Shared experts (DeepSeek-MoE) are a second stack of
//      S MLPs, replicated, that every token passes with gate 1.
//   I  d o = gate * dy on the permuted rows, dispatched like F's rows, back through the experts' MLPs,
//      returned and un-permuted into dx; the gates' gradients dy . o and the aux loss give the router
//      logits' gradient (host), then dx += dlogits Wr^T.
//   W  dWr += x^T dlogits; per local expert dW1 += x^T du, db1 += colsum du, dW2 += a^T do,
//      db2 += colsum do, as batched products (padding rows are zero in do and du: they add nothing).
// The weight gradients are deferrable like the dense W: I leaves what W needs in the stash. The caller
// reduces the router's and the shared experts' gradients over the dense data-parallel group and the
// routed experts' over the expert-data-parallel group (topology/grid.hpp).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/gelu.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_batched.hpp"
#include "kernels/moe_routing.hpp"
#include "kernels/moe_rows.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

// Expert parallelism's exchange over the ep group (the caller's communicator, host memory): an
// all-to-all-v, send_bytes[j] bytes of `send` to ep rank j and recv_bytes[i] bytes from rank i into
// `recv`, blocks back to back; returns once complete. `exchange` says which (kernels/synthetic.hpp's
// EpExchange numbers): 0 F's dispatch, 1 F's combine, 2 I's rows to the experts (the combine's
// gradient), 3 I's rows back (the dispatch's gradient), 4 F's counts per expert.
using MoeAllToAll = std::function<void(const void* send, const std::vector<std::size_t>& send_bytes, void* recv,
                                       const std::vector<std::size_t>& recv_bytes, int exchange)>;

template <class S, class E>
class MoeLayer {
 public:
  using V = Views<S, E>;
  using D = typename V::Device;
  using Mat = typename V::Mat;
  using St = Stack<S, D>;
  using Index = moe::Index<S, E>;
  // Z MLPs of one size: W1 [Z, h, F], b1 [Z, F], W2 [Z, F, h], b2 [Z, h].
  struct Experts {
    St w1, w2;
    Mat b1, b2;
  };
  struct Weights {
    Mat router;  // [h, E], no bias (Megatron-Core's router)
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
    MoeDispatch dispatch;
    std::vector<double> logits;
    typename V::ConstMat x;
    Acts routed, shared;
    Index perm_token;          // [kept] the token of each permuted row
    typename V::Vec perm_gate;  // [kept] its gate
    Index route_perm;          // [n * k] each route's permuted row, -1 when dropped
    typename V::Vec gate;      // [n * k] each route's gate, 0 when dropped
    Index stack_row_of;        // [arrivals] the stack row of each arriving row
    Index arrival_of;          // [local * rows] the arriving row of each stack row, -1 on padding
    Mat out;                   // [kept, h] the experts' outputs, back in permuted order
    Mat dlogits;               // [n, E], from I for W
  };

  // Holds experts [ep_rank * E/ep, (ep_rank + 1) * E/ep); `exchange` is needed when ep > 1.
  MoeLayer(int hidden, const analysis::transformer::Moe& moe, std::int64_t ffn, int ep = 1, int ep_rank = 0,
           MoeAllToAll exchange = {})
      : h_(hidden), f_(static_cast<int>(ffn)), ep_(ep), local_(moe.experts / ep), first_(ep_rank * local_), moe_(moe),
        exchange_(std::move(exchange)), w_(make()), g_(make()) {}
  // The same over weights and gradients the caller holds (a stage's flat buffers, kernels/moe_stage.hpp).
  MoeLayer(int hidden, const analysis::transformer::Moe& moe, std::int64_t ffn, int ep, int ep_rank,
           MoeAllToAll exchange, Weights w, Weights g)
      : h_(hidden), f_(static_cast<int>(ffn)), ep_(ep), local_(moe.experts / ep), first_(ep_rank * local_), moe_(moe),
        exchange_(std::move(exchange)), w_(std::move(w)), g_(std::move(g)) {}
  void bind(Weights w, Weights g) { w_ = std::move(w), g_ = std::move(g); }
  Weights& weights() { return w_; }
  Weights& grads() { return g_; }
  int first_expert() const { return first_; }
  // The device bytes st holds (moe_stash is the formula): activations, gates and index vectors.
  static std::size_t stash_bytes(const Stash& st) {
    std::size_t b = bytes_of(st.perm_token) + bytes_of(st.perm_gate) + bytes_of(st.route_perm) + bytes_of(st.gate) +
                    bytes_of(st.stack_row_of) + bytes_of(st.arrival_of) + bytes_of(st.out) + bytes_of(st.dlogits);
    for (const Acts* a : {&st.routed, &st.shared})
      for (const St* v : {&a->x, &a->u, &a->a, &a->o, &a->dout, &a->du}) b += bytes_of(*v);
    return b;
  }

  // y = MoE(x) for x [n, h]; st keeps x's view (the caller keeps x alive until W).
  void forward(const typename V::ConstMat& x, const Mat& y, Stash& st) const {
    const int n = static_cast<int>(x.extent(0));
    st.x = x;
    Mat logits("moe.logits", n, moe_.experts);
    gemm('N', 'N', S(1), x, w_.router, S(0), logits);
    st.logits = to_host(logits);
    st.routing = route(st.logits, n, moe_);
    plan(st);
    Mat perm("moe.perm", st.routing.kept(), h_);
    moe::gather_rows<S, E>(x, st.perm_token, {}, perm);
    st.routed.x = to_experts(perm, st, "moe.dispatch", 0);
    mlp_forward(w_.routed, st.routed);
    st.out = from_experts(st.routed.o, st, "moe.combine", 1);
    moe::combine<S, E>(st.out, st.route_perm, moe_.top_k, st.gate, y);
    if (moe_.shared_experts == 0) return;
    st.shared.x = St("moe.shared_x", moe_.shared_experts, n, h_);
    moe::replicate<S, E>(x, st.shared.x);
    mlp_forward(w_.shared, st.shared);
    moe::add_stack_sum<S, E>(st.shared.o, y);
  }

  // dx = d(objective)/dx from dy [n, h]; the aux loss enters the objective times aux_scale.
  void backward_input(Stash& st, const typename V::ConstMat& dy, const Mat& dx, double aux_scale) const {
    const int n = st.routing.tokens, k = moe_.top_k;
    Mat perm("moe.dperm", st.routing.kept(), h_);
    moe::gather_rows<S, E>(dy, st.perm_token, st.perm_gate, perm);
    typename V::Vec dgate("moe.dgate", static_cast<std::size_t>(n) * k);
    moe::gate_gradients<S, E>(dy, st.out, st.route_perm, k, dgate);
    st.routed.dout = to_experts(perm, st, "moe.dispatch_grad", 2);
    St dx_rows("moe.dx_rows", local_, st.dispatch.rows, h_);
    mlp_backward_input(w_.routed, st.routed, dx_rows);
    moe::combine<S, E>(from_experts(dx_rows, st, "moe.combine_grad", 3), st.route_perm, k, {}, dx);
    if (moe_.shared_experts > 0) {
      st.shared.dout = St("moe.shared_dout", moe_.shared_experts, n, h_);
      moe::replicate<S, E>(dy, st.shared.dout);
      St dxs("moe.shared_dx", moe_.shared_experts, n, h_);
      mlp_backward_input(w_.shared, st.shared, dxs);
      moe::add_stack_sum<S, E>(dxs, dx);
    }
    // What W does not read goes now (analysis/transformer/activations.hpp, moe_stash's weight stash).
    st.routed.u = St(), st.routed.o = St(), st.shared.u = St(), st.shared.o = St(), st.out = Mat();
    const std::vector<double> dl = router_backward(st.routing, st.logits, to_host(dgate), moe_, aux_scale);
    st.dlogits = Mat("moe.dlogits", n, moe_.experts);
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
    return {St("moe.w1", z, h_, f_), St("moe.w2", z, f_, h_), Mat("moe.b1", z, f_), Mat("moe.b2", z, h_)};
  }
  Weights make() const { return {Mat("moe.router", h_, moe_.experts), experts(local_), experts(moe_.shared_experts)}; }

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
  template <class T>
  static Kokkos::View<T*, Kokkos::LayoutRight, D> device_copy(const std::vector<T>& src, const char* label) {
    Kokkos::View<T*, Kokkos::LayoutRight, D> dst(std::string(label), src.size());
    auto m = Kokkos::create_mirror_view(dst);
    for (std::size_t i = 0; i < src.size(); ++i) m(i) = src[i];
    Kokkos::deep_copy(E(), dst, m);
    return dst;
  }
  Mat flat(const St& s) const { return as_matrix<Mat>(s, s.extent(0) * s.extent(1), s.extent(2)); }

  // The dispatch of st's routing (under expert parallelism the counts are exchanged first) and the
  // device's index views of both.
  void plan(Stash& st) const {
    const MoeRouting& r = st.routing;
    std::vector<int> counts_in(r.count);
    if (ep_ > 1) {
      const std::vector<std::size_t> bytes(static_cast<std::size_t>(ep_), sizeof(int) * static_cast<std::size_t>(local_));
      exchange_(r.count.data(), bytes, counts_in.data(), bytes, 4);
    }
    st.dispatch = plan_dispatch(r.count, counts_in, ep_);
    std::vector<int> perm_token(static_cast<std::size_t>(r.kept()));
    std::vector<S> perm_gate(perm_token.size()), gate(r.slot.size(), S(0));
    for (std::size_t route = 0; route < r.slot.size(); ++route)
      if (r.slot[route] >= 0) {
        perm_token[r.slot[route]] = static_cast<int>(route) / r.top_k;
        perm_gate[r.slot[route]] = gate[route] = static_cast<S>(r.gate[route]);
      }
    st.perm_token = device_copy(perm_token, "moe.perm_token");
    st.perm_gate = device_copy(perm_gate, "moe.perm_gate");
    st.gate = device_copy(gate, "moe.gate");
    st.route_perm = device_copy(r.slot, "moe.route_perm");
    st.stack_row_of = device_copy(st.dispatch.stack_row_of, "moe.stack_row_of");
    st.arrival_of = device_copy(st.dispatch.arrival_of, "moe.arrival_of");
  }

  // The rows of `send`, send_rows[j] of them to ep rank j, and recv_rows[i] from each rank i; itself at ep 1.
  Mat exchange(const Mat& send, const std::vector<std::size_t>& send_rows, const std::vector<std::size_t>& recv_rows,
               const char* label, int kind) const {
    if (ep_ == 1) return send;
    std::size_t rows = 0;
    std::vector<std::size_t> send_bytes, recv_bytes;
    for (std::size_t r : send_rows) send_bytes.push_back(r * static_cast<std::size_t>(h_) * sizeof(S));
    for (std::size_t r : recv_rows) recv_bytes.push_back(r * static_cast<std::size_t>(h_) * sizeof(S)), rows += r;
    Mat recv(std::string(label), rows, h_);
    E().fence();
    auto out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), send);
    auto in = Kokkos::create_mirror_view(recv);
    exchange_(out.data(), send_bytes, in.data(), recv_bytes, kind);
    Kokkos::deep_copy(E(), recv, in);
    return recv;
  }

  // Permuted rows [kept, h] to the local experts' stack [local, rows, h] (dispatch).
  St to_experts(const Mat& perm, const Stash& st, const char* label, int kind) const {
    const Mat in = exchange(perm, st.dispatch.send_rows, st.dispatch.recv_rows, label, kind);
    St stack(std::string(label), local_, st.dispatch.rows, h_);
    moe::gather_rows<S, E>(in, st.arrival_of, {}, flat(stack));
    return stack;
  }
  // The stack's rows back to the ranks and the permuted order they came in (combine).
  Mat from_experts(const St& stack, const Stash& st, const char* label, int kind) const {
    Mat back(std::string(label), st.dispatch.stack_row_of.size(), h_);
    moe::gather_rows<S, E>(flat(stack), st.stack_row_of, {}, back);
    return exchange(back, st.dispatch.recv_rows, st.dispatch.send_rows, label, kind);
  }

  void mlp_forward(const Experts& w, Acts& a) const {
    const std::size_t z = a.x.extent(0), rows = a.x.extent(1);
    a.u = St("moe.u", z, rows, f_), a.a = St("moe.a", z, rows, f_), a.o = St("moe.o", z, rows, h_);
    gemm_batched<S, D>('N', 'N', S(1), a.x, w.w1, S(0), a.u);
    moe::add_bias<S, E>(a.u, w.b1);
    gelu_forward<S, E>(flat(a.u), flat(a.a));
    gemm_batched<S, D>('N', 'N', S(1), a.a, w.w2, S(0), a.o);
    moe::add_bias<S, E>(a.o, w.b2);
  }
  // From a.dout: a.du (fc1's pre-activation gradient) and dx, the rows' input gradient.
  void mlp_backward_input(const Experts& w, Acts& a, const St& dx) const {
    a.du = St("moe.du", a.x.extent(0), a.x.extent(1), f_);
    gemm_batched<S, D>('N', 'T', S(1), a.dout, w.w2, S(0), a.du);
    gelu_backward_input<S, E>(flat(a.u), flat(a.du));
    gemm_batched<S, D>('N', 'T', S(1), a.du, w.w1, S(0), dx);
  }
  static void mlp_backward_weight(const Acts& a, Experts& g) {
    gemm_batched<S, D>('T', 'N', S(1), a.x, a.du, S(1), g.w1);
    moe::add_column_sums<S, E>(a.du, g.b1);
    gemm_batched<S, D>('T', 'N', S(1), a.a, a.dout, S(1), g.w2);
    moe::add_column_sums<S, E>(a.dout, g.b2);
  }

  int h_, f_, ep_, local_, first_;
  analysis::transformer::Moe moe_;
  MoeAllToAll exchange_;
  Weights w_, g_;
};

}  // namespace pipebench::kernels
