# topology/: communicators and node detection on real ranks.
pipebench_mpi_test(topology SOURCES mpi/test_topology_mpi.cpp NP 2 4 8 LIBS pipebench::topology TIMEOUT 60)
