#include "kernels/device.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace pipebench::kernels {

bool device_build() {
#ifdef KOKKOS_ENABLE_CUDA
  return !std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>;
#else
  return false;
#endif
}

DeviceInfo device_info() {
  DeviceInfo d;
  d.device_build = device_build();
  d.space = Kokkos::DefaultExecutionSpace::name();
#ifdef KOKKOS_ENABLE_CUDA
  if (d.device_build) {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      d.error = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
      n = 0;
    } else if (n == 0) {
      d.error = "the CUDA runtime sees no device";
    }
    d.count = n;
  }
#endif
  return d;
}

#ifdef KOKKOS_ENABLE_CUDA
namespace {

// Start and stop events of the kernels not yet read, and spare ones to reuse (cudaEventCreate is
// not free). Past kMaxPending pairs they are folded into `folded`, so a run that never reads them
// holds a bounded number.
struct EventLog {
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> pending, spare;
  DeviceTimes folded;
  // The step's timeline (device_timeline_begin): its reference event and kernels pending[0, count).
  cudaEvent_t reference = nullptr;
  bool timeline = false, lost = false;
  std::size_t count = 0;
  ~EventLog() {
    if (reference) cudaEventDestroy(reference);
    // Destroyed at exit, maybe after the runtime is gone: errors are of no use then.
    for (auto* v : {&pending, &spare})
      for (auto& [a, b] : *v) {
        cudaEventDestroy(a);
        cudaEventDestroy(b);
      }
  }
};
constexpr std::size_t kMaxPending = 4096;

EventLog& event_log() {
  static EventLog log;
  return log;
}

void fold(EventLog& log) {
  if (log.timeline && !log.pending.empty()) log.lost = true;
  for (auto& pair : log.pending) {
    float ms = 0;
    if (cudaEventSynchronize(pair.second) == cudaSuccess && cudaEventElapsedTime(&ms, pair.first, pair.second) == cudaSuccess) {
      const double s = 1e-3 * static_cast<double>(ms);
      ++log.folded.kernels;
      log.folded.seconds += s;
      log.folded.longest = std::max(log.folded.longest, s);
    }
    log.spare.push_back(pair);
  }
  log.pending.clear();
}

std::pair<cudaEvent_t, cudaEvent_t> take_pair(EventLog& log) {
  if (log.pending.size() >= kMaxPending) fold(log);
  if (!log.spare.empty()) {
    auto p = log.spare.back();
    log.spare.pop_back();
    return p;
  }
  std::pair<cudaEvent_t, cudaEvent_t> p{nullptr, nullptr};
  if (cudaEventCreate(&p.first) != cudaSuccess || cudaEventCreate(&p.second) != cudaSuccess)
    throw std::runtime_error("cudaEventCreate failed");
  return p;
}

}  // namespace
#endif

bool device_spin(double seconds, const std::function<void()>& progress, double interval) {
#ifdef KOKKOS_ENABLE_CUDA
  if (!device_build() || !Kokkos::is_initialized()) return false;
  const auto ns = static_cast<std::uint64_t>(std::llround(std::max(seconds, 0.0) * 1e9));
  const Kokkos::Cuda exec;
  const cudaStream_t stream = exec.cuda_stream();
  EventLog& log = event_log();
  const auto events = take_pair(log);
  cudaEventRecord(events.first, stream);
  Kokkos::parallel_for(
      "pipebench::synthetic_spin", Kokkos::RangePolicy<Kokkos::Cuda>(exec, 0, 1), KOKKOS_LAMBDA(int) {
        std::uint64_t limit = ns;  // used in both compilation passes, so the closure is the same
#ifdef __CUDA_ARCH__
        std::uint64_t t0 = 0, t = 0;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do {
          asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        } while (t - t0 < limit);
#else
        (void)limit;
#endif
      });
  cudaEventRecord(events.second, stream);
  log.pending.push_back(events);
  if (log.timeline) ++log.count;
  if (progress && interval > 0) {
    const auto pause = std::chrono::duration<double>(std::min(interval, 1e-3));
    auto next = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                       std::chrono::duration<double>(interval));
    while (cudaEventQuery(events.second) == cudaErrorNotReady) {
      std::this_thread::sleep_for(pause / 5);
      if (std::chrono::steady_clock::now() >= next) {
        progress();
        next = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(interval));
      }
    }
  }
  // The executor sends this action's outputs next: the compute must be over (the MPI backend's
  // buffers are host memory and carry no stream order).
  exec.fence("pipebench::synthetic_spin");
  return true;
#else
  (void)seconds;
  (void)progress;
  (void)interval;
  return false;
#endif
}

std::shared_ptr<char> device_bytes(std::size_t bytes, const char* label) {
#ifdef KOKKOS_ENABLE_CUDA
  if (!device_build() || !Kokkos::is_initialized()) return nullptr;
  using Space = Kokkos::DefaultExecutionSpace::memory_space;
  auto* p = static_cast<char*>(Kokkos::kokkos_malloc<Space>(label, bytes ? bytes : 1));
  return std::shared_ptr<char>(p, [](char* q) { Kokkos::kokkos_free<Space>(q); });
#else
  (void)bytes;
  (void)label;
  return nullptr;
#endif
}

void device_fill(char* data, std::size_t bytes, int value) {
#ifdef KOKKOS_ENABLE_CUDA
  Kokkos::View<char*, Kokkos::DefaultExecutionSpace::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(data, bytes);
  Kokkos::deep_copy(Kokkos::DefaultExecutionSpace(), v, static_cast<char>(value));
  Kokkos::DefaultExecutionSpace().fence("pipebench::synthetic_activation");
#else
  (void)data;
  (void)bytes;
  (void)value;
#endif
}

bool device_timeline_begin() {
#ifdef KOKKOS_ENABLE_CUDA
  if (!device_build() || !Kokkos::is_initialized()) return false;
  EventLog& log = event_log();
  log.timeline = false;
  fold(log);  // the kernels before: their events are done by now
  if (!log.reference && cudaEventCreate(&log.reference) != cudaSuccess) return false;
  if (cudaEventRecord(log.reference, Kokkos::Cuda().cuda_stream()) != cudaSuccess ||
      cudaEventSynchronize(log.reference) != cudaSuccess)
    return false;
  log.timeline = true;
  log.lost = false;
  log.count = 0;
  return true;
#else
  return false;
#endif
}

std::size_t device_timeline_count() {
#ifdef KOKKOS_ENABLE_CUDA
  const EventLog& log = event_log();
  return log.timeline ? log.count : 0;
#else
  return 0;
#endif
}

std::vector<Interval> device_timeline_take() {
  std::vector<Interval> out;
#ifdef KOKKOS_ENABLE_CUDA
  EventLog& log = event_log();
  if (!log.timeline) return out;
  log.timeline = false;
  if (log.lost || log.count > log.pending.size()) return out;
  if (log.count > 0 && cudaEventSynchronize(log.pending[log.count - 1].second) != cudaSuccess) return out;
  out.reserve(log.count);
  for (std::size_t i = 0; i < log.count; ++i) {
    float a = 0, b = 0;
    if (cudaEventElapsedTime(&a, log.reference, log.pending[i].first) != cudaSuccess ||
        cudaEventElapsedTime(&b, log.reference, log.pending[i].second) != cudaSuccess)
      return {};
    out.push_back({1e-3 * static_cast<double>(a), 1e-3 * static_cast<double>(b)});
  }
#endif
  return out;
}

DeviceTimes take_device_times() {
#ifdef KOKKOS_ENABLE_CUDA
  EventLog& log = event_log();
  fold(log);
  const DeviceTimes t = log.folded;
  log.folded = {};
  return t;
#else
  return {};
#endif
}

}  // namespace pipebench::kernels
