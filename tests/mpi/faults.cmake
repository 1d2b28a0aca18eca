# Fault tests of `pipebench run` (tests/mpi/faults.sh): stopped ranks and a killed writer end the job
# with one message naming the rank, the file stays readable, --resume runs what is missing.
foreach(_case stop_between stop_root_between stop_in_step stop_root_in_step kill_writer stop_after_sweep)
  add_test(NAME mpi.faults.${_case}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/faults.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:pipebench>
                   ${CMAKE_CURRENT_BINARY_DIR}/mpi_work/faults_${_case} ${_case})
  set_tests_properties(mpi.faults.${_case} PROPERTIES LABELS mpi PROCESSORS 4 TIMEOUT 60)
endforeach()
