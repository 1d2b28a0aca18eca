#include "analysis/csv.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "analysis/error.hpp"

namespace pipebench::analysis {

std::string to_csv(const Schedule& s) {
  std::ostringstream os;
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
  return os.str();
}

namespace {

std::string where(int line, int cell) {
  return "line " + std::to_string(line) + (cell >= 0 ? ", cell " + std::to_string(cell + 1) : "");
}

int parse_header_int(const std::string& value, const std::string& key, int line) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(value, &used);
    if (used == value.size() && v >= 1) return v;
  } catch (const std::exception&) {
  }
  throw UsageError("schedule CSV " + where(line, -1) + ": " + key + "='" + value + "' must be an integer >= 1");
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

Schedule from_csv(std::istream& in, const std::string& name, CsvImportNotes* notes) {
  Schedule s;
  s.name = name;
  int header_m = 0;
  int max_mb = -1;
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
        if (key == "pipes") s.pipes = parse_header_int(value, key, line);
        if (key == "m") header_m = parse_header_int(value, key, line);
        if (key == "name") s.name = value;
      }
      continue;
    }
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
  const int old_b = read_old_split_backwards(s);
  if (notes) notes->b_read_as_i = old_b;
  return s;
}

Schedule read_csv_file(const std::string& path, CsvImportNotes* notes) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read schedule CSV '" + path + "': no such file or not readable");
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (const auto dot = name.rfind('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  return from_csv(in, name, notes);
}

}  // namespace pipebench::analysis
