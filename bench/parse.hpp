#pragma once
// Flag values shared by the subcommands: comma lists of integers, numbers, durations and byte sizes.
// Every parser throws pipebench::UsageError (exit code 2) with one line that names the flag, the bad
// value (escaped, analysis/text.hpp quoted()) and what is allowed. Empty values are refused everywhere:
// an empty string is never "not given".
#include <cstdint>
#include <string>
#include <vector>

namespace pipebench::bench {

// The bounds of flag values (docs/run.md "Bounds"), one definition each:
// the largest integer any flag takes (sizes, counts, ranks, steps): 2^24, the largest world topology
// plans, so products of two such values still fit in 64 bits;
inline constexpr int kMaxInteger = 1 << 24;
// the largest number or time (in time units, or in seconds), so sums over any schedule stay finite.
inline constexpr double kMaxNumber = 1e9;

// A comma list: "2,4,8". Spaces around items are ignored; empty items are an error.
std::vector<std::string> split_list(const std::string& text, const std::string& flag);

// Decimal integers in [min_value, max_value]: "4", "2,4,8". Digits only (no sign, hex or exponent);
// leading zeros are decimal ("010" is 10) wherever an integer is read.
int parse_int(const std::string& text, const std::string& flag, int min_value = 1, int max_value = kMaxInteger);
std::vector<int> parse_int_list(const std::string& text, const std::string& flag, int min_value = 1,
                                int max_value = kMaxInteger);

// Finite decimal numbers ("1", "0.5", "2e-3") that are > 0 (>= 0 when zero_ok) and <= kMaxNumber.
double parse_number(const std::string& text, const std::string& flag, bool zero_ok = false);
std::vector<double> parse_number_list(const std::string& text, const std::string& flag, bool zero_ok = false);
// A count that may be large (tokens to train): a decimal number >= 0 with an optional K, M, B or T
// (10^3, 10^6, 10^9, 10^12), as model cards write token counts ("300B", "15T", "2e12"); at most 1e18.
double parse_large_count(const std::string& text, const std::string& flag);

// A time: a plain number is in schedule time units; with a unit suffix (ns, us, µs, ms, s) it is
// converted to seconds and `has_unit` is set, so output can say which of the two it prints.
struct Duration {
  double value = 0;
  bool has_unit = false;
  std::string text;  // as given, for messages ("" for a default set in code)
};
inline Duration seconds(double s) { return {s, true, ""}; }
// "2ms", "500us", "1.5s" (the unit that reads best) or a plain number of time units.
std::string to_text(const Duration& d);
// > 0 (>= 0 when zero_ok) and at most kMaxNumber time units or seconds.
Duration parse_duration(const std::string& text, const std::string& flag, bool zero_ok = false);
std::vector<Duration> parse_duration_list(const std::string& text, const std::string& flag, bool zero_ok = false);

// A byte count: "4096", "64KiB", "1MB", "1.5GiB" (B; KB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB
// powers of 1024; K/M/G/T alone mean the decimal ones). Must be a whole number of bytes >= 1.
std::uint64_t parse_bytes(const std::string& text, const std::string& flag);
std::vector<std::uint64_t> parse_bytes_list(const std::string& text, const std::string& flag);

// "1,1,1,2": numbers as a comma list, each as %g prints it.
std::string list_text(const std::vector<double>& xs);

// A t x p x d rank mapping: "2x2x1" (TxPxD, decimal integers in [1, kMaxInteger]).
struct Mapping {
  int t = 1, p = 1, d = 1;
};
Mapping parse_mapping(const std::string& text, const std::string& flag);
std::vector<Mapping> parse_mapping_list(const std::string& text, const std::string& flag);
std::string to_string(const Mapping& m);  // "2x2x1"
// --context-parallel and --expert-parallel in a command that has nothing to use them yet (`run` and
// `plan` pass cp = 1, which they take): UsageError naming the flag and its value unless both are 1.
void refuse_cp_ep(int cp, int ep, const std::string& command);

// The stage-time flags of `schedule`, `simulate` and `run` (bench/flags.hpp), parsed. tf, tb, tw default
// to 1, 2, 1 time units; t_overlap < 0 means not given (tf + tb), p2p 0.
struct TimeSettings {
  Duration tf{1, false, "1"}, tb{2, false, "2"}, tw{1, false, "1"};
  Duration t_overlap{-1, false, ""}, p2p{0, false, ""};
  std::vector<double> stage_cost;
};

// Per-kind times for one rank's whole share of layers (docs/design.md "Vocabulary"), checked: tf, tb > 0,
// 0 <= tw < tb, t_overlap > 0, p2p >= 0, stage multipliers > 0. Either every time has a unit (then all
// are in seconds) or none has (schedule time units); a mix is an error.
struct Times {
  double tf = 1, tb = 2, tw = 1;
  double t_overlap = -1;           // < 0: tf + tb
  double p2p = 0;
  std::vector<double> stage_cost;  // one multiplier per stage of a model copy; empty: uniform stages
  bool seconds = false;
};
Times parse_times(const TimeSettings& flags);

}  // namespace pipebench::bench
