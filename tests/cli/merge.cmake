# `pipebench merge` (tests/cli/merge.sh) on the files of report_fixtures (tests/cli/report.cmake).
add_test(NAME cli.merge COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/merge.sh $<TARGET_FILE:pipebench>
                                ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report ${CMAKE_CURRENT_BINARY_DIR}/cli_work/merge)
set_tests_properties(cli.merge PROPERTIES LABELS unit TIMEOUT 60 FIXTURES_REQUIRED report_files)
