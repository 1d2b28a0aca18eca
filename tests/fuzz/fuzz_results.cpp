// Fuzz target: a results file as `pipebench report` reads it (bench/results/store.*): the input is
// written to a temporary file and read with every run and its records. A damaged or foreign file must
// give a UsageError or Error, never a crash (issue 8, defect 8). The reader reads in a child process,
// so a fault inside libhdf5 costs only that child; the child's coverage is not seen by libFuzzer.
// PIPEBENCH_FUZZ_RESULTS_IN_PROCESS=1 reads in this process instead (read_results_in_process):
// coverage-guided through the structure checks, but a fault inside libhdf5 then crashes the fuzzer.
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
  static const bool in_process = fuzz::env_is("PIPEBENCH_FUZZ_RESULTS_IN_PROCESS", "1");
  fuzz::expect_contract("results", [&] {
    bench::ReadRequest request;
    request.records = true;
    request.idle_timeout = 2;  // a hang in the reading child ends well inside libFuzzer's -timeout
    (void)(in_process ? bench::read_results_in_process(path, request) : bench::read_results(path, request));
  });
  return 0;
}
