#pragma once
// What the bench tests ask of a call that should refuse its input.
#include <exception>
#include <string>

#include "analysis/error.hpp"

namespace pipebench::bench::testing {

// The message of the UsageError that `f` throws; "" when it throws nothing, and "not a UsageError: ..."
// for any other exception, so that a test comparing messages fails on the wrong kind too.
template <class F>
std::string usage_error(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a UsageError: ") + e.what();
  }
  return "";
}

}  // namespace pipebench::bench::testing
