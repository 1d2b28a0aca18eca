#include "bench/results/records.hpp"

namespace pipebench::bench {

const char* comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::Send: return "send";
    case CommKind::Recv: return "recv";
    case CommKind::AllReduce: return "allreduce";
    case CommKind::Barrier: return "barrier";
    case CommKind::AllGather: return "allgather";
    case CommKind::ReduceScatter: return "reduce_scatter";
  }
  return "?";
}

std::optional<double> step_time_spread(const RunSummary& s) {
  if (!s.step_time_min || !s.step_time_max || !(s.step_time > 0)) return std::nullopt;
  return (*s.step_time_max - *s.step_time_min) / s.step_time;
}

const char* comm_group_name(CommGroup g) {
  switch (g) {
    case CommGroup::pp: return "pp";
    case CommGroup::tp: return "tp";
    case CommGroup::dp: return "dp";
  }
  return "?";
}

namespace {
// Length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0 where the bytes there are not one.
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const auto at = [&s](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (i + n > s.size() || at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  return n;
}
}  // namespace

std::string utf8_escaped(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n > 0) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    static const char hex[] = "0123456789ABCDEF";
    const auto c = static_cast<unsigned char>(s[i++]);
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

bool operator==(const RunResult& a, const RunResult& b) {
  return a.key == b.key && a.config == b.config && a.metadata == b.metadata && a.summary == b.summary &&
         a.ranks == b.ranks && a.stages == b.stages && a.actions == b.actions && a.comms == b.comms && a.steps == b.steps;
}

}  // namespace pipebench::bench
