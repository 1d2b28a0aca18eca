#include "bench/parse.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::bench {

namespace {

[[noreturn]] void bad(const std::string& flag, const std::string& text, const std::string& allowed) {
  throw UsageError(flag + " " + quoted(text) + " is not allowed: " + allowed);
}

std::string int_range(int min_value, int max_value) {
  return "expected a decimal integer from " + std::to_string(min_value) + " to " + std::to_string(max_value);
}

// "1e+09": how messages print kMaxNumber.
std::string max_number_text() { return num(kMaxNumber); }

// The decimal digits of `t` as a value, or -1 when `t` is not all digits or exceeds `limit`: no sign,
// base prefix or exponent, and no overflow however many digits are given.
long long decimal(const std::string& t, long long limit) {
  if (t.empty()) return -1;
  long long v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
    if (v > limit) return -1;
  }
  return v;
}

// Length of the longest prefix of `s` that is a plain decimal number: [sign] digits [. digits]
// [e [sign] digits]. No hex, inf or nan, which strtod would take.
std::size_t number_prefix(const std::string& s) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - from;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t n = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    n += digits();
  }
  if (n == 0) return 0;
  const std::size_t mantissa_end = i;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return mantissa_end;
  }
  return i;
}

// Splits "1.5ms" into 1.5 and "ms"; false if there is no number in front.
bool split_number(const std::string& text, double& value, std::string& suffix) {
  const std::size_t n = number_prefix(text);
  if (n == 0) return false;
  value = std::strtod(text.substr(0, n).c_str(), nullptr);
  suffix = trim(text.substr(n));
  return std::isfinite(value);
}

template <class T, class F>
std::vector<T> each(const std::string& text, const std::string& flag, F parse_one) {
  std::vector<T> out;
  for (const auto& item : split_list(text, flag)) out.push_back(parse_one(item));
  return out;
}

}  // namespace

std::vector<std::string> split_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> items;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = text.find(',', from);
    const std::string item = trim(text.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (item.empty()) bad(flag, text, "expected a comma-separated list without empty items, e.g. 2,4,8");
    items.push_back(item);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return items;
}

int parse_int(const std::string& text, const std::string& flag, int min_value, int max_value) {
  const long long v = decimal(trim(text), max_value);
  if (v < min_value) bad(flag, text, int_range(min_value, max_value));
  return static_cast<int>(v);
}

std::vector<int> parse_int_list(const std::string& text, const std::string& flag, int min_value, int max_value) {
  return each<int>(text, flag, [&](const std::string& s) { return parse_int(s, flag, min_value, max_value); });
}

double parse_number(const std::string& text, const std::string& flag, bool zero_ok) {
  double v = 0;
  std::string suffix;
  const std::string allowed =
      std::string("expected a decimal number ") + (zero_ok ? ">= 0" : "> 0") + " and <= " + max_number_text();
  if (!split_number(trim(text), v, suffix) || !suffix.empty() || v < 0 || (v == 0 && !zero_ok) || v > kMaxNumber)
    bad(flag, text, allowed);
  return v;
}

double parse_large_count(const std::string& text, const std::string& flag) {
  double v = 0;
  std::string suffix;
  const std::string allowed = "expected a number >= 0 and <= 1e18, optionally with K, M, B or T (10^3 ... 10^12)";
  if (!split_number(trim(text), v, suffix) || v < 0) bad(flag, text, allowed);
  const std::pair<const char*, double> units[] = {{"", 1}, {"K", 1e3}, {"M", 1e6}, {"B", 1e9}, {"T", 1e12}};
  for (const auto& [name, scale] : units)
    if (suffix == name) {
      if (v * scale > 1e18) bad(flag, text, allowed);
      return v * scale;
    }
  bad(flag, text, allowed);
}

std::vector<double> parse_number_list(const std::string& text, const std::string& flag, bool zero_ok) {
  return each<double>(text, flag, [&](const std::string& s) { return parse_number(s, flag, zero_ok); });
}

Duration parse_duration(const std::string& text, const std::string& flag, bool zero_ok) {
  double v = 0;
  std::string unit;
  const std::string allowed = std::string("expected a time ") + (zero_ok ? ">= 0" : "> 0") + " and <= " +
                              max_number_text() +
                              ": a number of time units, or one with a unit ns, us, ms or s (e.g. 2ms, 1.5s)";
  if (!split_number(trim(text), v, unit) || v < 0 || (v == 0 && !zero_ok)) bad(flag, text, allowed);
  if (unit.empty()) {
    if (v > kMaxNumber) bad(flag, text, allowed);
    return {v, false, text};
  }
  double scale = 0;
  if (unit == "s") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "us" || unit == "\xC2\xB5s") {
    scale = 1e-6;
  } else if (unit == "ns") {
    scale = 1e-9;
  } else {
    bad(flag, text, allowed);
  }
  if (v * scale > kMaxNumber) bad(flag, text, allowed);
  return {v * scale, true, text};
}

std::string to_text(const Duration& d) {
  if (!d.text.empty()) return d.text;
  if (!d.has_unit) return num(d.value);
  const double v = d.value;
  const double a = std::abs(v);
  if (a >= 1 || a == 0) return num(v) + "s";
  if (a >= 1e-3) return num(v * 1e3) + "ms";
  if (a >= 1e-6) return num(v * 1e6) + "us";
  return num(v * 1e9) + "ns";
}

std::vector<Duration> parse_duration_list(const std::string& text, const std::string& flag, bool zero_ok) {
  return each<Duration>(text, flag, [&](const std::string& s) { return parse_duration(s, flag, zero_ok); });
}

std::uint64_t parse_bytes(const std::string& text, const std::string& flag) {
  double v = 0;
  std::string unit;
  const std::string allowed =
      "expected a whole number of bytes >= 1, optionally with a unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, "
      "GiB, TiB (powers of 1024), e.g. 4096, 64KiB, 1MB";
  if (!split_number(trim(text), v, unit) || v <= 0) bad(flag, text, allowed);
  std::string u;
  for (char c : unit) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  if (u.empty() || u == "B") scale = 1;
  const char* prefixes = "KMGT";
  for (int k = 0; k < 4; ++k) {
    const std::string p(1, prefixes[k]);
    if (u == p || u == p + "B") scale = std::pow(1000.0, k + 1);
    if (u == p + "I" || u == p + "IB") scale = std::pow(1024.0, k + 1);
  }
  const double bytes = v * scale;
  if (scale == 0 || bytes < 1 || bytes > 9.0e18 || std::abs(bytes - std::round(bytes)) > 1e-6 * bytes)
    bad(flag, text, allowed);
  return static_cast<std::uint64_t>(std::llround(bytes));
}

std::vector<std::uint64_t> parse_bytes_list(const std::string& text, const std::string& flag) {
  return each<std::uint64_t>(text, flag, [&](const std::string& s) { return parse_bytes(s, flag); });
}

std::string list_text(const std::vector<double>& xs) {
  std::string s;
  for (double x : xs) s += (s.empty() ? "" : ",") + num(x);
  return s;
}

Mapping parse_mapping(const std::string& text, const std::string& flag) {
  const std::string t = trim(text);
  const std::size_t x1 = t.find('x');
  const std::size_t x2 = x1 == std::string::npos ? x1 : t.find('x', x1 + 1);
  long long size[3] = {-1, -1, -1};
  if (x2 != std::string::npos) {
    size[0] = decimal(t.substr(0, x1), kMaxInteger);
    size[1] = decimal(t.substr(x1 + 1, x2 - x1 - 1), kMaxInteger);
    size[2] = decimal(t.substr(x2 + 1), kMaxInteger);
  }
  if (size[0] < 1 || size[1] < 1 || size[2] < 1)
    bad(flag, text, "expected TxPxD, three decimal integers from 1 to " + std::to_string(kMaxInteger) + ", e.g. 2x2x1");
  return {static_cast<int>(size[0]), static_cast<int>(size[1]), static_cast<int>(size[2])};
}

std::vector<Mapping> parse_mapping_list(const std::string& text, const std::string& flag) {
  return each<Mapping>(text, flag, [&](const std::string& s) { return parse_mapping(s, flag); });
}

std::string to_string(const Mapping& m) {
  return std::to_string(m.t) + "x" + std::to_string(m.p) + "x" + std::to_string(m.d);
}

void refuse_cp_ep(int cp, int ep, const std::string& command) {
  for (const auto& [size, flag] : {std::pair{cp, "--context-parallel"}, {ep, "--expert-parallel"}})
    if (size != 1)
      throw UsageError(std::string(flag) + " " + std::to_string(size) + " is not allowed in pipebench " + command +
                       " yet: expected 1 (pipebench topology and pipebench comm take it)");
}

Times parse_times(const TimeSettings& f) {
  struct Given {
    const char* flag;
    const Duration& d;
  };
  std::vector<Given> given = {{"--tf", f.tf}, {"--tb", f.tb}, {"--tw", f.tw}};
  Times t;
  t.tf = f.tf.value;
  t.tb = f.tb.value;
  t.tw = f.tw.value;
  if (f.t_overlap.value >= 0) {
    given.push_back({"--t-overlap", f.t_overlap});
    t.t_overlap = f.t_overlap.value;
  }
  if (f.p2p.value > 0) given.push_back({"--p2p-time", f.p2p});  // 0 is 0 in any unit
  t.p2p = f.p2p.value;
  t.stage_cost = f.stage_cost;
  // A plain number is a time unit, a suffixed one a second: mixing them would silently mix scales.
  for (const auto& a : given)
    for (const auto& b : given)
      if (a.d.has_unit && !b.d.has_unit)
        throw UsageError(std::string(b.flag) + " " + quoted(to_text(b.d)) + " has no unit but " + a.flag + " " +
                         quoted(to_text(a.d)) + " has one: give every time with a unit (ns, us, ms, s) or none (time units); --tf, --tb, "
                         "--tw default to 1, 2, 1 time units");
  t.seconds = given[0].d.has_unit;
  if (!(t.tw < t.tb))
    throw UsageError("--tw " + quoted(to_text(f.tw)) + " is not allowed: the weight part of the backward must be < --tb " +
                     quoted(to_text(f.tb)));
  return t;
}

}  // namespace pipebench::bench
