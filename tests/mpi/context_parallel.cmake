# Context parallelism against the whole model on one rank (tests/mpi/test_context_parallel.cpp).
pipebench_mpi_test(context_parallel SOURCES mpi/test_context_parallel.cpp NP 2 4 8 LIBS pipebench::bench TIMEOUT 300)
