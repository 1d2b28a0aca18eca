// Reading a results file that may be damaged: structure checks in layout.cpp, and the reading itself in
// a child process (docs/results-schema.md "Reading a damaged file").
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "analysis/text.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/store.hpp"
#include "bench/results/wire.hpp"

namespace pipebench::bench {

namespace {

std::string damaged_file(const std::string& path, const std::string& why) {
  return "results file '" + path + "' is damaged: " + why;
}

// The child's address space: what it has now, plus room for the file read many times over. Reading a
// damaged length can make libhdf5 copy gigabytes before it notices; the limit turns that into a failed
// allocation. Not under AddressSanitizer, which reserves terabytes of address space up front.
#if defined(__SANITIZE_ADDRESS__)
#define PIPEBENCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PIPEBENCH_ASAN 1
#endif
#endif
void limit_memory(const std::string& path) {
#if !defined(PIPEBENCH_ASAN)
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (!f) return;
  const bool ok = std::fscanf(f, "%lu", &pages) == 1;
  std::fclose(f);
  struct stat st {};
  if (!ok || ::stat(path.c_str(), &st) != 0) return;
  const double limit = static_cast<double>(pages) * static_cast<double>(sysconf(_SC_PAGESIZE)) + 1073741824.0 +
                       16.0 * static_cast<double>(st.st_size);
  if (limit < 1e18) {
    const rlimit as{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
    setrlimit(RLIMIT_AS, &as);
  }
#else
  (void)path;
#endif
}

// What the reading learns, in the order it learns it; the same calls whether they arrive directly or
// through the pipe from the child.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void version(std::int64_t v) = 0;
  virtual void start(int id) = 0;  // about to touch run `id`
  virtual void run(int id, RunResult&& r) = 0;
  virtual void complete(int id) = 0;  // complete, not read (ReadRequest::only)
  virtual void incomplete(int id) = 0;
  virtual void damaged(int id, const std::string& why) = 0;
  virtual void failed(const std::string& usage_message) = 0;  // the whole file
  virtual void comm_start(int id) = 0;  // about to touch /comm group `id` (0: the /comm group itself)
  virtual void comm(int id, CommResult&& r) = 0;
  virtual void comm_damaged(int id, const std::string& why) = 0;
  virtual void end() = 0;
};

// Builds the listing.
class Collector : public Sink {
 public:
  void version(std::int64_t v) override { listing.schema_version = v; }
  void start(int id) override { current = id; }
  void run(int id, RunResult&& r) override {
    listing.runs.push_back({id, std::move(r)});
    complete(id);
  }
  void complete(int id) override {
    listing.complete.push_back(id);
    current = 0;
  }
  void incomplete(int id) override {
    listing.incomplete.push_back(id);
    current = 0;
  }
  void damaged(int id, const std::string& why) override {
    listing.damaged.push_back({id, one_line(why)});
    current = 0;
  }
  void failed(const std::string& message) override { failure = one_line(message); }
  void comm_start(int id) override { current_comm = id; }
  void comm(int id, CommResult&& r) override { listing.comms.push_back({id, std::move(r)}), current_comm = -1; }
  void comm_damaged(int id, const std::string& why) override {
    listing.damaged_comms.push_back({id, one_line(why)}), current_comm = -1;
  }
  void end() override { ended = true; }

  RunListing listing;
  int current_comm = -1;  // the /comm group started and not finished (0: /comm itself)
  int current = 0;  // the run started and not finished
  bool ended = false;
  std::string failure;
};

bool g_spin_in_run_1 = false;  // the test hook, in the reading child only
[[noreturn]] void spin_forever() {
  for (volatile unsigned long i = 0;; i = i + 1) continue;
}

void classify_run(hid_t runs, int id, const ReadRequest& req, const RecordTypes& types, Sink& out) {
  if (id == 1 && g_spin_in_run_1) spin_forever();
  const std::string name = run_name(id);
  if (h5::object_kind(runs, name) != h5::ObjectKind::group) {
    out.damaged(id, "/runs/" + name + " is not a group");
    return;
  }
  const h5::Id g = h5::open_group(runs, name);
  if (!h5::has_attr(g.get(), "complete") || h5::read_int_attr(g.get(), "complete") != 1) {
    out.incomplete(id);
  } else if (req.only != 0 && req.only != id) {
    out.complete(id);
  } else {
    out.run(id, read_run_group(g.get(), types, req.records));
  }
}

// The complete /comm groups, by id, up to the first that cannot be read (a group that is not one, or
// without complete=1, is skipped as the writer may have been cut short before it).
void read_comm_groups(hid_t file, Sink& out) {
  out.comm_start(0);
  h5::Id comm;
  std::vector<int> ids;
  try {
    if (h5::object_kind(file, "comm") != h5::ObjectKind::group) return;  // versions 1 and 2, or runs only
    comm = h5::open_group(file, "comm");
    ids = run_ids(comm.get());
  } catch (const std::bad_alloc&) {
    return out.comm_damaged(0, "its link table claims more memory than there is");
  } catch (const std::exception& e) {
    return out.comm_damaged(0, e.what());
  }
  for (int id : ids) {
    out.comm_start(id);
    try {
      const std::string name = run_name(id);
      if (h5::object_kind(comm.get(), name) != h5::ObjectKind::group) continue;
      const h5::Id g = h5::open_group(comm.get(), name);
      if (!h5::has_attr(g.get(), "complete") || h5::read_int_attr(g.get(), "complete") != 1) continue;
      out.comm(id, read_comm_group(g.get()));
    } catch (const std::bad_alloc&) {
      return out.comm_damaged(id, "its tables claim more memory than there is");
    } catch (const std::exception& e) {
      return out.comm_damaged(id, e.what());
    }
  }
}

// The reading itself, in whichever process; skips the runs up to `after` (read before a crash).
void read_into(const std::string& path, const ReadRequest& req, int after, Sink& out) {
  h5::Id file, runs;
  std::vector<int> ids;
  try {
    file = open_results_file(path, false);
    const std::int64_t version = check_root(file.get(), path);
    check_version(version, path, req.to_append);
    out.version(version);
    runs = h5::open_group(file.get(), "runs");
    ids = run_ids(runs.get());
  } catch (const UsageError& e) {
    out.failed(e.what());
    return;
  } catch (const std::bad_alloc&) {
    out.failed(damaged_file(path, "its structure claims more memory than there is"));
    return;
  } catch (const std::exception& e) {
    out.failed(damaged_file(path, e.what()));
    return;
  }
  const RecordTypes types;
  for (int id : ids) {
    if (id <= after || !req.runs) continue;
    out.start(id);
    try {
      classify_run(runs.get(), id, req, types, out);
    } catch (const std::bad_alloc&) {
      out.damaged(id, "its tables claim more memory than there is");
    } catch (const std::exception& e) {
      out.damaged(id, e.what());
    }
  }
  if (req.comms) read_comm_groups(file.get(), out);
  out.end();
}

// Messages through the pipe: a tag byte, the run id (int32), the payload's length (uint64), the payload.
enum Tag : char { kVersion = 'V', kStart = 'S', kRun = 'R', kComplete = 'C', kIncomplete = 'I', kDamaged = 'D',
                  kFailed = 'F', kCommStart = 's', kComm = 'M', kCommDamaged = 'd', kEnd = 'E' };

class PipeSink : public Sink {
 public:
  explicit PipeSink(int fd) : fd_(fd) {}
  void version(std::int64_t v) override { send(kVersion, 0, std::string(reinterpret_cast<const char*>(&v), sizeof v)); }
  void start(int id) override { send(kStart, id, ""); }
  void run(int id, RunResult&& r) override { send(kRun, id, encode_run(r)); }
  void complete(int id) override { send(kComplete, id, ""); }
  void incomplete(int id) override { send(kIncomplete, id, ""); }
  void damaged(int id, const std::string& why) override { send(kDamaged, id, why); }
  void failed(const std::string& message) override { send(kFailed, 0, message); }
  void comm_start(int id) override { send(kCommStart, id, ""); }
  void comm(int id, CommResult&& r) override { send(kComm, id, encode_comm(r)); }
  void comm_damaged(int id, const std::string& why) override { send(kCommDamaged, id, why); }
  void end() override { send(kEnd, 0, ""); }

 private:
  void send(Tag tag, std::int32_t id, const std::string& payload) {
    std::string frame(1, tag);
    const std::uint64_t n = payload.size();
    frame.append(reinterpret_cast<const char*>(&id), sizeof id);
    frame.append(reinterpret_cast<const char*>(&n), sizeof n);
    frame += payload;
    for (std::size_t done = 0; done < frame.size();) {
      const ssize_t w = ::write(fd_, frame.data() + done, frame.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) _exit(3);  // the parent is gone
      done += static_cast<std::size_t>(w);
    }
  }
  int fd_;
};

constexpr std::size_t kHeader = 1 + 4 + 8;

// Hands every whole message in `buf` to `out` and drops it from `buf`.
void deliver(std::string& buf, Sink& out) {
  std::size_t at = 0;
  while (buf.size() - at >= kHeader) {
    std::int32_t id = 0;
    std::uint64_t n = 0;
    std::memcpy(&id, buf.data() + at + 1, sizeof id);
    std::memcpy(&n, buf.data() + at + 5, sizeof n);
    if (buf.size() - at - kHeader < n) break;
    const std::string_view payload(buf.data() + at + kHeader, static_cast<std::size_t>(n));
    switch (buf[at]) {
      case kVersion: {
        std::int64_t v = 0;
        std::memcpy(&v, payload.data(), std::min(payload.size(), sizeof v));
        out.version(v);
        break;
      }
      case kStart: out.start(id); break;
      case kRun: out.run(id, decode_run(payload)); break;
      case kComplete: out.complete(id); break;
      case kIncomplete: out.incomplete(id); break;
      case kDamaged: out.damaged(id, std::string(payload)); break;
      case kFailed: out.failed(std::string(payload)); break;
      case kCommStart: out.comm_start(id); break;
      case kComm: out.comm(id, decode_comm(payload)); break;
      case kCommDamaged: out.comm_damaged(id, std::string(payload)); break;
      case kEnd: out.end(); break;
      default: throw Error("reader: unknown message from the reading process");
    }
    at += kHeader + static_cast<std::size_t>(n);
  }
  buf.erase(0, at);
}

[[noreturn]] void child_main(int fd, const std::string& path, const ReadRequest& req, int after, pid_t parent) {
  // The child dies with its parent: a parent killed or interrupted while libhdf5 spins on a damaged
  // run must not leave it spinning, orphaned (PR_SET_PDEATHSIG; the check after it closes the race
  // with a parent that died before the call).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);
  // A fault here must end this process quietly and at once: no handler of another library (UCX prints
  // a backtrace), no core file, no glibc message on the terminal.
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGPIPE}) std::signal(sig, SIG_DFL);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  setenv("LIBC_FATAL_STDERR_", "1", 1);
  limit_memory(path);
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) {
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
  }
  PipeSink sink(fd);
  // Test hook (tests/cli/results_guard.sh): the reading spins as libhdf5 does on some damaged files,
  // before anything ("spin") or inside run 1 ("spin-run").
  const std::string hook = std::getenv("PIPEBENCH_TEST_READER") ? std::getenv("PIPEBENCH_TEST_READER") : "";
  if (hook == "spin") spin_forever();
  g_spin_in_run_1 = hook == "spin-run";
  try {
    read_into(path, req, after, sink);
  } catch (...) {
  }
  _exit(0);
}

std::string signal_text(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGABRT ? "SIGABRT" : sig == SIGKILL ? "SIGKILL" : nullptr;
    return name ? name : "signal " + std::to_string(sig);
  }
  return "exit code " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

double default_timeout(const std::string& path) {
  struct stat st {};
  const double bytes = ::stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) : 0.0;
  return 3.0 + bytes / 10e6;
}

// One child: reads from `after` on, feeding `out`. Returns "" when it ended normally, else how it ended.
std::string run_child(const std::string& path, const ReadRequest& req, int after, Collector& out, bool& forked,
                      std::chrono::steady_clock::time_point until) {
  int fds[2];
  forked = false;
  if (::pipe(fds) != 0) return "";
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return "";
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], path, req, after, parent);
  }
  forked = true;
  ::close(fds[1]);
  const double limit = req.idle_timeout > 0 ? req.idle_timeout : default_timeout(path);
  std::string buf, how;
  char chunk[1 << 16];
  auto last = std::chrono::steady_clock::now();
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, 100);
    if (r < 0 && errno != EINTR) break;
    if (r > 0) {
      const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.append(chunk, static_cast<std::size_t>(n));
      try {
        deliver(buf, out);
      } catch (...) {
        kill(pid, SIGKILL);
        ::close(fds[0]);
        waitpid(pid, nullptr, 0);
        throw;
      }
      last = std::chrono::steady_clock::now();
    }
    if (std::chrono::steady_clock::now() > until) {  // the whole reading's limit (ReadRequest::limit)
      kill(pid, SIGKILL);
      out.failed("results file '" + path + "' could not be read within " + num(req.limit) +
                 " s (each damaged run costs the reader seconds): repair or replace it");
      how = "out of time";
      break;
    }
    if (r <= 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count() > limit) {
      kill(pid, SIGKILL);
      char text[64];
      std::snprintf(text, sizeof text, "reading it made no progress for %.0f s", limit);
      how = text;
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out.ended || !how.empty()) return how;
  return "reading it crashed the HDF5 library (" + signal_text(status) + ")";
}

}  // namespace

RunListing read_results_in_process(const std::string& path, const ReadRequest& request) {
  Collector c;
  read_into(path, request, 0, c);
  if (!c.failure.empty()) throw UsageError(c.failure);
  return std::move(c.listing);
}

RunListing read_results(const std::string& path, const ReadRequest& request) {
  Collector c;
  int after = 0;
  const auto until = request.limit > 0 ? std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(request.limit))
                                       : std::chrono::steady_clock::time_point::max();
  while (!c.ended && c.failure.empty()) {
    bool forked = false;
    const std::string how = run_child(path, request, after, c, forked, until);
    if (!forked) {  // no child process to be had: read here
      read_into(path, request, after, c);
      break;
    }
    if (c.ended || !c.failure.empty()) break;
    // The child died or hung. Inside the /comm groups, which come after the runs: the group it was
    // reading is damaged, and the reading ends there.
    if (c.current_comm >= 0) {
      c.comm_damaged(c.current_comm, how);
      break;
    }
    // Inside a run: that run is damaged, the next child goes on after it.
    if (c.current == 0) throw UsageError(damaged_file(path, how));
    const int id = c.current;
    c.damaged(id, how);
    after = id;
  }
  if (!c.failure.empty()) throw UsageError(c.failure);
  return std::move(c.listing);
}

RunListing list_runs(const std::string& path) { return read_results(path); }

RunResult read_run(const std::string& path, int id) {
  ReadRequest req;
  req.records = true;
  req.only = id;
  RunListing l = read_results(path, req);
  for (auto& r : l.runs)
    if (r.id == id) return std::move(r.run);
  for (const auto& d : l.damaged)
    if (d.id == id) throw UsageError("run " + std::to_string(id) + " of '" + path + "' is damaged: " + d.reason);
  throw UsageError("run " + std::to_string(id) + " is not a complete run in '" + path + "' (" +
                   (l.complete.empty() ? std::string("it holds no complete runs") : "complete runs: " + id_ranges(l.complete)) + ")");
}

bool has_complete_run(const std::string& path, const std::string& key) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  for (const auto& r : read_results(path).runs)
    if (r.run.key == key) return true;
  return false;
}

}  // namespace pipebench::bench
