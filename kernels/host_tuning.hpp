#pragma once
// Process-wide settings of the host libraries under the kernels. Opt-in: a program (benchmark, run)
// calls them once at start-up; the library never does.

namespace pipebench::kernels {

// Sets the number of threads of the host BLAS behind KokkosKernels where it has a runtime control
// (OpenBLAS: openblas_set_num_threads). OPENBLAS_NUM_THREADS is only read when the library loads, so a
// program that runs one rank per core, or a benchmark of one core, calls this instead. Returns false
// when the BLAS has no such control.
bool set_blas_threads(int threads);

// The number of threads the host BLAS runs per call where it says (OpenBLAS: openblas_get_num_threads),
// 0 where it does not.
int blas_threads();

// Threads of this build that run host kernels and call the host BLAS at the same time: OpenMP's
// (each product split over them calls the BLAS with one thread, kernels/gemm.hpp), 1 on Serial, 0 in
// a device build, whose products go to the device's BLAS. Safe to call before Kokkos starts.
int host_compute_threads();

// Bytes the host BLAS takes for itself, beyond the operands, when `threads` threads of it
// (--blas-threads) run the products of this build: OpenBLAS gives every thread that computes a part
// of a product a buffer of BUFFER_SIZE (32 << 22 bytes = 128 MiB on x86-64, common_x86_64.h) plus a
// page, allocated at that thread's first product, and its allocator (driver/others/memory.c,
// blas_memory_alloc) retries a failed allocation forever: under ulimit -v a run without room for
// them hung at its first product (issue 27; seen as malloc(134221824) in OpenBLAS 0.3.21). Counted
// per thread that may compute: max(threads, host_compute_threads()); 0 for another BLAS and in a
// device build.
double blas_buffer_bytes(int threads);

// Makes glibc's malloc keep freed memory for reuse instead of returning it to the kernel. Host
// buffers of tens of MB (the stashes before kernels/view_cache.hpp kept them; still the MPI messages,
// the balance calibration, KokkosKernels' own) would otherwise be mmapped and munmapped each time, and
// first-touch page faults then cost about 8 % of a block's time on one core. Equivalent to
// GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=<huge>.
// Returns false where the C library has no such control.
bool retain_freed_host_memory();

}  // namespace pipebench::kernels
