#pragma once

namespace pipebench::kernels {

// Sets the number of threads of the host BLAS behind KokkosKernels, where it has a runtime control
// (OpenBLAS: openblas_set_num_threads). OPENBLAS_NUM_THREADS is only read when the library loads, so a
// program that runs one rank per core, or a benchmark of one core, calls this instead. Returns false
// when the BLAS has no such control.
bool set_blas_threads(int threads);

}  // namespace pipebench::kernels
