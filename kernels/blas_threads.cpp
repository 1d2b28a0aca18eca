#include "kernels/blas_threads.hpp"

#include <dlfcn.h>

namespace pipebench::kernels {

bool set_blas_threads(int threads) {
  using set_fn = void (*)(int);
  // Looked up at run time: the BLAS is a Debian alternative (OpenBLAS, reference BLAS, BLIS ...).
  auto set = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (!set) return false;
  set(threads);
  return true;
}

}  // namespace pipebench::kernels
