# Expert parallelism of the MoE layer against one rank holding every expert (tests/mpi/test_moe_ep.cpp).
pipebench_mpi_test(moe_ep SOURCES mpi/test_moe_ep.cpp NP 2 4 LIBS pipebench::bench TIMEOUT 240)
# The MoE transformer on real ranks against the whole model on one rank (tests/mpi/test_moe_model.cpp).
pipebench_mpi_test(moe_model SOURCES mpi/test_moe_model.cpp NP 2 4 8 LIBS pipebench::bench TIMEOUT 600)
