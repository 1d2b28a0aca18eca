#pragma once
// What the kernels were built with, for `pipebench info` and the run metadata.
#include <string>

namespace pipebench::kernels {

std::string kokkos_version();          // e.g. "3.4.1"
std::string kokkos_backends();         // execution spaces enabled at build time, default first
std::string kokkoskernels_version();
// Which path each --precision of the transformer takes in this build (docs/transformer.md "16-bit
// training state"): fp32 and fp64 native on the default execution space; bf16 and fp16 as 16-bit
// storage over fp32 compute on a host build, refused on a device build.
std::string precision_paths();
// The BLAS behind KokkosKernels: for OpenBLAS its build config and the core kernel it picked at run
// time (a VM may make it pick a slow generic kernel: see docs/blas.md and OPENBLAS_CORETYPE).
std::string blas_description();

}  // namespace pipebench::kernels
