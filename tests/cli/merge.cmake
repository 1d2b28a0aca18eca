# `pipebench merge` (tests/cli/merge.sh) on the files of report_fixtures (tests/cli/report.cmake).
add_test(NAME cli.merge COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/merge.sh $<TARGET_FILE:pipebench>
                                ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report ${CMAKE_CURRENT_BINARY_DIR}/cli_work/merge)
set_tests_properties(cli.merge PROPERTIES LABELS unit TIMEOUT 60 FIXTURES_REQUIRED report_files)

# Issue 27: a reading child that spins is given up within seconds and dies with its parent; merges
# and a run appending to one file at once lose nothing (tests/cli/results_guard.sh).
add_test(NAME cli.reader_child_guard
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/results_guard.sh $<TARGET_FILE:pipebench> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report ${CMAKE_CURRENT_BINARY_DIR}/cli_work/reader_guard reader)
set_tests_properties(cli.reader_child_guard PROPERTIES LABELS unit TIMEOUT 60 FIXTURES_REQUIRED report_files)
add_test(NAME cli.merge_concurrent
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/results_guard.sh $<TARGET_FILE:pipebench> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report ${CMAKE_CURRENT_BINARY_DIR}/cli_work/merge_concurrent merge)
set_tests_properties(cli.merge_concurrent PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 120)
add_test(NAME cli.append_slow_reading
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/results_guard.sh $<TARGET_FILE:pipebench> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report ${CMAKE_CURRENT_BINARY_DIR}/cli_work/append_slow append)
set_tests_properties(cli.append_slow_reading PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 120)
add_test(NAME cli.failed_writes
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/results_guard.sh $<TARGET_FILE:pipebench> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report ${CMAKE_CURRENT_BINARY_DIR}/cli_work/failed_writes writes)
set_tests_properties(cli.failed_writes PROPERTIES LABELS unit TIMEOUT 60 FIXTURES_REQUIRED report_files)

# Issue 27: /comm groups are read in the forked reader too: 200 byte-flipped files (fixed seeds) through
# report, compare, merge and plan --calibrate end in exit 0 or 2, never a crash, in bounded time and memory.
# Under the sanitizers the first 50 of those seeds: the 200 took 189 s of the ASan run (36 s in release).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(comm_flip_seeds 200)
if(PIPEBENCH_SANITIZE)
  set(comm_flip_seeds 50)
endif()
add_test(NAME cli.comm_flips
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/comm_flips.py $<TARGET_FILE:pipebench>
                 ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report ${CMAKE_CURRENT_BINARY_DIR}/cli_work/comm_flips
                 --seeds ${comm_flip_seeds})
set_tests_properties(cli.comm_flips PROPERTIES LABELS unit TIMEOUT 300 FIXTURES_REQUIRED report_files)

# Issue 27: merge --as-repeats makes one run of repeats from one configuration's runs in several files
# (the rehearsal's interleaved rounds, docs/netns.md), as run --repeats stores it (tests/cli/merge_repeats.sh).
add_test(NAME cli.merge_as_repeats
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/merge_repeats.sh $<TARGET_FILE:pipebench> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_CURRENT_BINARY_DIR}/cli_work/merge_as_repeats)
set_tests_properties(cli.merge_as_repeats PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 120)
