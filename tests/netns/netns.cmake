# Multi-node tests on emulated nodes (tests/netns/cluster.sh, label netns, issue 27): network namespaces
# made by jobs/netns-cluster.sh, one cluster per case. jobs/test.sh runs `ctest -L netns` after the
# release suite with PIPEBENCH_NETNS_TESTS=1 (they time shaped links, so they run alone and one at a
# time); in any other run, or where namespaces cannot be made, each is skipped with one line.
# The last argument is the case's own deadline, 20 s under ctest's TIMEOUT: CMake 3.25 ends a test at
# its TIMEOUT with SIGKILL, which leaves the cluster up, so the case ends itself first and removes it.
# The rehearsal runs 42 commands (2 comm, then 5 rounds of 4 runs on each machine, interleaved): 403 s
# at load average 5-8 (docs/netns.md), so it has 10 minutes.
foreach(_case placement comm clock bubble nodekill partition finalize rehearsal rehearsal_plan slurm)
  set(_timeout 300)
  if(_case STREQUAL "rehearsal")
    set(_timeout 600)
  endif()
  math(EXPR _deadline "${_timeout} - 20")
  add_test(NAME netns.${_case}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/netns/cluster.sh $<TARGET_FILE:pipebench> ${PROJECT_SOURCE_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/netns_work/${_case} ${_case} ${_deadline})
  set_tests_properties(netns.${_case} PROPERTIES LABELS netns TIMEOUT ${_timeout} SKIP_RETURN_CODE 77 RUN_SERIAL ON)
endforeach()
add_test(NAME netns.script
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/netns/cluster.sh $<TARGET_FILE:pipebench> ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/netns_work/script script 40)
set_tests_properties(netns.script PROPERTIES LABELS netns TIMEOUT 60 SKIP_RETURN_CODE 77 RUN_SERIAL ON)
set_tests_properties(netns.rehearsal PROPERTIES FIXTURES_SETUP netns_rehearsal)
set_tests_properties(netns.rehearsal_plan PROPERTIES FIXTURES_REQUIRED netns_rehearsal)
