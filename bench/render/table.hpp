#pragma once
// Fixed-width text tables in the nccl-tests style (docs/design.md, "Conventions"): a header row and a units
// row that start with '#', so tools that skip comment lines see only data; numbers right-aligned, text
// left-aligned; columns two spaces apart.
#include <string>
#include <vector>

#include "analysis/text.hpp"  // fixed(), num(), fmt(): the one set of number formatters

namespace pipebench::bench {

struct Column {
  std::string name;
  std::string unit;  // shown in parentheses on the units row; empty for none
  bool numeric = true;
  std::size_t width = 0;  // at least this wide (for rows printed one at a time)
};

class Table {
 public:
  explicit Table(std::vector<Column> columns);
  // Widens the columns to fit `rows`, for a table printed all at once.
  void fit(const std::vector<std::vector<std::string>>& rows);
  std::string header() const;  // the two '#' lines (only the names where no column has a unit)
  std::string row(const std::vector<std::string>& cells) const;  // one line; throws Error on a wrong cell count
  // fit, then header and rows.
  std::string render(const std::vector<std::vector<std::string>>& rows);
  const std::vector<Column>& columns() const { return columns_; }

 private:
  std::string line(char lead, const std::vector<std::string>& cells) const;
  std::vector<Column> columns_;
};

}  // namespace pipebench::bench
