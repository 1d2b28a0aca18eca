#include "bench/render/table.hpp"

#include <algorithm>
#include <cstdio>

#include "analysis/error.hpp"

namespace pipebench::bench {

namespace {
std::string unit_text(const Column& c) { return c.unit.empty() ? "" : "(" + c.unit + ")"; }
}  // namespace

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {
  for (auto& c : columns_) c.width = std::max({c.width, c.name.size(), unit_text(c).size()});
}

void Table::fit(const std::vector<std::vector<std::string>>& rows) {
  for (const auto& r : rows)
    for (std::size_t i = 0; i < std::min(r.size(), columns_.size()); ++i)
      columns_[i].width = std::max(columns_[i].width, r[i].size());
}

std::string Table::line(char lead, const std::vector<std::string>& cells) const {
  if (cells.size() != columns_.size())
    throw Error("table row has " + std::to_string(cells.size()) + " cells, the table " +
                std::to_string(columns_.size()) + " columns");
  std::string s(1, lead);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto& c = columns_[i];
    const std::string pad(c.width > cells[i].size() ? c.width - cells[i].size() : 0, ' ');
    s += "  ";
    s += c.numeric ? pad + cells[i] : cells[i] + pad;
  }
  // Text in the last column leaves trailing blanks.
  s.erase(s.find_last_not_of(' ') + 1);
  return s + "\n";
}

std::string Table::header() const {
  std::vector<std::string> names, units;
  bool any_unit = false;
  for (const auto& c : columns_) {
    names.push_back(c.name);
    units.push_back(unit_text(c));
    any_unit = any_unit || !c.unit.empty();
  }
  return line('#', names) + (any_unit ? line('#', units) : "");
}

std::string Table::row(const std::vector<std::string>& cells) const { return line(' ', cells); }

std::string Table::render(const std::vector<std::vector<std::string>>& rows) {
  fit(rows);
  std::string s = header();
  for (const auto& r : rows) s += row(r);
  return s;
}

}  // namespace pipebench::bench
