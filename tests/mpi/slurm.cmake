# Slurm tests (tests/slurm/jobs.sh, label slurm): the batch scripts of jobs/slurm/ on a real Slurm
# controller. jobs/test.sh starts one (jobs/slurm/ci-cluster.sh start) and runs `ctest -L slurm`;
# without a cluster (SLURM_CONF unset or not answering) each test is skipped with one line.
foreach(_case run sweep preempt refuse comm)
  add_test(NAME slurm.${_case}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/slurm/jobs.sh $<TARGET_FILE:pipebench> ${PROJECT_SOURCE_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/slurm_work/${_case} ${_case})
  set_tests_properties(slurm.${_case} PROPERTIES LABELS slurm TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()

# Without a cluster: every batch script run outside Slurm says so, exit code 2.
add_test(NAME slurm.outside COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/slurm/jobs.sh $<TARGET_FILE:pipebench> ${PROJECT_SOURCE_DIR}
                                    ${CMAKE_CURRENT_BINARY_DIR}/slurm_work/outside outside)
set_tests_properties(slurm.outside PROPERTIES LABELS unit TIMEOUT 30)
