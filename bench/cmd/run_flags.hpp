#pragma once
// The flags of `pipebench run` (bench/cmd/run_flags.cpp): one add() per RunSettings field, grouped by
// what they set. `rerun` repeats a stored run through the same flags.
#include <CLI/CLI.hpp>

#include "bench/run/plan.hpp"

namespace pipebench::bench {

void add_run_flags(CLI::App& cmd, RunSettings& r);
// The MoE layers of the transformer (analysis/transformer/shape.hpp's Moe; docs/transformer.md), in
// `group` of the help: run's and plan's. Each flag given is recorded by name in `flags`, so that a
// command refuses it where no MoE layer takes it.
void add_moe_flags(CLI::App& cmd, analysis::transformer::Moe& moe, std::vector<std::string>& flags, const char* group);
// After parsing: the model settings that flags outside the model's struct imply (precision, loss
// scaling, the gradients' reduction type); --scoring olympic with fewer than 3 --repeats is a
// UsageError (before MPI starts).
void settle_run_flags(RunSettings& r);

}  // namespace pipebench::bench
