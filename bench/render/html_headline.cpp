// The HTML report's first section: what a committee reads before anything else (docs/report.md "The
// HTML report"): the fastest configuration overall and per schedule, the worst gap between measured
// and simulated bubble, the worst variability, and the runs flagged as noisy.
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "bench/render/html.hpp"
#include "bench/render/html_page.hpp"
#include "bench/render/plot.hpp"

namespace pipebench::bench {

namespace {

std::string row(const std::string& what, const std::string& value) {
  return "<tr><th class=\"t\">" + xml_escape(what) + "</th><td class=\"wrap\">" + value + "</td></tr>\n";
}

std::string ms(double s) { return fmt("%.3f", s * 1e3) + " ms"; }

}  // namespace

void write_headline(std::ostream& o, const RunListing& l) {
  if (l.runs.empty()) return;
  o << "<h2 id=\"headline\">Headline</h2>\n<table>\n";
  const auto faster = [](const StoredRun* a, const StoredRun* b) { return a->run.summary.step_time < b->run.summary.step_time; };
  std::vector<const StoredRun*> all;
  std::map<std::string, std::vector<const StoredRun*>> by_schedule;
  for (const auto& r : l.runs) {
    all.push_back(&r);
    by_schedule[config_value(r.run, "schedule")].push_back(&r);
  }
  const StoredRun* best = *std::min_element(all.begin(), all.end(), faster);
  o << row("fastest configuration (step time)",
           "<b>" + xml_escape(html_page::run_label(best->id, best->run)) + "</b>: " + ms(best->run.summary.step_time));
  std::string per;
  for (const auto& [sched, runs] : by_schedule) {
    const StoredRun* b = *std::min_element(runs.begin(), runs.end(), faster);
    per += (per.empty() ? "" : "<br>") + html_page::swatch(sched) + xml_escape(html_page::run_label(b->id, b->run)) + ": " +
           ms(b->run.summary.step_time);
  }
  o << row("fastest per schedule", per);
  const auto gap = [](const StoredRun* r) { return std::abs(r->run.summary.bubble_measured - r->run.summary.bubble_simulated); };
  const StoredRun* worst_gap = *std::max_element(all.begin(), all.end(), [&](auto* a, auto* b) { return gap(a) < gap(b); });
  o << row("measured vs simulated bubble, worst gap",
           fmt("%.2f", gap(worst_gap) * 100) + " pp in " + xml_escape(html_page::run_label(worst_gap->id, worst_gap->run)) +
               " (measured " + fmt("%.2f", worst_gap->run.summary.bubble_measured * 100) + " %, simulated " +
               fmt("%.2f", worst_gap->run.summary.bubble_simulated * 100) + " %)");
  const StoredRun* worst_cv = nullptr;
  for (const StoredRun* r : all)
    if (r->run.summary.step_time_cv && (!worst_cv || *r->run.summary.step_time_cv > *worst_cv->run.summary.step_time_cv))
      worst_cv = r;
  o << row("variability, worst cv of the step time",
           worst_cv ? fmt("%.2f", *worst_cv->run.summary.step_time_cv * 100) + " % in " +
                          xml_escape(html_page::run_label(worst_cv->id, worst_cv->run))
                    : std::string("unknown (written before schema version 3)"));
  std::vector<int> flagged;
  for (const StoredRun* r : all)
    if (const auto s = step_time_spread(r->run.summary); s && *s > kSpreadFlag) flagged.push_back(r->id);
  o << row("flagged runs (step time spread above " + fmt("%.0f", kSpreadFlag * 100) + " %)",
           flagged.empty() ? std::string("none") : "<span class=\"flag\">run(s) " + xml_escape(id_ranges(flagged)) + "</span>");
  o << "</table>\n";
}

}  // namespace pipebench::bench
