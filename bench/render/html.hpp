#pragma once
// The HTML report of a results file (`pipebench report FILE --html OUT.html`) and the comparison of
// two (`pipebench compare A B --html OUT.html`): one self-contained page each, inline CSS and SVG, no
// network access, a few lines of inline JavaScript to sort tables (the page reads without it).
// docs/report.md shows what each section holds. The front-ends (bench/cmd/report.cpp,
// bench/cmd/compare.cpp) read the files and compute what needs the simulator; this renders.
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/breakdown.hpp"
#include "analysis/schedule.hpp"
#include "analysis/timeline.hpp"
#include "bench/render/train_text.hpp"
#include "bench/results/comm_results.hpp"
#include "bench/results/records.hpp"
#include "bench/results/store.hpp"

namespace pipebench::bench {

// One run's timelines for the report: the first timed step of pipeline 0, measured, and the
// simulator's prediction from the run's measured op times.
struct TimelineView {
  int id = 0;
  analysis::Schedule schedule;
  analysis::Timeline measured, simulated;
};

struct ReportInput {
  std::string path;
  RunListing listing;
  // By run id, the measured producer's parts (analysis/breakdown.hpp); runs without one are left out of
  // the plot.
  std::map<int, analysis::Breakdown> breakdown;
  std::vector<TimelineView> timelines;
  std::vector<StoredComm> comm;          // empty: no communication section
};

void write_html_report(std::ostream& os, const ReportInput& in);
// The report's first section: fastest configuration overall and per schedule, worst measured-simulated
// bubble gap, worst cv, flagged runs (bench/render/html_headline.cpp).
void write_headline(std::ostream& os, const RunListing& listing);
// The communication section alone (busbw against size per op, one series per group, and the fits).
void write_comm_section(std::ostream& os, const std::vector<StoredComm>& comm);

// The comparison, computed by bench/cmd/compare_match.cpp; rendered here.
struct CompareFigure {
  std::string name, unit;       // "step time", "ms": the display unit
  double scale = 1;             // display unit per SI unit (1e3 for ms)
  std::optional<double> a, b;   // SI units (s, fraction, FLOP/s), as --json gives them
  std::optional<double> ratio;  // b / a
  std::optional<double> a_lo, a_hi, b_lo, b_hi;  // min-max over timed steps, where known
  std::optional<bool> significant;               // none: not enough samples for a verdict
  // The bootstrap 95 % interval of B/A (analysis/stats.hpp) and what it rests on: the medians of the
  // repeats ("repeats") or the timed steps ("steps"), how many per side.
  std::optional<double> ci_lo, ci_hi;
  std::string basis;
  int samples_a = 0, samples_b = 0;
};
struct CompareMatch {
  std::string key;      // the configuration key both runs carry
  std::string label;    // "1f1b t=1 p=4 d=1 v=1 m=8"
  std::string group;    // runs of one group get one geometric-mean ratio (the schedule)
  std::string schedule;
  int id_a = 0, id_b = 0;
  std::vector<CompareFigure> figures;
  std::optional<analysis::TrainCost> train_a, train_b;  // with --train-tokens, transformer runs
};
struct CompareGroup {
  std::string name;
  int runs = 0;
  std::optional<double> geomean_step_ratio;  // geometric mean of B/A step time
};
struct Comparison {
  std::string path_a, path_b;
  std::vector<CompareMatch> matches;
  struct Unmatched {
    std::string label, key;
  };
  std::vector<Unmatched> only_a, only_b;  // configurations present in one file only
  struct MetaDiff {
    std::string key, a, b;
  };
  std::vector<MetaDiff> metadata;
  std::vector<CompareGroup> groups;
  std::optional<double> geomean_step_ratio;  // over every match
  int significant = 0, insignificant = 0, unknown = 0;  // step time differences; unknown: not enough samples
  // The noise floor of practical significance (--threshold, a fraction; 0: none): |B/A - 1| below it
  // is never significant.
  double threshold = 0;
  // Communication sizes: significant when the min-max time ranges are apart and busbw B/A is at least
  // this far from 1 (a fraction; the rows keep no per-iteration samples to bootstrap).
  double comm_threshold = 0.02;
  // Like for like: the facts that decide comparability (kLikeForLike) where the files differ.
  std::vector<MetaDiff> unlike;
  TrainSettings train;  // --train-tokens, --gpu-hour-price: time and cost to train per match
  // Communication results matched by op, group, groups, group size, backend and mapping: busbw per
  // size in both, significant when the min-max time ranges do not overlap and busbw B/A is at least
  // `threshold` away from 1.
  struct CommSize {
    std::int64_t bytes = 0;
    double busbw_a = 0, busbw_b = 0;
    std::optional<double> ratio;  // busbw B/A: above 1, B is faster
    bool significant = false;
  };
  struct CommMatch {
    std::string label;  // "allreduce world 1 x 4 mpi 1x4x1"
    int id_a = 0, id_b = 0;
    std::vector<CommSize> sizes;
    std::optional<double> geomean_busbw_ratio;
  };
  std::vector<CommMatch> comm;
  std::vector<std::string> comm_only_a, comm_only_b;
};

void write_html_compare(std::ostream& os, const Comparison& c);

}  // namespace pipebench::bench
