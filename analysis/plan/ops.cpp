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

double collective(const MachineSpec& mc, bool inter, double bytes, int ranks, double factor) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double bw = inter ? mc.inter_bandwidth * mc.inter_efficiency : mc.intra_bandwidth * mc.intra_efficiency;
  const double lat = inter ? mc.inter_latency : mc.intra_latency;
  return factor * (ranks - 1) / double(ranks) * bytes / bw + factor * (ranks - 1) * lat;
}

namespace {

int node_gpus(const Problem& pr) { return pr.gpus_per_node > 0 ? pr.gpus_per_node : pr.machine.gpus_per_node; }

tf::Split split_of(const Layout& l) { return tf::Split{l.t, l.sequence_parallel, true, std::max(1, l.cp)}; }

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
  const double e = k.element == tf::Element::value ? value_bytes : k.element == tf::Element::fp32 ? 4 : 1;
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
void total(PartCosts& p, bool tp_overlap, bool async_tp) {
  double gemm_f = 0, column_w = 0, tp_f = 0, tp_i = 0;
  for (const OpCost& c : p.ops) {
    const bool comm = !std::strcmp(c.kind, "tp") || !std::strcmp(c.kind, "cp");
    if (comm) {
      (std::strcmp(c.kind, "tp") ? p.comm_f : tp_f) += c.f;
      (std::strcmp(c.kind, "tp") ? p.comm_i : tp_i) += c.i;
      continue;
    }
    p.compute_f += c.f, p.compute_i += c.i, p.compute_w += c.w, p.recompute += c.recompute;
    if (!std::strcmp(c.kind, "gemm")) gemm_f += c.f;
    if (!std::strcmp(c.name, "qkv") || !std::strcmp(c.name, "fc1")) column_w += c.w;
  }
  p.comm_f += tp_overlap ? std::max(0.0, tp_f - gemm_f) : tp_f;
  p.comm_i += async_tp ? std::max(0.0, tp_i - column_w) : tp_i;
}

bool tp_inter(const Problem& pr, const Layout& l, const AxisStrides& s) {
  return l.t > 1 && s.tp * l.t > node_gpus(pr);
}

}  // namespace

PartCosts layer_part(const Problem& pr, const Layout& l, const AxisStrides& strides) {
  const MachineSpec& mc = pr.machine;
  const ModelSpec md = shaped(pr, l);
  const tf::Split split = split_of(l);
  PartCosts p;
  p.ops.reserve(16);
  for (const tf::OpFlops& x : tf::layer_ops(md, split, l.recompute, tf::Convention::megatron)) {
    p.ops.push_back(gemm_cost(mc, l, tf::op_name(x.op), tf::op_gemm(md, split, x.op), x.flops));
    // Causal flash attention skips the blocks above the diagonal (Dao 2023, FlashAttention-2 §3.1):
    // half of the s x s products' work. Without it Megatron computes the whole score matrix and masks it.
    if (md.flash_attention && (x.op == tf::Op::scores || x.op == tf::Op::values)) {
      OpCost& c = p.ops.back();
      c.f *= 0.5, c.i *= 0.5, c.w *= 0.5, c.recompute *= 0.5;
    }
  }
  add_memory_ops(mc, tf::kept(md, split, Recompute::none, tf::Part::layer, tf::Convention::megatron, md.flash_attention),
                 pr.value_bytes, l.recompute, p);
  // Tensor parallelism (Shoeybi et al. 2019): two all-reduces of the n h activations in F and two in
  // I; sequence parallelism swaps each for an all-gather and a reduce-scatter of the same volume
  // (Korthikanti et al. 2022); full recomputation repeats F's in I.
  const double act = pr.value_bytes * tf::tokens(md, split) * md.hidden;
  const double one = collective(mc, tp_inter(pr, l, strides), act, l.t, 2);
  const double rerun = l.recompute == Recompute::full ? 2 * one : 0;
  p.ops.push_back(comm_cost(l.sequence_parallel ? "tp-allgather-reducescatter" : "tp-allreduce", "tp", 2 * one,
                            2 * one + rerun));
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
  total(p, l.tp_overlap, l.async_tp);
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
  p.ops.push_back(comm_cost("tp-embedding", "tp", collective(mc, tp_inter(pr, l, strides), act, l.t, l.sequence_parallel ? 1 : 2), 0));
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
