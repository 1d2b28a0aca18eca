# MPI tests: pipebench_mpi_test(<name> SOURCES mpi/<file>.cpp NP <ranks...> LIBS <targets>)
pipebench_mpi_test(smoke SOURCES mpi/test_smoke.cpp NP 2 4)
