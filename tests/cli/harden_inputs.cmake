# Issue 8 items 3, 4 and 5 for schedule, simulate and topology: sizes beyond analysis/limits.hpp are
# refused with exit code 2 before anything is allocated, what is allowed runs in bounded memory, and
# output files are written whole or not at all, never over an existing file unless --force.
#
# harden_inputs_test(<name> RC <code> MATCH <regex> [DATA_KB <n>] SCRIPT <sh> ARGS <args...>) runs
# pipebench under `ulimit -d DATA_KB` (heap and anonymous memory, not the code of the libraries;
# default 1 GB) through `sh -c SCRIPT pipebench ARGS...`: SCRIPT runs "$0" "$@" and may check files
# after it. Not under a sanitizer, whose shadow memory needs more. OpenBLAS spins at exit when it
# cannot start its threads, so it gets one.
set(_data ${CMAKE_CURRENT_SOURCE_DIR}/data)
function(harden_inputs_test name)
  cmake_parse_arguments(T "" "RC;MATCH;DATA_KB;SCRIPT" "ARGS" ${ARGN})
  if(NOT T_DATA_KB)
    set(T_DATA_KB 1000000)
  endif()
  if(NOT T_SCRIPT)
    set(T_SCRIPT "exec \"$0\" \"$@\"")
  endif()
  set(_limit "ulimit -d ${T_DATA_KB} && ")
  if(PIPEBENCH_SANITIZE)
    set(_limit "")
  endif()
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} -DEXE=/bin/sh "-DARGS=-c;${_limit}${T_SCRIPT};$<TARGET_FILE:pipebench>;${T_ARGS}"
                   -DRC=${T_RC} "-DMATCH=${T_MATCH}" -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/cli_work/${name} -DFRESH=1
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.cmake)
  set_tests_properties(cli.${name} PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT OPENBLAS_NUM_THREADS=1)
endfunction()

# Item 3: a schedule CSV's numbers, bytes and name.
harden_inputs_test(harden_csv_huge_microbatch RC 2
  MATCH "^pipebench: error: schedule CSV line 1, cell 1: micro-batch 200000000 is not allowed: at most 16777215 [^\n]*\n$"
  ARGS schedule --import-csv ${_data}/import_huge_mb.csv)
harden_inputs_test(harden_csv_huge_stage RC 2
  MATCH "^pipebench: error: schedule CSV line 1, cell 1: stage 2147483646 is not allowed: at most 16777215 [^\n]*\n$"
  ARGS schedule --import-csv ${_data}/import_huge_stage.csv)
harden_inputs_test(harden_csv_dev_zero RC 2
  MATCH "^pipebench: error: cannot read schedule CSV '/dev/zero': not a regular file\n$"
  ARGS schedule --import-csv /dev/zero)
harden_inputs_test(harden_csv_bad_name_json RC 2
  MATCH "^pipebench: error: schedule CSV line 1: name='\\\\xFF\\\\xFE' is not allowed: expected printable UTF-8 text\n$"
  ARGS schedule --import-csv ${_data}/import_bad_name.csv --format json)
harden_inputs_test(harden_hostfile_dev_zero RC 2
  MATCH "^pipebench: error: cannot read hostfile '/dev/zero': not a regular file\n$"
  ARGS topology --hostfile /dev/zero)

# Item 4: allowed sizes that cannot be listed are refused at once; zbv's size is its real one.
harden_inputs_test(harden_topology_json_max_world RC 2
  MATCH "^pipebench: error: --json of t\\*p\\*d = 16777216 ranks would list 16777216 items: at most 1048576 are allowed"
  ARGS topology -p 16777216 --json)
harden_inputs_test(harden_schedule_json_too_many_actions RC 2
  MATCH "^pipebench: error: --format json of zbv p=2048 m=4096 \\(at least p\\*v\\*m actions\\) would list 16777216 items: at most 1048576"
  ARGS schedule --schedule zbv -p 2048 -m 4096 --format json)
harden_inputs_test(harden_simulate_timeline_too_many_actions RC 2
  MATCH "^pipebench: error: --timeline of 1f1b p=4096 m=4096 \\(at least p\\*v\\*m actions\\) would list 16777216 items"
  ARGS simulate --schedule 1f1b -p 4096 -m 4096 --timeline)
harden_inputs_test(harden_zbv_large_p RC 2
  MATCH "^pipebench: error: p = 8000000 pipeline ranks is not allowed: at most 1048576"
  ARGS schedule --schedule zbv -p 8000000 -m 1)
# Streamed: 262144 ranks took 400 MB as a JSON tree (and aborted on bad_alloc), now about 20 MB.
harden_inputs_test(harden_topology_json_streamed RC 0 DATA_KB 150000 MATCH "^  .\n }\n}\n$"
  SCRIPT "\"$0\" \"$@\" > t.json && tail -c 9 t.json" ARGS topology -p 262144 --json)

# Item 5: output files.
# 60 MB of SVG used to be built in an ostringstream, which stops growing without an error when memory
# runs out: the file was cut off, with `# wrote` and exit 0. It is now written as it goes, whole.
harden_inputs_test(harden_schedule_svg_whole RC 0 DATA_KB 100000 MATCH "^# wrote s.svg \\(svg\\)\n</svg>\n$"
  SCRIPT "\"$0\" \"$@\" && tail -c 7 s.svg" ARGS schedule --schedule 1f1b -p 2 -m 100000 --format svg --out s.svg)
harden_inputs_test(harden_schedule_out_exists RC 2
  MATCH "^keep\npipebench: error: --out 'x.csv' already exists. remove it, give another name or add --force\n$"
  SCRIPT "printf keep > x.csv && \"$0\" \"$@\"\nrc=$?\ncat x.csv && echo\nexit $rc"
  ARGS schedule --schedule 1f1b -p 2 -m 2 --format csv --out x.csv)
harden_inputs_test(harden_schedule_out_force RC 0 MATCH "^# wrote x.csv \\(csv\\)\n0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n$"
  SCRIPT "printf keep > x.csv && \"$0\" \"$@\" && cat x.csv"
  ARGS schedule --schedule 1f1b -p 2 -m 2 --format csv --out x.csv --force)
# Every picture of a sweep is checked before the first is written.
harden_inputs_test(harden_simulate_svg_exists RC 2
  MATCH "^none written\npipebench: error: --svg 't_1f1b_p2_m4_v1.svg' already exists. remove it, give another name or add --force\n$"
  SCRIPT "printf keep > t_1f1b_p2_m4_v1.svg && \"$0\" \"$@\"\nrc=$?\ntest -e t_1f1b_p2_m2_v1.svg || echo none written\nexit $rc"
  ARGS simulate --schedule 1f1b -p 2 -m 2,4 --svg t.svg)

# Item 13 (fixed with the flag parsers): topology's and schedule's own flags are decimal integers and
# non-empty names, like every other flag.
harden_inputs_test(harden_topology_rank_decimal RC 2 MATCH "^pipebench: error: rank 10 is outside the grid: allowed 0..7\n$"
  ARGS topology -t 2 -p 2 -d 2 --rank 010)
harden_inputs_test(harden_topology_rank_hex RC 2 MATCH "^pipebench: error: --rank '0x3' is not allowed: expected a decimal integer from 0 to 16777216\n$"
  ARGS topology -t 2 -p 2 -d 2 --rank 0x3)
# (An empty argument does not survive a CMake list: the script appends it.)
harden_inputs_test(harden_topology_empty_hostfile RC 2 MATCH "^pipebench: error: --hostfile '' is not allowed: expected a non-empty value\n$"
  SCRIPT "exec \"$0\" \"$@\" \"\"" ARGS topology -t 2 -p 2 --hostfile)
harden_inputs_test(harden_schedule_empty_import RC 2 MATCH "^pipebench: error: --import-csv '' is not allowed: expected a non-empty value\n$"
  SCRIPT "exec \"$0\" \"$@\" \"\"" ARGS schedule --import-csv)
