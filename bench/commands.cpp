#include "bench/commands.hpp"

namespace pipebench::bench {

namespace {
std::string& stored() {
  static std::string s;
  return s;
}
}  // namespace

void set_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  stored() = s;
}

const std::string& command_line_text() { return stored(); }

}  // namespace pipebench::bench
