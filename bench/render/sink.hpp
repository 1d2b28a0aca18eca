#pragma once
// Where a command's output goes, in the three forms a user can ask for, written once (google/benchmark's
// reporters are the model: the command hands its context, records and notes to one Sink, whichever the
// form; the front ends hold no text-or-JSON branches):
//   text  nccl-tests-style: '#' lines, a table (a header and a units row, one fixed-width row per
//         record, with the lines a record adds under its row), more '#' lines;
//   json  the records' objects as one list on stdout, as nlohmann's dump(2) prints it, written as they
//         come (a record may stream its last key: a timeline of millions of actions); notes on stderr,
//         so that stdout is pure JSON;
//   csv   a header line of the table's columns ("name (unit)") and one line per record, or per row of
//         a record that holds several (RFC 4180 quoting); notes on stderr.
// Two kinds of '#' lines: a note is for every reader (where the results went, what was skipped), a
// legend belongs to the text's table (its title, what its cells mean, footnotes): JSON and CSV readers
// have the keys and docs/json.md instead.
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/render/table.hpp"

namespace pipebench::bench {

enum class Format { text, json, csv };

// One record: its table cells (text and CSV), its JSON object(s) (one record may be more than one
// object, as a `comm` size measured out of place and in place), and what the text adds under its row.
struct Record {
  std::vector<std::string> cells;
  std::vector<nlohmann::ordered_json> objects;
  std::string lines;  // text only: complete lines printed under the row
  // CSV only: the lines after `cells` of a record that is more than one row of its table (a `comm`
  // size measured out of place and in place: a line per JSON object).
  std::vector<std::vector<std::string>> more_cells;
  std::string text;   // text only: the row itself, for a command that draws its own table (else cells)
  // JSON only: a last key of the (last) object whose value is written by `stream` at `indent` spaces.
  std::string stream_key;
  std::function<void(std::ostream&, int indent)> stream;
};

class Sink {
 public:
  virtual ~Sink() = default;
  // The records' columns. `fit`: the rows are held and the table printed, every column as wide as its
  // widest cell, at end_table(); else each row is printed as it comes, in the columns' set widths.
  // `header` replaces the table's own header in the text form (a command with its own layout; "" for
  // none, where each record's text is a whole document).
  virtual void begin_table(const Table& columns, bool fit, std::optional<std::string> header = std::nullopt) = 0;
  virtual void record(const Record& r) = 0;
  virtual void end_table() = 0;
  // Lines for every reader (each ends with '\n'): the text's stdout, stderr for the others.
  virtual void note(const std::string& lines) = 0;
  // Lines of the text form alone: the table's title and legend, footnotes, per-action tables.
  virtual void legend(const std::string& lines) = 0;
  // The end of the output, flushed; an Error when the stream could not be written, except std::cout,
  // whose failure main() reports for every command (bench/main.cpp).
  virtual void finish() = 0;
};

// Where the JSON form puts the records' list: the whole output (no list_key), or the value of
// `list_key` in an object whose other keys are `head`'s, before it, and `tail`'s, after it:
// {"evaluated": 8, "seconds": 0.1, "configurations": [...]}.
struct JsonDocument {
  nlohmann::ordered_json head = nlohmann::ordered_json::object();
  std::string list_key;
  nlohmann::ordered_json tail = nlohmann::ordered_json::object();
  bool one_object = false;  // no list: the output is the one record's object (`report --run ID`)
};

// The sink of `format` on `out` (stdout or an --out file), with the notes of the JSON and CSV forms on
// `err`.
std::unique_ptr<Sink> make_sink(Format format, std::ostream& out, std::ostream& err, JsonDocument json = {});

// The form --json and --csv ask for (text when neither); UsageError when both are given.
Format output_format(bool json, bool csv);

}  // namespace pipebench::bench
