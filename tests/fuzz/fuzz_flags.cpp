// Fuzz target: the flag-value parsers every subcommand shares (bench/parse.*). The first byte picks the
// parser ('a' split_list, 'b' parse_int, ..., 'k' the stage times together; see run()), the rest is the
// value as it comes from the command line. Beyond the contract (contract.hpp), a UsageError must be one
// printable line, and what is accepted must mean what it says: an integer is the decimal number written
// (no octal, hex or wrap-around), times and byte counts are in range and print back to the same value.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "analysis/text.hpp"
#include "bench/parse.hpp"
#include "contract.hpp"

namespace {

using namespace pipebench;
using namespace pipebench::bench;

const char* const kTarget = "flags";

// "+007" -> "7", "-0" -> "0", " 12 " -> "12"; "" for anything that is not a plain decimal integer.
std::string canonical_decimal(const std::string& text) {
  std::string t = trim(text);
  bool negative = false;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
    negative = t[0] == '-';
    t.erase(0, 1);
  }
  if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return "";
  const auto nz = t.find_first_not_of('0');
  t = nz == std::string::npos ? "0" : t.substr(nz);
  return (negative && t != "0" ? "-" : "") + t;
}

void expect_decimal(const std::string& text, long long value) {
  if (canonical_decimal(text) != std::to_string(value))
    fuzz::finding(kTarget, quoted(text) + " was accepted as " + std::to_string(value));
}

void check_duration(const Duration& d, bool zero_ok) {
  if (!std::isfinite(d.value) || d.value < 0 || (d.value == 0 && !zero_ok))
    fuzz::finding(kTarget, "duration out of range accepted: " + quoted(d.text));
  // What the messages and tables print for it reads back as (nearly) the same time: %g keeps 6 digits.
  const Duration printed{d.value, d.has_unit, ""};
  const Duration back = parse_duration(to_text(printed), "--again", true);
  if (back.has_unit != d.has_unit || std::abs(back.value - d.value) > 1e-5 * d.value)
    fuzz::finding(kTarget, quoted(d.text) + " prints as " + quoted(to_text(printed)) + ", another time");
}

void check_mapping(const std::string& text, const Mapping& m) {
  // TxPxD: each of the three parts is the decimal number it was parsed as.
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t x; (x = text.find('x', from)) != std::string::npos; from = x + 1) parts.push_back(text.substr(from, x - from));
  parts.push_back(text.substr(from));
  if (parts.size() != 3) fuzz::finding(kTarget, quoted(text) + " was accepted as the mapping " + to_string(m));
  expect_decimal(parts[0], m.t);
  expect_decimal(parts[1], m.p);
  expect_decimal(parts[2], m.d);
}

void run(unsigned selector, const std::string& v) {
  const std::string flag = "--flag";
  switch (selector) {
    case 0:
      for (const auto& item : split_list(v, flag))
        if (item.empty()) fuzz::finding(kTarget, "split_list returned an empty item");
      break;
    case 1: case 2: {
      const int min_value = selector == 1 ? 1 : 0;
      const int n = parse_int(v, flag, min_value);
      if (n < min_value) fuzz::finding(kTarget, "parse_int below its minimum");
      expect_decimal(v, n);
      break;
    }
    case 3: {
      const auto items = split_list(v, flag);
      const auto ns = parse_int_list(v, flag);
      for (std::size_t i = 0; i < ns.size(); ++i) expect_decimal(items.at(i), ns[i]);
      break;
    }
    case 4: case 5: {
      const bool zero_ok = selector == 5;
      for (double x : parse_number_list(v, flag, zero_ok))
        if (!std::isfinite(x) || x < 0 || (x == 0 && !zero_ok)) fuzz::finding(kTarget, "number out of range accepted");
      break;
    }
    case 6: case 7: {
      const bool zero_ok = selector == 7;
      for (const Duration& d : parse_duration_list(v, flag, zero_ok)) check_duration(d, zero_ok);
      break;
    }
    case 8:
      for (std::uint64_t b : parse_bytes_list(v, flag))
        if (b < 1) fuzz::finding(kTarget, "a byte count < 1 accepted");
      break;
    case 9: {
      const auto items = split_list(v, flag);
      const auto ms = parse_mapping_list(v, flag);
      for (std::size_t i = 0; i < ms.size(); ++i) check_mapping(items.at(i), ms[i]);
      break;
    }
    default: {
      // The stage-time flags together, one value per line: --tf, --tb, --tw, --t-overlap, --p2p-time,
      // --stage-cost (a list).
      std::vector<std::string> lines;
      std::size_t from = 0;
      for (std::size_t nl; (nl = v.find('\n', from)) != std::string::npos; from = nl + 1) lines.push_back(v.substr(from, nl - from));
      lines.push_back(v.substr(from));
      TimeSettings f;
      if (lines.size() > 0 && !lines[0].empty()) f.tf = parse_duration(lines[0], "--tf");
      if (lines.size() > 1 && !lines[1].empty()) f.tb = parse_duration(lines[1], "--tb");
      if (lines.size() > 2 && !lines[2].empty()) f.tw = parse_duration(lines[2], "--tw", true);
      if (lines.size() > 3 && !lines[3].empty()) f.t_overlap = parse_duration(lines[3], "--t-overlap");
      if (lines.size() > 4 && !lines[4].empty()) f.p2p = parse_duration(lines[4], "--p2p-time", true);
      if (lines.size() > 5 && !lines[5].empty()) f.stage_cost = parse_number_list(lines[5], "--stage-cost");
      const Times t = parse_times(f);
      if (!(t.tf > 0 && t.tb > 0 && t.tw >= 0 && t.tw < t.tb && t.p2p >= 0))
        fuzz::finding(kTarget, "parse_times accepted times out of range");
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned selector = (data[0] >= 'a' ? data[0] - 'a' : data[0]) % 11u;
  // A command-line argument ends at its first NUL byte, as it reaches main() through argv.
  std::string value = fuzz::as_text(data + 1, size - 1);
  value.resize(std::min(value.size(), value.find('\0')));
  fuzz::expect_contract(kTarget, [&] { run(selector, value); }, true);
  return 0;
}
