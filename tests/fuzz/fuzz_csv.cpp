// Fuzz target: a schedule CSV as `pipebench schedule --import-csv FILE` takes it (analysis/csv.*):
// read, validated and simulated with the default times (bench/cmd/simulate_one.*, as the command does).
// Also checked: what pipebench writes back as CSV reads in as the same schedule.
#include <sstream>
#include <utility>

#include "analysis/csv.hpp"
#include "bench/parse.hpp"
#include "bench/cmd/simulate_one.hpp"
#include "contract.hpp"

namespace {

using namespace pipebench;

bool same(const analysis::Schedule& a, const analysis::Schedule& b) {
  return a.p == b.p && a.m == b.m && a.pipes == b.pipes && a.stage_rank == b.stage_rank && a.actions == b.actions;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::as_text(data, size);
  fuzz::expect_contract("csv", [&] {
    std::istringstream in(text);
    analysis::CsvImportNotes notes;
    analysis::Schedule s = analysis::from_csv(in, "imported", &notes);
    const bench::SimRun r = bench::simulate_one(std::move(s), 0, bench::Times{}, false, true);
    (void)analysis::to_grid(r.schedule);
    std::istringstream again(analysis::to_csv(r.schedule));
    const analysis::Schedule back = analysis::from_csv(again, "imported");
    if (!same(back, r.schedule)) fuzz::finding("csv", "a valid schedule written with to_csv reads back different");
  });
  return 0;
}
