# Fault tests of `pipebench run` (tests/mpi/faults.sh): stopped ranks and a killed writer end the job
# with one message naming the rank, the file stays readable, --resume runs what is missing.
foreach(_case stop_between stop_root_between stop_in_step stop_root_in_step kill_writer stop_after_sweep)
  add_test(NAME mpi.faults.${_case}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/faults.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:pipebench>
                   ${CMAKE_CURRENT_BINARY_DIR}/mpi_work/faults_${_case} ${_case})
  set_tests_properties(mpi.faults.${_case} PROPERTIES LABELS mpi PROCESSORS 4 TIMEOUT 60)
endforeach()

# A poll interval far above --timeout must not stretch the wait (issue 8, item 2: this never ended).
# `run` may also refuse such a --poll-us up front; either way the job ends, with one message.
pipebench_mpirun_test(run_poll_longer_than_timeout NP 2 RC nonzero ONCE "pipebench: error:"
  MATCH "(rank 1 \\(host [^)]+\\) did not reach the start of step 0 of configuration 1 within --timeout 3 s|--poll-us)"
  ARGS --schedule 1f1b -m 4 ${_quick} -o p.h5 --timeout 3s
       --poll-us 100000000 --inject-failure 1:1:0:hang)
