#pragma once
// The legend of the SVG pictures: the timelines of bench/render/svg.hpp and the plots of
// bench/render/plot.hpp. Each entry is a swatch (or none: a note) and its text; layout_legend places
// them left to right and wraps them into lines that fit; each picture draws its own swatches.
#include <string>
#include <vector>

#include "bench/render/plot.hpp"  // SeriesStyle

namespace pipebench::bench {

// Average glyph width of sans-serif text, in em: what the pictures reserve for a text.
inline constexpr double kCharWidth = 0.6;

struct LegendItem {
  std::string colour;  // the swatch's colour; empty: a note without a swatch
  std::string text;
  SeriesStyle style = SeriesStyle::points;  // plots: the series' line and points
  bool bar = false;                         // plots: a filled box instead
  double x = 0;                             // set by layout_legend
  int line = 0;
};

// Sets each item's x and line, from `left`, wrapping before an item that would pass `right` (an item
// alone on its line stays there). An item takes swatch_width (none for a note) + its text in 12 px
// glyphs + gap. Returns the number of lines (0 without items).
int layout_legend(std::vector<LegendItem>& items, double swatch_width, double gap, double left, double right);

}  // namespace pipebench::bench
