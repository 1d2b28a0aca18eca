# pipebench comm's loops on the NCCL backend (docs/comm-bench.md), where it is built: skips without a GPU.
if(PIPEBENCH_HAVE_NCCL)
  pipebench_mpi_test(comm_bench_nccl SOURCES mpi/test_comm_bench_nccl.cpp NP 1 2 LIBS pipebench::comm TIMEOUT 120)
  set_tests_properties(mpi.comm_bench_nccl.np1 mpi.comm_bench_nccl.np2 PROPERTIES LABELS "mpi;gpu"
                       SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
endif()
