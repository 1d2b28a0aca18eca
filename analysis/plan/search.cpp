#include "analysis/plan/search.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>

#include "analysis/catalog.hpp"
#include "analysis/limits.hpp"
#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis::plan {

namespace {

struct Candidate {
  Layout layout;
  double estimate = 0, lower = 0;
  std::int64_t pairs = 0;  // (stage, micro-batch) pairs its exact simulation runs: p*v*m
};

class Counter {
 public:
  void add(const std::string& reason, const std::string& detail, double rank) {
    auto& x = map_[reason];
    x.reason = reason;
    ++x.count;
    if (x.example_step < 0 || rank < x.example_step) {
      x.example_step = rank;
      x.example = detail;
    }
  }
  std::vector<Infeasible> list() const {
    std::vector<Infeasible> v;
    for (const auto& [k, x] : map_) v.push_back(x);
    std::stable_sort(v.begin(), v.end(), [](const Infeasible& a, const Infeasible& b) { return a.count > b.count; });
    return v;
  }

 private:
  std::map<std::string, Infeasible> map_;
};

std::string describe(const Layout& l, int m) {
  return "t=" + std::to_string(l.t) + (l.cp > 1 ? " cp=" + std::to_string(l.cp) : "") +
         (l.ep > 1 ? " ep=" + std::to_string(l.ep) : "") + " p=" + std::to_string(l.p) + " d=" + std::to_string(l.d) + " " + l.schedule +
         (l.v > 0 ? " v=" + std::to_string(l.v) : "") + (m > 0 ? " m=" + std::to_string(m) : "") + " b=" +
         std::to_string(l.micro_batch_size) + " recompute=" + recompute_name(l.recompute) +
         (l.sequence_parallel ? " sp" : "") + (l.zero ? " zero-" + std::to_string(l.zero) : "");
}

std::string gib(double bytes) { return fixed(bytes / kGiB, 2); }

// The space's lists, each with its default where the space leaves it empty.
struct Lists {
  std::vector<std::array<int, 3>> maps;
  std::vector<std::string> schedules;
  std::vector<int> vs, bs;
  std::vector<Recompute> rcs;
  std::vector<bool> sps;
  std::vector<int> zs, eps;
  bool sp_listed = false, zero_listed = false, ep_listed = false;
};

// The lists for one context-parallel size: given mappings where t p d cp is the GPU count, else every
// divisor triple of gpus / cp.
Lists lists_of(const SearchSpace& space, const ModelSpec& md, int cp) {
  Lists x;
  for (const auto& mp : space.mappings)
    if (std::int64_t{mp[0]} * mp[1] * mp[2] * cp == space.gpus || space.cps.empty()) x.maps.push_back(mp);
  if (space.mappings.empty())
    for (int n = space.gpus / cp, t = 1; t <= n; ++t) {
      if (n % t) continue;
      for (int p = 1; p <= n / t; ++p)
        if ((n / t) % p == 0) x.maps.push_back({t, p, n / t / p});
    }
  x.eps = space.eps;
  x.ep_listed = !space.eps.empty();
  if (x.eps.empty())
    for (int e = 1; e == 1 || (md.experts > 0 && md.experts % e == 0); e *= 2) x.eps.push_back(e);
  x.schedules = space.schedules;
  if (x.schedules.empty())
    for (const auto& s : schedule_catalog()) x.schedules.push_back(s.name);
  x.vs = space.vs.empty() ? std::vector<int>{2, 4} : space.vs;
  x.bs = space.micro_batch_sizes.empty() ? std::vector<int>{1, 2, 4, 8} : space.micro_batch_sizes;
  x.rcs = space.recomputes.empty() ? std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full}
                                   : space.recomputes;
  x.sps = space.sequence_parallel.empty() ? std::vector<bool>{false, true} : space.sequence_parallel;
  x.zs = space.zero.empty() ? std::vector<int>{0, 1} : space.zero;
  x.sp_listed = !space.sequence_parallel.empty();
  x.zero_listed = !space.zero.empty();
  return x;
}

// Screens one layout in closed form: counted by its reason when refused, else a candidate.
void screen_one(const Problem& pr, const Layout& l, std::vector<Candidate>& cands, Counter& refused) {
  int m = 0, v = 0;
  const Refusal r = check_layout(pr, l, &m, &v);
  if (!r.reason.empty()) {
    refused.add(r.reason, describe(l, m) + ": " + r.detail, 1e300);
    return;
  }
  const StagePlan plan = stage_plan(pr, l);
  const Screen sc = screen(pr, l, plan);
  if (sc.memory_lower_bound > pr.machine.memory_bytes) {
    refused.add("memory", describe(l, m) + ": at least " + gib(sc.memory_lower_bound) + " GiB of " +
                              gib(pr.machine.memory_bytes),
                sc.memory_lower_bound / pr.machine.memory_bytes);
    return;
  }
  cands.push_back({l, sc.step_estimate, sc.step_lower_bound, std::int64_t{l.p} * v * m});
}

// Every layout of the lists, screened; SP only where t > 1 and ZeRO-1 only where d > 1 unless listed
// (elsewhere they are the same configuration as without).
void screen_mapping(const Problem& pr, const Lists& x, const std::array<int, 3>& mp, int cp, int ep, SearchResult& res,
                    Counter& refused, std::vector<Candidate>& cands) {
  for (const auto& name : x.schedules) {
    const ScheduleRow& row = schedule_row(name);
    for (int v : row.fixed_v ? std::vector<int>{row.default_v} : x.vs)
      for (int b : x.bs)
        for (Recompute rc : x.rcs)
          for (bool sp : x.sps) {
            if (sp && mp[0] == 1 && !x.sp_listed) continue;
            for (int z : x.zs) {
              if (z && mp[2] * cp == 1 && !x.zero_listed) continue;
              Layout l;
              l.t = mp[0], l.p = mp[1], l.d = mp[2], l.cp = cp, l.ep = ep, l.v = v, l.schedule = name;
              l.micro_batch_size = b;
              l.recompute = rc, l.sequence_parallel = sp, l.zero = z;
              ++res.evaluated;
              screen_one(pr, l, cands, refused);
            }
          }
  }
}

void screen_all(const Problem& pr, const Lists& x, int cp, SearchResult& res, Counter& refused,
                std::vector<Candidate>& cands) {
  for (const auto& mp : x.maps)
    for (int ep : x.eps) {
      // ep is drawn from the cp d ranks: a default ep that does not divide them is not a layout; a listed
      // one is refused (counted as "experts").
      if (!x.ep_listed && (std::int64_t{mp[2]} * cp) % ep != 0) continue;
      screen_mapping(pr, x, mp, cp, ep, res, refused, cands);
    }
}

// Simulates the candidates in order of their estimate, skipping one that cannot beat the K-th best and
// one whose simulation would take the search past kMaxPlanSimulatedPairs (counted as "budget").
void simulate_best(const Problem& pr, std::vector<Candidate>& cands, std::size_t K, SearchResult& res,
                   Counter& refused) {
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.estimate < b.estimate; });
  std::int64_t spent = 0;  // pairs simulated so far
  for (const Candidate& c : cands) {
    if (res.top.size() >= K && c.lower >= res.top.back().step_time) continue;  // cannot win
    if (spent + c.pairs > kMaxPlanSimulatedPairs) {
      refused.add("budget", describe(c.layout, 0) + ": its simulation of " + std::to_string(c.pairs) +
                                " (stage, micro-batch) pairs would take the search past its " +
                                std::to_string(kMaxPlanSimulatedPairs) + " (" + std::to_string(spent) + " spent)",
                  static_cast<double>(c.pairs));
      continue;
    }
    spent += c.pairs;
    Prediction pd;
    try {
      pd = evaluate(pr, c.layout);
    } catch (const UsageError& e) {
      refused.add("schedule", describe(c.layout, 0) + ": " + e.what(), 1e300);
      continue;
    }
    ++res.simulated;
    pd.layer_ops.clear(), pd.embedding_ops.clear(), pd.head_ops.clear(), pd.moe_layer_ops.clear();  // --evaluate's breakdown alone
    if (!pd.fits) {
      refused.add("memory", describe(c.layout, pd.m) + ": " + gib(pd.memory_bytes) + " GiB of " + gib(pr.machine.memory_bytes),
                  pd.memory_bytes / pr.machine.memory_bytes);
      continue;
    }
    auto at = std::upper_bound(res.top.begin(), res.top.end(), pd.step_time,
                               [](double x, const Prediction& q) { return x < q.step_time; });
    res.top.insert(at, pd);
    if (res.top.size() > K) res.top.pop_back();
  }
}

}  // namespace

SearchResult search(const Problem& problem, const SearchSpace& space) {
  const auto start = std::chrono::steady_clock::now();
  Problem pr = problem;
  if (!pr.cache) pr.cache = make_parts_cache();
  SearchResult res;
  Counter refused;
  std::vector<Candidate> cands;
  for (int cp : space.cps.empty() ? std::vector<int>{std::max(1, space.cp)} : space.cps)
    if (cp >= 1 && space.gpus % cp == 0) screen_all(pr, lists_of(space, pr.model, cp), cp, res, refused, cands);
  simulate_best(pr, cands, static_cast<std::size_t>(std::max(1, space.top)), res, refused);
  res.infeasible = refused.list();
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace pipebench::analysis::plan
