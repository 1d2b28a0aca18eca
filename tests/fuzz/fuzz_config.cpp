// Fuzz target: the text of a `--config FILE` (bench/config_file.*, parse_config, the strict TOML subset
// of issue 8 defect 7). Beyond the contract: a refusal is one printable line, and every entry accepted
// has a key and a line number inside the text.
#include <algorithm>

#include "bench/config_file.hpp"
#include "contract.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipebench;
  const std::string text = fuzz::as_text(data, size);
  fuzz::expect_contract("config", [&] {
    const auto entries = bench::parse_config(text, "fuzz.toml");
    const long lines = static_cast<long>(std::count(text.begin(), text.end(), '\n')) + 1;
    for (const auto& e : entries)
      if (e.key.empty() || e.line < 1 || e.line > lines) fuzz::finding("config", "entry without a key or outside the text");
  }, true);
  return 0;
}
