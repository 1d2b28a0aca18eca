// `pipebench compare A.h5 B.h5 [--threshold PCT] [--json] [--html OUT.html] [--force]`: two results files side by side
// (machine A against machine B, or two runs of one machine): runs matched by configuration, B/A ratios,
// significance from the min-max ranges over timed steps, geometric means per schedule, configurations
// in one file only and the metadata that differs. Never needs MPI. docs/report.md shows the output.
#include <iostream>
#include <memory>
#include <string>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/commands.hpp"
#include "bench/cmd/compare_match.hpp"
#include "bench/cmd/report_input.hpp"
#include "bench/flags.hpp"
#include "bench/render/html.hpp"
#include "bench/render/output.hpp"
#include "bench/render/train_text.hpp"
#include "bench/results/comm_results.hpp"
#include "bench/results/store.hpp"

namespace pipebench::bench {

namespace {

struct CompareSettings {
  std::string a, b;
  bool json = false;
  std::string html;
  bool force = false;
  double threshold_pct = kDefaultThreshold * 100;
  bool threshold_given = false;  // the communication rows keep their own floor unless --threshold is given
  bool allow_different = false;
  TrainSettings train;
};

struct Side {
  RunListing listing;
  std::vector<StoredComm> comm;
};

Side read_side(const std::string& path) {
  Side s;
  s.listing = list_runs(path);
  for (const auto& d : s.listing.damaged)
    std::cerr << "pipebench: warning: run " << d.id << " of " << quoted(path, 200) << " is damaged and is skipped: " << d.reason
              << '\n';
  s.comm = readable_comms(path);
  if (s.listing.runs.empty() && s.comm.empty())
    throw UsageError(quoted(path, 200) + " holds no complete runs, so there is nothing to compare");
  return s;
}

void compare(const CompareSettings& o) {
  if (!o.html.empty()) check_output_path(o.html, "--html", o.force);
  const Side a = read_side(o.a);
  const Side b = read_side(o.b);
  Comparison c = compare_listings(o.a, a.listing, o.b, b.listing, o.threshold_pct / 100, o.train);
  c.comm_threshold = o.threshold_given && o.threshold_pct > 0 ? o.threshold_pct / 100 : kCommThreshold;
  compare_comm(c, a.comm, b.comm);
  if (!c.unlike.empty() && !o.allow_different) {
    std::string what;
    for (const auto& d : c.unlike) what += (what.empty() ? "" : ", ") + d.key + " (" + d.a + " | " + d.b + ")";
    throw UsageError(quoted(o.a, 200) + " and " + quoted(o.b, 200) + " are not like for like: " + what +
                     " differ; pass --allow-different to compare them anyway");
  }
  if (c.matches.empty() && c.comm.empty())
    throw UsageError(quoted(o.a, 200) + " and " + quoted(o.b, 200) + " have no configuration in common (" +
                     std::to_string(c.only_a.size()) + " and " + std::to_string(c.only_b.size()) +
                     " configurations), so there is nothing to compare");
  if (!o.html.empty()) write_output(o.html, "--html", [&](std::ostream& out) { write_html_compare(out, c); }, o.force);
  if (o.json) {
    std::cout << comparison_json(c).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
    return;
  }
  std::cout << render_comparison(c);
  if (!o.html.empty()) std::cout << "# HTML comparison written to " << o.html << '\n';
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compare", "Compare two results files: runs matched by configuration, B/A ratios, significance, metadata that differs");
  auto o = std::make_shared<CompareSettings>();
  cmd->add_option("a", o->a, "Results file A (the reference)")->required();
  cmd->add_option("b", o->b, "Results file B")->required();
  add(*cmd, flag::json, o->json)->description("Print the comparison as JSON (times in seconds, bubble 0..1, FLOP/s)");
  CLI::Option* threshold = add(*cmd, {"--threshold", "Practical significance: smallest |B/A - 1| that counts, percent (default 5; 0: the "
                                                    "bootstrap interval alone; communication rows: 2 unless given, and when 0)", 0},
                               o->threshold_pct);
  threshold->type_name("PCT");
  add(*cmd, {"--allow-different", "Compare files that are not like for like (CPU, accelerator, nodes, ranks per node, commit, build, libraries, CPU affinity, system description)"},
      o->allow_different);
  add_large_count(*cmd, flag::train_tokens, o->train.tokens);
  add(*cmd, flag::gpu_hour_price, o->train.price)->type_name("PRICE");
  add(*cmd, flag::html, o->html);
  add(*cmd, flag::force, o->force)->description("Replace the --html file if it exists");
  cmd->callback([o, threshold] {
    o->threshold_given = threshold->count() > 0;
    compare(*o);
  });
}

}  // namespace pipebench::bench
