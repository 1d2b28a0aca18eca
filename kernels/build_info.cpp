#include "kernels/build_info.hpp"

#include <dlfcn.h>

#include <Kokkos_Core.hpp>
#include <KokkosKernels_config.h>

#include "kernels/gemm16.hpp"

namespace pipebench::kernels {

std::string kokkos_version() {
#if defined(KOKKOS_VERSION)
  constexpr int v = KOKKOS_VERSION;  // major*10000 + minor*100 + patch
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
#else
  return "unknown";
#endif
}

std::string kokkos_backends() {
  std::string s = std::string("default ") + Kokkos::DefaultExecutionSpace::name();
  std::string enabled;
  auto add = [&](const char* n) { enabled += enabled.empty() ? n : std::string(", ") + n; };
#ifdef KOKKOS_ENABLE_SERIAL
  add("Serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  add("OpenMP");
#endif
#ifdef KOKKOS_ENABLE_THREADS
  add("Threads");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  add("Cuda");
#endif
#ifdef KOKKOS_ENABLE_HIP
  add("HIP");
#endif
#ifdef KOKKOS_ENABLE_SYCL
  add("SYCL");
#endif
  return s + " (enabled: " + enabled + ")";
}

std::string kokkoskernels_version() {
#if defined(KOKKOSKERNELS_VERSION)
  constexpr int v = KOKKOSKERNELS_VERSION;
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
#else
  // Trilinos 13.2's KokkosKernels carries no version macro of its own; it ships with Kokkos.
  return "bundled with Kokkos " + kokkos_version();
#endif
}

std::string blas_description() {
  std::string tpl;
#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
  tpl = "cuBLAS + ";
#endif
#if !defined(KOKKOSKERNELS_ENABLE_TPL_BLAS) && !defined(KOKKOSKERNELS_ENABLE_TPL_MKL)
  // A device build: products of device views go to cuBLAS; only host views would use native kernels.
  return tpl.empty() ? "none (KokkosKernels native kernels)" : "cuBLAS on the device (no host BLAS)";
#endif
  // Ask the library that really provides sgemm_ in this process (libblas.so.3 is a Debian alternative,
  // so the path tells OpenBLAS from the reference BLAS). If nothing linked it yet, load it the way
  // KokkosKernels will.
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  void* loaded = nullptr;
  if (!sgemm && (loaded = dlopen("libblas.so.3", RTLD_LAZY | RTLD_LOCAL)) != nullptr) sgemm = dlsym(loaded, "sgemm_");
  std::string path = "unknown library";
  Dl_info info{};
  if (sgemm && dladdr(sgemm, &info) && info.dli_fname) path = info.dli_fname;
  // Ask that very library: OpenBLAS may also be loaded through another one (liblapack.so.3) while
  // sgemm_ comes from the reference BLAS, and a global lookup would then name the wrong one.
  void* handle = sgemm && info.dli_fname ? dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
  if (!handle) handle = loaded ? loaded : RTLD_DEFAULT;
  using str_fn = char* (*)();
  auto corename = reinterpret_cast<str_fn>(dlsym(handle, "openblas_get_corename"));
  auto config = reinterpret_cast<str_fn>(dlsym(handle, "openblas_get_config"));
  if (corename && config) {
    using int_fn = int (*)();
    auto threads = reinterpret_cast<int_fn>(dlsym(handle, "openblas_get_num_threads"));
    std::string s = tpl + "OpenBLAS (" + config() + "), core " + corename();
    if (threads) s += ", " + std::to_string(threads()) + " thread(s)";
    return s + ", " + path;
  }
  if (dlsym(RTLD_DEFAULT, "mkl_get_version")) return tpl + "Intel MKL";
  if (dlsym(RTLD_DEFAULT, "bli_info_get_version_str")) return tpl + "BLIS";
  return tpl + "reference BLAS or unknown, " + path + " (about 30x slower than OpenBLAS: install libopenblas0-pthread)";
}

std::string precision_paths() {
  const std::string space = Kokkos::DefaultExecutionSpace::name();
  const bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  return "fp32, fp64 on " + space +
         (host ? "; bf16, fp16: 16-bit weights and messages, fp32 compute (host)"
               : "; bf16, fp16 refused (16-bit storage runs on host builds only)") +
         "; 16-bit products (kernels/gemm16.hpp): " + gemm16_path();
}

}  // namespace pipebench::kernels
