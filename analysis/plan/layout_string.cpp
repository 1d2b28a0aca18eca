// Megatron-Core's --pipeline-model-parallel-layout strings (analysis/plan/model.hpp).
#include <cctype>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/plan/model.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis::plan {

namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw UsageError("--pipeline-model-parallel-layout " + quoted(text) + " is not allowed: " + why +
                   " (Megatron-Core's form: stages split by '|', 't' a layer, 'E' embedding, 'L' loss, x*N repeats)");
}

// Expands "x*N" and "(...)*N" from position i to the closing ')' or the end.
std::string expand(const std::string& text, std::size_t& i, int depth) {
  std::string out;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ')') {
      if (depth == 0) bad(text, "unbalanced ')'");
      ++i;
      return out;
    }
    std::string unit;
    if (c == '(') {
      ++i;
      unit = expand(text, i, depth + 1);
    } else {
      unit = std::string(1, c);
      ++i;
    }
    if (i < text.size() && text[i] == '*') {
      std::size_t j = ++i;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      if (i == j || i - j > 6) bad(text, "'*' needs a count");
      const int n = std::stoi(text.substr(j, i - j));
      std::string rep;
      for (int k = 0; k < n; ++k) rep += unit;
      unit = rep;
    }
    out += unit;
    if (out.size() > (1u << 20)) bad(text, "it is too long");
  }
  if (depth > 0) bad(text, "unbalanced '('");
  return out;
}

}  // namespace

std::vector<int> parse_pipeline_layout(const std::string& text) {
  if (text.size() > 4096) bad(text.substr(0, 40) + "...", "over 4096 characters");
  std::size_t i = 0;
  const std::string flat = expand(text, i, 0);
  std::vector<int> layers(1, 0);
  std::vector<std::string> stages(1);
  for (char c : flat) {
    if (c == '|') {
      layers.push_back(0), stages.emplace_back();
    } else if (c == 't') {
      ++layers.back();
    } else if (c == 'E' || c == 'L') {
      stages.back() += c;
    } else if (c != ',' && c != ' ') {
      bad(text, std::string("unknown letter '") + c + "'");
    }
  }
  for (std::size_t k = 0; k < stages.size(); ++k) {
    const bool e = stages[k].find('E') != std::string::npos, l = stages[k].find('L') != std::string::npos;
    if (e != (k == 0)) bad(text, "'E' belongs to the first stage alone");
    if (l != (k + 1 == stages.size())) bad(text, "'L' belongs to the last stage alone");
  }
  return layers;
}

}  // namespace pipebench::analysis::plan
