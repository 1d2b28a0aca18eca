#pragma once
// The MoE layers of a transformer stage (docs/transformer.md "Mixture of experts"): layer l is an MoE
// layer where Shape::moe_layer(l) (l % --moe-every == 0, Megatron-Core's --moe-layer-freq N), and its
// MLP is then kernels/moe.hpp's MoeLayer, fed the second LayerNorm's output:
//   out = x2 + MoE(LN2(x2)),   x2 = x + proj(attention(qkv(LN1(x))))
// F, I and W split as the dense layer's (the attention half is kernels/layer.hpp's); the experts' weight
// gradients wait in the stash for W like the dense ones, so the split-backward schedules defer them.
// The weights are views into the stage's flat buffers (kernels/parameters.cpp: the router and the shared
// experts in the layer's place, this rank's routed experts after the head). The aux loss enters the
// objective with weight 1 per micro-batch, the weight the cross-entropy of a micro-batch has.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/transformer/activations.hpp"
#include "kernels/layer.hpp"
#include "kernels/moe.hpp"
#include "kernels/parameters.hpp"

namespace pipebench::kernels {

template <class S, class E>
struct StageMoe {
  using Layer = MoeLayer<S, E>;
  using V = Views<S, E>;
  using Mat = typename V::Mat;
  using Act = typename V::Act;
  using Stash = typename Layer::Stash;

  std::vector<std::unique_ptr<Layer>> layers;  // per layer of the stage; null for a dense one
  // The exchange over the ep group (set_expert_parallel), shared by the layers.
  std::shared_ptr<MoeAllToAll> exchange = std::make_shared<MoeAllToAll>();
  std::map<int, double> aux;  // per micro-batch since zero_grad: the sum of its MoE layers' aux losses
  long dropped = 0;           // routes dropped by capacity since zero_grad, every micro-batch's

  // Creates the layers (first call) or rebinds their views to the flat buffers `w` and `g`.
  void bind(const TransformerConfig& c, const std::vector<ParamInfo>& table, S* w, S* g) {
    if (c.experts == 0) return;
    std::map<std::string, std::size_t> at;
    for (const ParamInfo& p : table) at[p.name] = p.offset;
    layers.resize(static_cast<std::size_t>(c.num_layers));
    for (int i = 0; i < c.num_layers; ++i) {
      const int l = c.first_layer + i;
      if (!c.moe_layer(l)) continue;
      auto& layer = layers[static_cast<std::size_t>(i)];
      if (layer) {
        layer->bind(views(c, at, l, w), views(c, at, l, g));
        continue;
      }
      const std::shared_ptr<MoeAllToAll> ex = exchange;
      MoeAllToAll fn = [ex](const void* s, const std::vector<std::size_t>& sb, void* r, const std::vector<std::size_t>& rb,
                            int kind) { (*ex)(s, sb, r, rb, kind); };
      layer = std::make_unique<Layer>(c.hidden, c, c.expert_ffn_size() / c.tp_size, c.ep_size, c.ep_rank, fn,
                                      views(c, at, l, w), views(c, at, l, g));
    }
  }
  // The routers' gradients (tensor-parallel: each rank's is its tokens' share, summed over the group
  // with the LayerNorms', TransformerStage::sum_sequence_parallel_grads).
  template <class Flat>
  void router_grads(std::vector<Flat>& out) {
    for (auto& l : layers)
      if (l) out.push_back(Flat(l->grads().router.data(), l->grads().router.span()));
  }
  const Layer* at(std::size_t i) const { return i < layers.size() ? layers[i].get() : nullptr; }

  // F of layer i: the dense layer, or the attention half then the MoE layer; an MoE layer's aux loss
  // and dropped routes are counted for micro-batch mb unless `rerun` (full recomputation's F inside I).
  Act forward(std::size_t i, int mb, bool rerun, const LayerShape& sh, const LayerParams<S, E>& w, const Act& in,
              LayerStash<S, E>& st, Stash& ms, bool keep_probs, const AllReduceHook<S, E>& hook,
              const SeqParallel<S, E>* sp, const ContextParallel<S, E>* cp) {
    const Layer* moe = at(i);
    if (!moe) return layer_forward<S, E>(sh, w, in, st, keep_probs, hook, sp, cp);
    const Mat x2 = layer_attention_forward<S, E>(sh, w, in, st, keep_probs, hook, sp, cp);
    const std::size_t n = sp ? sp->local_rows() : sh.rows(), h = static_cast<std::size_t>(sh.hidden);
    const Act out = alloc<Act>("pipebench::layer_out", static_cast<std::size_t>(sh.batch), n / sh.batch, h);
    const Mat om = as_matrix<Mat>(out, n, h);
    moe->forward(st.y2, om, ms, sp);  // y2: gathered under sp, as the dense fc1's input
    Kokkos::parallel_for(
        "pipebench::moe_residual", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(n), int(h)}),
        KOKKOS_LAMBDA(int r, int j) { om(r, j) += x2(r, j); });
    if (!rerun) aux[mb] += ms.routing.aux_loss, dropped += ms.routing.dropped;
    return out;
  }

  // I of layer i from its output gradient dout.
  Act backward_input(std::size_t i, const LayerShape& sh, const LayerParams<S, E>& w, LayerStash<S, E>& st, Stash& ms,
                     const Act& dout, const AllReduceHook<S, E>& hook, const SeqParallel<S, E>* sp,
                     const ContextParallel<S, E>* cp) const {
    const Layer* moe = at(i);
    if (!moe) return layer_backward_input<S, E>(sh, w, st, dout, hook, sp, cp);
    const std::size_t n = sp ? sp->local_rows() : sh.rows(), h = static_cast<std::size_t>(sh.hidden);
    const Mat dy = as_matrix<Mat>(dout, n, h);
    st.dy2 = alloc<Mat>("pipebench::dy2", n, h);
    moe->backward_input(ms, dy, st.dy2, 1.0, sp);
    return layer_attention_backward_input<S, E>(sh, w, st, dy, hook, sp, cp);
  }

  // W of layer i into the gradient views gw (the dense part) and the MoE layer's own.
  void backward_weight(std::size_t i, const LayerShape& sh, const LayerParams<S, E>& gw, LayerStash<S, E>& st,
                       Stash& ms) {
    Layer* moe = i < layers.size() ? layers[i].get() : nullptr;
    if (!moe) return layer_backward_weight<S, E>(sh, gw, st);
    moe->backward_weight(ms);
    st.y2 = Mat();
    layer_attention_backward_weight<S, E>(gw, st);
  }

  // The rows a stash's routing gave (analysis/transformer/activations.hpp, what moe_stash counts).
  static analysis::transformer::MoeRows rows_of(const Stash& s) {
    return {static_cast<std::uint64_t>(s.perm_token.extent(0)), s.dispatch.stack_row_of.size(),
            static_cast<std::uint64_t>(s.dispatch.rows)};
  }

  // Parameters of layer l in the table before the head: 12 dense, 8 + the router + 4 per shared expert.
  static std::size_t params_in_place(const TransformerConfig& c, int l) {
    return c.moe_layer(l) ? 9 + 4 * static_cast<std::size_t>(c.shared_experts) : 12;
  }

 private:
  // Layer l's router and experts as views of the flat buffer at `base` (null: views over nothing).
  static typename Layer::Weights views(const TransformerConfig& c, const std::map<std::string, std::size_t>& at, int l,
                                       S* base) {
    const std::string p = "layers." + std::to_string(l) + ".";
    auto ptr = [&](const std::string& name) -> S* {
      const auto it = at.find(name);
      return base && it != at.end() ? base + it->second : nullptr;
    };
    const std::size_t h = static_cast<std::size_t>(c.hidden);
    const std::size_t f = static_cast<std::size_t>(c.expert_ffn_size() / c.tp_size);  // this tp rank's columns
    auto stack = [&](const std::string& q, int first, int n) {
      const std::string k = q + std::to_string(first);
      const std::size_t z = static_cast<std::size_t>(n);
      using St = typename Layer::St;
      return typename Layer::Experts{St(ptr(k + ".fc1.weight"), z, h, f), St(ptr(k + ".fc2.weight"), z, f, h),
                                     Mat(ptr(k + ".fc1.bias"), z, f), Mat(ptr(k + ".fc2.bias"), z, h)};
    };
    const int local = c.experts / c.ep_size;
    return {Mat(ptr(p + "router.weight"), h, static_cast<std::size_t>(c.experts)),
            stack(p + "experts.", c.ep_rank * local, local), stack(p + "shared.", 0, c.shared_experts)};
  }
};

}  // namespace pipebench::kernels
