// kernels/device.hpp: what a host build answers, and on a device the spin kernel's length on the
// device clock, read back from its CUDA events (jobs/gpu-check.sh runs these on the GPU).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include <Kokkos_Core.hpp>

#include "kernels/device.hpp"

namespace pipebench::kernels {
namespace {

TEST(Device, InfoMatchesTheBuild) {
  const DeviceInfo d = device_info();
  EXPECT_EQ(d.device_build, device_build());
  EXPECT_FALSE(d.space.empty());
  if (d.device_build) {
    EXPECT_EQ(d.count > 0, d.error.empty()) << d.error;  // a reason exactly when no device is usable
    return;
  }
  // A host build has no device work: the synthetic spin stays on the host.
  EXPECT_EQ(d.count, 0);
  EXPECT_FALSE(device_spin(1e-3));
  const DeviceTimes t = take_device_times();
  EXPECT_EQ(t.kernels, 0);
  EXPECT_EQ(t.seconds, 0);
}

TEST(Device, SpinKernelRunsItsTimeOnTheDevice) {
  const DeviceInfo d = device_info();
  if (!d.device_build || d.count < 1) GTEST_SKIP() << "no usable device (" << d.space << ": " << d.error << ")";
  take_device_times();  // forget earlier kernels
  constexpr int n = 20;
  constexpr double each = 2e-3;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) ASSERT_TRUE(device_spin(each));
  const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const DeviceTimes t = take_device_times();
  EXPECT_EQ(t.kernels, n);
  // Each kernel spins at least its time on %globaltimer; the events around it cannot see less
  // (their resolution is about half a microsecond).
  EXPECT_GE(t.seconds, n * each * 0.999);
  EXPECT_GE(t.longest, each * 0.999);
  // The host waited for each kernel before launching the next.
  EXPECT_GE(host, t.seconds * 0.999);
  EXPECT_EQ(take_device_times().kernels, 0);
  std::printf("# device spin: %d kernels of %.3f ms: events %.3f ms in all (longest %.3f ms), host %.3f ms\n", n,
              each * 1e3, t.seconds * 1e3, t.longest * 1e3, host * 1e3);
}

// The step timeline the executor puts into its records (bench/run/executor.cpp): per spin kernel, its
// events relative to a reference the host reads its clock at.
TEST(Device, TimelineGivesEachSpinKernelItsEventsOnTheHostClock) {
  if (!device_build()) {
    EXPECT_FALSE(device_timeline_begin());
    EXPECT_EQ(device_timeline_count(), 0u);
    EXPECT_TRUE(device_timeline_take().empty());
    return;
  }
  if (device_info().count < 1) GTEST_SKIP() << "no usable device";
  ASSERT_TRUE(device_timeline_begin());
  const auto ref = std::chrono::steady_clock::now();
  constexpr double each = 2e-3;
  ASSERT_TRUE(device_spin(each));
  std::this_thread::sleep_for(std::chrono::milliseconds(3));  // a gap the timeline must show
  ASSERT_TRUE(device_spin(each));
  const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - ref).count();
  EXPECT_EQ(device_timeline_count(), 2u);
  const std::vector<Interval> k = device_timeline_take();
  ASSERT_EQ(k.size(), 2u);
  EXPECT_GE(k[0].start, 0);
  EXPECT_GE(k[0].end - k[0].start, each * 0.999);
  EXPECT_GE(k[1].start - k[0].end, 3e-3 * 0.999);
  EXPECT_GE(k[1].end - k[1].start, each * 0.999);
  EXPECT_LE(k[1].end, host + 1e-3);  // on the host clock within a millisecond
  EXPECT_EQ(device_timeline_count(), 0u);  // ended
  std::printf("# device timeline: kernels at %.3f-%.3f and %.3f-%.3f ms after the reference, host %.3f ms\n",
              k[0].start * 1e3, k[0].end * 1e3, k[1].start * 1e3, k[1].end * 1e3, host * 1e3);
}

TEST(Device, ActivationMemoryIsDeviceMemoryOnADevice) {
  std::shared_ptr<char> p = device_bytes(4096);
  if (!device_build()) {
    EXPECT_EQ(p, nullptr);  // the synthetic workload then holds host memory
    return;
  }
  if (device_info().count < 1) GTEST_SKIP() << "no usable device";
  ASSERT_NE(p, nullptr);
  device_fill(p.get(), 4096, 0x5a);
  using Space = Kokkos::DefaultExecutionSpace::memory_space;
  Kokkos::View<char*, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(p.get(), 4096);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  int wrong = 0;
  for (int i = 0; i < 4096; ++i) wrong += h(i) != 0x5a;
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace pipebench::kernels
