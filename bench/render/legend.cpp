#include "bench/render/legend.hpp"

namespace pipebench::bench {

int layout_legend(std::vector<LegendItem>& items, double swatch_width, double gap, double left, double right) {
  double x = left;
  int line = 0;
  for (auto& it : items) {
    const double w = (it.colour.empty() ? 0 : swatch_width) + kCharWidth * 12 * static_cast<double>(it.text.size()) + gap;
    if (x > left && x + w > right) {
      x = left;
      ++line;
    }
    it.x = x;
    it.line = line;
    x += w;
  }
  return items.empty() ? 0 : line + 1;
}

}  // namespace pipebench::bench
