#include "analysis/csv.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <sstream>
#include <unordered_set>

#include "analysis/error.hpp"
#include "analysis/limits.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis {

void write_csv(std::ostream& os, const Schedule& s) {
  const bool default_m = [&] {
    int max_mb = -1;
    for (const auto& row : s.actions)
      for (const auto& a : row) max_mb = std::max({max_mb, a.mb, a.b_mb});
    return max_mb + 1 == s.m;
  }();
  if (s.pipes != 1 || !default_m)
    os << "# pipebench: pipes=" << s.pipes << " m=" << s.m << " name=" << s.name << '\n';
  for (const auto& row : s.actions) {
    for (std::size_t i = 0; i < row.size(); ++i)
      os << (i ? "," : "") << to_string(row[i]) << (row[i].kind == Kind::FB ? "OVERLAP_F_B" : "");
    os << '\n';
  }
}

std::string to_csv(const Schedule& s) {
  std::ostringstream os;
  write_csv(os, s);
  return os.str();
}

namespace {

std::string where(int line, int cell) {
  return "line " + std::to_string(line) + (cell >= 0 ? ", cell " + std::to_string(cell + 1) : "");
}

// Numbers are bounded before they size anything: a stage or micro-batch number, or a header m, beyond
// the pair limit cannot belong to a schedule within it.
constexpr std::int64_t kMaxNumber = kMaxSchedulePairs;

int parse_header_int(const std::string& value, const std::string& key, int line, int max_value) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec == std::errc() && ptr == value.data() + value.size() && v >= 1 && v <= max_value) return v;
  throw UsageError("schedule CSV " + where(line, -1) + ": " + key + "=" + quoted(value) + " is not allowed: " +
                   "expected an integer from 1 to " + std::to_string(max_value));
}

// Printable UTF-8: well-formed sequences, no control bytes. A name is printed in text and JSON output.
bool printable_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
      ++i;
      continue;
    }
    int len = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else return false;
    if (i + len > s.size()) return false;
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf)) return false;
    }
    i += len;
  }
  return true;
}

void check_number(int value, const char* what, int line, int cell) {
  if (value >= kMaxNumber)
    throw UsageError("schedule CSV " + where(line, cell) + ": " + what + " " + std::to_string(value) +
                     " is not allowed: at most " + std::to_string(kMaxNumber - 1) + " (docs/simulate.md \"Limits\")");
}

void assign_stage(Schedule& s, int stage, int rank, int line, int cell) {
  if (static_cast<int>(s.stage_rank.size()) <= stage) s.stage_rank.resize(stage + 1, -1);
  int& r = s.stage_rank[stage];
  if (r >= 0 && r != rank)
    throw UsageError("schedule CSV " + where(line, cell) + ": stage " + std::to_string(stage) + " appears on rank " +
                     std::to_string(r) + " and rank " + std::to_string(rank) + "; each stage must run on one rank");
  r = rank;
}

// torch's older zero-bubble CSVs: a B that a W of the same stage and micro-batch follows in its row is
// the input-gradient part, I. Returns how many were read so.
int read_old_split_backwards(Schedule& s) {
  int n = 0;
  for (auto& row : s.actions) {
    // Walking the row backwards, the (stage, micro-batch) pairs that have a W later in the row.
    std::unordered_set<std::uint64_t> w_later;
    auto pair_key = [](const Action& a) {
      return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a.stage)) << 32) | static_cast<std::uint32_t>(a.mb);
    };
    for (auto it = row.rbegin(); it != row.rend(); ++it) {
      if (it->kind == Kind::W) {
        w_later.insert(pair_key(*it));
      } else if (it->kind == Kind::B && w_later.count(pair_key(*it))) {
        it->kind = Kind::I;
        ++n;
      }
    }
  }
  return n;
}

}  // namespace

Schedule parse_csv(const std::string& csv, const std::string& name, CsvImportNotes* notes) {
  if (static_cast<std::int64_t>(csv.size()) > kMaxInputBytes)
    throw UsageError("schedule CSV has " + std::to_string(csv.size()) + " bytes: at most " +
                     std::to_string(kMaxInputBytes) + " are read");
  Schedule s;
  s.name = name;
  int header_m = 0;
  int max_mb = -1;
  std::istringstream in(csv);
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.rfind("#", 0) == 0) {  // `# pipebench: key=value ...`; other comments are ignored
      std::istringstream words(text.substr(1));
      std::string w;
      while (words >> w) {
        const auto eq = w.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = w.substr(0, eq), value = w.substr(eq + 1);
        if (key == "pipes") s.pipes = parse_header_int(value, key, line, 2);
        if (key == "m") header_m = parse_header_int(value, key, line, static_cast<int>(kMaxNumber));
        if (key == "name") {
          if (value.empty() || !printable_utf8(value))
            throw UsageError("schedule CSV " + where(line, -1) + ": name=" + quoted(value) +
                             " is not allowed: expected printable UTF-8 text");
          s.name = value;
        }
      }
      continue;
    }
    if (static_cast<std::int64_t>(s.actions.size()) >= kMaxPipelineRanks)
      check_pipeline_ranks(static_cast<std::int64_t>(s.actions.size()) + 1, "schedule CSV " + where(line, -1) + ": rows");
    const int rank = static_cast<int>(s.actions.size());
    auto& row = s.actions.emplace_back();
    std::istringstream cells(text);
    std::string cell;
    int c = 0;
    for (; std::getline(cells, cell, ','); ++c) {
      if (cell.find_first_not_of(" \t") == std::string::npos) continue;  // torch writes empty cells for idle slots
      Action a;
      try {
        a = parse_action(cell);
      } catch (const UsageError& e) {
        throw UsageError("schedule CSV " + where(line, c) + ": " + e.what());
      }
      check_number(std::max(a.stage, a.b_stage), "stage", line, c);
      check_number(std::max(a.mb, a.b_mb), "micro-batch", line, c);
      assign_stage(s, a.stage, rank, line, c);
      if (a.kind == Kind::FB) assign_stage(s, a.b_stage, rank, line, c);
      max_mb = std::max({max_mb, a.mb, a.b_mb});
      row.push_back(a);
    }
  }
  if (s.actions.empty()) throw UsageError("schedule CSV has no rows: expected one row of actions per rank");
  for (std::size_t st = 0; st < s.stage_rank.size(); ++st)
    if (s.stage_rank[st] < 0)
      throw UsageError("schedule CSV: stage " + std::to_string(st) + " has no actions, but stage " +
                       std::to_string(s.stage_rank.size() - 1) + " does; stages must be numbered 0..S-1");
  s.p = static_cast<int>(s.actions.size());
  s.m = header_m ? header_m : max_mb + 1;
  if (max_mb + 1 > s.m)
    throw UsageError("schedule CSV: micro-batch " + std::to_string(max_mb) + " used, but the header says m=" +
                     std::to_string(s.m));
  check_schedule_pairs(static_cast<std::int64_t>(s.num_stages()) * s.m / s.pipes,
                       "schedule CSV: stages*m/pipes = " + std::to_string(s.num_stages()) + "*" + std::to_string(s.m) +
                           "/" + std::to_string(s.pipes));
  const int old_b = read_old_split_backwards(s);
  if (notes) notes->b_read_as_i = old_b;
  return s;
}

Schedule from_csv(std::istream& in, const std::string& name, CsvImportNotes* notes) {
  std::string text;
  char block[65536];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    text.append(block, static_cast<std::size_t>(in.gcount()));
    if (static_cast<std::int64_t>(text.size()) > kMaxInputBytes) break;  // parse_csv() refuses it
  }
  return parse_csv(text, name, notes);
}

Schedule read_csv_file(const std::string& path, CsvImportNotes* notes) {
  const std::string text = read_input_file(path, "schedule CSV");
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (const auto dot = name.rfind('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  if (!printable_utf8(name))
    for (char& ch : name)
      if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) ch = '?';
  if (name.empty()) name = "imported";
  return parse_csv(text, name, notes);
}

}  // namespace pipebench::analysis
