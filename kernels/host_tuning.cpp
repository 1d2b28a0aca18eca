#include "kernels/host_tuning.hpp"

#include <dlfcn.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <climits>

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

bool retain_freed_host_memory() {
#if defined(__GLIBC__)
  // Serve every size from the heap (no per-allocation mmap) and never trim the heap back.
  return mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
#else
  return false;
#endif
}

}  // namespace pipebench::kernels
