# Issue 8, the files `pipebench run` and `pipebench report` write and read: every output is checked
# before the first measurement (exit 2, nothing run), nothing is replaced unless asked, two sweeps never
# share a new results file, and damaged or odd results files give exit 0 or 2 with one line each.
# (Included after run.cmake and report.cmake, whose helpers it uses.)
set(_rf ${CMAKE_CURRENT_BINARY_DIR}/cli_work/report)
set(_q --schedule 1f1b -m 4,8 ${_quick})
set(_name_300 "")
foreach(_i RANGE 29)
  string(APPEND _name_300 "abcdefghij")
endforeach()
pipebench_mpirun_test(run_trace_is_directory NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--trace '/tmp' is a directory. give a file name\n$" ARGS ${_q} --trace /tmp -o never.h5)
pipebench_mpirun_test(run_svg_is_directory NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--svg '.' names a directory. give a file name\n$" ARGS ${_q} --svg . -o never.h5)
pipebench_mpirun_test(run_trace_name_too_long NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--trace 'abcdefghij[a-j]+\\.\\.\\.': the file name is 300 bytes. at most [0-9]+ are allowed here" ARGS ${_q} --trace ${_name_300} -o never.h5)
pipebench_mpirun_test(run_p2p_bytes_too_large NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--p2p-bytes 107374182400 is not allowed: at most 2147483647 bytes" ARGS ${_q} --p2p-bytes 100GiB -o never.h5)
# An existing file is not replaced without --force (the report fixture's notes.txt stands in for a
# user's file).
pipebench_mpirun_test(run_trace_exists NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--trace '.*notes.txt' already exists. remove it, give another name or add --force" ARGS ${_q} --trace ${_rf}/notes.txt -o never.h5)
pipebench_mpirun_test(run_append_runs_not_group NP 1 RC 2 ONCE "pipebench: error:"
  MATCH "'.*notgroup.h5' is an HDF5 file but not a pipebench results file \\(its /runs is not a group\\)\n$"
  ARGS ${_q} --append -o ${_rf}/notgroup.h5)
# Every run names the job, host and process that wrote it.
pipebench_mpirun_test(run_records_writer NP 2 RC 0 MATCH " 1  1f1b " ARGS ${_q} -o w.h5 --trace t.json --svg t.svg
  THEN report w.h5 --run 2 THEN_MATCH "#   job_id: [^\n]+\n.*#   writer_host: [^\n]+\n#   writer_pid: [0-9]+\n")
set_tests_properties(cli.run_trace_exists cli.run_append_runs_not_group PROPERTIES FIXTURES_REQUIRED report_files)

# Two sweeps on one new file: one refused with exit 2, the other's runs intact.
add_test(NAME cli.run_two_writers_one_file
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/two_writers.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:pipebench>
                 ${CMAKE_CURRENT_BINARY_DIR}/cli_work/two_writers)
set_tests_properties(cli.run_two_writers_one_file PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 120)

set(_files_cases)
function(files_case name)
  pipebench_cli_test(${name} ${ARGN})
  set(_files_cases ${_files_cases} cli.${name} PARENT_SCOPE)
endfunction()
files_case(report_damaged_run_skipped RC 0
  MATCH "damaged.h5: 2 complete run\\(s\\), damaged run\\(s\\) 2 skipped\n.*\n +1  1f1b .*\n +3  1f1b .*pipebench: warning: run 2 of '.*damaged.h5' is damaged and is skipped: HDF5: dataset '.*/runs/000002/ranks' is not a dataset\n$"
  ARGS report ${_rf}/damaged.h5)
files_case(report_damaged_run_asked RC 2
  MATCH "^pipebench: error: run 2 of '.*damaged.h5' is damaged: HDF5: dataset '.*/runs/000002/ranks' is not a dataset\n$"
  ARGS report ${_rf}/damaged.h5 --run 2)
files_case(report_damaged_json RC 0 MATCH "\"damaged_runs\": .\n    {\n      \"id\": 2,\n      \"reason\": \"HDF5: dataset"
  ARGS report ${_rf}/damaged.h5 --json)
files_case(report_not_utf8_json RC 0 MATCH "\"env.SLURM_BAD\": \"a..xFFb\"" ARGS report ${_rf}/odd.h5 --run 1 --json)
files_case(report_trace_exists RC 2 MATCH "^pipebench: error: --trace '.*notes.txt' already exists. remove it, give another name or add --force\n$"
  ARGS report ${_rf}/results.h5 --run 1 --trace ${_rf}/notes.txt)
set_tests_properties(${_files_cases} PROPERTIES FIXTURES_REQUIRED report_files)
