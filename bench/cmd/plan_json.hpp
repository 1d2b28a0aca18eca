#pragma once
// `pipebench plan --json`: the object of one configuration (docs/plan.md "JSON"), with its operations'
// breakdown where the prediction keeps it (--evaluate).
#include <nlohmann/json.hpp>

#include "analysis/plan/model.hpp"

namespace pipebench::bench {

nlohmann::ordered_json config_json(const analysis::plan::Prediction& p);

}  // namespace pipebench::bench
