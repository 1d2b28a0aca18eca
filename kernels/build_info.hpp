#pragma once
// What the kernels were built with, for `pipebench info` and the run metadata.
#include <string>

namespace pipebench::kernels {

std::string kokkos_version();          // e.g. "3.4.1"
std::string kokkos_backends();         // execution spaces enabled at build time, default first
std::string kokkoskernels_version();
// The BLAS behind KokkosKernels: for OpenBLAS its build config and the core kernel it picked at run
// time (a VM may make it pick a slow generic kernel: see docs/blas.md and OPENBLAS_CORETYPE).
std::string blas_description();

}  // namespace pipebench::kernels
