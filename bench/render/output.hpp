#pragma once
// The one way pipebench writes an output file (SVG, JSON, CSV, trace): every check up front, the bytes
// into a temporary file beside the target, every write checked, then one rename. A failure (a full disk,
// an exception while rendering, bad_alloc) removes the temporary and leaves the target as it was, so
// there is never a cut-off file. An existing file is replaced only when asked (`overwrite`).
#include <functional>
#include <ostream>
#include <string>

namespace pipebench::bench {

// UsageError (exit 2) naming `flag`, the path and what is allowed unless `path` can be written: not
// empty, not a directory, a file name the file system accepts, an existing writable directory, and no
// existing file unless `overwrite`. Call it before any measurement so that no result is lost to a typo.
void check_output_path(const std::string& path, const std::string& flag, bool overwrite);

// Checks the path as above, then calls `writer` on a stream into the temporary file and renames it to
// `path`. When !overwrite, the rename refuses a file that appeared meanwhile (another process).
// Errors while writing throw pipebench::Error (exit 1) naming the path and the system's reason.
void write_output(const std::string& path, const std::string& flag, const std::function<void(std::ostream&)>& writer,
                  bool overwrite);

}  // namespace pipebench::bench
