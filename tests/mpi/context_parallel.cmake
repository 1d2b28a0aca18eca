# Context parallelism against the whole model on one rank (tests/mpi/test_context_parallel.cpp).
pipebench_mpi_test(context_parallel SOURCES mpi/test_context_parallel.cpp NP 2 4 8 LIBS pipebench::bench TIMEOUT 300)
# Figures for docs/transformer.md "Context parallelism" (label perf: timings on a shared machine).
pipebench_mpi_test(context_parallel_figures SOURCES mpi/perf_context_parallel.cpp NP 4 LIBS pipebench::bench TIMEOUT 600)
set_tests_properties(mpi.context_parallel_figures.np4 PROPERTIES LABELS "mpi;perf")
