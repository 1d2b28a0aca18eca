# comm/: the MPI backend on real ranks; the NCCL backend where it is built (skips without a GPU).
pipebench_mpi_test(comm SOURCES mpi/test_comm_mpi.cpp NP 2 4 8 LIBS pipebench::comm TIMEOUT 60)
# Figures for docs/comm.md (label perf; no timing assertion beyond the CPU bound of the default policy).
pipebench_mpi_test(comm_wait_cost SOURCES mpi/perf_comm_wait.cpp NP 4 LIBS pipebench::comm TIMEOUT 60)
set_tests_properties(mpi.comm_wait_cost.np4 PROPERTIES LABELS "mpi;perf")
if(PIPEBENCH_HAVE_NCCL)
  pipebench_mpi_test(comm_nccl SOURCES mpi/test_comm_nccl.cpp NP 1 2 LIBS pipebench::comm TIMEOUT 120)
  set_tests_properties(mpi.comm_nccl.np1 mpi.comm_nccl.np2 PROPERTIES LABELS "mpi;gpu"
                       SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
endif()
