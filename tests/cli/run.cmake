# `pipebench run` under mpiexec, as a user starts it: bad input fails on every rank before any run with
# one message and exit code 2; a rank that dies or hangs stops the job within the timeout, naming it,
# and the runs already written stay readable.
function(pipebench_mpirun_test name)
  cmake_parse_arguments(T "" "NP;RC;MATCH;ONCE;THEN_MATCH" "ARGS;THEN" ${ARGN})
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} -DEXE=${MPIEXEC_EXECUTABLE}
                   "-DARGS=${MPIEXEC_NUMPROC_FLAG};${T_NP};$<TARGET_FILE:pipebench>;run;${T_ARGS}" -DRC=${T_RC}
                   "-DMATCH=${T_MATCH}" "-DONCE=${T_ONCE}" -DTHEN_EXE=$<TARGET_FILE:pipebench> "-DTHEN_ARGS=${T_THEN}"
                   "-DTHEN_MATCH=${T_THEN_MATCH}" -DFRESH=1 -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/cli_work/run_${name}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.cmake)
  set_tests_properties(cli.${name} PROPERTIES LABELS mpi PROCESSORS ${T_NP} TIMEOUT 60)
endfunction()

set(_quick --tf 500us --tb 1ms --tw 500us --warmup 0 --steps 1)
pipebench_mpirun_test(run_wrong_world_size NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "--mapping 2x3x1 needs t\\*p\\*d = 6 ranks, but the job has 4" ARGS --mapping 2x3x1 -o never.h5)
pipebench_mpirun_test(run_bad_microbatches NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "configuration dualpipe 1x4x1 m=4: schedule 'dualpipe' needs m >= 2p = 8" ARGS --schedule dualpipe -m 4 -o never.h5)
pipebench_mpirun_test(run_bad_v NP 2 RC 2 ONCE "pipebench: error:" MATCH "schedule '1f1b' has v = 1 chunks per rank; got v = 3"
  ARGS --schedule 1f1b -v 3 -o never.h5)
pipebench_mpirun_test(run_unwritable_output NP 2 RC 2 ONCE "pipebench: error:" MATCH "cannot create results file '/nonexistent/r.h5'"
  ARGS -o /nonexistent/r.h5)
pipebench_mpirun_test(run_time_without_unit NP 2 RC 2 ONCE "pipebench: error:" MATCH "--tf '2' needs a unit" ARGS --tf 2 -o never.h5)
pipebench_mpirun_test(run_rank_exits NP 4 RC nonzero MATCH "injected failure \\(exit\\) in configuration 2"
  ARGS --schedule 1f1b -m 4,8 ${_quick} -o died.h5 --inject-failure 2:2:0:exit
  THEN report died.h5 THEN_MATCH "1 complete run\\(s\\)\n.*\n.*\n.*\n +1  1f1b +1 +4 +1 +1 +4 ")
pipebench_mpirun_test(run_rank_hangs NP 4 RC nonzero ONCE "did not reach"
  MATCH "rank 0: rank\\(s\\) 1 of 4 did not reach the start of step 0 within 2 s"
  ARGS --schedule 1f1b -m 4,8 ${_quick} -o hung.h5 --inject-failure 1:2:0:hang --timeout 2s
  THEN report hung.h5 THEN_MATCH "1 complete run\\(s\\)")
