#include "bench/results/store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>

#include "bench/results/h5.hpp"
#include "bench/results/layout.hpp"

namespace pipebench::bench {

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Creates a results file whole, under a temporary name, and links it to `path` only when complete, so
// no reader ever sees a half-made root, and link() refuses a `path` that exists: of two processes
// creating one file, exactly one succeeds. Returns false when `path` exists.
bool create_results(const std::string& path) {
  static int counter = 0;
  const std::string tmp = path + "." + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".tmp";
  try {
    h5::Id file = h5::create_file(tmp);
    write_root(file.get());
    h5::close_file(file);
  } catch (const Error& e) {
    std::remove(tmp.c_str());
    throw UsageError("cannot create results file '" + path + "': " + e.what());
  }
  const int rc = ::link(tmp.c_str(), path.c_str());
  const int err = errno;
  std::remove(tmp.c_str());
  if (rc == 0) return true;
  if (err == EEXIST) return false;
  throw UsageError("cannot create results file '" + path + "': " + std::strerror(err));
}

// An existing file, checked read-only before it is ever opened for writing: a refused file is never
// modified (HDF5 rewrites parts of a file opened for writing when it closes it).
void check_for_append(const std::string& path) {
  {
    h5::Id file = open_results_file(path, false);
    check_version(check_root(file.get(), path), path, true);
  }
  if (::access(path.c_str(), W_OK) != 0) throw UsageError("results file '" + path + "' is not writable: " + std::strerror(errno));
}

volatile std::sig_atomic_t g_pending_signal = 0;
constexpr int kDeferred[3] = {SIGINT, SIGTERM, SIGHUP};

void remember_signal(int sig) {
  if (g_pending_signal == 0) g_pending_signal = sig;
}

}  // namespace

PreparedFile prepare_results_file(const std::string& path, bool append) {
  if (path.empty()) throw UsageError("the results file name is empty");
  const std::string taken = "results file '" + path + "' already exists; pass --append (with --resume to skip runs it holds) to add runs to it, or choose another file name";
  PreparedFile out;
  if (!exists(path)) {
    if (create_results(path)) {
      out.created = true;
      return out;
    }
    if (!append)
      throw UsageError("results file '" + path + "' was created by another process just now (two sweeps writing one file?); pass --append to add runs to it, or choose another file name");
  } else if (!append) {
    throw UsageError(taken);
  }
  // The whole file is read (in a child process) so that a damaged one is refused before the sweep.
  ReadRequest req;
  req.to_append = true;
  req.limit = kResultsReadLimit;
  out.listing = read_results(path, req);
  check_for_append(path);
  return out;
}

std::string create_unique_results_file(const std::string& stem) {
  for (int k = 1; k <= 1000; ++k) {
    const std::string path = stem + (k == 1 ? "" : "-" + std::to_string(k)) + ".h5";
    if (exists(path)) continue;
    if (create_results(path)) return path;
  }
  throw UsageError("cannot find a free results file name '" + stem + "-N.h5'; give one with --out");
}

ResultsFileLock::ResultsFileLock(const std::string& path) {
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    struct flock l {};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;  // l_start = l_len = 0: the whole file
    int r = 0;
    while ((r = ::fcntl(fd, F_OFD_SETLKW, &l)) != 0 && errno == EINTR) {
    }
    struct stat held {}, named {};
    if (r == 0 && ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      fd_ = fd;
      return;
    }
    ::close(fd);
    if (r != 0) return;  // no locks on this file system: go on unlocked, as before
  }
}

ResultsFileLock::~ResultsFileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the description releases its lock
}

int append_run(const std::string& path, const RunResult& run) {
  const SignalDeferral hold;
  const RecordTypes types;
  if (!exists(path)) create_results(path);  // false: another process made it meanwhile, also fine
  const ResultsFileLock lock(path);
  check_for_append(path);
  h5::Id file = open_results_file(path, true);
  int id = 0;
  {
    const h5::Id runs = h5::open_group(file.get(), "runs");
    const auto ids = run_ids(runs.get());
    id = ids.empty() ? 1 : ids.back() + 1;
    // The run is written in full, unreachable, and flushed before the one link that makes it part
    // of the file: a crash before that link leaves the file as it was, never a link to half a group.
    const h5::Id g = h5::create_unlinked_group(file.get());
    write_run_group(g.get(), run, types);
    h5::flush(file.get());
    h5::link(g.get(), runs.get(), run_name(id));
    h5::flush(file.get());
    h5::write_attr(g.get(), "complete", std::int64_t{1});
  }
  h5::close_file(file);
  return id;
}

std::string id_ranges(const std::vector<int>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

SignalDeferral::SignalDeferral() {
  g_pending_signal = 0;
  struct sigaction hold {};
  hold.sa_handler = remember_signal;
  sigemptyset(&hold.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kDeferred[i], &hold, &previous_[i]);
}

SignalDeferral::~SignalDeferral() {
  for (int i = 0; i < 3; ++i) sigaction(kDeferred[i], &previous_[i], nullptr);
  if (g_pending_signal != 0) raise(g_pending_signal);
}

}  // namespace pipebench::bench
