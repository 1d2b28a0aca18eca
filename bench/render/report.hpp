#pragma once
// How runs are shown, in one place: `pipebench report` renders stored runs with these, and `pipebench
// run` prints its rows with runs_table/run_row and its JSON with run_json, so that both look the same.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/results/comm_results.hpp"
#include "bench/results/records.hpp"
#include "bench/results/store.hpp"
#include "bench/render/sink.hpp"
#include "bench/render/table.hpp"

namespace pipebench::bench {

// One row per run: run id, schedule, t, p, d, v, m (from the run's config), step time, bubble measured
// / simulated / formula and measured - simulated, peak in-flight measured / predicted (max over
// ranks), peak activation memory (max over ranks).
Table runs_table();
std::vector<std::string> run_row(int id, const RunResult& run);  // id <= 0 prints "-"

// The run listing of a file (and, with `comms`, its `pipebench comm` results) in `sink`'s form: text,
// the '#' context, the runs table and its notes, then the comm results; JSON, the document of
// listing_document (the runs between its head and tail); CSV, one line per run.
void write_listing(Sink& sink, const std::string& path, const RunListing& listing, const std::vector<StoredComm>* comms);
// {file, schema_version, runs, incomplete_runs, damaged_runs[, comm]}: docs/json.md.
JsonDocument listing_document(const std::string& path, const RunListing& listing, const std::vector<StoredComm>* comms);
// The listing alone as text, and as the JSON document, for the tests.
std::string render_listing(const std::string& path, const RunListing& listing);
// A run's Slurm job in one line, from its slurm_* metadata: "job 12 (array 10_2), partition debug,
// nodes vm, tasks 4, tasks per node 4, cpu bind cores, restarts 1"; "" for a run outside Slurm.
std::string slurm_summary(const std::map<std::string, std::string>& metadata);
// "# over timed steps: step time min .. / median .. / max .. ms, cv .. %; bubble min .. %", with the
// spread flag past kSpreadFlag, or "unknown" for files before schema version 3.
std::string variability_line(const RunSummary& s);
// One run: its summary, configuration, per-rank table and metadata.
std::string render_run(const std::string& path, int id, const RunResult& run);

// The same as JSON, times in seconds, bubble fractions 0..1: the run object of docs/json.md (`run --json`
// and `report --run ID --json` print it with_ranks; the listing holds it without the metadata, stages
// and ranks).
nlohmann::ordered_json run_json(int id, const RunResult& run, bool with_ranks);

}  // namespace pipebench::bench
