# Issue 26: per-rank Kineto-style traces (Holistic Trace Analysis) and Chakra execution traces
# (ASTRA-sim) of a measured ZB-H1 and DualPipeV run on 4 ranks, checked against the schedule; the Chakra
# files decoded with `protoc --decode` (tests/cli/traces_check.py). Skipped (77) without protoc.
add_test(NAME cli.run_traces_kineto_chakra
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/traces_check.py $<TARGET_FILE:pipebench>
                 ${MPIEXEC_EXECUTABLE} ${CMAKE_CURRENT_BINARY_DIR}/cli_work/traces zb-h1 dualpipev)
set_tests_properties(cli.run_traces_kineto_chakra PROPERTIES LABELS mpi PROCESSORS 4 TIMEOUT 300 SKIP_RETURN_CODE 77)

# Bad paths are refused before the run, one line each, exit 2: a prefix whose folder does not exist,
# and an existing rank file without --force.
pipebench_cli_test(run_trace_kineto_no_folder RC 2
  MATCH "^pipebench: error: --trace-kineto .*no/such/dir/k.0.json"
  ARGS run --trace-kineto no/such/dir/k --steps 1)
pipebench_cli_test(run_trace_chakra_no_folder RC 2
  MATCH "^pipebench: error: --trace-chakra .*no/such/dir/c.0.et"
  ARGS run --trace-chakra no/such/dir/c --steps 1)

# Issue 26: the ranks' CPU affinity decides like for like (a taskset run differs from a full one), and
# the job warm-up before the first configuration (tests/cli/like_for_like.sh).
foreach(_case affinity warmup)
  add_test(NAME cli.like_for_like_${_case}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/like_for_like.sh $<TARGET_FILE:pipebench> ${MPIEXEC_EXECUTABLE}
                   ${CMAKE_CURRENT_BINARY_DIR}/cli_work/like_for_like_${_case} ${_case})
  set_tests_properties(cli.like_for_like_${_case} PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 180 SKIP_RETURN_CODE 77)
endforeach()
pipebench_cli_test(run_job_warmup_negative RC 2 MATCH "^pipebench: error: --job-warmup '-1' is not allowed: expected [^\n]*\n$"
  ARGS run --job-warmup -1)
