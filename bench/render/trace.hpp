#pragma once
// A run as a Chrome trace (docs/formulas.md, "Timeline format"), for Perfetto or chrome://tracing: one
// process per global rank, compute on its own lanes, sends, receives and collectives on theirs, and a
// flow arrow from every send to the receive that matched it.
#include <string>

#include <nlohmann/json.hpp>

#include "bench/results/records.hpp"

namespace pipebench::bench {

// Timed steps are laid end to end (each record's time is relative to its step's start), so step k+1
// begins where the last record of step k ends. Events on one (pid, tid) never overlap: overlapping
// communications (several outstanding non-blocking sends) are spread over as many lanes as needed.
nlohmann::json chrome_trace(const RunResult& run);

// Writes chrome_trace(run) through write_output (bench/render/output.hpp): UsageError when `path`
// cannot be written or exists and !overwrite, never a partial file. Returns the number of trace events.
std::size_t write_chrome_trace(const RunResult& run, const std::string& path, bool overwrite);

}  // namespace pipebench::bench
