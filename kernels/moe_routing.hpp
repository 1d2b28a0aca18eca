#pragma once
// The router of an MoE layer on the host (kernels/moe.hpp runs the rest): top-k with deterministic
// ties, the gates, the capacity and its dropped tokens, the order of the permuted tokens, and the
// load-balancing auxiliary loss, then in the backward the gradient of the router's logits. n * E values
// per micro-batch, so the host is the simple place; a device build copies the logits over once.
//
// What follows Megatron-Core (megatron/core/transformer/moe/router.py and moe_utils.py, core_r0.12), by
// its defaults: top-k of the logits, then
//   softmax router  the gates are the softmax of the k chosen logits (moe_router_pre_softmax off);
//   sigmoid router  s = sigmoid(logit), the k chosen s divided by their sum when k > 1 (DeepSeek-V3);
//   capacity        ceil(C * n * k / E) tokens per expert (get_capacity); an expert over it keeps the
//                   routes with the largest gates (moe_token_drop_policy "probs"), the others are dropped:
//                   their gate multiplies nothing (final_probs = probs * mask), and nothing renormalises;
//   aux loss        Switch Transformer's (Fedus et al. 2022, eq. 4; switch_load_balancing_loss_func):
//                   alpha * E / (k * n^2) * sum_e c_e * sum_t P[t, e], where c_e counts the routes top-k
//                   gave expert e before capacity (compute_routing_scores_for_aux_loss) and P is the
//                   full score: the softmax over all E logits, or the sigmoids divided by their sum.
// Ties: a larger logit ranks first, an equal one goes to the lower expert index (torch.topk leaves
// that open). The permuted order is expert-major, tokens ascending within an expert.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "analysis/transformer/shape.hpp"

namespace pipebench::kernels {

struct MoeRouting {
  int tokens = 0, experts = 0, top_k = 0;
  std::vector<int> expert;    // [n*k] token t's j-th choice (route t*k + j), in rank order
  std::vector<double> gate;   // [n*k] its gate, as computed before any drop
  std::vector<double> score;  // [n*k] sigmoid router: sigmoid(logit) of the choice (softmax: unused)
  std::vector<int> slot;      // [n*k] its row among the permuted tokens, -1 when dropped
  std::vector<int> count;     // [E] routes each expert computes (after capacity)
  std::vector<int> offset;    // [E + 1] first permuted row of each expert
  std::vector<int> routed;    // [E] routes top-k gave each expert (before capacity): the aux loss's c_e
  std::vector<double> probs;  // [n*E] the aux loss's P
  int dropped = 0;            // routes dropped by capacity
  double aux_loss = 0;        // with the coefficient
  int kept() const { return offset.empty() ? 0 : offset.back(); }
};

namespace detail {

inline double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// P[t, :] of the aux loss for one token's logits.
inline void full_scores(const double* l, int e, analysis::transformer::Router router, double* p) {
  double sum = 0;
  const double top = *std::max_element(l, l + e);
  for (int i = 0; i < e; ++i) sum += p[i] = router == analysis::transformer::Router::softmax ? std::exp(l[i] - top)
                                                                                             : sigmoid(l[i]);
  for (int i = 0; i < e; ++i) p[i] /= sum;
}

// Token t's top-k and gates.
inline void choose(const double* l, int t, const analysis::transformer::Moe& moe, MoeRouting& r) {
  const int e = moe.experts, k = moe.top_k;
  std::vector<int> order(static_cast<std::size_t>(e));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [l](int a, int b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
  double sum = 0;
  for (int j = 0; j < k; ++j) {
    const int x = order[static_cast<std::size_t>(j)], route = t * k + j;
    r.expert[route] = x;
    ++r.routed[x];
    r.score[route] = sigmoid(l[x]);
    r.gate[route] = moe.router == analysis::transformer::Router::softmax ? std::exp(l[x] - l[order[0]]) : r.score[route];
    sum += r.gate[route];
  }
  if (moe.router == analysis::transformer::Router::softmax || k > 1)
    for (int j = 0; j < k; ++j) r.gate[t * k + j] /= sum;
}

// Capacity: each expert keeps its ceil(C n k / E) routes of largest gate (ties: the earlier route).
inline void drop_over_capacity(const analysis::transformer::Moe& moe, MoeRouting& r, std::vector<char>& keep) {
  if (moe.capacity_factor <= 0) return;
  const int n = r.tokens, k = r.top_k;
  const double cap = std::ceil(moe.capacity_factor * (static_cast<double>(n) * k / moe.experts));
  std::vector<std::vector<int>> of(static_cast<std::size_t>(moe.experts));
  for (int route = 0; route < n * k; ++route) of[r.expert[route]].push_back(route);
  for (auto& routes : of) {
    std::stable_sort(routes.begin(), routes.end(), [&r](int a, int b) { return r.gate[a] > r.gate[b]; });
    for (std::size_t i = static_cast<std::size_t>(cap); i < routes.size(); ++i, ++r.dropped) keep[routes[i]] = 0;
  }
}

}  // namespace detail

// The routing of n tokens from their logits [n, E] (row-major).
inline MoeRouting route(const std::vector<double>& logits, int n, const analysis::transformer::Moe& moe) {
  const int e = moe.experts, k = moe.top_k;
  MoeRouting r;
  r.tokens = n, r.experts = e, r.top_k = k;
  const std::size_t routes = static_cast<std::size_t>(n) * k;
  r.expert.resize(routes), r.gate.resize(routes), r.score.resize(routes), r.slot.assign(routes, -1);
  r.count.assign(e, 0), r.routed.assign(e, 0), r.probs.resize(static_cast<std::size_t>(n) * e);
  for (int t = 0; t < n; ++t) {
    const double* l = logits.data() + static_cast<std::size_t>(t) * e;
    detail::choose(l, t, moe, r);
    detail::full_scores(l, e, moe.router, r.probs.data() + static_cast<std::size_t>(t) * e);
  }
  std::vector<char> keep(routes, 1);
  detail::drop_over_capacity(moe, r, keep);
  for (std::size_t i = 0; i < routes; ++i) r.count[r.expert[i]] += keep[i];
  r.offset.assign(e + 1, 0);
  for (int x = 0; x < e; ++x) r.offset[x + 1] = r.offset[x] + r.count[x];
  std::vector<int> next(r.offset.begin(), r.offset.end() - 1);
  for (std::size_t i = 0; i < routes; ++i)  // routes in token order: tokens ascending within an expert
    if (keep[i]) r.slot[i] = next[r.expert[i]]++;
  double sum = 0;
  for (int t = 0; t < n; ++t)
    for (int x = 0; x < e; ++x) sum += r.routed[x] * r.probs[static_cast<std::size_t>(t) * e + x];
  r.aux_loss = moe.aux_loss_coeff * e / (static_cast<double>(k) * n * n) * sum;
  return r;
}

// d(objective)/d(logits) [n, E]: from the gates' gradients dgate [n*k] (0 where dropped) and the aux
// loss, whose value enters the objective times aux_scale (the weight the caller gives the micro-batch's
// loss).
inline std::vector<double> router_backward(const MoeRouting& r, const std::vector<double>& logits,
                                           const std::vector<double>& dgate, const analysis::transformer::Moe& moe,
                                           double aux_scale) {
  const int n = r.tokens, e = r.experts, k = r.top_k;
  const bool softmax = moe.router == analysis::transformer::Router::softmax;
  std::vector<double> dl(static_cast<std::size_t>(n) * e, 0.0);
  const double coef = aux_scale * moe.aux_loss_coeff * e / (static_cast<double>(k) * n * n);
  std::vector<double> dp(static_cast<std::size_t>(e));
  for (int t = 0; t < n; ++t) {
    double* d = dl.data() + static_cast<std::size_t>(t) * e;
    double dot = 0, sum = 0;
    for (int j = 0; j < k; ++j) dot += r.gate[t * k + j] * dgate[t * k + j], sum += r.score[t * k + j];
    for (int j = 0; j < k; ++j) {
      const int route = t * k + j;
      if (softmax) d[r.expert[route]] += r.gate[route] * (dgate[route] - dot);
      else {
        const double s = r.score[route], ds = k > 1 ? (dgate[route] - dot) / sum : dgate[route];
        d[r.expert[route]] += ds * s * (1 - s);
      }
    }
    if (coef == 0) continue;
    const double* p = r.probs.data() + static_cast<std::size_t>(t) * e;
    double pdp = 0, ssum = 0;
    for (int x = 0; x < e; ++x) dp[x] = coef * r.routed[x], pdp += p[x] * dp[x];
    for (int x = 0; x < e; ++x) ssum += softmax ? 0 : detail::sigmoid(logits[static_cast<std::size_t>(t) * e + x]);
    for (int x = 0; x < e; ++x) {
      if (softmax) d[x] += p[x] * (dp[x] - pdp);
      else {
        const double s = detail::sigmoid(logits[static_cast<std::size_t>(t) * e + x]);
        d[x] += (dp[x] - pdp) / ssum * s * (1 - s);
      }
    }
  }
  return dl;
}

// Where the permuted rows go under expert parallelism (ep ranks, rank j holding the `local` experts
// [j * local, (j + 1) * local)): the permuted rows are expert-major, so rank j's are one block. The rows
// that arrive come source-major (source i's block holds its rows of each local expert in turn). With
// expert tensor parallelism (t > 1, kernels/moe.hpp) the t ranks of a tensor-parallel group each
// receive their own tokens' rows and all-gather them: block q of the gathered rows is tp rank q's
// arrivals, padded to `block` rows (the largest tp rank's count). The experts' stack holds local
// expert l's rows from every tp block and source in that order, padded to `rows`.
struct MoeDispatch {
  std::vector<std::size_t> send_rows, recv_rows;  // [ep] this rank's rows to and from each ep rank
  std::vector<int> stack_row_of;                  // [t * block] the stack row of each gathered row, -1: padding
  std::vector<int> arrival_of;                    // [local * rows] the gathered row of each stack row, -1: padding
  int rows = 0;                                   // stack rows per local expert
  int block = 0;                                  // rows per tp block (t = 1: this rank's arrivals)
};

// From this rank's count per expert [E] and the counts it receives [ep * t * local] (source-major,
// then tp shard q: what source i's shard q sends to each of this rank's experts), this rank being tp
// rank `tp_rank` of t.
inline MoeDispatch plan_dispatch(const std::vector<int>& count, const std::vector<int>& counts_in, int ep, int t = 1,
                                 int tp_rank = 0) {
  const int local = static_cast<int>(count.size()) / ep;
  auto in = [&](int i, int q, int l) { return counts_in[(static_cast<std::size_t>(i) * t + q) * local + l]; };
  MoeDispatch d;
  d.send_rows.assign(ep, 0), d.recv_rows.assign(ep, 0);
  std::vector<int> per_expert(static_cast<std::size_t>(local), 0), per_block(static_cast<std::size_t>(t), 0);
  for (int j = 0; j < ep; ++j)
    for (int l = 0; l < local; ++l) {
      d.send_rows[j] += static_cast<std::size_t>(count[j * local + l]);
      d.recv_rows[j] += static_cast<std::size_t>(in(j, tp_rank, l));
      for (int q = 0; q < t; ++q) per_expert[l] += in(j, q, l), per_block[q] += in(j, q, l);
    }
  d.rows = local ? *std::max_element(per_expert.begin(), per_expert.end()) : 0;
  d.block = *std::max_element(per_block.begin(), per_block.end());
  d.arrival_of.assign(static_cast<std::size_t>(local) * d.rows, -1);
  d.stack_row_of.assign(static_cast<std::size_t>(t) * d.block, -1);
  std::vector<int> filled(static_cast<std::size_t>(local), 0);
  for (int q = 0; q < t; ++q)
    for (int i = 0, a = q * d.block; i < ep; ++i)
      for (int l = 0; l < local; ++l)
        for (int c = 0; c < in(i, q, l); ++c, ++a) {
          const int row = l * d.rows + filled[l]++;
          d.stack_row_of[a] = row;
          d.arrival_of[row] = a;
        }
  return d;
}

}  // namespace pipebench::kernels
