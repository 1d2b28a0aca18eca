#include "analysis/limits.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis {

void check_schedule_pairs(std::int64_t pairs, const std::string& what) {
  if (pairs > kMaxSchedulePairs)
    throw UsageError(what + " = " + std::to_string(pairs) + " (stage, micro-batch) pairs is not allowed: at most " +
                     std::to_string(kMaxSchedulePairs) + " fit in memory (docs/simulate.md \"Limits\")");
}

void check_pipeline_ranks(std::int64_t p, const std::string& what) {
  if (p > kMaxPipelineRanks)
    throw UsageError(what + " = " + std::to_string(p) + " pipeline ranks is not allowed: at most " +
                     std::to_string(kMaxPipelineRanks) + " (docs/simulate.md \"Limits\")");
}

void check_listed_items(std::int64_t items, const std::string& what, const std::string& instead) {
  if (items > kMaxListedItems)
    throw UsageError(what + " would list " + std::to_string(items) + " items: at most " +
                     std::to_string(kMaxListedItems) + " are allowed (docs/simulate.md \"Limits\"); " + instead);
}

std::string read_input_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  const std::string name = what + " " + quoted(path, 200);
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw UsageError("cannot read " + name + ": no such file or not readable");
  if (!fs::is_regular_file(st)) throw UsageError("cannot read " + name + ": not a regular file");
  const auto size = fs::file_size(path, ec);
  const std::string limit = "at most " + std::to_string(kMaxInputBytes) + " bytes are read";
  if (!ec && size > static_cast<std::uintmax_t>(kMaxInputBytes))
    throw UsageError("cannot read " + name + ": it has " + std::to_string(size) + " bytes; " + limit);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read " + name + ": not readable");
  // The size may change after the check (a file being written): read in blocks, stop past the limit.
  std::string text;
  char block[65536];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    text.append(block, static_cast<std::size_t>(in.gcount()));
    if (text.size() > static_cast<std::size_t>(kMaxInputBytes))
      throw UsageError("cannot read " + name + ": it grew past " + std::to_string(kMaxInputBytes) + " bytes; " + limit);
  }
  if (in.bad()) throw UsageError("cannot read " + name + ": read error");
  return text;
}

}  // namespace pipebench::analysis
