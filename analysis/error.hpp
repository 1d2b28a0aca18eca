#pragma once
// The one exception type of pipebench (docs/design.md, "Conventions"): library code throws it with a message
// that names the bad value and what is allowed; `main` prints it once and exits non-zero.
#include <stdexcept>
#include <string>

namespace pipebench {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user (flags, config files, CSVs): exit code 2, found before any communication.
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace pipebench
