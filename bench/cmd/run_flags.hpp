#pragma once
// The flags of `pipebench run` (bench/cmd/run_flags.cpp): one add() per RunSettings field, grouped by
// what they set. `rerun` repeats a stored run through the same flags.
#include <CLI/CLI.hpp>

#include "bench/run/plan.hpp"

namespace pipebench::bench {

void add_run_flags(CLI::App& cmd, RunSettings& r);
// --scoring olympic with fewer than 3 --repeats: UsageError (before MPI starts).
void check_repeat_flags(const RunSettings& r);

}  // namespace pipebench::bench
