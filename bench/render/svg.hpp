#pragma once
// The timeline of one step as a self-contained SVG 1.1 picture: one row per rank, one box per action
// coloured by kind (F, B, I, W, F&B; a later chunk of the same rank in a lighter tint), the micro-batch
// in the box (and the stage where a rank holds several), idle time as a hatched background, a time
// axis with ticks and unit, a legend, and a title with the schedule, p, m, v and the bubble fraction.
// Works for simulated and measured timelines alike.
#include <ostream>
#include <string>

#include "analysis/schedule.hpp"
#include "analysis/timeline.hpp"

namespace pipebench::bench {

struct SvgOptions {
  // "units" for schedule time units; "s" for seconds, shown in s, ms or µs, whichever reads best.
  std::string time_unit = "units";
  // Width of the time axis in pixels; 0 picks one from the longest rank's action count.
  double plot_width = 0;
  // Replaces the first title line ("<schedule>  p=.. m=.. v=..") when not empty.
  std::string title;
};

// Geometry, fixed so that tests (and users post-processing the picture) can map pixels to time:
// an action that runs [start, end] is a rect with x = kSvgLeft + start * scale and
// width = (end - start) * scale, where scale = plot_width / makespan; rank r's boxes have
// y = kSvgTop + r * kSvgRowPitch and height kSvgRowHeight.
inline constexpr double kSvgLeft = 64;
inline constexpr double kSvgTop = 58;
inline constexpr double kSvgRowHeight = 26;
inline constexpr double kSvgRowPitch = 30;

// The width of the time axis that render_svg() uses for these options and this schedule.
double svg_plot_width(const analysis::Schedule& s, const SvgOptions& opt);

std::string render_svg(const analysis::Schedule& s, const analysis::Timeline& timeline, const SvgOptions& opt = {});
// The same picture written as it goes (a file stream: no copy of the whole text in memory).
void write_svg(std::ostream& os, const analysis::Schedule& s, const analysis::Timeline& timeline,
               const SvgOptions& opt = {});

}  // namespace pipebench::bench
