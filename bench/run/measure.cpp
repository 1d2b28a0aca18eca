#include "bench/run/measure.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "analysis/error.hpp"
#include "analysis/formulas.hpp"
#include "analysis/metrics.hpp"
#include "analysis/stats.hpp"

namespace pipebench::bench {

using analysis::Kind;
using analysis::median;

namespace {

// Effective point-to-point time: for the receives that kept their action waiting, from the matching
// send being posted to the receive completing, averaged. The mean, not the median: the delays have a
// long tail (a rank polling with a growing sleep, a rendezvous waiting for the sender's next progress
// call), and the tail is what lengthens a step. 0 when no action ever waited for a message.
// Also per stage boundary (`links`, one per boundary b between stages b and b + 1, sized by the
// caller): the same mean over the receives that crossed b, an activation received by stage b + 1 or a
// gradient by stage b (the tag's lowest bit, comm/tags.hpp); -1 where none waited (the simulator then
// charges the overall mean). Inside a node and across nodes the links differ by a factor of ten and
// more (docs/netns.md): one mean for all of them would charge a shared-memory link the slow one's cost.
// `waits` (sized like links): per boundary, over the receives whose send was posted before the receiver
// reached them, the mean time they still took after it (0 for those already there): what a rendezvous
// that needs both ranks in MPI costs however early the send (UCX over TCP), which the latency above,
// taken from sends posted later, does not hold; -1 where there were none.
double measured_p2p(const std::vector<CommRecord>& comms, std::vector<double>* links = nullptr,
                    std::vector<double>* waits = nullptr) {
  std::map<std::tuple<int, int, int, int>, double> posted;  // (src, dst, tag, step) -> send posted
  for (const auto& c : comms)
    if (c.kind == CommKind::Send) posted[{c.global_rank, c.peer, c.tag, c.step}] = c.t_posted;
  const std::size_t nb = links ? links->size() : 0;
  std::vector<double> sum_of(nb, 0.0), count_of(nb, 0.0), wait_of(nb, 0.0), early_of(nb, 0.0);
  double sum = 0, count = 0;
  for (const auto& c : comms) {
    if (c.kind != CommKind::Recv) continue;
    const auto it = posted.find({c.peer, c.global_rank, c.tag, c.step});
    if (it == posted.end()) continue;
    const long b = (c.tag & 1) ? c.stage : c.stage - 1;
    if (it->second < c.t_wait && b >= 0 && static_cast<std::size_t>(b) < nb)
      wait_of[b] += std::max(0.0, c.t_done - c.t_wait), early_of[b] += 1;
    if (c.t_done <= c.t_wait || it->second < c.t_wait) continue;
    const double x = std::max(0.0, c.t_done - it->second);
    sum += x, count += 1;
    if (b >= 0 && static_cast<std::size_t>(b) < nb) sum_of[b] += x, count_of[b] += 1;
  }
  for (std::size_t b = 0; b < nb; ++b) (*links)[b] = count_of[b] > 0 ? sum_of[b] / count_of[b] : -1;
  if (waits)
    for (std::size_t b = 0; b < nb && b < waits->size(); ++b) (*waits)[b] = early_of[b] > 0 ? wait_of[b] / early_of[b] : -1;
  return count > 0 ? sum / count : 0;
}

// The same for an action that waited for two inputs from other ranks (an overlapped F&B pair): from
// the later of its two sends being posted to the later of its two receives completing, averaged over
// the pairs that waited for it. A pair starts at the later of two random delays, which is later than
// one delay's mean; -1 when no such action waited (the simulator then uses the single p2p time).
// The receives are the F input (stage, mb) and the B input (b_stage, b_mb); a tag's lowest bit says
// which (comm/tags.hpp).
double measured_p2p_pair(const std::vector<ActionRecord>& actions, const std::vector<CommRecord>& comms) {
  using Key = std::tuple<int, int, int, int, int>;  // (rank, step, stage, mb, gradient)
  std::map<Key, const CommRecord*> recv;
  std::map<std::tuple<int, int, int, int>, double> posted;  // (src, dst, tag, step) -> send posted
  for (const auto& c : comms) {
    if (c.kind == CommKind::Recv) recv[{c.global_rank, c.step, c.stage, c.mb, c.tag & 1}] = &c;
    if (c.kind == CommKind::Send) posted[{c.global_rank, c.peer, c.tag, c.step}] = c.t_posted;
  }
  double sum = 0;
  int n = 0;
  for (const auto& a : actions) {
    if (a.kind != Kind::FB) continue;
    const auto f = recv.find({a.global_rank, a.step, a.stage, a.mb, 0});
    const auto b = recv.find({a.global_rank, a.step, a.b_stage, a.b_mb, 1});
    if (f == recv.end() || b == recv.end()) continue;
    const auto pf = posted.find({f->second->peer, a.global_rank, f->second->tag, a.step});
    const auto pb = posted.find({b->second->peer, a.global_rank, b->second->tag, a.step});
    if (pf == posted.end() || pb == posted.end()) continue;
    const double later_posted = std::max(pf->second, pb->second);
    const double later_done = std::max(f->second->t_done, b->second->t_done);
    if (later_posted < f->second->t_wait || later_done <= later_posted) continue;  // it did not wait for it
    sum += later_done - later_posted;
    ++n;
  }
  return n ? sum / n : -1;
}

// Loss, gradient norms and FLOP rates of the workload (transformer), in RunSummary::extra:
//   loss           mean over the step's micro-batches (of every data-parallel replica)
//   grad_norm.<s>  L2 norm of stage s's weight gradients after the sync (tensor rank 0, replica 0)
//   model_flops    the model's FLOPs of one step, all ranks, without recomputation
//   flop_rate      FLOPs the ranks did (recomputation included) per second of step time
//   blas_flop_rate the reference matrix product's rate, summed over ranks
//   mfu            model_flops / (step time * blas_flop_rate): model FLOP utilisation
//   optimizer_state_bytes  the most bytes of optimizer state (Adam's m and v) any rank holds
//   main_weight_bytes      16-bit runs: the most bytes of fp32 main weights any rank holds
//   decoded_weight_bytes   16-bit runs: the most fp32 bytes of weights any rank held decoded at once
//                          during the step (kernels/half_weights.hpp)
//   weight_bytes, gradient_bytes  the most bytes of weights, of gradients any rank holds after the
//                          step (whole buffers and ZeRO's shards, as allocated)
//   loss_scale, skipped_steps  fp16: the scale after the last step and the steps skipped for an
//                          overflow (every rank's alike: the verdict is shared)
//   moe_aux_loss, moe_dropped_tokens  MoE: the aux loss per micro-batch (all MoE layers, coefficient
//                          included; `loss` is the cross-entropy alone) and the routes capacity dropped
void add_workload_figures(const topology::Grid& grid, const MeasureInput& in, RunResult& out) {
  double loss = 0, count = 0, model_flops = 0, blas = 0, rate = 0, state = -1, aux = -1, dropped = 0;
  for (int r = 0; r < static_cast<int>(in.figures.size()); ++r) {
    const auto c = grid.coords(r);
    for (const auto& f : in.figures[r]) {
      using K = kernels::Workload::FigureKind;
      // Tensor-parallel ranks hold slices of one stage: each computes the same loss and a share of FLOPs,
      // and (every tp rank routing the whole micro-batch, kernels/moe.hpp) the same MoE aux loss and drops.
      if (f.kind == K::loss_sum && c.tp == 0) loss += f.value;
      if (f.kind == K::loss_count && c.tp == 0) count += f.value;
      if (f.kind == K::model_flops) model_flops += f.value;
      if (f.kind == K::moe_aux_loss_sum && c.tp == 0) aux = std::max(aux, 0.0) + f.value;
      if (f.kind == K::moe_dropped_tokens && c.tp == 0) dropped += f.value;
      if (f.kind == K::optimizer_state_bytes) state = std::max(state, f.value);
      if (f.kind == K::grad_norm && c.tp == 0 && c.dp == 0) out.summary.extra["grad_norm." + std::to_string(f.stage)] = f.value;
      const char* most = f.kind == K::main_weight_bytes ? "main_weight_bytes"
                         : f.kind == K::decoded_weight_bytes ? "decoded_weight_bytes"
                         : f.kind == K::weight_bytes    ? "weight_bytes"
                         : f.kind == K::gradient_bytes  ? "gradient_bytes"
                         : f.kind == K::loss_scale      ? "loss_scale"
                         : f.kind == K::skipped_steps   ? "skipped_steps"
                                                        : nullptr;
      if (most) out.summary.extra[most] = std::max(out.summary.extra[most], f.value);
    }
  }
  for (double b : in.blas_rate) blas += b;
  for (const auto& rs : out.ranks) rate += rs.flop_rate;
  if (count > 0) out.summary.extra["loss"] = loss / count;
  if (count > 0 && aux >= 0) {
    out.summary.extra["moe_aux_loss"] = aux / count;
    out.summary.extra["moe_dropped_tokens"] = dropped;
  }
  if (model_flops > 0) out.summary.extra["model_flops"] = model_flops;
  if (state >= 0) out.summary.extra["optimizer_state_bytes"] = state;
  if (rate > 0) out.summary.extra["flop_rate"] = rate;
  if (blas > 0) {
    out.summary.extra["blas_flop_rate"] = blas;
    if (out.summary.step_time > 0) out.summary.extra["mfu"] = model_flops / (out.summary.step_time * blas);
  }
}

// The data-parallel collectives' bytes and ZeRO-3's gathers, in RunSummary::extra where there are any
// (bench/run/zero_formula.hpp gives the formulas):
//   dp_all_gathered_bytes, dp_reduce_scattered_bytes, dp_all_reduced_bytes  per step, the busiest rank's
//   gather_wait          ZeRO-3: time blocked on weight gathers before actions, the largest rank's per
//                        step, median over steps (with prefetch, what the compute did not hide)
//   gathered_peak_bytes  ZeRO-3: the most gathered weight bytes any rank held at once
void add_dp_figures(const MeasureInput& in, RunResult& out) {
  const std::size_t ranks = in.timing.size(), steps = ranks ? in.timing[0].size() : 0;
  if (steps == 0) return;
  const CommKind kinds[3] = {CommKind::AllGather, CommKind::ReduceScatter, CommKind::AllReduce};
  const char* names[3] = {"dp_all_gathered_bytes", "dp_reduce_scattered_bytes", "dp_all_reduced_bytes"};
  for (int k = 0; k < 3; ++k) {
    std::map<std::pair<int, int>, double> bytes;  // (step, rank) -> bytes
    for (const auto& c : in.comms)
      if (c.group == CommGroup::dp && c.kind == kinds[k]) bytes[{c.step, c.global_rank}] += static_cast<double>(c.bytes);
    if (bytes.empty()) continue;
    std::map<int, double> most;  // per step
    for (const auto& [key, b] : bytes) most[key.first] = std::max(most[key.first], b);
    std::vector<double> per_step;
    for (const auto& [step, b] : most) per_step.push_back(b);
    out.summary.extra[names[k]] = median(per_step);
  }
  std::vector<double> waits;
  double peak = 0;
  for (std::size_t k = 0; k < steps; ++k) {
    double w = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
      w = std::max(w, in.timing[r][k].gather_waited);
      peak = std::max(peak, in.timing[r][k].gathered_peak);
    }
    waits.push_back(w);
  }
  if (peak > 0) {
    out.summary.extra["gather_wait"] = median(waits);
    out.summary.extra["gathered_peak_bytes"] = peak;
  }
}

// The expert exchanges (synthetic expert traffic), in RunSummary::extra where there are any, per step and
// rank, the largest rank's, median over steps: ep_exchanges, ep_bytes (the expert side's, as DeepEP
// counts them), ep_time (posted to done), ep_exposed (after the wait began: what compute did not hide);
// ep_bandwidth: ep_bytes over ep_time, the median rank's (with --ep-overlap off, the transfer's rate).
void add_ep_figures(const MeasureInput& in, RunResult& out) {
  struct Sums {
    double n = 0, bytes = 0, time = 0, exposed = 0;
  };
  std::map<std::pair<int, int>, Sums> sums;  // (step, rank)
  for (const auto& c : in.comms) {
    if (c.group != CommGroup::ep) continue;
    Sums& s = sums[{c.step, c.global_rank}];
    s.n += 1;
    s.bytes += static_cast<double>(c.bytes);
    s.time += c.t_done - c.t_posted;
    s.exposed += std::max(0.0, c.t_done - c.t_wait);
  }
  if (sums.empty()) return;
  std::map<int, Sums> most;  // per step
  std::vector<double> rates;
  for (const auto& [key, s] : sums) {
    Sums& m = most[key.first];
    m = {std::max(m.n, s.n), std::max(m.bytes, s.bytes), std::max(m.time, s.time), std::max(m.exposed, s.exposed)};
    if (s.time > 0) rates.push_back(s.bytes / s.time);
  }
  std::vector<double> fig[4];
  for (const auto& [step, m] : most)
    for (int k = 0; k < 4; ++k) fig[k].push_back(k == 0 ? m.n : k == 1 ? m.bytes : k == 2 ? m.time : m.exposed);
  const char* names[4] = {"ep_exchanges", "ep_bytes", "ep_time", "ep_exposed"};
  for (int k = 0; k < 4; ++k) out.summary.extra[names[k]] = median(fig[k]);
  if (!rates.empty()) out.summary.extra["ep_bandwidth"] = median(rates);
}

// The step starts at the earliest aligned barrier exit of any rank: t0[step] on rank 0's clock.
std::vector<double> step_starts(const MeasureInput& in) {
  const std::size_t steps = in.timing[0].size();
  std::vector<double> t0(steps, 1e300);
  for (std::size_t r = 0; r < in.timing.size(); ++r)
    for (std::size_t k = 0; k < steps; ++k) t0[k] = std::min(t0[k], in.timing[r][k].begin + in.clocks[r].offset);
  return t0;
}

// Moves every record time to rank 0's clock, relative to the start of its step.
void align_records(MeasureInput& in, const std::vector<double>& t0) {
  auto align = [&](double t, int rank, int step) { return t + in.clocks[rank].offset - t0[step]; };
  for (auto& a : in.actions) {
    a.t_start = align(a.t_start, a.global_rank, a.step);
    a.t_end = align(a.t_end, a.global_rank, a.step);
  }
  for (auto& c : in.comms) {
    c.t_posted = align(c.t_posted, c.global_rank, c.step);
    const bool waited = c.kind == CommKind::Recv || c.kind == CommKind::AllToAll;  // the kinds whose wait is recorded
    c.t_wait = waited ? align(c.t_wait, c.global_rank, c.step) : 0;
    c.t_done = align(c.t_done, c.global_rank, c.step);
  }
}

// The figures of each timed step (medians are taken over these).
struct StepSeries {
  std::vector<double> makespans, bubbles, step_times, overheads;
  analysis::Timeline first_step;  // pipeline 0
};

// Metrics of every pipeline in every step: per-rank medians into `ranks`, per-step figures returned.
StepSeries summarize_steps(const analysis::Schedule& s, const topology::Grid& grid, const MeasureInput& in,
                           const std::vector<double>& t0, std::vector<RankSummary>& ranks) {
  using topology::GroupKind;
  const int world = grid.world_size(), steps = static_cast<int>(t0.size()), pipes = grid.num_groups(GroupKind::pp);
  std::vector<std::vector<analysis::Timeline>> tl(steps, std::vector<analysis::Timeline>(pipes));
  for (const auto& a : in.actions) {
    analysis::Action act{a.kind, a.stage, a.mb, a.b_stage, a.b_mb};
    tl[a.step][grid.group_index(GroupKind::pp, a.global_rank)].push_back({a.rank, act, a.t_start, a.t_end});
  }
  StepSeries out;
  std::vector<std::vector<double>> busy(world), idle(world), span(world);
  for (int k = 0; k < steps; ++k) {
    double makespan = 0, total_busy = 0;
    for (int g = 0; g < pipes; ++g) {
      const analysis::Metrics m = analysis::compute_metrics(s, tl[k][g]);
      const auto members = grid.group_members(GroupKind::pp, g);
      for (int i = 0; i < s.p; ++i) {
        const int r = members[i];
        busy[r].push_back(m.ranks[i].busy);
        idle[r].push_back(m.ranks[i].idle);
        span[r].push_back(m.ranks[i].span_bubble);
        ranks[r].peak_inflight = std::max(ranks[r].peak_inflight, m.ranks[i].peak_inflight);
        total_busy += m.ranks[i].busy;
      }
      makespan = std::max(makespan, m.makespan);
    }
    out.makespans.push_back(makespan);
    out.bubbles.push_back(makespan > 0 ? 1.0 - total_busy / (world * makespan) : 0.0);
    double end = 0;
    for (int r = 0; r < world; ++r) {
      const StepTiming& t = in.timing[r][k];
      end = std::max(end, t.end + in.clocks[r].offset - t0[k]);
      if (t.actions > 0) out.overheads.push_back((t.pipeline_end - t.begin - t.compute - t.waited) / t.actions);
    }
    out.step_times.push_back(end);
  }
  for (int r = 0; r < world; ++r) {
    RankSummary& rs = ranks[r];
    const topology::Coords c = grid.coords(r);
    rs.global_rank = r;
    rs.tp = c.tp;
    rs.pp = c.pp;
    rs.dp = c.dp;
    rs.busy = median(busy[r]);
    rs.idle = median(idle[r]);
    rs.span_bubble = median(span[r]);
    rs.clock_offset = in.clocks[r].offset;
    rs.clock_uncertainty = in.clocks[r].uncertainty;
    rs.host = r < static_cast<int>(in.hosts.size()) ? in.hosts[r] : "";
  }
  if (steps > 0) out.first_step = std::move(tl[0][0]);
  return out;
}

// FLOPs each rank did per second of step time, and the bytes it held at its peak.
void add_flops_and_memory(const MeasureInput& in, const std::vector<double>& step_times, std::vector<RankSummary>& ranks) {
  std::vector<std::vector<double>> flops(ranks.size(), std::vector<double>(step_times.size(), 0.0));
  for (const auto& a : in.actions) {
    ranks[a.global_rank].peak_activation_bytes = std::max(ranks[a.global_rank].peak_activation_bytes, a.activation_bytes);
    flops[a.global_rank][a.step] += a.flops;
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::vector<double> rate;
    for (std::size_t k = 0; k < step_times.size(); ++k)
      if (step_times[k] > 0) rate.push_back(flops[r][k] / step_times[k]);
    ranks[r].flop_rate = median(rate);
  }
}

// The formula's inputs: the configured times, or else whole-share times measured (chunk medians times v).
analysis::FormulaParams formula_params(const analysis::Schedule& s, const MeasureInput& in, const analysis::SimCosts& costs) {
  analysis::FormulaParams fp;
  fp.schedule = s.name;
  fp.p = s.p;
  fp.m = s.m;
  fp.v = s.v();
  fp.group = in.group;
  if (in.nominal) {
    fp.tf = in.nominal->tf;
    fp.tb = in.nominal->tb;
    fp.tw = in.nominal->tw;
    fp.t_overlap = in.nominal->t_overlap;
    fp.uniform_stages = in.nominal->uniform;
    return fp;
  }
  double fmin = 1e300, fmax = 0, tf = 0, tb = 0, tw = 0;
  for (const auto& st : costs.stage) {
    fmin = std::min(fmin, st.f);
    fmax = std::max(fmax, st.f);
    tf += st.f;
    tb += st.b;
    tw += st.w;
  }
  const double per = static_cast<double>(s.v()) / static_cast<double>(costs.stage.size());
  fp.tf = tf * per;
  fp.tb = tb * per;
  fp.tw = tw * per;
  fp.t_overlap = costs.overlap_factor * (fp.tf + fp.tb);
  // Measured stages are never exactly equal: within 10 % the uniform-stage formulas are a fair yardstick.
  fp.uniform_stages = fmax <= 1.1 * fmin;
  return fp;
}

analysis::AnalyticFigures formula(const analysis::FormulaParams& fp) {
  if (fp.tb > fp.tw && fp.tf > 0) return analysis::analytic_figures(fp);
  analysis::AnalyticFigures none;
  none.bubble_fraction.reason = "measured times do not fit the formula's assumptions";
  return none;
}

void set_analytic(RunSummary& sum, const analysis::AnalyticFigures& a) {
  sum.bubble_formula = a.bubble_fraction.value;
  sum.analytic_makespan = a.makespan.value;
  sum.analytic_idle = a.idle.value;
  if (a.peak_inflight.value) sum.analytic_peak_inflight.assign(a.peak_inflight.value->begin(), a.peak_inflight.value->end());
  sum.analytic_idle_measure = analysis::idle_measure_name(a.idle_measure);
  sum.analytic_source = a.source;
  const std::pair<const char*, const std::string*> reasons[] = {{"makespan", &a.makespan.reason},
                                                                {"bubble_fraction", &a.bubble_fraction.reason},
                                                                {"idle", &a.idle.reason},
                                                                {"peak_inflight", &a.peak_inflight.reason}};
  for (const auto& [key, reason] : reasons)
    if (!reason->empty()) sum.analytic_notes[key] = *reason;
}

}  // namespace

Measurement measure(const analysis::Schedule& s, const topology::Grid& grid, MeasureInput in) {
  const int world = grid.world_size();
  if (static_cast<int>(in.clocks.size()) != world || static_cast<int>(in.timing.size()) != world)
    throw Error("measure: records from " + std::to_string(in.timing.size()) + " ranks, world has " + std::to_string(world));
  const std::vector<double> t0 = step_starts(in);
  align_records(in, t0);
  Measurement result;
  RunResult& out = result.run;
  Simulation& pred = result.simulation;
  out.ranks.assign(world, RankSummary{});
  StepSeries steps = summarize_steps(s, grid, in, t0, out.ranks);
  add_flops_and_memory(in, steps.step_times, out.ranks);

  // The prediction from what was measured.
  std::vector<double> links(static_cast<std::size_t>(std::max(s.num_stages() - 1, 0)));
  std::vector<double> waits(links.size());
  pred.costs = measured_costs(s, in.actions, measured_p2p(in.comms, &links, &waits));
  pred.costs.link_p2p = std::move(links);
  pred.costs.link_wait = std::move(waits);
  pred.costs.p2p_pair = measured_p2p_pair(in.actions, in.comms);
  pred.executor_overhead_per_action = median(steps.overheads);
  pred.costs.gap = pred.executor_overhead_per_action;
  pred.sim = analysis::simulate(s, pred.costs);
  pred.analytic = formula(formula_params(s, in, pred.costs));
  pred.first_step = std::move(steps.first_step);
  const std::vector<double> bytes =
      in.stash.empty() ? std::vector<double>(s.p, 0.0) : analysis::peak_activation_bytes(s, in.stash);
  for (int r = 0; r < world; ++r) {
    const int pp = grid.coord(topology::GroupKind::pp, r);
    out.ranks[r].predicted_peak_inflight = pred.sim.metrics.ranks[pp].peak_inflight;
    out.ranks[r].predicted_activation_bytes = static_cast<std::int64_t>(bytes[pp]);
  }
  for (int st = 0; st < static_cast<int>(pred.costs.stage.size()); ++st) {
    const auto& c = pred.costs.stage[st];
    out.stages.push_back({st, c.f, c.b, c.w});
  }

  RunSummary& sum = out.summary;
  sum.pipes = s.pipes;
  sum.makespan = median(steps.makespans);
  sum.bubble_measured = median(steps.bubbles);
  sum.step_time = median(steps.step_times);
  set_variability(sum, steps.step_times, steps.bubbles);
  sum.scoring = kScoringMedian;
  for (std::size_t k = 0; k < steps.step_times.size(); ++k)
    out.steps.push_back({0, static_cast<std::int32_t>(k), steps.step_times[k], steps.makespans[k], steps.bubbles[k]});
  sum.dp_sync_time = std::max(0.0, sum.step_time - sum.makespan);
  const StepReplays replays = replay_steps(s, grid, in.actions, pred.costs, static_cast<int>(t0.size()));
  sum.simulated_makespan = median(replays.makespans);
  sum.bubble_simulated = median(replays.bubbles);
  set_analytic(sum, pred.analytic);
  add_workload_figures(grid, in, out);
  add_dp_figures(in, out);
  add_ep_figures(in, out);
  sum.extra["executor_overhead_per_action"] = pred.executor_overhead_per_action;
  sum.extra["p2p_time"] = pred.costs.p2p;
  if (pred.costs.p2p_pair >= 0) sum.extra["p2p_pair_time"] = pred.costs.p2p_pair;
  for (std::size_t b = 0; b < pred.costs.link_p2p.size(); ++b)
    if (pred.costs.link_p2p[b] >= 0) sum.extra["p2p_time." + std::to_string(b)] = pred.costs.link_p2p[b];
  for (std::size_t b = 0; b < pred.costs.link_wait.size(); ++b)
    if (pred.costs.link_wait[b] >= 0) sum.extra["p2p_wait." + std::to_string(b)] = pred.costs.link_wait[b];

  out.actions = std::move(in.actions);
  out.comms = std::move(in.comms);
  return result;
}

}  // namespace pipebench::bench
