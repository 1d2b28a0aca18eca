#pragma once
// The published large-scale runs the model is checked against (docs/model.md "Validation"), each with
// its source. One parameter set per machine preset serves every row; no factor per row, model or
// framework.
#include <string>
#include <vector>

#include "analysis/plan/model.hpp"

namespace pipebench::analysis::plan {

// What a row publishes: TFLOP/s per GPU counting recomputation (hardware) or not (model), the
// seconds of one step, or the milliseconds of one layer's forward or backward for one micro-batch.
// tokens_per_gpu: training tokens per second per GPU.
enum class Metric { hardware_tflops, model_tflops, step_seconds, layer_forward_ms, layer_backward_ms, tokens_per_gpu };

struct ValidationRow {
  std::string run;        // "GPT 1.7B, 32 GPUs"
  std::string source_id;  // the publication, for leave-one-source-out: "narayanan-t1", "korthikanti-t5", ...
  std::string source;     // where the configuration and the figure come from
  std::string framework;  // "Megatron-LM", "Megatron-DeepSpeed", "Meta"
  std::string machine;
  ModelSpec model;
  std::int64_t global_batch = 0;
  Layout layout;
  Metric metric = Metric::hardware_tflops;
  double published = 0;
  double predicted = 0;  // filled by validate()
  double error() const { return predicted / published - 1; }
};

std::vector<ValidationRow> validation_rows();
// Predicts every row on `machines` (the presets where empty); returns the mean absolute relative error.
double validate(std::vector<ValidationRow>& rows, const std::vector<MachineSpec>& machines = {});

}  // namespace pipebench::analysis::plan
