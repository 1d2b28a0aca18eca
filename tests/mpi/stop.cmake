# Stop tests of `pipebench run` (tests/mpi/stop.sh): SIGUSR1/SIGTERM stop every rank at the same
# point, exit code 75, the file keeps what was written, --append --resume runs exactly the rest.
foreach(_case usr1_root_between usr1_rank_between term_in_step term_root_in_step launcher)
  add_test(NAME mpi.stop.${_case}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/stop.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:pipebench>
                   ${CMAKE_CURRENT_BINARY_DIR}/mpi_work/stop_${_case} ${_case})
  set_tests_properties(mpi.stop.${_case} PROPERTIES LABELS mpi PROCESSORS 4 TIMEOUT 90)
endforeach()

# `pipebench rerun` (tests/mpi/rerun.sh): the stored configuration repeated with the same key.
add_test(NAME mpi.rerun COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/rerun.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:pipebench>
                                ${CMAKE_CURRENT_BINARY_DIR}/mpi_work/rerun ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report)
set_tests_properties(mpi.rerun PROPERTIES LABELS mpi PROCESSORS 4 TIMEOUT 90 FIXTURES_REQUIRED report_files)

# Issue 27: a stop signal inside one long action ends the job within --timeout (tests/mpi/stop_deadline.sh).
add_test(NAME mpi.stop.deadline COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/stop_deadline.sh ${MPIEXEC_EXECUTABLE}
                                        $<TARGET_FILE:pipebench> ${CMAKE_CURRENT_BINARY_DIR}/mpi_work/stop_deadline)
set_tests_properties(mpi.stop.deadline PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 60)
add_test(NAME mpi.stop.comm COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/stop_deadline.sh ${MPIEXEC_EXECUTABLE}
                                    $<TARGET_FILE:pipebench> ${CMAKE_CURRENT_BINARY_DIR}/mpi_work/stop_comm comm)
set_tests_properties(mpi.stop.comm PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 60)

# Issue 27: the memory check counts ulimit -v (tests/mpi/memory_limit.sh). Not under a sanitizer: ASan
# reserves terabytes of shadow address space at start, which no ulimit -v that the test sets allows.
if(NOT PIPEBENCH_SANITIZE)
  add_test(NAME mpi.memory_limit COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/memory_limit.sh ${MPIEXEC_EXECUTABLE}
                                         $<TARGET_FILE:pipebench> ${CMAKE_CURRENT_BINARY_DIR}/mpi_work/memory_limit)
  set_tests_properties(mpi.memory_limit PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 180)
endif()

# Issue 26: --repeats visit the sweep round-robin (or consecutively), and a stop inside an interleaved
# sweep resumes with exactly the configurations not written (tests/mpi/repeat_order.sh).
foreach(_case order resume_last resume_first)
  add_test(NAME mpi.repeat_order.${_case}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/repeat_order.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:pipebench>
                   ${CMAKE_CURRENT_BINARY_DIR}/mpi_work/repeat_order_${_case} ${_case})
  set_tests_properties(mpi.repeat_order.${_case} PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 120)
endforeach()
