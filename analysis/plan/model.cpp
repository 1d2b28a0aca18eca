// The performance model of `pipebench plan` (docs/model.md gives every formula with its source).
#include "analysis/plan/model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/formulas.hpp"
#include "analysis/limits.hpp"
#include "analysis/memory.hpp"
#include "analysis/simulate.hpp"
#include "analysis/text.hpp"
#include "analysis/transformer/activations.hpp"
#include "analysis/transformer/flops.hpp"
#include "analysis/transformer/params.hpp"
#include "analysis/plan/ops.hpp"
#include "analysis/plan/stage_work.hpp"

namespace pipebench::analysis::plan {

// ---- layouts ----------------------------------------------------------------------------------------

namespace {

// GPUs per node: the problem's --gpus-per-node, else the machine's.
int node_gpus(const Problem& pr) { return pr.gpus_per_node > 0 ? pr.gpus_per_node : pr.machine.gpus_per_node; }

// Layers of each of S stage depths when L layers are split as evenly as possible: stage k holds
// floor((k+1) L / S) - floor(k L / S), stepped without a division per stage (the screen's hot loop).
void even_layers(int L, int S, std::vector<int>& out) {
  out.resize(S);
  const int q = L / S, r = L % S;
  for (int k = 0, rem = 0; k < S; ++k) {
    rem += r;
    const bool extra = rem >= S;
    if (extra) rem -= S;
    out[k] = q + (extra ? 1 : 0);
  }
}

// The row's m rule (analysis/catalog.hpp MRule) in the planner's words, with the default group.
Refusal check_m_rule(const ScheduleRow& row, int p, int m, int v) {
  const MRule& rule = row.m_rule;
  const auto pm = [&] { return " (m = " + std::to_string(m) + ", p = " + std::to_string(p) + ")"; };
  if (rule.groups && v >= 2 && !rule.groups(row.name, p, m, default_group(p)).empty())
    return {"schedule", row.name + " needs m a multiple of p" + pm()};
  if (m < rule.min_per_rank * p)
    return {"schedule", row.name + " needs m >= " + std::to_string(rule.min_per_rank) + "p" + pm()};
  if (rule.even && (p % 2 != 0 || m % 2 != 0))
    return {"schedule",
            row.name + " needs p and m even (p = " + std::to_string(p) + ", m = " + std::to_string(m) + ")"};
  return {};
}

}  // namespace

AxisStrides strides_of(const Problem& pr, const Layout& l) {
  if (pr.rank_order) return pr.rank_order(l.t, l.p, l.d);
  // tp-dp-pp, fastest first (tests/bench/cmd/test_plan_order.cpp holds this against topology::Grid).
  return {1, std::int64_t{l.t} * l.d, l.t};
}

namespace {

// Whether the groups of `size` ranks `stride` apart leave a node of `gpn`: the block of ranks that
// holds one, stride x size, is larger than a node (a group of one rank never leaves it).
bool crosses_nodes(int size, std::int64_t stride, int gpn) { return size > 1 && stride * size > gpn; }

}  // namespace

Refusal check_layout(const Problem& pr, const Layout& l, int* m_out, int* v_out) {
  const ModelSpec& md = pr.model;
  const int gpn = node_gpus(pr);
  if (md.heads % l.t != 0)
    return {"tensor", "t = " + std::to_string(l.t) + " does not divide " + std::to_string(md.heads) + " heads"};
  const std::int64_t tp_stride = strides_of(pr, l).tp;
  if (crosses_nodes(l.t, tp_stride, gpn) && !pr.allow_cross_node_tp)
    return {"tensor", "t = " + std::to_string(l.t) + " spans nodes of " + std::to_string(gpn) + " GPUs" +
                          (tp_stride > 1 ? ", its ranks " + std::to_string(tp_stride) + " apart in the rank order" : "") +
                          " (--allow-cross-node-tp allows it)"};
  if (l.cp < 1 || md.seq % l.cp != 0)
    return {"context", "cp = " + std::to_string(l.cp) + " does not divide the sequence of " + std::to_string(md.seq)};
  if (l.ep < 1 || (l.ep > 1 && (md.experts == 0 || md.experts % l.ep != 0 || (std::int64_t{l.d} * l.cp) % l.ep != 0)))
    return {"experts", "ep = " + std::to_string(l.ep) + " does not divide " + std::to_string(md.experts) +
                           " experts and cp*d = " + std::to_string(l.d * l.cp)};
  const transformer::Split split{l.t, l.sequence_parallel, true, l.cp, l.ep};  // Megatron-LM's MoE rule
  if (std::string why = transformer::moe_tensor_parallel_refusal(md, split); !why.empty()) return {"experts", why};
  if (l.zero < 0 || l.zero > 3) return {"zero", "ZeRO stage " + std::to_string(l.zero) + " (0 to 3)"};
  if (l.fp8 && !(pr.machine.peak_fp8_flops > 0)) return {"precision", pr.machine.name + " has no FP8 peak"};
  const std::int64_t per = std::int64_t{l.micro_batch_size} * l.d;
  if (pr.global_batch % per != 0)
    return {"global batch", "global batch " + std::to_string(pr.global_batch) + " is not a multiple of b*d = " +
                                std::to_string(per)};
  const std::int64_t m64 = pr.global_batch / per;
  if (m64 > (std::int64_t{1} << 24)) return {"global batch", "m = " + std::to_string(m64) + " micro-batches is too many"};
  const int m = static_cast<int>(m64);
  const ScheduleRow* row = find_schedule(l.schedule);
  if (!row) return {"schedule", "unknown schedule " + quoted(l.schedule)};
  int v = l.v > 0 ? l.v : row->default_v;
  if (row->fixed_v && v != row->default_v)
    return {"schedule", l.schedule + " has v = " + std::to_string(row->default_v) + ", not " + std::to_string(v)};
  const std::int64_t S = std::int64_t{l.p} * v;
  if (S > md.layers)
    return {"layers", std::to_string(S) + " stages (p*v) for " + std::to_string(md.layers) + " layers"};
  if (!l.stage_layers.empty()) {
    int sum = 0;
    for (int x : l.stage_layers) sum += x < 0 ? md.layers + 1 : x;
    if (static_cast<std::int64_t>(l.stage_layers.size()) != S || sum != md.layers)
      return {"layers", "the pipeline layout has " + std::to_string(l.stage_layers.size()) + " stages of " +
                            std::to_string(sum) + " layers, not p*v = " + std::to_string(S) + " of " + std::to_string(md.layers)};
  }
  const Refusal m_refusal = check_m_rule(*row, l.p, m, v);
  if (!m_refusal.reason.empty()) return m_refusal;
  if (std::int64_t{l.p} * v * m > kMaxSchedulePairs)
    return {"schedule", "p*v*m = " + std::to_string(std::int64_t{l.p} * v * m) + " pairs is over the limit"};
  if (m_out) *m_out = m;
  if (v_out) *v_out = v;
  return {};
}

namespace {

// Each stage depth's times and stashes from its layers (analysis/plan/ops.hpp: one layer's operations),
// the embedding on the first and the head and loss on the last.
struct Parts {
  PartCosts layer, embedding, head, moe_layer;
  double stash = 0, wstash = 0, embedding_stash = 0, head_stash = 0, head_wstash = 0, moe_stash = 0;
  double model_flops = 0, hardware_flops = 0;  // per step, all GPUs
};

Parts parts_of(const Problem& pr, const Layout& l, const AxisStrides& strides) {
  namespace tf = transformer;
  ModelSpec md = pr.model;
  md.micro_batch = l.micro_batch_size;
  const tf::Split split{l.t, l.sequence_parallel, true, std::max(1, l.cp)};
  Parts c;
  c.layer = layer_part(pr, l, strides);
  if (md.experts > 0) c.moe_layer = layer_part(pr, l, strides, true);
  c.embedding = embedding_part(pr, l, strides);
  c.head = head_part(pr, l);
  // Korthikanti et al. 2022 count a GPT layer: the planner sizes every layer's activations as the GPT
  // layer of the same h, a and s (grouped-query attention and another MLP would change them), at the
  // problem's value bytes.
  tf::Shape gpt = md;
  gpt.kv_heads = 0, gpt.ffn = 0, gpt.gated_mlp = false;
  tf::MegatronOptions korthikanti;
  korthikanti.flash_attention = md.flash_attention;
  const tf::MegatronStash act = tf::megatron_stash(gpt, split, l.recompute, tf::Part::layer, korthikanti);
  const double scale = pr.value_bytes / 2;
  c.stash = act.forward * scale, c.wstash = act.weight * scale;
  // An MoE layer keeps its MLP's tensors per route (the fc1 input and dropout mask, 3 sbh, and the
  // activation's 16 sbh scaled to the expert's width F: Korthikanti's 19 sbh of the 4h MLP) over t, as
  // the expert tensor parallelism splits them; full recomputation keeps the layer input only.
  const double routes = md.top_k * pr.routing_imbalance + md.shared_experts;
  const double per = routes * (3 + 4.0 * double(md.expert_ffn_size()) / md.hidden) - 19;
  const bool kept = md.experts > 0 && l.recompute != Recompute::full;
  c.moe_stash = c.stash + (kept ? per * tf::tokens(md, split) * md.hidden * scale / l.t : 0);
  tf::MegatronOptions values;
  values.value_bytes = pr.value_bytes;
  c.embedding_stash = tf::megatron_stash(md, split, l.recompute, tf::Part::embedding, values).forward;
  const tf::MegatronStash head = tf::megatron_stash(md, split, l.recompute, tf::Part::head, values);
  c.head_stash = head.forward, c.head_wstash = head.weight;
  c.model_flops = transformer::model_flops_per_step(pr.model, pr.global_batch);
  c.hardware_flops = c.model_flops + transformer::recompute_flops_per_step(pr.model, pr.global_batch, l.recompute,
                                                                           transformer::Convention::megatron);
  return c;
}

}  // namespace

struct PartsCache {
  std::mutex mu;
  std::map<std::tuple<int, int, int, int, bool, bool, bool, bool, bool, int, std::int64_t, bool>, Parts> parts;
};

std::shared_ptr<PartsCache> make_parts_cache() { return std::make_shared<PartsCache>(); }

namespace {

const Parts& cached_parts(const Problem& pr, const Layout& l, const AxisStrides& strides, Parts& own) {
  if (!pr.cache) return own = parts_of(pr, l, strides);
  const bool tp_inter = crosses_nodes(l.t, strides.tp, node_gpus(pr));
  const auto key = std::make_tuple(l.t, l.cp, l.micro_batch_size, int(l.recompute), l.sequence_parallel, l.fp8,
                                   l.tp_overlap, l.async_tp, tp_inter, l.ep, l.ep > 1 ? strides.dp : 0, l.ep_overlap);
  std::lock_guard<std::mutex> lock(pr.cache->mu);
  auto it = pr.cache->parts.find(key);
  if (it == pr.cache->parts.end()) it = pr.cache->parts.emplace(key, parts_of(pr, l, strides)).first;
  return it->second;
}

// One stage depth's times and stashes for one micro-batch, built before they go into the StagePlan.
struct DepthTimes {
  double f = 0, b = 0, w = 0, fc = 0, bc = 0, stash = 0, wstash = 0;
};

void add_part(DepthTimes& x, const PartCosts& c, double times) {
  x.fc += times * c.compute_f;
  x.bc += times * (c.compute_i + c.compute_w);
  x.f += times * (c.compute_f + c.comm_f);
  x.b += times * (c.compute_i + c.compute_w + c.comm_i);
  x.w += times * c.compute_w;
}

// The MoE layers among stage depth k's layers [first, first + n) (transformer::Shape::moe_layer).
int moe_layers(const ModelSpec& md, int first, int n) { return md.moe_layers_in(first, n); }

// Stage depths with the same layers (and MoE layers) share their layers' part, computed once: the
// screen's hot loop, where all but a few stages are alike.
void stage_times(const ModelSpec& md, const Parts& c, StagePlan& sp) {
  const int S = sp.stages_per_pipe;
  for (std::vector<double>* v : {&sp.f, &sp.b, &sp.w, &sp.fc, &sp.bc, &sp.stash, &sp.wstash}) v->resize(S);
  const bool moe = md.experts > 0;
  DepthTimes body;
  int body_nl = -1, body_ne = -1;
  for (int k = 0, first = 0; k < S; first += sp.layers[k], ++k) {
    const int nl = sp.layers[k], ne = moe ? moe_layers(md, first, nl) : 0;
    if (nl != body_nl || ne != body_ne) {
      body = DepthTimes{};
      add_part(body, c.layer, nl - ne);
      if (ne > 0) add_part(body, c.moe_layer, ne);
      body.stash = (nl - ne) * c.stash + ne * c.moe_stash;
      body.wstash = nl * c.wstash;
      body_nl = nl, body_ne = ne;
    }
    DepthTimes x = body;
    if (k == 0) {
      add_part(x, c.embedding, 1);
      x.stash += c.embedding_stash;
    }
    if (k == S - 1) {
      add_part(x, c.head, 1);
      x.stash += c.head_stash;
      x.wstash += c.head_wstash;
    }
    // The simulator needs 0 <= W < B.
    x.w = std::min(x.w, 0.5 * x.b);
    sp.f[k] = x.f, sp.b[k] = x.b, sp.w[k] = x.w, sp.fc[k] = x.fc, sp.bc[k] = x.bc;
    sp.stash[k] = x.stash, sp.wstash[k] = x.wstash;
  }
}

}  // namespace

namespace {

// Parameters of the fullest rank: its layers (1/t of each) plus the embedding on the rank of the first
// stage and the tied head's copy on the rank of the last stage (of each model copy). The planner splits
// every part over t, the LayerNorms, biases and positions Megatron replicates too.
// An MoE layer holds the attention, the router, its E/ep routed and every shared expert (transformer::
// layer_params with ep); `expert` returns the routed experts' part of the fullest rank.
double fullest_rank_params(const Problem& pr, const Layout& l, const StagePlan& sp, const ScheduleRow& row,
                           double& expert) {
  const ModelSpec& md = pr.model;
  const int t = l.t, p = l.p, S = sp.stages_per_pipe;
  // Kept per thread: the screen calls this for every configuration.
  thread_local std::vector<double> rank_params, rank_expert;
  rank_params.assign(p, 0.0), rank_expert.assign(md.experts > 0 ? p : 0, 0.0);  // dense: no second vector
  const double lp = double(transformer::layer_params(md)) / t;
  transformer::Split split{t, false, true, 1};
  split.ep = l.ep;
  const double mp = md.experts > 0 ? double(transformer::layer_params(md, split, true)) : 0;
  const double xp = md.experts > 0 ? double(transformer::routed_expert_params(md, split)) : 0;
  const double vh = double(transformer::embedding_params(md)), ep = (vh + double(transformer::position_params(md))) / t;
  StageRanks ranks(row, p);
  for (int c = 0; c < sp.pipes; ++c)
    for (int k = 0, first = 0; k < S; first += sp.layers[k], ++k) {
      const int r = ranks.next(), ne = md.experts > 0 ? moe_layers(md, first, sp.layers[k]) : 0;
      rank_params[r] += (sp.layers[k] - ne) * lp + ne * mp;
      if (ne > 0) rank_expert[r] += ne * xp;
      if (k == 0) rank_params[r] += ep;
      if (k == S - 1 && !(p == 1 && sp.v == 1 && sp.pipes == 1)) rank_params[r] += vh / t;
    }
  const auto at = std::max_element(rank_params.begin(), rank_params.end()) - rank_params.begin();
  expert = rank_expert.empty() ? 0 : rank_expert[at];
  return rank_params[at];
}

}  // namespace

StagePlan stage_plan(const Problem& pr, const Layout& l) {
  StagePlan sp;
  const Refusal refusal = check_layout(pr, l, &sp.m, &sp.v);
  if (!refusal.reason.empty()) throw UsageError("configuration refused (" + refusal.reason + "): " + refusal.detail);
  const ModelSpec& md = pr.model;
  const MachineSpec& mc = pr.machine;
  const int t = l.t, p = l.p;
  const ScheduleRow& row = schedule_row(l.schedule);
  sp.pipes = row.pipes;
  const int S = p * sp.v;
  sp.stages_per_pipe = S;
  sp.layers = l.stage_layers;
  if (sp.layers.empty()) even_layers(md.layers, S, sp.layers);

  const AxisStrides strides = strides_of(pr, l);
  Parts own;
  const Parts& parts = cached_parts(pr, l, strides, own);
  sp.layer_forward = parts.layer.compute_f + parts.layer.comm_f;
  sp.layer_backward = parts.layer.compute_i + parts.layer.compute_w + parts.layer.comm_i;
  stage_times(md, parts, sp);

  // Pipeline transfers: the n h values of a boundary; with t > 1 Megatron's scatter/gather sends 1/t
  // of them per GPU across nodes and all-gathers over NVLink (Narayanan et al. 2021, Section 4.1).
  // Neighbouring stages are the rank order's pipeline stride apart (t*d in tp-dp-pp, t in tp-pp-dp, 1
  // in pp-dp-tp): on other nodes once the block of a pipeline group is larger than a node.
  if (p > 1) {
    const bool inter = crosses_nodes(p, strides.pp, node_gpus(pr)) || l.cp > 1;
    const double n = double(l.micro_batch_size) * md.seq / std::max(1, l.cp);
    const double bytes = pr.value_bytes * n * md.hidden / (inter ? t : 1);
    sp.p2p = (inter ? mc.inter_latency + bytes / mc.inter_bandwidth : mc.intra_latency + bytes / mc.intra_bandwidth) +
             mc.p2p_extra;
  }
  double expert = 0;
  const double params = fullest_rank_params(pr, l, sp, row, expert);
  static_and_dp(pr, l, params, expert, sp);

  sp.model_flops = parts.model_flops, sp.hardware_flops = parts.hardware_flops;
  return sp;
}

// ---- full evaluation --------------------------------------------------------------------------------

Prediction evaluate(const Problem& pr, const Layout& l) { return evaluate(pr, l, stage_plan(pr, l)); }

Prediction evaluate(const Problem& pr, const Layout& l, const StagePlan& sp) {
  ScheduleParams q;
  q.name = l.schedule, q.p = l.p, q.m = sp.m, q.v = sp.v;
  const Schedule s = make_schedule(q);
  SimCosts costs;
  costs.stage.resize(s.num_stages());
  std::vector<StashBytes> stash(s.num_stages());
  for (int st = 0; st < s.num_stages(); ++st) {
    const int k = s.depth_of_stage(st);
    costs.stage[st] = StageTimes{sp.f[k], sp.b[k], sp.w[k]};
    stash[st] = StashBytes{sp.stash[k], sp.wstash[k]};
  }
  costs.p2p = sp.p2p;
  costs.gap = pr.machine.action_gap;
  if (pr.machine.p2p_wait > 0 && s.num_stages() > 1) costs.link_wait.assign(s.num_stages() - 1, pr.machine.p2p_wait);
  SimOptions opt;
  opt.timeline = false;
  const SimResult with = simulate(s, costs, opt);
  double makespan0 = with.metrics.makespan;
  if (sp.p2p > 0 || !costs.link_wait.empty()) {
    SimCosts free = costs;
    free.p2p = 0;
    free.link_wait.clear();
    makespan0 = simulate(s, free, opt).metrics.makespan;
  }
  const RankWork w = busiest(l, sp);
  double busy_max = 0;
  for (const auto& r : with.metrics.ranks) busy_max = std::max(busy_max, r.busy);

  Prediction out;
  out.layout = l;
  out.m = sp.m;
  out.v = sp.v;
  out.simulated = true;
  const double dp = dp_exposed(pr.machine, l, sp, w);
  out.step_time = with.metrics.makespan + dp + sp.optimizer;
  out.breakdown.compute = w.compute;
  out.breakdown.tp = std::max(0.0, busy_max - w.compute);
  out.breakdown.pp = std::max(0.0, with.metrics.makespan - makespan0);
  out.breakdown.bubble = std::max(0.0, makespan0 - busy_max);
  out.breakdown.dp = dp;
  out.breakdown.other = sp.optimizer;
  out.bubble_fraction = with.metrics.bubble_fraction;

  const double gpus = double(l.t) * l.p * l.d * std::max(1, l.cp);
  out.tokens_per_second = double(pr.global_batch) * pr.model.seq / out.step_time;
  out.model_tflops_per_gpu = sp.model_flops / out.step_time / gpus / 1e12;
  out.hardware_tflops_per_gpu = sp.hardware_flops / out.step_time / gpus / 1e12;
  out.mfu = out.model_tflops_per_gpu * 1e12 / pr.machine.peak_flops;

  // Memory of the fullest rank: its static bytes plus its activations as the order holds them.
  const std::vector<double> peak = peak_activation_bytes(s, stash);
  double act = 0;
  for (double x : peak) act = std::max(act, x);
  out.weights_bytes = sp.weights;
  out.gradients_bytes = sp.gradients;
  out.optimizer_bytes = sp.optimizer_state;
  out.activation_bytes = act;
  out.memory_bytes = sp.static_bytes + act;
  out.fits = out.memory_bytes <= pr.machine.memory_bytes;
  out.layer_forward = sp.layer_forward, out.layer_backward = sp.layer_backward;
  Parts own;
  const Parts& parts = cached_parts(pr, l, strides_of(pr, l), own);
  out.layer_ops = parts.layer.ops, out.embedding_ops = parts.embedding.ops, out.head_ops = parts.head.ops;
  out.moe_layer_ops = parts.moe_layer.ops;
  return out;
}

}  // namespace pipebench::analysis::plan
