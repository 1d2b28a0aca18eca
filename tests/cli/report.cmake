# `pipebench report`. Its input files are written at test time by report_fixtures (no binary files in
# the repository); every case below requires that fixture.
add_executable(report_fixtures ${CMAKE_CURRENT_SOURCE_DIR}/cli/report_fixtures.cpp)
target_include_directories(report_fixtures PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(report_fixtures PRIVATE pipebench::bench pipebench::warnings)
set(_rf ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report)
add_test(NAME cli.report_fixtures COMMAND report_fixtures ${_rf})
set_tests_properties(cli.report_fixtures PROPERTIES LABELS unit FIXTURES_SETUP report_files)

set(_report_cases)
function(report_case name)  # a function, not a macro: a macro would unescape the regexes twice
  pipebench_cli_test(${name} ${ARGN})
  set(_report_cases ${_report_cases} cli.${name} PARENT_SCOPE)
endfunction()

report_case(report_lists_runs RC 0
  MATCH "# pipebench results .*results.h5: 2 complete run\\(s\\), incomplete run\\(s\\) 3 ignored.*\n# +run  schedule  +t +p +d +v +m +step +bubble +simulated +formula +diff +inflight +predicted +actmem\n#   +\\(ms\\) +\\(%\\) +\\(%\\) +\\(%\\) +\\(pp\\) +\\(chunks\\) +\\(chunks\\) +\\(MiB\\)\n +1  1f1b +1 +2 +1 +1 +2 +12.000 +25.00 +24.50 +33.33 +\\+0.50 +2 +2 +0.0\n +2  zb-h1 +1 +2 +1 +1 +2 +12.000 +25.00 +24.50 +- +\\+0.50"
  ARGS report ${_rf}/results.h5)
report_case(report_one_run RC 0
  MATCH "# run 2 of .*# bubble 25.00 % measured, 24.50 % simulated, no formula.*\n +1 +0 +1 +0  node02 +6.000 +6.000 +1.000 +1 +1 +0.0 +0.0 +- +-2.5 +0.1\n# metadata:\n.*env.OMP_NUM_THREADS: 1"
  ARGS report ${_rf}/results.h5 --run 2)
report_case(report_json RC 0
  MATCH "^{\n  \"file\": .*\"schema_version\": 6,.*\"id\": 2,.*\"bubble_formula\": null.*\"incomplete_runs\": \\[\n    3\n  \\],\n  \"damaged_runs\": \\[\\],\n  \"comm\": \\[\\]\n}"
  ARGS report ${_rf}/results.h5 --json)
# A file of `pipebench comm` results only: its /comm groups and no runs table; in JSON under "comm".
# (An unmatched '[' would stop CMake splitting the arguments: '.' stands for the lists' opening.)
report_case(report_comm_only RC 0
  MATCH "^# pipebench results .*comm_a.h5: 1 communication result\\(s\\)\n# comm 1: all_reduce over world, 1 group\\(s\\) of 4 rank\\(s\\) at once, mapping 1x4x1, backend mpi, 2026-11-30T12:00:00Z\n# +out-of-place +in-place\n"
  ARGS report ${_rf}/comm_a.h5)
report_case(report_comm_json RC 0
  MATCH "\"runs\": \\[\\],.*\n  \"comm\": .\n    {\n      \"id\": 1,\n      \"op\": \"all_reduce\",\n      \"group\": \"world\",\n      \"groups\": 1,\n      \"group_size\": 4,\n      \"one_group\": false,\n      \"mapping\": \"1x4x1\",\n      \"backend\": \"mpi\",\n      \"config\": {\n        \"dtype\": \"float\",\n        \"redop\": \"sum\"\n      },\n      \"date_utc\": \"2026-11-30T12:00:00Z\",\n      \"fit\": {\n        \"alpha_s\": 1e-05,\n        \"beta_Bps\": 1000000000.0,\n        \"max_rel_error\": 0.02,\n        \"points\": 3\n      },\n      \"rows\": .\n        {\n          \"bytes\": 1024,\n          \"count\": 256,\n          \"in_place\": false,\n          \"time_us\": 11.02[0-9]*,\n.*\"wrong\": 0\n        },\n.*\"bytes\": 1048576,"
  ARGS report ${_rf}/comm_a.h5 --json)
report_case(report_trace RC 0 MATCH "# trace of run 1 written to trace1.json \\(44 events\\)"
  ARGS report ${_rf}/results.h5 --run 1 --trace trace1.json --force)
report_case(report_trace_needs_run RC 2 MATCH "pipebench: error: --trace needs --run ID: '.*results.h5' holds runs 1-2\n$"
  ARGS report ${_rf}/results.h5 --trace t.json)
report_case(report_unknown_run RC 2
  MATCH "pipebench: error: run 3 is not a complete run in '.*results.h5' \\(complete runs: 1-2\\)\n$"
  ARGS report ${_rf}/results.h5 --run 3)
report_case(report_missing_file RC 2
  MATCH "pipebench: error: results file 'nope.h5' cannot be opened: No such file or directory\n$" ARGS report nope.h5)
report_case(report_not_hdf5 RC 2 MATCH "pipebench: error: '.*notes.txt' is not an HDF5 file, so not a pipebench results file\n$"
  ARGS report ${_rf}/notes.txt)
report_case(report_not_pipebench RC 2
  MATCH "pipebench: error: '.*plain.h5' is an HDF5 file but not a pipebench results file \\(it has no pipebench_schema_version attribute\\)\n$"
  ARGS report ${_rf}/plain.h5)
report_case(report_other_schema RC 2
  MATCH "pipebench: error: '.*schema99.h5' holds pipebench results of schema version 99. this pipebench writes version 6 and reads versions 1-6: read it with the pipebench that wrote it\n$"
  ARGS report ${_rf}/schema99.h5)
# Issue 8 item 14: one line naming the value and what is allowed (CLI11's range printed DBL_MAX in full).
report_case(report_bad_run_id RC 2 MATCH "^pipebench: error: --run '0' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS report ${_rf}/results.h5 --run 0)

# h5dump, the HDF5 tool users have, reads the file without pipebench: the layout and a string value.
find_program(PIPEBENCH_H5DUMP NAMES h5dump)
if(PIPEBENCH_H5DUMP)
  add_test(NAME cli.report_h5dump_layout COMMAND ${PIPEBENCH_H5DUMP} -H ${_rf}/results.h5)
  set_tests_properties(cli.report_h5dump_layout PROPERTIES LABELS unit
    PASS_REGULAR_EXPRESSION "GROUP \"000001\".*H5T_ENUM.*\"F&B\".*DATASET \"actions\".*DATASET \"comms\".*DATASET \"ranks\"")
  add_test(NAME cli.report_h5dump_strings COMMAND ${PIPEBENCH_H5DUMP} -a /runs/000002/config/schedule ${_rf}/results.h5)
  set_tests_properties(cli.report_h5dump_strings PROPERTIES LABELS unit PASS_REGULAR_EXPRESSION "\\(0\\): \"zb-h1\"")
  list(APPEND _report_cases cli.report_h5dump_layout cli.report_h5dump_strings)
endif()
set_tests_properties(${_report_cases} PROPERTIES FIXTURES_REQUIRED report_files)
