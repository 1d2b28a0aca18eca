# Every row of the schedule catalog generated, simulated, planned and run (tests/mpi/test_catalog.cpp).
pipebench_mpi_test(catalog SOURCES mpi/test_catalog.cpp NP 2 LIBS pipebench::bench)
