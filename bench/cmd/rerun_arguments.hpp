#pragma once
// The `pipebench run` arguments that repeat a stored configuration (RunResult::config, written by
// config_of in bench/run/plan.cpp): the one table from a configuration's keys to run's flags, which
// `pipebench rerun` uses and tests/bench/cmd/test_rerun_arguments.cpp checks against config_of by a
// round trip (flags -> configuration -> flags -> the same configuration).
#include <map>
#include <string>
#include <vector>

namespace pipebench::bench {

struct RerunArguments {
  std::vector<std::string> args;
  std::vector<std::string> unrepeated;  // stored keys no flag of this build sets (a file from another pipebench)
};
RerunArguments run_arguments(const std::map<std::string, std::string>& config);

}  // namespace pipebench::bench
