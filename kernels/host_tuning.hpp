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

// Makes glibc's malloc keep freed memory for reuse instead of returning it to the kernel. Host
// buffers of tens of MB (the stashes before kernels/view_cache.hpp kept them; still the MPI messages,
// the balance calibration, KokkosKernels' own) would otherwise be mmapped and munmapped each time, and
// first-touch page faults then cost about 8 % of a block's time on one core. Equivalent to
// GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=<huge>.
// Returns false where the C library has no such control.
bool retain_freed_host_memory();

}  // namespace pipebench::kernels
