#pragma once
// The device behind the kernels: what the Kokkos install runs on, whether it can run here, and the
// synthetic workload's device work (a timed spin kernel). Host builds answer "no device" and never
// include a CUDA header; only kernels/device.cpp does, and only in a CUDA build.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pipebench::kernels {

struct DeviceInfo {
  bool device_build = false;  // Kokkos' default execution space runs on a device (CUDA)
  std::string space;          // its name, e.g. "Cuda" or "Serial"
  int count = 0;              // usable devices on this node (device builds only)
  std::string error;          // why none is usable, when count == 0
};

// Asks the CUDA runtime (no context, no allocation) in a CUDA build; a host build answers at once.
DeviceInfo device_info();

// True in a build whose default execution space is a device.
bool device_build();

// A one-thread kernel on the default execution space that loops on the device clock (%globaltimer)
// until `seconds` have passed on the device, then waits for it: real launches on the compute stream.
// A CUDA event is recorded on that stream before and after each kernel; they are read only by
// take_device_times(), so timing adds no host synchronisation per kernel.
// While it runs, `progress` (if set) is called about every `interval` seconds, the host sleeping in
// between, so that messages in flight move on (kernels/workload.hpp set_progress).
// Needs Kokkos initialised (KokkosSession); false (nothing done) in a host build or without Kokkos.
bool device_spin(double seconds, const std::function<void()>& progress = {}, double interval = 0);

// `bytes` of the default memory space (device memory in a device build), freed when the last owner
// lets go; null in a host build or without Kokkos initialised (then the caller uses host memory).
// `label` names the allocation in Kokkos' tools.
std::shared_ptr<char> device_bytes(std::size_t bytes, const char* label = "pipebench::synthetic_activation");
// Writes `value` to every byte of device memory from device_bytes() with a kernel, and waits for it.
void device_fill(char* data, std::size_t bytes, int value);

// The spin kernels since the previous call, timed by their CUDA events (resolved here, all at once):
// how many, their total device time and the longest one (seconds). All zero in a host build.
struct DeviceTimes {
  int kernels = 0;
  double seconds = 0;
  double longest = 0;
};
DeviceTimes take_device_times();

// The spin kernels of one step on the host clock, for the per-action records. device_timeline_begin()
// records a reference event on the compute stream and waits for it: the caller reads its own clock
// right after, which is the reference's host time (the stream is idle then, within microseconds).
// device_timeline_count() is how many spin kernels were launched since. device_timeline_take() ends the
// timeline and resolves its kernels' events at once (one wait, for the last): per kernel in launch
// order, start and end in seconds after the reference. False / empty in a host build, without Kokkos,
// or when a step launched so many kernels that their events were folded (then the caller keeps its
// own times).
bool device_timeline_begin();
std::size_t device_timeline_count();
struct Interval {
  double start = 0, end = 0;
};
std::vector<Interval> device_timeline_take();

}  // namespace pipebench::kernels
