pipebench_mpi_test(run SOURCES mpi/test_run.cpp NP 2 4 8 LIBS pipebench::bench TIMEOUT 240)
pipebench_mpi_test(transformer_pipeline SOURCES mpi/test_transformer_pipeline.cpp NP 2 4 LIBS pipebench::bench TIMEOUT 240)
pipebench_mpi_test(clock_sync SOURCES mpi/test_clock_sync.cpp NP 2 4 LIBS pipebench::bench)
pipebench_mpi_test(expert_traffic SOURCES mpi/test_expert_traffic.cpp NP 4 LIBS pipebench::bench TIMEOUT 240)
