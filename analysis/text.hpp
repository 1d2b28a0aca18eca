#pragma once
// Small text helpers shared by every folder (they depend on analysis/).
#include <string>

namespace pipebench {

// `s` without leading and trailing blanks (spaces, tabs, carriage returns).
inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace pipebench
