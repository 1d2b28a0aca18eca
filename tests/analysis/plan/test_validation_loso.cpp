// Leave one source out (docs/model.md "Validation"): every source's error with its rows out of every
// fit of the parameters it is predicted with, recomputed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "analysis/plan/gemm.hpp"
#include "analysis/plan/validation.hpp"

namespace pipebench::analysis::plan {
namespace {

struct Figures {
  double mean = 0, max = 0;
};

// Mean and max absolute error (percent) of the rows of `sources`, predicted on `machines`.
Figures errors_of(const std::vector<std::string>& sources, const std::vector<MachineSpec>& machines = {}) {
  std::vector<ValidationRow> rows;
  for (const ValidationRow& r : validation_rows())
    if (std::find(sources.begin(), sources.end(), r.source_id) != sources.end()) rows.push_back(r);
  validate(rows, machines);
  Figures f;
  for (const ValidationRow& r : rows) {
    f.mean += std::abs(100 * r.error()) / double(rows.size());
    f.max = std::max(f.max, std::abs(100 * r.error()));
  }
  return f;
}

// The A100 machines with another GEMM table and element-wise passes.
std::vector<MachineSpec> a100_with(double e_max, double half, double passes) {
  std::vector<MachineSpec> out;
  for (const char* name : {"a100-40gb", "a100-80gb"}) {
    MachineSpec m = machine_preset(name);
    m.gemm = saturating_table(e_max, half, "leave-one-source-out fit");
    m.elementwise_passes = passes;
    out.push_back(m);
  }
  return out;
}

// The A100 parameters are fitted on Narayanan Table 1 alone and the H100's on Llama 3 alone, so every
// other source is held out as the presets stand: its figures are its leave-one-source-out figures.
TEST(PlanValidation, LeaveOneSourceOut) {
  const std::map<std::string, Figures> held_out = {
      {"narayanan-t2", {2.31, 3.94}}, {"korthikanti-t4", {2.12, 3.79}}, {"korthikanti-t5", {4.93, 9.82}},
      {"bloom", {1.64, 1.64}},        {"mt-nlg", {20.85, 24.14}},      {"deepseek-v3", {8.45, 8.45}},
  };
  for (const auto& [source, want] : held_out) {
    const Figures got = errors_of({source});
    EXPECT_NEAR(got.mean, want.mean, 0.01) << source;
    EXPECT_NEAR(got.max, want.max, 0.01) << source;
  }
  // Table 1 held out: the A100 parameters fitted instead on the other three Megatron-LM A100 sources
  // (e_max 0.83, half 291, passes 1.0, docs/model.md), a minimum of their mean error against its
  // neighbours, then Table 1 predicted with them.
  const std::vector<std::string> others = {"narayanan-t2", "korthikanti-t4", "korthikanti-t5"};
  const double fitted = errors_of(others, a100_with(0.83, 291, 1.0)).mean;
  for (const auto& [e, h, passes] : {std::tuple{0.82, 291.0, 1.0}, {0.84, 291.0, 1.0}, {0.83, 270.0, 1.0},
                                     {0.83, 310.0, 1.0}, {0.83, 291.0, 1.5}})
    EXPECT_GE(errors_of(others, a100_with(e, h, passes)).mean, fitted - 1e-9) << e << " " << h << " " << passes;
  const Figures t1 = errors_of({"narayanan-t1"}, a100_with(0.83, 291, 1.0));
  EXPECT_NEAR(t1.mean, 2.92, 0.01);
  EXPECT_NEAR(t1.max, 5.47, 0.01);
}

}  // namespace
}  // namespace pipebench::analysis::plan
