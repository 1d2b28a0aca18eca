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
#include <numeric>
#include <string>
#include <vector>

#include "kernels/gelu.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_batched.hpp"
#include "kernels/layer.hpp"
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
  using SP = SeqParallel<S, E>;
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
    // The members a 16-bit run keeps in 16 bits (kernels/stash16.hpp): the values, not the indices;
    // x is the layer's y2, which the layer's own stash keeps (kernels/moe_stage.hpp rebinds it).
    template <class F>
    void each16(F&& f) {
      for (Acts* a : {&routed, &shared}) f(a->x), f(a->u), f(a->a), f(a->o), f(a->dout, true), f(a->du, true);
      f(perm_gate), f(gate), f(out), f(dlogits, true);  // true: a gradient
    }
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

  // y = MoE(x) for x [n, h] (under sp the whole micro-batch's rows, gathered; y [n/t, h], this tp
  // rank's); st keeps x's view (the caller keeps x alive until W).
  void forward(const typename V::ConstMat& x, const Mat& y, Stash& st, const SP* sp = nullptr) const {
    const int n = static_cast<int>(x.extent(0));
    st.x = x;
    Mat logits("moe.logits", n, moe_.experts);
    gemm('N', 'N', S(1), x, w_.router, S(0), logits);
    st.logits = to_host(logits);
    st.routing = route(st.logits, n, moe_);
    plan(st, sp);
    Mat perm("moe.perm", st.perm_token.extent(0), h_);
    if (sp) {
      const Mat mine("moe.x_local", sp->local_rows(), h_);
      sp->take(x, mine);
      moe::gather_rows<S, E>(mine, st.perm_token, {}, perm);
    } else {
      moe::gather_rows<S, E>(x, st.perm_token, {}, perm);
    }
    st.routed.x = to_experts(perm, st, "moe.dispatch", 0, sp);
    mlp_forward(w_.routed, st.routed, !sp || sp->rank == 0);
    st.out = from_experts(st.routed.o, st, "moe.combine", 1, sp);
    moe::combine<S, E>(st.out, st.route_perm, moe_.top_k, st.gate, y);
    if (moe_.shared_experts == 0) return;
    st.shared.x = St("moe.shared_x", moe_.shared_experts, n, h_);
    moe::replicate<S, E>(x, st.shared.x);
    mlp_forward(w_.shared, st.shared, !sp || sp->rank == 0);
    add_stack_sum(st.shared.o, y, sp, TpPoint::mlp_out_forward);
  }

  // dx = d(objective)/dx from dy (this rank's rows, as y); the aux loss enters the objective times aux_scale.
  void backward_input(Stash& st, const Mat& dy, const Mat& dx, double aux_scale, const SP* sp = nullptr) const {
    const int n = st.routing.tokens, m = static_cast<int>(dy.extent(0)), k = moe_.top_k;
    Mat perm("moe.dperm", st.perm_token.extent(0), h_);
    moe::gather_rows<S, E>(dy, st.perm_token, st.perm_gate, perm);
    typename V::Vec dgate("moe.dgate", static_cast<std::size_t>(m) * k);
    moe::gate_gradients<S, E>(dy, st.out, st.route_perm, k, dgate);
    st.routed.dout = to_experts(perm, st, "moe.dispatch_grad", 2, sp);
    St dx_rows("moe.dx_rows", local_, st.dispatch.rows, h_);
    mlp_backward_input(w_.routed, st.routed, dx_rows);
    moe::combine<S, E>(from_experts(dx_rows, st, "moe.combine_grad", 3, sp), st.route_perm, k, {}, dx);
    if (moe_.shared_experts > 0) {
      st.shared.dout = St("moe.shared_dout", moe_.shared_experts, n, h_);
      moe::replicate<S, E>(sp ? sp->gather(dy, TpPoint::mlp_out_backward) : dy, st.shared.dout);
      St dxs("moe.shared_dx", moe_.shared_experts, n, h_);
      mlp_backward_input(w_.shared, st.shared, dxs);
      add_stack_sum(dxs, dx, sp, TpPoint::mlp_in_backward);
    }
    // What W does not read goes now (analysis/transformer/activations.hpp, moe_stash's weight stash).
    st.routed.u = St(), st.routed.o = St(), st.shared.u = St(), st.shared.o = St(), st.out = Mat();
    router_backward_input(st, dgate, dx, aux_scale, sp);
  }

  // Accumulates (+=) the weight gradients of the micro-batch whose I left st, then releases st's buffers.
  // Under sp the router's gradient is this rank's tokens' share (the caller sums it over the tp group).
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

  // The row of the whole micro-batch ([b, s] order) of each of this rank's m = n/t rows.
  static std::vector<int> whole_rows(int n, const SP* sp) {
    std::vector<int> rows(static_cast<std::size_t>(sp ? sp->local_rows() : n));
    for (std::size_t i = 0; i < rows.size(); ++i)
      rows[i] = sp ? static_cast<int>(seq_full_row(sp->rank, i, sp->local_seq(), sp->seq)) : static_cast<int>(i);
    return rows;
  }

  // This rank's share of st's routing (of the whole micro-batch, which every tp rank routes alike):
  // its tokens' kept routes permuted expert-major, tokens ascending within an expert; the counts per
  // expert of every tp shard exchanged (ep > 1), the dispatch, and the device's index views.
  void plan(Stash& st, const SP* sp) const {
    const MoeRouting& r = st.routing;
    const int t = sp ? sp->t : 1, me = sp ? sp->rank : 0, e = moe_.experts, k = r.top_k;
    const std::vector<int> rows = whole_rows(r.tokens, sp);
    std::vector<int> shard_counts(static_cast<std::size_t>(t) * e, 0);  // [t][E], kept routes
    for (int route = 0; route < r.tokens * k; ++route) {
      const int token = route / k, q = sp ? token % sp->seq / static_cast<int>(sp->local_seq()) : 0;
      if (r.slot[route] >= 0) ++shard_counts[static_cast<std::size_t>(q) * e + r.expert[route]];
    }
    const std::vector<int> count(shard_counts.begin() + me * e, shard_counts.begin() + (me + 1) * e);
    std::vector<int> counts_out(shard_counts.size());  // [ep][t][local]
    for (int j = 0; j < ep_; ++j)
      for (int q = 0; q < t; ++q)
        for (int l = 0; l < local_; ++l)
          counts_out[(static_cast<std::size_t>(j) * t + q) * local_ + l] = shard_counts[q * e + j * local_ + l];
    std::vector<int> counts_in(counts_out);
    if (ep_ > 1) {
      const std::vector<std::size_t> bytes(ep_, sizeof(int) * static_cast<std::size_t>(t * local_));
      exchange_(counts_out.data(), bytes, counts_in.data(), bytes, 4);
    }
    st.dispatch = plan_dispatch(count, counts_in, ep_, t, me);
    std::vector<int> next(static_cast<std::size_t>(e), 0), slot(rows.size() * k, -1);
    for (int x = 1; x < e; ++x) next[x] = next[x - 1] + count[x - 1];
    std::vector<int> perm_token(static_cast<std::size_t>(std::accumulate(count.begin(), count.end(), 0)));
    std::vector<S> perm_gate(perm_token.size()), gate(slot.size(), S(0));
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (int j = 0; j < k; ++j) {
        const int route = rows[i] * k + j, mine = static_cast<int>(i) * k + j;
        if (r.slot[route] < 0) continue;
        slot[mine] = next[r.expert[route]]++;
        perm_token[slot[mine]] = static_cast<int>(i);
        perm_gate[slot[mine]] = gate[mine] = static_cast<S>(r.gate[route]);
      }
    st.perm_token = device_copy(perm_token, "moe.perm_token");
    st.perm_gate = device_copy(perm_gate, "moe.perm_gate");
    st.gate = device_copy(gate, "moe.gate");
    st.route_perm = device_copy(slot, "moe.route_perm");
    st.stack_row_of = device_copy(st.dispatch.stack_row_of, "moe.stack_row_of");
    st.arrival_of = device_copy(st.dispatch.arrival_of, "moe.arrival_of");
  }

  // The router's part of I from this rank's gates' gradients: st.dlogits [n, E] (this rank's tokens'
  // rows, the others 0, for W) and dx += their rows times Wr^T.
  void router_backward_input(Stash& st, const typename V::Vec& dgate, const Mat& dx, double aux_scale,
                             const SP* sp) const {
    const int n = st.routing.tokens, e = moe_.experts, k = moe_.top_k;
    const std::vector<int> rows = whole_rows(n, sp);
    const std::vector<double> mine = to_host(dgate);
    std::vector<double> dg(static_cast<std::size_t>(n) * k, 0.0);
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (int j = 0; j < k; ++j) dg[static_cast<std::size_t>(rows[i]) * k + j] = mine[i * k + j];
    const std::vector<double> dl = router_backward(st.routing, st.logits, dg, moe_, aux_scale);
    std::vector<double> whole(dl.size(), 0.0), local(rows.size() * e);
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (int x = 0; x < e; ++x)
        whole[static_cast<std::size_t>(rows[i]) * e + x] = local[i * e + x] =
            dl[static_cast<std::size_t>(rows[i]) * e + x];
    st.dlogits = Mat("moe.dlogits", n, e);
    from_host(whole, st.dlogits);
    Mat dlocal = st.dlogits;
    if (sp) dlocal = Mat("moe.dlogits_local", rows.size(), e), from_host(local, dlocal);
    gemm('N', 'T', S(1), dlocal, w_.router, S(1), dx);
  }

  // y (this rank's rows) += the sum over the stack's slices, which are partial sums over the tp group
  // under sp (reduce-scattered at `where`).
  void add_stack_sum(const St& s, const Mat& y, const SP* sp, TpPoint where) const {
    if (!sp) return moe::add_stack_sum<S, E>(s, y);
    const Mat whole("moe.partial", s.extent(1), h_);
    moe::add_stack_sum<S, E>(s, whole);
    moe::add<S, E>(sp->scatter(whole, where), y);  // a kernel outside the class (CUDA's extended lambdas)
  }

  // The rows of `send`, send_rows[j] of them to ep rank j, and recv_rows[i] from each rank i, in a
  // buffer of at least `pad` rows (the rest zero); itself at ep 1 when its size is that.
  Mat exchange(const Mat& send, const std::vector<std::size_t>& send_rows, const std::vector<std::size_t>& recv_rows,
               const char* label, int kind, std::size_t pad = 0) const {
    std::size_t rows = 0;
    std::vector<std::size_t> send_bytes, recv_bytes;
    for (std::size_t r : send_rows) send_bytes.push_back(r * static_cast<std::size_t>(h_) * sizeof(S));
    for (std::size_t r : recv_rows) recv_bytes.push_back(r * static_cast<std::size_t>(h_) * sizeof(S)), rows += r;
    const std::size_t size = std::max(rows, pad);
    if (ep_ == 1 && send.extent(0) == size) return send;
    Mat recv(std::string(label), size, h_);
    E().fence();
    if (ep_ == 1) {
      const auto part = std::make_pair(std::size_t{0}, rows);
      Kokkos::deep_copy(E(), Kokkos::subview(recv, part, Kokkos::ALL), Kokkos::subview(send, part, Kokkos::ALL));
      return recv;
    }
    auto out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), send);
    auto in = Kokkos::create_mirror_view(recv);
    exchange_(out.data(), send_bytes, in.data(), recv_bytes, kind);
    Kokkos::deep_copy(E(), recv, in);
    return recv;
  }

  // Permuted rows [kept, h] to the local experts' stack [local, rows, h] (dispatch; under sp the tp
  // group's arrivals all-gathered, each padded to the dispatch's block).
  St to_experts(const Mat& perm, const Stash& st, const char* label, int kind, const SP* sp) const {
    const MoeDispatch& d = st.dispatch;
    Mat in = exchange(perm, d.send_rows, d.recv_rows, label, kind, static_cast<std::size_t>(d.block));
    if (sp) {
      const Mat all(std::string(label) + "_tp", static_cast<std::size_t>(sp->t) * d.block, h_);
      E().fence();
      sp->all_gather(in, all, kind == 0 ? TpPoint::mlp_in_forward : TpPoint::mlp_out_backward);
      in = all;
    }
    St stack(std::string(label), local_, d.rows, h_);
    moe::gather_rows<S, E>(in, st.arrival_of, {}, flat(stack));
    return stack;
  }
  // The stack's rows back to the ranks and the permuted order they came in (combine; under sp the tp
  // group's partial sums reduce-scattered first).
  Mat from_experts(const St& stack, const Stash& st, const char* label, int kind, const SP* sp) const {
    Mat back(std::string(label), st.dispatch.stack_row_of.size(), h_);
    moe::gather_rows<S, E>(flat(stack), st.stack_row_of, {}, back);
    if (sp) {
      const Mat mine(std::string(label) + "_tp", static_cast<std::size_t>(st.dispatch.block), h_);
      E().fence();
      sp->reduce_scatter(back, mine, kind == 1 ? TpPoint::mlp_out_forward : TpPoint::mlp_in_backward);
      back = mine;
    }
    return exchange(back, st.dispatch.recv_rows, st.dispatch.send_rows, label, kind);
  }

  // fc2's bias only where `bias2` (one rank of a tp group, whose partial sums the others complete).
  void mlp_forward(const Experts& w, Acts& a, bool bias2) const {
    const std::size_t z = a.x.extent(0), rows = a.x.extent(1);
    a.u = St("moe.u", z, rows, f_), a.a = St("moe.a", z, rows, f_), a.o = St("moe.o", z, rows, h_);
    gemm_batched<S, D>('N', 'N', S(1), a.x, w.w1, S(0), a.u);
    moe::add_bias<S, E>(a.u, w.b1);
    gelu_forward<S, E>(flat(a.u), flat(a.a));
    gemm_batched<S, D>('N', 'N', S(1), a.a, w.w2, S(0), a.o);
    if (bias2) moe::add_bias<S, E>(a.o, w.b2);
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
