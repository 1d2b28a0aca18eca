# The device check of `run` (docs/gpu.md "Bad input"), as this build can show it: one line, exit code 2,
# before the output file is checked or anything allocated.
if(NOT Kokkos_DEVICES MATCHES "CUDA|HIP|SYCL")
  if(PIPEBENCH_HAVE_NCCL)
    set(_why "--backend nccl needs the kernels on a CUDA device, but this pipebench's Kokkos runs on (Serial|OpenMP)")
  else()
    set(_why "--backend nccl: this pipebench was built without NCCL .* use --backend mpi")
  endif()
  pipebench_mpirun_test(run_device_nccl_on_host NP 1 RC 2 ONCE "pipebench: error:" MATCH "${_why}"
    ARGS --backend nccl --workload transformer -o device_never.h5)
endif()
pipebench_mpirun_test(run_device_backend_names NP 1 RC 2 ONCE "pipebench: error:"
  MATCH "--backend 'gloo' is not allowed: mpi or nccl" ARGS --backend gloo -o device_never.h5)
