#include "comm/bench_model.hpp"
#include "comm/float16.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "analysis/error.hpp"

namespace pipebench::comm::bench {

topology::GroupKind group_kind(GroupChoice g) {
  using topology::GroupKind;
  switch (g) {
    case GroupChoice::tp: return GroupKind::tp;
    case GroupChoice::pp: return GroupKind::pp;
    case GroupChoice::pp_pairs: return GroupKind::pp;
    case GroupChoice::dp: return GroupKind::dp;
    case GroupChoice::cp: return GroupKind::cp;
    case GroupChoice::dp_cp: return GroupKind::dp_cp;
    case GroupChoice::tp_cp: return GroupKind::tp_cp;
    case GroupChoice::ep: return GroupKind::ep;
    case GroupChoice::expert_tp: return GroupKind::expert_tp;
    case GroupChoice::expert_dp: return GroupKind::expert_dp;
    case GroupChoice::tp_ep: return GroupKind::tp_ep;
    case GroupChoice::world: break;
  }
  throw Error("the world is no kind of group of the grid");
}

const char* group_choice_name(GroupChoice g) {
  if (g == GroupChoice::world) return "world";
  if (g == GroupChoice::pp_pairs) return "pp-pairs";
  return topology::group_kind_name(group_kind(g));
}

GroupChoice parse_group_choice(const std::string& text) {
  std::string allowed;
  for (GroupChoice g : kGroupChoices) {
    if (text == group_choice_name(g)) return g;
    allowed += (allowed.empty() ? "" : ", ") + std::string(group_choice_name(g));
  }
  throw UsageError("--group '" + text + "' is not allowed: expected one of " + allowed);
}

void check_sweep(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor, std::uint64_t increment) {
  if (min_bytes > max_bytes)
    throw UsageError("-b " + std::to_string(min_bytes) + " (minimum bytes) is above -e " + std::to_string(max_bytes) +
                     " (maximum bytes): give -b <= -e");
  if (increment == 0 && factor < 2)
    throw UsageError("-f " + std::to_string(factor) + " is not allowed: the size factor must be 2 or more (or give -i BYTES)");
  std::size_t n = 0;
  for (std::uint64_t s = min_bytes; s <= max_bytes; ++n) {
    if (n >= kMaxSizes)
      throw UsageError("-b " + std::to_string(min_bytes) + " -e " + std::to_string(max_bytes) + " with " +
                       (increment ? "-i " + std::to_string(increment) : "-f " + std::to_string(factor)) + " makes more than " +
                       std::to_string(kMaxSizes) + " sizes: use a larger -i or -f");
    const std::uint64_t next = increment ? s + increment : s * factor;
    if (next <= s || s == 0) break;  // overflow, or a zero start (one size)
    s = next;
  }
}

std::vector<std::uint64_t> size_list(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                                     std::uint64_t increment) {
  check_sweep(min_bytes, max_bytes, factor, increment);
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = min_bytes; s <= max_bytes;) {
    out.push_back(s);
    const std::uint64_t next = increment ? s + increment : s * factor;
    if (next <= s) break;
    s = next;
  }
  return out;
}

Fit fit_alpha_beta(const std::vector<std::uint64_t>& bytes, const std::vector<double>& seconds) {
  Fit f;
  double S = 0, Sx = 0, Sy = 0, Sxx = 0, Sxy = 0;
  std::vector<std::pair<double, double>> pts;
  for (std::size_t i = 0; i < bytes.size() && i < seconds.size(); ++i) {
    const double x = static_cast<double>(bytes[i]), t = seconds[i];
    if (!(t > 0) || !std::isfinite(t)) continue;
    const double w = 1 / (t * t);
    S += w, Sx += w * x, Sy += w * t, Sxx += w * x * x, Sxy += w * x * t;
    pts.emplace_back(x, t);
  }
  f.points = static_cast<std::int64_t>(pts.size());
  if (pts.empty()) return f;
  double a = 0, b = 0;
  const double det = S * Sxx - Sx * Sx;
  if (pts.size() >= 2 && det > 1e-12 * S * Sxx) {
    b = (S * Sxy - Sx * Sy) / det;
    a = (Sy - b * Sx) / S;
  } else {
    a = -1;  // one size: no latency term can be told apart
  }
  if (a < 0) {  // through the origin
    a = 0;
    b = Sxy / Sxx;
  }
  if (!(b > 0)) {  // no measurable bandwidth term: a constant time
    a = Sy / S;
    b = 1e-18;
  }
  f.alpha_s = a;
  f.beta_Bps = 1 / b;
  for (const auto& [x, t] : pts) f.max_rel_error = std::max(f.max_rel_error, std::abs(a + b * x - t) / t);
  return f;
}

GroupTimes group_times(const std::vector<double>& per_rank, const std::vector<std::vector<int>>& groups) {
  GroupTimes g;
  for (const auto& members : groups) {
    double t = -1;
    for (int r : members)
      if (r >= 0 && static_cast<std::size_t>(r) < per_rank.size()) t = std::max(t, per_rank[static_cast<std::size_t>(r)]);
    if (t < 0) continue;
    g.slowest = g.groups == 0 ? t : std::max(g.slowest, t);
    g.fastest = g.groups == 0 ? t : std::min(g.fastest, t);
    ++g.groups;
  }
  return g;
}

void store_value(DType t, void* base, std::uint64_t i, double v) {
  auto* p = static_cast<unsigned char*>(base) + i * dtype_size(t);
  switch (t) {
    case DType::f32: { const float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    case DType::f64: std::memcpy(p, &v, 8); break;
    case DType::f16: { const std::uint16_t x = to_half(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case DType::bf16: { const std::uint16_t x = to_bf16(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case DType::i32: { const auto x = static_cast<std::int32_t>(v); std::memcpy(p, &x, 4); break; }
  }
}

double load_value(DType t, const void* base, std::uint64_t i) {
  const auto* p = static_cast<const unsigned char*>(base) + i * dtype_size(t);
  switch (t) {
    case DType::f32: { float x; std::memcpy(&x, p, 4); return x; }
    case DType::f64: { double x; std::memcpy(&x, p, 8); return x; }
    case DType::f16: { std::uint16_t x; std::memcpy(&x, p, 2); return from_half(x); }
    case DType::bf16: { std::uint16_t x; std::memcpy(&x, p, 2); return from_bf16(x); }
    case DType::i32: { std::int32_t x; std::memcpy(&x, p, 4); return x; }
  }
  return 0;
}

std::vector<double> patterns(int rank, std::uint64_t from, std::uint64_t n) {
  std::vector<double> v(n);
  for (std::uint64_t i = 0; i < n; ++i) v[i] = pattern(rank, from + i);
  return v;
}

double reduce_pattern(ReduceOp op, int n, std::uint64_t index) {
  double acc = pattern(0, index);
  for (int r = 1; r < n; ++r) {
    const double v = pattern(r, index);
    acc = op == ReduceOp::sum ? acc + v : op == ReduceOp::max ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

}  // namespace pipebench::comm::bench
