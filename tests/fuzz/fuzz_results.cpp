// Fuzz target: a results file as `pipebench report` reads it (bench/results/store.*): the input is
// written to a temporary file, listed, and every complete run in it read back. A damaged or foreign
// file must give a UsageError or Error, never a crash inside libhdf5 (issue 8, defect 8).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/results/store.hpp"
#include "contract.hpp"

namespace {

// One scratch file per process, rewritten for each input and removed at exit.
const std::string& scratch_path() {
  static const std::string* const path = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string p = std::string(dir && *dir ? dir : "/tmp") + "/pipebench-fuzz-XXXXXX.h5";
    const int fd = ::mkstemps(p.data(), 3);
    if (fd < 0) pipebench::fuzz::finding("results", "cannot create a scratch file in TMPDIR");
    ::close(fd);
    std::atexit([] { std::remove(scratch_path().c_str()); });
    return new std::string(p);  // never destroyed: the exit handler above still needs it
  }();
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipebench;
  const std::string& path = scratch_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) fuzz::finding("results", "cannot write the scratch file");
  fuzz::expect_contract("results", [&] {
    const bench::RunListing listing = bench::list_runs(path);
    for (const bench::StoredRun& r : listing.runs) (void)bench::read_run(path, r.id);
  });
  return 0;
}
