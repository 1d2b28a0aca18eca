pipebench_mpi_test(run SOURCES mpi/test_run.cpp NP 2 4 8 LIBS pipebench::bench TIMEOUT 240)
