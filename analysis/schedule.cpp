#include "analysis/schedule.hpp"

#include <cctype>
#include <charconv>
#include <sstream>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis {

char kind_letter(Kind k) {
  switch (k) {
    case Kind::F: return 'F';
    case Kind::B: return 'B';
    case Kind::I: return 'I';
    case Kind::W: return 'W';
    case Kind::FB: return '&';
  }
  return '?';
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::F: return "F";
    case Kind::B: return "B";
    case Kind::I: return "I";
    case Kind::W: return "W";
    case Kind::FB: return "F&B";
  }
  return "?";
}

std::string to_string(const Action& a) {
  if (a.kind == Kind::FB) {
    return "(" + std::to_string(a.stage) + "F" + std::to_string(a.mb) + ";" + std::to_string(a.b_stage) + "B" +
           std::to_string(a.b_mb) + ")";
  }
  return std::to_string(a.stage) + kind_letter(a.kind) + std::to_string(a.mb);
}

namespace {

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && out >= 0;
}

// `{stage}{kind}{mb}` with kind one of F, B, I, W.
bool parse_simple(std::string_view t, Action& a) {
  std::size_t k = 0;
  while (k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) ++k;
  if (k == 0 || k >= t.size()) return false;
  switch (t[k]) {
    case 'F': a.kind = Kind::F; break;
    case 'B': a.kind = Kind::B; break;
    case 'I': a.kind = Kind::I; break;
    case 'W': a.kind = Kind::W; break;
    default: return false;
  }
  return parse_int(t.substr(0, k), a.stage) && parse_int(t.substr(k + 1), a.mb);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Action parse_action(std::string_view text) {
  std::string_view t = trim(text);
  // torch's _dump_csv writes an overlapped pair as `(0F7;7B3)OVERLAP_F_B`: the suffix repeats what the
  // parentheses already say.
  constexpr std::string_view kTorchSuffix = "OVERLAP_F_B";
  if (t.size() > kTorchSuffix.size() && t.substr(t.size() - kTorchSuffix.size()) == kTorchSuffix && t.front() == '(')
    t = trim(t.substr(0, t.size() - kTorchSuffix.size()));
  Action a;
  bool ok = false;
  if (t.size() >= 2 && t.front() == '(' && t.back() == ')') {
    const std::string_view inner = t.substr(1, t.size() - 2);
    const auto semi = inner.find(';');
    Action f, b;
    ok = semi != std::string_view::npos && parse_simple(trim(inner.substr(0, semi)), f) &&
         parse_simple(trim(inner.substr(semi + 1)), b) && f.kind == Kind::F && b.kind == Kind::B;
    if (ok) a = Action::overlapped(f.stage, f.mb, b.stage, b.mb);
  } else {
    ok = parse_simple(t, a);
  }
  if (!ok) {
    throw UsageError("invalid action " + quoted(std::string(text)) +
                     ": expected {stage}{F|B|I|W}{micro-batch} such as 3F0, or an overlapped pair such as (0F7;7B3)");
  }
  return a;
}

int Schedule::chunk_of_stage(int s) const {
  int chunk = 0;
  for (int t = 0; t < s; ++t) chunk += stage_rank[t] == stage_rank[s];
  return chunk;
}

std::vector<int> Schedule::stages_of_rank(int r) const {
  std::vector<int> out;
  for (int s = 0; s < num_stages(); ++s)
    if (stage_rank[s] == r) out.push_back(s);
  return out;
}

std::size_t Schedule::num_actions() const {
  std::size_t n = 0;
  for (const auto& r : actions) n += r.size();
  return n;
}

void write_grid(std::ostream& os, const Schedule& s) {
  for (int r = 0; r < static_cast<int>(s.actions.size()); ++r) {
    os << "rank " << r << ":";
    for (const auto& a : s.actions[r]) os << ' ' << to_string(a);
    os << '\n';
  }
}

std::string to_grid(const Schedule& s) {
  std::ostringstream os;
  write_grid(os, s);
  return os.str();
}

}  // namespace pipebench::analysis
