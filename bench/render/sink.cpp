#include "bench/render/sink.hpp"

#include <iostream>
#include <utility>

#include "analysis/error.hpp"

namespace pipebench::bench {

namespace {

// Standard output is checked once, by main() after the command (bench/main.cpp, checked_stdout), so that
// every command reports it alike (one line, exit 2) and an MPI job (`run`, `comm`) still ends as a job
// instead of aborting on rank 0. Any other stream fails here.
void check_written(std::ostream& out) {
  if (!out.flush() && &out != &std::cout) throw UsageError("cannot write the output");
}

class TextSink final : public Sink {
 public:
  explicit TextSink(std::ostream& out) : out_(out) {}
  void begin_table(const Table& columns, bool fit, std::optional<std::string> header) override {
    table_ = columns;
    fit_ = fit;
    header_ = std::move(header);
    held_.clear();
    if (!fit_) out_ << header_.value_or(table_.header()) << std::flush;
  }
  void record(const Record& r) override {
    if (fit_) {
      held_.push_back(r);
      return;
    }
    out_ << row(r) << std::flush;
  }
  void end_table() override {
    if (!fit_) return;
    std::vector<std::vector<std::string>> cells;
    for (const auto& r : held_) cells.push_back(r.cells);
    table_.fit(cells);
    out_ << header_.value_or(table_.header());
    for (const auto& r : held_) out_ << row(r);
    held_.clear();
  }
  void note(const std::string& lines) override { out_ << lines; }
  void legend(const std::string& lines) override { out_ << lines; }
  void finish() override { check_written(out_); }

 private:
  std::string row(const Record& r) const { return (r.text.empty() ? table_.row(r.cells) : r.text) + r.lines; }
  std::ostream& out_;
  Table table_{{}};
  bool fit_ = false;
  std::optional<std::string> header_;
  std::vector<Record> held_;
};

// What nlohmann's dump(2) prints for `j`, each line after the first `indent` spaces further in.
std::string dumped(const nlohmann::ordered_json& j, int indent) {
  const std::string text = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    out += c;
    if (c == '\n') out.append(static_cast<std::size_t>(indent), ' ');
  }
  return out;
}

// The list streamed element by element, byte for byte what dump(2) prints for the whole document.
class JsonSink final : public Sink {
 public:
  JsonSink(std::ostream& out, std::ostream& err, JsonDocument doc)
      : out_(out), err_(err), doc_(std::move(doc)), indent_(doc_.list_key.empty() ? 2 : 4) {}
  void begin_table(const Table&, bool, std::optional<std::string>) override {}
  void record(const Record& r) override {
    if (doc_.one_object) {
      for (const auto& o : r.objects) out_ << dumped(o, 0);
      count_ += r.objects.size();
      return;
    }
    for (std::size_t i = 0; i < r.objects.size(); ++i) {
      open_list();
      const std::string pad(static_cast<std::size_t>(indent_), ' ');
      std::string text = "\n" + pad + dumped(r.objects[i], indent_);
      const bool streamed = r.stream && i + 1 == r.objects.size();
      if (streamed) {  // reopen the object after its last value
        text.resize(text.size() - (pad.size() + 2));  // "\n" + pad + "}"
        text += ",\n" + pad + "  " + nlohmann::ordered_json(r.stream_key).dump() + ": ";
      }
      out_ << (count_++ ? "," : "") << text;
      if (streamed) {
        r.stream(out_, indent_ + 2);
        out_ << "\n" << pad << "}";
      }
    }
  }
  void end_table() override {}
  void note(const std::string& lines) override { err_ << lines; }
  void legend(const std::string&) override {}
  void finish() override {
    if (doc_.one_object) {
      out_ << '\n';
      check_written(out_);
      return;
    }
    open_list();
    const bool in_object = !doc_.list_key.empty();
    out_ << (count_ ? "\n" + std::string(in_object ? 2 : 0, ' ') + "]" : "]");
    if (in_object) {
      for (const auto& [key, value] : doc_.tail.items())
        out_ << ",\n  " << nlohmann::ordered_json(key).dump() << ": " << dumped(value, 2);
      out_ << "\n}";
    }
    out_ << '\n';
    check_written(out_);
  }

 private:
  void open_list() {
    if (opened_) return;
    opened_ = true;
    if (doc_.list_key.empty()) {
      out_ << '[';
      return;
    }
    out_ << '{';
    for (const auto& [key, value] : doc_.head.items())
      out_ << "\n  " << nlohmann::ordered_json(key).dump() << ": " << dumped(value, 2) << ',';
    out_ << "\n  " << nlohmann::ordered_json(doc_.list_key).dump() << ": [";
  }
  std::ostream& out_;
  std::ostream& err_;
  JsonDocument doc_;
  int indent_;
  bool opened_ = false;
  std::size_t count_ = 0;
};

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos && (s.empty() || (s.front() != ' ' && s.back() != ' ')))
    return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string s;
  for (std::size_t i = 0; i < cells.size(); ++i) s += (i ? "," : "") + csv_cell(cells[i]);
  return s + "\n";
}

class CsvSink final : public Sink {
 public:
  CsvSink(std::ostream& out, std::ostream& err) : out_(out), err_(err) {}
  void begin_table(const Table& columns, bool, std::optional<std::string>) override {
    std::vector<std::string> names;
    for (const auto& c : columns.columns()) names.push_back(c.unit.empty() ? c.name : c.name + " (" + c.unit + ")");
    out_ << csv_line(names);
  }
  void record(const Record& r) override {
    out_ << csv_line(r.cells);
    for (const auto& cells : r.more_cells) out_ << csv_line(cells);
    out_ << std::flush;
  }
  void end_table() override {}
  void note(const std::string& lines) override { err_ << lines; }
  void legend(const std::string&) override {}
  void finish() override { check_written(out_); }

 private:
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace

std::unique_ptr<Sink> make_sink(Format format, std::ostream& out, std::ostream& err, JsonDocument json) {
  switch (format) {
    case Format::json: return std::make_unique<JsonSink>(out, err, std::move(json));
    case Format::csv: return std::make_unique<CsvSink>(out, err);
    case Format::text: break;
  }
  return std::make_unique<TextSink>(out);
}

Format output_format(bool json, bool csv) {
  if (json && csv) throw UsageError("--json and --csv exclude each other: give one");
  return json ? Format::json : csv ? Format::csv : Format::text;
}

}  // namespace pipebench::bench
