#pragma once
// pipebench's exit codes (bench/main.cpp): 0 success, 1 runtime failure, 2 usage error, 75 a `run`
// stopped by SIGUSR1/SIGTERM before its end (bench/run/stop.hpp).

namespace pipebench::bench {

// Thrown by a subcommand that has already reported its failure (e.g. once, on rank 0 of an MPI job):
// main() exits with the code and prints nothing more.
struct ExitCode {
  int code;
};

}  // namespace pipebench::bench
