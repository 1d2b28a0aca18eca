pipebench_mpi_test(run SOURCES mpi/test_run.cpp NP 2 4 8 LIBS pipebench::bench TIMEOUT 240)
pipebench_mpi_test(transformer_pipeline SOURCES mpi/test_transformer_pipeline.cpp NP 2 4 LIBS pipebench::bench TIMEOUT 240)
pipebench_mpi_test(clock_sync SOURCES mpi/test_clock_sync.cpp NP 2 4 LIBS pipebench::bench)
