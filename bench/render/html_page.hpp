#pragma once
// What the HTML pages of bench/render/html.hpp share: the head with the inline style, the foot with the
// table-sorting script, a printf-style number and the colour swatch of a schedule.
#include <limits>
#include <ostream>
#include <string>

#include "analysis/text.hpp"  // fmt(): the one set of number formatters
#include "bench/results/records.hpp"

namespace pipebench::bench::html_page {

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

// "<!DOCTYPE html>" up to the <h1> with `title`; the page's end with the script that sorts tables.
void page_begin(std::ostream& o, const std::string& title);
void page_end(std::ostream& o);
// `x` formatted with the printf format `f` (one double).
// A small square in the schedule's colour (schedule_colour), for tables and headings.
std::string swatch(const std::string& schedule);
// "run 3 1f1b t=1 p=4 d=1 v=1 m=8": a run as the pages name it.
std::string run_label(int id, const RunResult& r);

}  // namespace pipebench::bench::html_page
