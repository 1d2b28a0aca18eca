// The per-operation model of `pipebench plan` (analysis/plan/ops.hpp; docs/model.md "Step time").
#include "analysis/plan/ops.hpp"

#include <algorithm>
#include <cstring>

#include "analysis/plan/gemm.hpp"
#include "analysis/transformer/activations.hpp"
#include "analysis/transformer/context_parallel.hpp"
#include "analysis/transformer/flops.hpp"

namespace pipebench::analysis::plan {

namespace tf = transformer;

double collective(const MachineSpec& mc, bool inter, double bytes, int ranks, double factor,
                  const MachineSpec::GroupLink& own) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const bool measured = own.bandwidth > 0 && own.inter == inter;
  const double bw = measured ? own.bandwidth
                    : inter  ? mc.inter_bandwidth * mc.inter_efficiency
                             : mc.intra_bandwidth * mc.intra_efficiency;
  const double lat = measured ? own.latency : inter ? mc.inter_latency : mc.intra_latency;
  return factor * (ranks - 1) / double(ranks) * bytes / bw + factor * (ranks - 1) * lat;
}

double all_to_all(const MachineSpec& mc, double bytes, int ranks, int local) {
  if (ranks <= 1 || bytes <= 0) return 0;
  local = std::max(1, std::min(local, ranks));
  const double share = bytes / ranks, on = local - 1, off = ranks - local;
  const double intra = on * (share / (mc.intra_bandwidth * mc.intra_efficiency) + mc.intra_latency);
  const double inter = off * (share / (mc.inter_bandwidth * mc.inter_efficiency) + mc.inter_latency);
  return std::max(intra, inter);
}

namespace {

int node_gpus(const Problem& pr) { return pr.gpus_per_node > 0 ? pr.gpus_per_node : pr.machine.gpus_per_node; }

tf::Split split_of(const Layout& l) {
  tf::Split s{l.t, l.sequence_parallel, true, std::max(1, l.cp)};
  s.ep = std::max(1, l.ep);
  return s;
}

ModelSpec shaped(const Problem& pr, const Layout& l) {
  ModelSpec md = pr.model;
  md.micro_batch = l.micro_batch_size;
  return md;
}

double peak_of(const MachineSpec& mc, const Layout& l) { return l.fp8 ? mc.peak_fp8_flops : mc.peak_flops; }

// F, I and W of one product at the efficiency of each pass's own shape; the recomputed forward at F's.
OpCost gemm_cost(const MachineSpec& mc, const Layout& l, const char* name, const tf::Gemm& g, const tf::Flops& x) {
  const double peak = peak_of(mc, l);
  const PassEfficiency e = pass_efficiency(mc.gemm, g.m, g.n, g.k);
  const double ef = e.f, ei = e.i, ew = e.w;
  OpCost c;
  c.name = name, c.kind = "gemm";
  c.f = x.forward / (peak * ef);
  c.recompute = x.recompute / (peak * ef);
  c.i = (x.backward_input - x.recompute) / (peak * ei) + c.recompute;
  c.w = x.backward_weight / (peak * ew);
  return c;
}

// The element-wise operation that writes a kept tensor (Korthikanti et al. 2022's inventory).
const char* writer_of(const tf::Kept& k) {
  const auto is = [&k](const char* op) { return std::strcmp(k.op, op) == 0; };
  if (is("layer")) return "residual";
  if (is("ln1") || is("qkv")) return "layernorm1";
  if (is("attention")) return k.tensor[1] == '\0' ? "qkv-bias-split" : "softmax-dropout";  // Q, K, V
  if (is("proj")) return "dropout-residual1";
  if (is("ln2") || is("fc1")) return "layernorm2";
  if (is("fc2") && std::strstr(k.tensor, "dropout")) return "dropout-residual2";
  if (is("gelu") || is("fc2")) return "activation";
  if (is("embedding")) return "embedding";
  if (is("final_ln") || is("output")) return "final-layernorm";
  if (is("loss")) return "cross-entropy";
  return "other";
}

double kept_bytes(const tf::Kept& k, double value_bytes) {
  const double e = k.element == tf::Element::value  ? value_bytes
                   : k.element == tf::Element::wide ? std::max(4.0, value_bytes)
                   : k.element == tf::Element::fp32 ? 4
                                                    : 1;
  return e * static_cast<double>(k.elements);
}

// Memory-bound work: each kept tensor is written once by its element-wise operation and read back in
// the backward, so F moves `elementwise_passes` x its bytes through HBM and I twice that; full
// recomputation repeats F, selective the s x s tensors' (docs/model.md).
void add_memory_ops(const MachineSpec& mc, const std::vector<tf::Kept>& kept, double value_bytes, Recompute rc,
                    PartCosts& out) {
  const double per_byte = mc.elementwise_passes / mc.hbm_bandwidth;
  for (const tf::Kept& k : kept) {
    const char* name = writer_of(k);
    auto it = std::find_if(out.ops.begin(), out.ops.end(), [&](const OpCost& c) { return std::strcmp(c.name, name) == 0; });
    if (it == out.ops.end()) {
      OpCost c;
      c.name = name, c.kind = "memory";
      out.ops.push_back(c);
      it = out.ops.end() - 1;
    }
    const double f = per_byte * kept_bytes(k, value_bytes);
    const bool rerun = rc == Recompute::full || (rc == Recompute::selective && !std::strcmp(name, "softmax-dropout"));
    it->f += f;
    it->i += 2 * f + (rerun ? f : 0);
    it->recompute += rerun ? f : 0;
  }
}

// A collective op of the tensor- or context-parallel group.
OpCost comm_cost(const char* name, const char* kind, double f, double i) {
  OpCost c;
  c.name = name, c.kind = kind, c.f = f, c.i = i;
  return c;
}

// The sums the stage times take. In I, Megatron-LM overlaps the TP collective of each column-parallel
// product's input gradient (QKV, fc1: the backward's all-reduces, or with SP the input's all-gather)
// with that product's weight-gradient GEMM (LinearWithGradAccumulationAndAsyncCommunication), so only
// what exceeds their W is exposed; with --tp-comm-overlap F's collectives hide behind F's GEMMs too
// (Megatron-Core's userbuffers overlap).
// With ep_overlap the all-to-alls hide behind the layer's GEMMs of the same pass (DeepSeek-V3's DualPipe
// pairs one chunk's dispatch and combine with another's attention and MLP, §3.2.1).
void total(PartCosts& p, bool tp_overlap, bool async_tp, bool ep_overlap = false) {
  double gemm_f = 0, gemm_i = 0, column_w = 0, tp_f = 0, tp_i = 0, ep_f = 0, ep_i = 0;
  for (const OpCost& c : p.ops) {
    const bool tp = !std::strcmp(c.kind, "tp"), ep = !std::strcmp(c.kind, "ep");
    if (tp || ep || !std::strcmp(c.kind, "cp")) {
      (tp ? tp_f : ep ? ep_f : p.comm_f) += c.f;
      (tp ? tp_i : ep ? ep_i : p.comm_i) += c.i;
      continue;
    }
    if (!std::strcmp(c.kind, "gemm")) gemm_i += c.i + c.w;
    p.compute_f += c.f, p.compute_i += c.i, p.compute_w += c.w, p.recompute += c.recompute;
    if (!std::strcmp(c.kind, "gemm")) gemm_f += c.f;
    if (!std::strcmp(c.name, "qkv") || !std::strcmp(c.name, "fc1")) column_w += c.w;
  }
  p.comm_f += tp_overlap ? std::max(0.0, tp_f - gemm_f) : tp_f;
  p.comm_i += async_tp ? std::max(0.0, tp_i - column_w) : tp_i;
  p.comm_f += ep_overlap ? std::max(0.0, ep_f - gemm_f) : ep_f;
  p.comm_i += ep_overlap ? std::max(0.0, ep_i - gemm_i) : ep_i;
}

bool tp_inter(const Problem& pr, const Layout& l, const AxisStrides& s) {
  return l.t > 1 && s.tp * l.t > node_gpus(pr);
}

void scale(OpCost& c, double x) { c.f *= x, c.i *= x, c.w *= x, c.recompute *= x; }

// The part of an MoE layer's expert work that is routed (the shared experts see every token once).
double routed_share(const ModelSpec& md) { return double(md.top_k) / (md.top_k + md.shared_experts); }

// An MoE layer's token movement (Megatron-Core's all-to-all dispatcher): the routed copies of the rank's
// n/t tokens (its sequence-parallel share: Megatron-Core needs SP with TP in MoE layers) permuted into
// expert order, sent to the experts' ep ranks (dispatch) and back (combine), and unpermuted; the same
// two all-to-alls in I, and again in a full recomputation. The ep group's ranks are cp d's neighbours,
// t cp apart in tp-cp-ep-dp-pp: node / (t cp) of them share a node once that block is larger. The
// busiest rank receives routing_imbalance times the mean.
void add_moe_ops(const Problem& pr, const Layout& l, const AxisStrides& strides, const ModelSpec& md,
                 const tf::Split& split, PartCosts& p) {
  const MachineSpec& mc = pr.machine;
  const double routed = pr.value_bytes * tf::tokens(md, split) / l.t * md.top_k * md.hidden * pr.routing_imbalance;
  OpCost perm;
  perm.name = "moe-permute", perm.kind = "memory";
  perm.f = 2 * mc.elementwise_passes * routed / mc.hbm_bandwidth;  // permute and unpermute
  perm.recompute = l.recompute == Recompute::full ? perm.f : 0;
  perm.i = 2 * perm.f + perm.recompute;
  p.ops.push_back(perm);
  if (l.ep <= 1) return;
  const std::int64_t stride = strides.dp * std::max(1, l.cp), g = node_gpus(pr);
  const int local = stride * l.ep <= g ? l.ep : static_cast<int>(std::max<std::int64_t>(1, g / stride));
  const double a2a = 2 * all_to_all(mc, routed, l.ep, local);  // dispatch and combine
  p.ops.push_back(comm_cost("ep-alltoall", "ep", a2a, a2a + (l.recompute == Recompute::full ? a2a : 0)));
}

}  // namespace

PartCosts layer_part(const Problem& pr, const Layout& l, const AxisStrides& strides, bool moe) {
  const MachineSpec& mc = pr.machine;
  const ModelSpec md = shaped(pr, l);
  const tf::Split split = split_of(l);
  PartCosts p;
  p.ops.reserve(20);
  for (const tf::OpFlops& x : tf::layer_ops(md, split, l.recompute, tf::Convention::megatron, moe)) {
    p.ops.push_back(gemm_cost(mc, l, tf::op_name(x.op), tf::op_gemm(md, split, x.op, moe), x.flops));
    // The busiest rank's routed rows are routing_imbalance times the mean; the shared experts' are not.
    if (moe && (x.op == tf::Op::fc1 || x.op == tf::Op::fc2))
      scale(p.ops.back(), routed_share(md) * pr.routing_imbalance + 1 - routed_share(md));
    // Causal flash attention skips the blocks above the diagonal (Dao 2023, FlashAttention-2 §3.1):
    // half of the s x s products' work. Without it Megatron computes the whole score matrix and masks it.
    if (md.flash_attention && (x.op == tf::Op::scores || x.op == tf::Op::values)) scale(p.ops.back(), 0.5);
  }
  add_memory_ops(mc, tf::kept(md, split, Recompute::none, tf::Part::layer, tf::Convention::megatron, md.flash_attention),
                 pr.value_bytes, l.recompute, p);
  // The activation of an MoE layer runs on every route's expert row, of the expert's width.
  if (moe)
    for (OpCost& c : p.ops)
      if (!std::strcmp(c.name, "activation"))
        scale(c, (md.top_k * pr.routing_imbalance + md.shared_experts) * double(md.expert_ffn_size()) / double(md.ffn_size()));
  // Tensor parallelism (Shoeybi et al. 2019): two all-reduces of the n h activations in F and two in
  // I; sequence parallelism swaps each for an all-gather and a reduce-scatter of the same volume
  // (Korthikanti et al. 2022); full recomputation repeats F's in I.
  // In an MoE layer the MLP's pair carries the k routed copies of every token (Megatron-Core gathers
  // the routed tokens over the expert-tensor-parallel group, here t).
  const double act = pr.value_bytes * tf::tokens(md, split) * md.hidden;
  const double one = collective(mc, tp_inter(pr, l, strides), act, l.t, 2, mc.tp_link);
  const double pair = moe ? one * (1 + md.top_k) : 2 * one;
  const double rerun = l.recompute == Recompute::full ? pair : 0;
  p.ops.push_back(comm_cost(l.sequence_parallel ? "tp-allgather-reducescatter" : "tp-allreduce", "tp", pair,
                            pair + rerun));
  if (moe) add_moe_ops(pr, l, strides, md, split, p);
  // Context parallelism, all-gather form (Meta 2024 §3.3.2): K and V gathered from the cp ranks in F,
  // their gradients reduce-scattered in I, the bytes of analysis/transformer/context_parallel.hpp
  // (Megatron's: the gathered K/V kept from F); its group leaves the node once t cp ranks exceed it.
  if (l.cp > 1) {
    const double kv = l.cp * pr.value_bytes * static_cast<double>(tf::cp_kv_block_bytes(md, split, 1));
    const tf::CpSent sent =
        tf::cp_sent_per_layer(md, split, tf::CpExchange::allgather, l.recompute, tf::Convention::megatron, 1);
    const bool inter = std::int64_t{l.t} * l.cp > node_gpus(pr);
    const double g = collective(mc, inter, kv, l.cp, 1);
    p.ops.push_back(comm_cost("cp-allgather-kv", "cp", g, g * static_cast<double>(sent.backward) / static_cast<double>(sent.forward)));
  }
  total(p, l.tp_overlap, l.async_tp, l.ep_overlap);
  return p;
}

PartCosts embedding_part(const Problem& pr, const Layout& l, const AxisStrides& strides) {
  const MachineSpec& mc = pr.machine;
  const ModelSpec md = shaped(pr, l);
  const tf::Split split = split_of(l);
  PartCosts p;
  add_memory_ops(mc, tf::kept(md, split, Recompute::none, tf::Part::embedding, tf::Convention::megatron), pr.value_bytes,
                 Recompute::none, p);
  // The vocabulary-parallel lookup ends in an all-reduce of its n h output (a reduce-scatter with SP).
  const double act = pr.value_bytes * tf::tokens(md, split) * md.hidden;
  p.ops.push_back(comm_cost("tp-embedding", "tp", collective(mc, tp_inter(pr, l, strides), act, l.t, l.sequence_parallel ? 1 : 2, mc.tp_link), 0));
  total(p, false, false);
  return p;
}

PartCosts head_part(const Problem& pr, const Layout& l) {
  const MachineSpec& mc = pr.machine;
  const ModelSpec md = shaped(pr, l);
  const tf::Split split = split_of(l);
  PartCosts p;
  p.ops.push_back(gemm_cost(mc, l, "head", tf::op_gemm(md, split, tf::Op::head), tf::head_flops(md, split)));
  add_memory_ops(mc, tf::kept(md, split, Recompute::none, tf::Part::head, tf::Convention::megatron), pr.value_bytes,
                 Recompute::none, p);
  total(p, false, false);
  return p;
}

}  // namespace pipebench::analysis::plan
