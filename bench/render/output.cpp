#include "bench/render/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::bench {
namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string what(const std::string& flag, const std::string& path) {
  return flag + " " + quoted(path, 200);
}

// Removes the temporary file unless it was renamed.
struct TempFile {
  std::string name;
  bool keep = false;
  ~TempFile() {
    if (!keep && !name.empty()) std::remove(name.c_str());
  }
};

// Moves `from` onto `to`. Without overwrite, link() fails with EEXIST when `to` appeared meanwhile
// (another process), so an existing file is never replaced; rename() replaces atomically.
int install(const std::string& from, const std::string& to, bool overwrite) {
  if (overwrite) return std::rename(from.c_str(), to.c_str());
  if (link(from.c_str(), to.c_str()) != 0) return -1;
  std::remove(from.c_str());
  return 0;
}

}  // namespace

void check_output_path(const std::string& path, const std::string& flag, bool overwrite) {
  if (path.empty()) throw UsageError(flag + " needs a file name");
  const std::string base = base_of(path);
  if (base.empty() || base == "." || base == "..")
    throw UsageError(what(flag, path) + " names a directory; give a file name");
  const std::string dir = dir_of(path);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(what(flag, path) + ": directory " + quoted(dir, 200) + " does not exist");
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError(what(flag, path) + ": directory " + quoted(dir, 200) + " is not writable");
  const long name_max = pathconf(dir.c_str(), _PC_NAME_MAX);
  // Room for the temporary file's suffix (".NNNNNN.tmp" and the pid).
  if (name_max > 0 && base.size() + 24 > static_cast<std::size_t>(name_max))
    throw UsageError(what(flag, path) + ": the file name is " + std::to_string(base.size()) +
                     " bytes; at most " + std::to_string(name_max - 24) + " are allowed here");
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw UsageError(what(flag, path) + " is a directory; give a file name");
    if (!overwrite)
      throw UsageError(what(flag, path) + " already exists; remove it, give another name or add --force");
    if (!S_ISREG(st.st_mode)) throw UsageError(what(flag, path) + " exists and is not a regular file");
  }
}

void write_output(const std::string& path, const std::string& flag, const std::function<void(std::ostream&)>& writer,
                  bool overwrite) {
  check_output_path(path, flag, overwrite);
  static std::atomic<unsigned> counter{0};
  TempFile tmp;
  for (int attempt = 0; tmp.name.empty(); ++attempt) {
    const std::string name = path + "." + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".tmp";
    const int fd = open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      close(fd);
      tmp.name = name;
    } else if (errno != EEXIST || attempt > 100) {
      throw UsageError("cannot write " + what(flag, path) + ": " + std::strerror(errno));
    }
  }
  {
    std::ofstream f(tmp.name, std::ios::binary | std::ios::trunc);
    if (f) writer(f);
    if (f) f.flush();
    const int err = errno;
    if (f) f.close();
    if (!f) throw UsageError("cannot write " + what(flag, path) + ": " + std::strerror(err ? err : EIO));
  }
  if (install(tmp.name, path, overwrite) != 0) {
    if (errno == EEXIST) throw UsageError(what(flag, path) + " appeared while it was being written; not replaced");
    throw UsageError("cannot write " + what(flag, path) + ": " + std::strerror(errno));
  }
  tmp.keep = true;
}

}  // namespace pipebench::bench
