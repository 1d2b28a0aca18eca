#pragma once
// The numbered groups beside /runs: /comm/NNNNNN (`pipebench comm`) and /gemm/NNNNNN (`pipebench gemm`),
// docs/results-schema.md. One append discipline for both, the one append_run keeps: the file's lock for
// the whole change, checked read-only before it is opened for writing, the group written whole while
// unlinked, then linked, then complete=1 after a flush, so a group cut short stays incomplete and readers
// skip it. SIGINT, SIGTERM and SIGHUP are held while the file is open.
#include <functional>
#include <map>
#include <string>

#include "bench/results/h5.hpp"

namespace pipebench::bench {

// Appends the next group under /`top` (made when missing), filled by `write`, and returns its id. The
// file must exist (prepare_results_file makes it).
int append_numbered(const std::string& path, const char* top, const std::function<void(hid_t)>& write);

// Calls `read` with the id and group of every complete group under /`top`, by id; nothing where the file
// has no /`top`. UsageError for a file that is not a readable results file.
void read_numbered(const std::string& path, const char* top, const std::function<void(int, hid_t)>& read);

// A map of text as the attributes of the subgroup `name` of `g`, escaped to valid UTF-8 both ways.
void write_string_map(hid_t g, const std::string& name, const std::map<std::string, std::string>& entries);
std::map<std::string, std::string> read_string_map(hid_t g, const std::string& name);

}  // namespace pipebench::bench
