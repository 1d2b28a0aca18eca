#pragma once
// The contract every fuzz target checks (issue 8, docs/fuzzing.md): for any input, the code under test
// either succeeds or throws pipebench::UsageError (bad input, exit 2) or pipebench::Error (exit 1).
// Any other exception, a crash, a sanitizer report, more memory than -rss_limit_mb or an input running
// past -timeout is a finding. A finding aborts, so libFuzzer saves the input as crash-<sha1>.
//
// PIPEBENCH_FUZZ_USAGE_ONLY=1 in the environment also makes a plain Error a finding: input can only be
// wrong, so it should always be a UsageError (exit 2, not 1). PIPEBENCH_FUZZ_MESSAGES=0 skips the
// one-line check of messages, so that a long run looks past that finding for others.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::fuzz {

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Reports a broken contract on one line (`what` escaped) and aborts.
[[noreturn]] inline void finding(const char* target, const std::string& what) {
  std::fprintf(stderr, "pipebench fuzz %s: contract broken: %s\n", target, quoted(what, 400).c_str());
  std::abort();
}

inline bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

// A message that goes on one line of stderr: no newline or other control byte (values are escaped
// with quoted(), analysis/text.hpp).
inline bool one_line(const std::string& message) {
  for (unsigned char c : message)
    if (c < 0x20 || c == 0x7f) return false;
  return !message.empty();
}

// Runs `body`, enforcing the contract. `check_message` also requires a UsageError's message to be one
// printable line (the flag parsers promise that; some multi-line messages, such as a schedule
// validation error with its grid, are allowed elsewhere).
template <class Body>
void expect_contract(const char* target, Body&& body, bool check_message = false) {
  static const bool usage_only = env_is("PIPEBENCH_FUZZ_USAGE_ONLY", "1");
  static const bool messages = !env_is("PIPEBENCH_FUZZ_MESSAGES", "0");
  check_message = check_message && messages;
  try {
    body();
  } catch (const UsageError& e) {
    if (check_message && !one_line(e.what())) finding(target, std::string("UsageError message is not one line: ") + e.what());
  } catch (const Error& e) {
    if (usage_only) finding(target, std::string("Error where a UsageError was due: ") + e.what());
  } catch (const std::bad_alloc& e) {
    finding(target, std::string("std::bad_alloc escaped: ") + e.what());
  } catch (const std::exception& e) {
    finding(target, std::string("exception other than pipebench::Error: ") + e.what());
  } catch (...) {
    finding(target, "exception of unknown type");
  }
}

}  // namespace pipebench::fuzz
