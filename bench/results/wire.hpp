#pragma once
// A run as bytes and back, for the reader's child process to hand runs to its parent through a pipe
// (reader.cpp). Field by field from the records' field lists (fields.hpp), native byte order: both ends
// are the same executable. decode_run checks every length against the bytes it has.
#include <string>
#include <string_view>

#include "bench/results/records.hpp"

namespace pipebench::bench {

std::string encode_run(const RunResult& run);
RunResult decode_run(std::string_view bytes);  // Error when the bytes are not a whole encoded run

}  // namespace pipebench::bench
