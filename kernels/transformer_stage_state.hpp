#pragma once
// TransformerStage's gradient and memory bookkeeping (kernels/transformer_stage.hpp, which includes
// this after its class): the gradients' norm, zeroing and sequence-parallel sums, the bytes held.
#include "kernels/transformer_stage.hpp"

namespace pipebench::kernels {

template <class S, class E>
double TransformerStage<S, E>::grad_norm() const {
  const Flat g = grads_;
  double sum = 0;
  Kokkos::parallel_reduce(
      "pipebench::grad_norm", Kokkos::RangePolicy<E>(0, g.extent(0)),
      KOKKOS_LAMBDA(std::size_t i, double& acc) { acc += static_cast<double>(g(i)) * static_cast<double>(g(i)); }, sum);
  return std::sqrt(sum);
}

template <class S, class E>
std::vector<typename TransformerStage<S, E>::Flat> TransformerStage<S, E>::layernorm_grads() {
  std::vector<Flat> v;
  for (const auto& g : layer_g_) v.insert(v.end(), {g.ln1_g, g.ln1_b, g.ln2_g, g.ln2_b});
  if (cfg_.head) v.insert(v.end(), {head_g_.ln_g, head_g_.ln_b});
  moe_.router_grads(v);  // each rank routed the whole micro-batch but its own tokens' gradient
  return v;
}

template <class S, class E>
void TransformerStage<S, E>::sum_sequence_parallel_grads() {
  if (!sp()) return;
  const std::vector<Flat> parts = layernorm_grads();
  std::size_t total = 0;
  for (const Flat& p : parts) total += p.extent(0);
  if (total == 0) return;
  const Matrix packed = alloc<Matrix>("pipebench::layernorm_grads", 1, total);
  std::size_t at = 0;
  for (const Flat& p : parts) {
    Kokkos::deep_copy(E(), Flat(packed.data() + at, p.extent(0)), p);
    at += p.extent(0);
  }
  reduce(packed, TpPoint::layernorm_grads);
  at = 0;
  for (const Flat& p : parts) {
    Kokkos::deep_copy(E(), p, Flat(packed.data() + at, p.extent(0)));
    at += p.extent(0);
  }
  E().fence();
}

template <class S, class E>
void TransformerStage<S, E>::zero_grad() {
  Kokkos::deep_copy(E(), grads_, S(0));
  E().fence();
  losses_.clear();
  moe_.aux.clear();
  moe_.dropped = 0;
}

template <class S, class E>
std::size_t TransformerStage<S, E>::MicroBatch::bytes() const {
  std::size_t b = head.bytes() + bytes_of(embedding_grad) + head16.bytes() + embedding16.bytes();
  for (const auto& l : layers) b += l.bytes();
  for (const auto& m : moe) b += StageMoe<S, E>::Layer::stash_bytes(m);
  for (const auto* s : {&layer16, &moe16})
    for (const auto& x : *s) b += x.bytes();
  return b;
}

// An MoE layer's input rows are the layer's y2 (kernels/moe.hpp keeps a view of them): released with
// it, and bound again to the decoded copy.
template <class S, class E>
void TransformerStage<S, E>::pack_layer(MicroBatch& st, std::size_t l) {
  if (half16() == Half::none) return;
  overflows16_ += pack16(st.layers[l], st.layer16[l], half16(), scale16_);
  overflows16_ += pack16(st.moe[l], st.moe16[l], half16(), scale16_);
  st.moe[l].x = {};
}

template <class S, class E>
void TransformerStage<S, E>::unpack_layer(MicroBatch& st, std::size_t l, bool release) {
  if (half16() == Half::none) return;
  unpack16(st.layers[l], st.layer16[l], half16(), release);
  unpack16(st.moe[l], st.moe16[l], half16(), release);
  if (st.moe[l].routing.tokens > 0) st.moe[l].x = st.layers[l].y2;
}

template <class S, class E>
std::size_t TransformerStage<S, E>::stash_bytes(int mb) const {
  auto it = in_flight_.find(mb);
  return it == in_flight_.end() ? 0 : it->second.bytes();
}

template <class S, class E>
std::size_t TransformerStage<S, E>::bytes_held() const {
  std::size_t b = bytes_of(weights_) + bytes_of(grads_);
  for (const auto& kv : in_flight_) b += kv.second.bytes();
  return b;
}

}  // namespace pipebench::kernels
