#pragma once
// Every flag that more than one subcommand takes, defined once (docs/design.md "Flags"): a flag that
// means the same thing has the same short and long name, help and parser wherever it appears
// (`-m,--microbatches` is the micro-batch count in `schedule`, `simulate` and `run` alike). A flag of
// one subcommand is defined where that subcommand binds it, with the same add(). add() parses the text straight into
// the typed field with the parser of the field's type (bench/parse.hpp), so a bad value is one
// UsageError naming the flag (exit code 2) before any work starts; a flag's range is part of its
// definition. A flag given twice on the command line takes the last value; the command line wins over
// --config (bench/config_file.hpp).
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/parse.hpp"

namespace pipebench::bench {

struct Flag {
  const char* names;  // CLI11 form: "-m,--microbatches"
  const char* help;
  int min = 1;        // integers: the smallest allowed value; numbers and times: 0 allows zero
  int max = kMaxInteger;  // integers: the largest allowed value (numbers and times: kMaxNumber)
};

namespace flag {
// Schedules and their sizes (schedule, simulate, run, topology). Where a command sweeps, a comma list.
inline constexpr Flag schedule{"--schedule",
                                "Schedule name (a comma list where the command sweeps); `pipebench schedule --help` lists them"};
inline constexpr Flag pipeline{"-p,--pipeline", "Pipeline ranks p"};
inline constexpr Flag microbatches{"-m,--microbatches", "Micro-batches per data-parallel replica m"};
inline constexpr Flag chunks{"-v,--chunks", "Chunks (stages) per pipeline rank v (default: the schedule's own)"};
inline constexpr Flag group{"--group", "Interleaved: micro-batches per group g (default p)"};
inline constexpr Flag tensor{"-t,--tensor", "Tensor-parallel size t"};
inline constexpr Flag data{"-d,--data", "Data-parallel size d"};
inline constexpr Flag mapping{"--mapping", "Comma list of TxPxD rank mappings (default 1 x ranks x 1)"};
inline constexpr Flag order{"--order",
                             "Rank order: the axes tp, cp, ep, dp, pp fastest-varying first, Megatron style (default "
                             "tp-cp-ep-dp-pp, named without cp and ep of size 1)"};
inline constexpr Flag context_parallel{"--context-parallel",
                                        "Context-parallel size cp: ranks that split each sequence; the world is t*cp*p*d"};
inline constexpr Flag expert_parallel{"--expert-parallel",
                                       "Expert-parallel size ep: ranks that split the experts of a MoE layer (divides cp*d)"};

// Stage times (schedule, simulate, run): for one rank's whole share of layers; a chunk takes 1/v.
inline constexpr Flag tf{"--tf", "Forward time of a rank's whole share (time units, or with a unit ns, us, ms, s)"};
inline constexpr Flag tb{"--tb", "Full backward time of a rank's share (I + W)"};
inline constexpr Flag tw{"--tw", "Weight-gradient part of the backward, 0 <= tw < tb", 0};
inline constexpr Flag t_overlap{"--t-overlap", "Time of an overlapped F&B pair for a rank's share (default tf + tb)"};
inline constexpr Flag p2p_time{"--p2p-time",
                                "Time for an activation or gradient to cross between ranks (default 0)", 0};
inline constexpr Flag stage_cost{"--stage-cost",
                                  "Comma list of cost multipliers, one per stage of a model copy (p*v), e.g. 1,1,1,2"};

// Output (every command).
inline constexpr Flag json{"--json", "Print JSON (docs/json.md) instead of text"};
inline constexpr Flag csv{"--csv", "Print CSV instead of the table: a header line of its columns, one line per row"};
inline constexpr Flag out{"-o,--out", "Write to this file"};
inline constexpr Flag svg{"--svg",
                           "Write the timeline picture (SVG) to this file; a sweep inserts each configuration's name before .svg"};
inline constexpr Flag html{"--html", "Write a self-contained HTML page (inline SVG plots, no network access) to this file"};
inline constexpr Flag trace{"--trace", "Write a Chrome trace (Perfetto, chrome://tracing) to this file"};
inline constexpr Flag force{"--force", "Replace output files (--trace, --svg, ...) that already exist; results files are never replaced"};

// The transformer model and the communication backend (`run` today; the planner and `comm` are next).
inline constexpr Flag backend{"--backend", "Communication backend: mpi, or nccl on GPU builds for synthetic pipelines (docs/gpu.md)"};
inline constexpr Flag layers{"--layers", "Transformer layers of the whole model"};
inline constexpr Flag hidden{"--hidden", "Hidden size h"};
inline constexpr Flag heads{"--heads", "Attention heads a (h % a == 0)"};
inline constexpr Flag seq{"--seq", "Sequence length s"};
inline constexpr Flag micro_batch_size{"--micro-batch-size", "Sequences per micro-batch b"};
inline constexpr Flag vocab{"--vocab", "Vocabulary size V"};
inline constexpr Flag recompute{"--recompute", "Activation recomputation: none, selective or full"};
inline constexpr Flag precision{"--precision", "Floating-point precision: fp32 or fp64; bf16 or fp16: 16-bit weights and messages with fp32 compute, main weights and Adam state (host builds)"};

// Time and cost to train (report, compare, plan): analysis/train_cost.hpp.
inline constexpr Flag train_tokens{"--train-tokens", "Tokens of a training run (300B, 15T, 2e12): show days and GPU-hours to train them at the measured (or predicted) tokens per second (0: not shown)", 0};
inline constexpr Flag gpu_hour_price{"--gpu-hour-price", "Price of one accelerator (rank) for one hour, with --train-tokens: the cost to train (0: not shown)", 0};
}  // namespace flag

// One add() per field type; each parses with the one parser of that type and shows the field's current
// value as the default in --help.
CLI::Option* add(CLI::App& cmd, const Flag& f, bool& field);                      // a switch
CLI::Option* add(CLI::App& cmd, const Flag& f, std::string& field);               // text as given, not empty
CLI::Option* add(CLI::App& cmd, const Flag& f, std::vector<std::string>& field);  // comma list
CLI::Option* add(CLI::App& cmd, const Flag& f, int& field);                       // integer in [f.min, f.max]
CLI::Option* add(CLI::App& cmd, const Flag& f, std::vector<int>& field);          // comma list of those
// Repeatable: every occurrence (each a comma list of integers in [f.min, f.max]) adds to the field.
CLI::Option* add_each(CLI::App& cmd, const Flag& f, std::vector<int>& field);
CLI::Option* add(CLI::App& cmd, const Flag& f, std::uint64_t& field);  // bytes (64KiB); 0 allowed when f.min == 0
CLI::Option* add(CLI::App& cmd, const Flag& f, double& field);         // number > 0 (>= 0 when f.min == 0)
CLI::Option* add(CLI::App& cmd, const Flag& f, std::vector<double>& field);  // comma list of numbers > 0
CLI::Option* add(CLI::App& cmd, const Flag& f, Duration& field);             // time > 0 (>= 0 when f.min == 0)
CLI::Option* add(CLI::App& cmd, const Flag& f, std::vector<Mapping>& field);  // comma list of TxPxD

// The name messages use: the long name ("--microbatches").
std::string flag_name(const Flag& f);

// " (did you mean 'microbatches'?)" when `name` (without dashes) is at most two edits from a long flag
// name of `cmd`, else ""; `prefix` goes before the name shown ("--" for the command line).
std::string did_you_mean(const CLI::App& cmd, const std::string& name, const std::string& prefix = "");

// The rank layout, the same four flags in run, comm, topology and plan (docs/topology.md): --mapping,
// --order, --context-parallel and --expert-parallel. Returns the --mapping option (for a description
// of the command's own) and the --order option (whose count says whether the order was given).
struct LayoutOptions {
  CLI::Option* mapping = nullptr;
  CLI::Option* order = nullptr;
};
LayoutOptions add_layout_flags(CLI::App& cmd, std::vector<Mapping>& mappings, std::string& order, int& cp, int& ep);

// The stage-time flags (--tf --tb --tw --t-overlap --stage-cost, and --p2p-time where the command
// simulates the link): `schedule`, `simulate` and `run` take the same ones.
void add_time_flags(CLI::App& cmd, TimeSettings& times, bool with_p2p_time);

// What every add() does: `parse` turns the text into the field (throwing UsageError), `shown` is the
// default --help prints ("" for none).
CLI::Option* add_parsed(CLI::App& cmd, const Flag& f, std::function<void(const std::string&)> parse,
                        const std::string& shown, const std::string& type_name = "TEXT");

// --train-tokens: parse_large_count's values (300B, 15T, 2e12).
CLI::Option* add_large_count(CLI::App& cmd, const Flag& f, double& field);

// A choice among names: `choices` maps each allowed text to its value.
template <class E>
CLI::Option* add(CLI::App& cmd, const Flag& f, E& field, const std::vector<std::pair<std::string, E>>& choices) {
  std::string allowed, shown, type_name;
  for (const auto& [name, value] : choices) {
    allowed += (allowed.empty() ? "" : ", ") + name;
    type_name += (type_name.empty() ? "" : "|") + name;
    if (value == field) shown = name;
  }
  const std::string flag = flag_name(f);
  return add_parsed(cmd, f, [&field, choices, allowed, flag](const std::string& text) {
    for (const auto& [name, value] : choices)
      if (name == text) {
        field = value;
        return;
      }
    throw UsageError(flag + " " + quoted(text) + " is not allowed: expected one of " + allowed);
  }, shown, type_name);
}

}  // namespace pipebench::bench
