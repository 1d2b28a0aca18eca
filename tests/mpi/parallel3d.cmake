pipebench_mpi_test(parallel3d SOURCES mpi/test_parallel3d.cpp NP 2 4 8 LIBS pipebench::bench TIMEOUT 240)
