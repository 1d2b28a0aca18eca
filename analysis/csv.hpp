#pragma once
// Schedule CSV as torch.distributed.pipelining writes and reads it (`_dump_csv` / `_load_csv`): one row
// per rank, one action per cell in the text form (`0F0,0F1,1B0`). pipebench adds one optional comment
// line `# pipebench: pipes=2 m=8 name=dualpipe` for what a CSV cannot express (two model copies, a
// micro-batch count larger than the ones used); it is written only when needed, so plain schedules stay
// loadable by PyTorch.
#include <istream>
#include <string>

#include "analysis/schedule.hpp"

namespace pipebench::analysis {

std::string to_csv(const Schedule& s);

// Builds a schedule from CSV text: p = number of rows, the stage->rank map from where each stage's
// actions appear, m = the largest micro-batch + 1 (or the comment's m). Throws UsageError for
// malformed text (naming the line and cell) and for a stage found on two ranks. Call validate() on the
// result to check completeness and dependencies.
Schedule from_csv(std::istream& in, const std::string& name = "imported");
Schedule read_csv_file(const std::string& path);

}  // namespace pipebench::analysis
