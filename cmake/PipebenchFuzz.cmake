# libFuzzer targets (tests/fuzz/, docs/fuzzing.md). With PIPEBENCH_ENABLE_FUZZ every C++ file is built
# with libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link), so the fuzzers see the paths
# they take through the libraries; only the fuzz executables link libFuzzer's main. Clang only.
option(PIPEBENCH_ENABLE_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang and libclang-rt)" OFF)
if(NOT PIPEBENCH_ENABLE_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "pipebench: PIPEBENCH_ENABLE_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}. "
                      "Use the debug-asan preset, or configure with -DCMAKE_CXX_COMPILER=clang++ "
                      "(Debian 12: apt-get install clang libclang-rt-14-dev).")
endif()
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer)
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
]] PIPEBENCH_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
pipebench_require(PIPEBENCH_HAVE_LIBFUZZER "libFuzzer (clang -fsanitize=fuzzer)" "clang libclang-rt-14-dev")
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
