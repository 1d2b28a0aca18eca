// Fuzz target: the text form of one action (`3F0`, `7I2`, `(0F7;7B3)`), analysis::parse_action, which
// the CSV import and the tests use. Also checked: to_string() of a parsed action parses back to it, and
// a refusal is one line that escapes the text.
#include "analysis/schedule.hpp"
#include "contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipebench;
  const std::string text = fuzz::as_text(data, size);
  fuzz::expect_contract("schedule_text", [&] {
    const analysis::Action a = analysis::parse_action(text);
    if (a.stage < 0 || a.mb < 0) fuzz::finding("schedule_text", "negative stage or micro-batch accepted");
    const std::string again = analysis::to_string(a);
    if (analysis::parse_action(again) != a) fuzz::finding("schedule_text", "'" + again + "' does not parse back to itself");
  }, true);
  return 0;
}
