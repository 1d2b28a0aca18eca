#include "analysis/text.hpp"

#include <cstdio>

namespace pipebench {

std::string num(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string fmt(const char* format, double x) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string fixed(double value, int decimals, bool signed_) {
  char buf[384];  // DBL_MAX in %f is 309 digits
  std::snprintf(buf, sizeof buf, signed_ ? "%+.*f" : "%.*f", decimals, value);
  return buf;
}

}  // namespace pipebench
