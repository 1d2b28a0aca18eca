#pragma once
// Schedule CSV as torch.distributed.pipelining writes and reads it (`_dump_csv` / `_load_csv`): one row
// per rank, one action per cell in the text form (`0F0,0F1,1B0`). pipebench adds one optional comment
// line `# pipebench: pipes=2 m=8 name=dualpipe` for what a CSV cannot express (two model copies, a
// micro-batch count larger than the ones used); it is written only when needed, so plain schedules stay
// loadable by PyTorch.
#include <istream>
#include <ostream>
#include <string>

#include "analysis/schedule.hpp"

namespace pipebench::analysis {

// One row per rank. An overlapped F&B pair is written as torch writes an OVERLAP_F_B action,
// `(0F7;7B3)OVERLAP_F_B`: torch's `_Action.from_str` needs the computation type after the parentheses.
std::string to_csv(const Schedule& s);
void write_csv(std::ostream& os, const Schedule& s);  // the same text, written as it goes

// What an import read differently from the text, for the caller to warn about.
struct CsvImportNotes {
  // torch's older zero-bubble schedules wrote the input-gradient part of a split backward as B, its
  // weight part as W. A B followed later in its row by a W of the same stage and micro-batch is
  // therefore read as I (a full B followed by a W is never valid); this counts them.
  int b_read_as_i = 0;
};

// Builds a schedule from CSV text: p = number of rows, the stage->rank map from where each stage's
// actions appear, m = the largest micro-batch + 1 (or the comment's m). Throws UsageError for
// malformed text (naming the line and cell), for a stage found on two ranks, and for sizes beyond
// analysis/limits.hpp (text over kMaxInputBytes, stage or micro-batch numbers or a header m beyond
// kMaxSchedulePairs, pipes other than 1 or 2, stages*m/pipes over kMaxSchedulePairs), each checked
// before anything of that size is allocated; a name that is not printable UTF-8 is refused. Call
// validate() on the result to check completeness and dependencies. `notes`, when given, says what was
// reinterpreted. Pure (no I/O): the entry point of the CSV fuzz target.
Schedule parse_csv(const std::string& text, const std::string& name = "imported", CsvImportNotes* notes = nullptr);
// parse_csv() of the stream's text (at most kMaxInputBytes are read).
Schedule from_csv(std::istream& in, const std::string& name = "imported", CsvImportNotes* notes = nullptr);
// parse_csv() of a file read with read_input_file() (a regular file of at most kMaxInputBytes); the
// schedule is named after the file, without directory and extension (bytes that are not printable
// UTF-8 become '?').
Schedule read_csv_file(const std::string& path, CsvImportNotes* notes = nullptr);

}  // namespace pipebench::analysis
