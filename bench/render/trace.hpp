#pragma once
// A run as a Chrome trace (docs/formulas.md, "Timeline format"), for Perfetto or chrome://tracing: one
// process per global rank, compute on its own lanes, sends, receives and collectives on theirs, and a
// flow arrow from every send to the receive that matched it.
#include <map>
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

// What to add to each timed step's record times so that the steps follow one another from 0.
std::map<int, double> step_offsets(const RunResult& run);

// The file of one rank's trace: PREFIX.<rank>.<ext> (ASTRA-sim reads Chakra traces as PREFIX.<rank>.et).
std::string rank_trace_path(const std::string& prefix, int rank, const char* ext);

// Rank `rank`'s part of the run as a Kineto-style trace (the PyTorch profiler's JSON), for Holistic
// Trace Analysis (docs/run.md, "Traces others' tools read"): distributedInfo (backend, rank, world_size,
// pg_count, pg_config), the device's streams as threads (compute, sends, receives, collectives: one
// stream per lane, so that no two kernels of a stream overlap), kernels of cat "kernel" with their
// stream, communication kernels named ncclDevKernel_* with HTA's NCCL arguments (Collective name, In/Out
// msg nelems, dtype, Group size, Process Group Name/Description/Ranks, Rank, Seq), and a
// ProfilerStep#k annotation per timed step. Times as in chrome_trace: steps end to end on rank 0's clock.
nlohmann::json kineto_trace(const RunResult& run, int rank);

// kineto_trace of every rank to rank_trace_path(prefix, r, "json"); every path is checked before the
// first is written (UsageError as write_chrome_trace). Returns the number of files.
std::size_t write_kineto_traces(const RunResult& run, const std::string& prefix, bool overwrite);

}  // namespace pipebench::bench
