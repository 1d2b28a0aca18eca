#include "analysis/generators.hpp"

#include <functional>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "analysis/generators_impl.hpp"
#include "analysis/limits.hpp"

namespace pipebench::analysis {

namespace {

struct Entry {
  ScheduleInfo info;
  std::function<Schedule(const ScheduleParams&)> make;
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      {{"gpipe", "all forwards, then all backwards (Huang 2019)", 1, true, false}, detail::gpipe},
      {{"1f1b", "one forward one backward, PipeDream-Flush (Narayanan 2021)", 1, true, false}, detail::one_f_one_b},
      {{"interleaved", "interleaved 1F1B in groups of micro-batches (Narayanan 2021, Megatron-Core)", 2, false, false},
       detail::interleaved},
      {{"looped-bfs", "all forwards chunk by chunk, then all backwards (Lamy-Poirier 2022, torch)", 2, false, false},
       detail::looped_bfs},
      {{"zb-h1", "zero bubble at 1F1B memory: W fills the bubbles (Qi 2023)", 1, true, true}, detail::zb_h1},
      {{"zb-h2", "zero bubble with 2p-1 in flight: more warm-up forwards (Qi 2023)", 1, true, true}, detail::zb_h2},
      {{"zbv", "zero bubble in a V, two chunks per rank, split backward (Qi 2024, torch ScheduleZBVZeroBubble)", 2, true, true},
       detail::zbv},
      {{"dualpipev", "DualPipe cut in half: V of two chunks, overlapped F&B pairs (DeepSeek 2024, torch ScheduleDualPipeV)", 2,
        true, true},
       detail::dualpipev},
      {{"dualpipe", "two model copies in opposite directions, overlapped F&B pairs (DeepSeek-V3 2024)", 1, true, true},
       detail::dualpipe},
  };
  return entries;
}

std::string names() {
  std::string s;
  for (const auto& e : registry()) s += (s.empty() ? "" : ", ") + e.info.name;
  return s;
}

const Entry& find(const std::string& name) {
  for (const auto& e : registry())
    if (e.info.name == name) return e;
  throw UsageError("unknown schedule " + quoted(name) + "; allowed: " + names());
}

}  // namespace

const std::vector<ScheduleInfo>& schedule_catalog() {
  static const std::vector<ScheduleInfo> infos = [] {
    std::vector<ScheduleInfo> v;
    for (const auto& e : registry()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

const ScheduleInfo& schedule_info(const std::string& name) { return find(name).info; }

Schedule make_schedule(const ScheduleParams& params) {
  const Entry& e = find(params.name);
  if (params.p < 1) throw UsageError("p = " + std::to_string(params.p) + " is not allowed: need p >= 1");
  if (params.m < 1) throw UsageError("m = " + std::to_string(params.m) + " is not allowed: need m >= 1");
  if (params.v < 0) throw UsageError("v = " + std::to_string(params.v) + " is not allowed: need v >= 1");
  if (params.group < 0) throw UsageError("group = " + std::to_string(params.group) + " is not allowed: need group >= 1");
  if (params.group != 0 && params.name != "interleaved")
    throw UsageError("group = " + std::to_string(params.group) + " is not allowed for schedule '" + params.name +
                     "': only 'interleaved' takes a micro-batch group size");
  ScheduleParams q = params;
  if (q.v == 0) q.v = e.info.default_v;
  if (e.info.fixed_v && q.v != e.info.default_v)
    throw UsageError("schedule '" + q.name + "' has v = " + std::to_string(e.info.default_v) + " chunks per rank; got v = " +
                     std::to_string(q.v));
  // Every generator's work and memory are linear in p*v*m (zbv's dropped micro-batches included, see
  // gen_zbv.cpp), so this one check bounds them all before anything is built.
  check_pipeline_ranks(q.p, "p");
  check_schedule_pairs(static_cast<std::int64_t>(q.p) * q.v * q.m,
                       "p*v*m = " + std::to_string(q.p) + "*" + std::to_string(q.v) + "*" + std::to_string(q.m));
  return e.make(q);
}

namespace detail {

Schedule looped_layout(const std::string& name, int p, int m, int v) {
  Schedule s;
  s.name = name;
  s.p = p;
  s.m = m;
  s.stage_rank.resize(static_cast<std::size_t>(p) * v);
  for (int st = 0; st < p * v; ++st) s.stage_rank[st] = st % p;
  s.actions.resize(p);
  return s;
}

Schedule v_layout(const std::string& name, int p, int m) {
  Schedule s;
  s.name = name;
  s.p = p;
  s.m = m;
  s.stage_rank.resize(static_cast<std::size_t>(2) * p);
  for (int st = 0; st < 2 * p; ++st) s.stage_rank[st] = st < p ? st : 2 * p - 1 - st;
  s.actions.resize(p);
  return s;
}

}  // namespace detail

}  // namespace pipebench::analysis
