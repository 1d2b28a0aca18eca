#pragma once
// A run (or a /comm group's results) as bytes and back, for the reader's child process to hand runs to its parent through a pipe
// (reader.cpp). Field by field from the records' field lists (fields.hpp), native byte order: both ends
// are the same executable. decode_run checks every length against the bytes it has.
#include <string>
#include <string_view>

#include "bench/results/comm_results.hpp"
#include "bench/results/records.hpp"

namespace pipebench::bench {

std::string encode_run(const RunResult& run);
RunResult decode_run(std::string_view bytes);  // Error when the bytes are not a whole encoded run
std::string encode_comm(const CommResult& comm);  // a /comm group's results, the same way
CommResult decode_comm(std::string_view bytes);

}  // namespace pipebench::bench
