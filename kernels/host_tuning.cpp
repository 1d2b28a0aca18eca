#include "kernels/host_tuning.hpp"

#include "kernels/transformer_workload.hpp"  // KokkosSession

#include <Kokkos_Core.hpp>
#include <dlfcn.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <climits>

#if defined(KOKKOS_ENABLE_OPENMP)
#include <omp.h>
#endif

namespace pipebench::kernels {

bool set_blas_threads(int threads) {
  using set_fn = void (*)(int);
  // Looked up at run time: the BLAS is a Debian alternative (OpenBLAS, reference BLAS, BLIS ...).
  auto set = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (!set) return false;
  set(threads);
  return true;
}

int blas_threads() {
  using get_fn = int (*)();
  static const auto get = reinterpret_cast<get_fn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : 0;
}

int host_compute_threads() {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  return 0;
#elif defined(KOKKOS_ENABLE_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

double blas_buffer_bytes(int threads) {
  constexpr double openblas_buffer = (32 << 22) + 4096;  // BUFFER_SIZE + FIXED_PAGESIZE (x86-64)
  const int host = host_compute_threads();
  if (host == 0 || !dlsym(RTLD_DEFAULT, "openblas_get_num_threads")) return 0;
  return std::max(threads, host) * openblas_buffer;
}

bool retain_freed_host_memory() {
#if defined(__GLIBC__)
  // Serve every size from the heap (no per-allocation mmap) and never trim the heap back.
  return mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
#else
  return false;
#endif
}

KokkosSession::KokkosSession(int blas_threads) {
  if (!Kokkos::is_initialized()) {
    Kokkos::initialize();
    owner_ = true;
  }
  set_blas_threads(blas_threads);
  retain_freed_host_memory();
}

KokkosSession::~KokkosSession() {
  if (owner_ && Kokkos::is_initialized()) Kokkos::finalize();
}

}  // namespace pipebench::kernels
