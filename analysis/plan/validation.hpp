#pragma once
// The published large-scale runs the model is checked against (docs/model.md "Validation"), each with
// its source. One parameter set per machine preset serves every row.
#include <string>
#include <vector>

#include "analysis/plan/model.hpp"

namespace pipebench::analysis::plan {

struct ValidationRow {
  std::string run;     // "Megatron-LM 1T (Narayanan et al. 2021, Table 1)"
  std::string source;  // where the configuration and the figure come from
  std::string machine;
  ModelSpec model;
  std::int64_t global_batch = 0;
  Layout layout;
  bool hardware = false;   // the published figure counts recomputation (hardware FLOPs)
  double published = 0;    // TFLOP/s per GPU
  double predicted = 0;    // filled by validate()
};

std::vector<ValidationRow> validation_rows();
// Predicts every row; returns the mean absolute relative error.
double validate(std::vector<ValidationRow>& rows);

}  // namespace pipebench::analysis::plan
