#pragma once
// Build identity, generated at build time from git (cmake/WriteVersion.cmake).
namespace pipebench::bench {
const char* version();
const char* commit();
const char* build_type();
const char* build_flags();
const char* compiler();
}  // namespace pipebench::bench
