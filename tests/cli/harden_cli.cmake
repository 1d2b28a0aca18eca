# Issue 8, the command line and the config file (items 2, 7, 12, 13, 14): every bad value is refused
# before anything runs, with exit code 2 and one line naming the flag or file, the value (escaped) and
# what is allowed. Cases that reach `run`'s plan go through mpiexec (harden_mpirun_test).
set(_cfg ${CMAKE_CURRENT_SOURCE_DIR}/data/config)
# The two config files that are not text are written here (no binary files in the repository).
set(_gen ${CMAKE_CURRENT_BINARY_DIR}/cli_config)
string(ASCII 1 2 80 75 3 4 255 254 _junk)
string(ASCII 239 187 191 _bom)
file(WRITE ${_gen}/junk.toml "${_junk} junk\n")
file(WRITE ${_gen}/bom.toml "${_bom}[run]\nsteps = 1\n")

# Item 2: a timeout one poll cannot resolve, or a poll that outlasts the timeout, is refused up front.
pipebench_mpirun_test(harden_timeout_too_short NP 1 RC 2 ONCE "pipebench: error:"
  MATCH "--timeout '1e-9ns' is not allowed: expected a time from 1s to 604800s \\(7 days\\)\n$" ARGS --timeout 1e-9ns -o never.h5)
pipebench_mpirun_test(harden_timeout_too_long NP 1 RC 2 MATCH "--timeout '700000s' is not allowed"
  ARGS --timeout 700000s -o never.h5)
pipebench_mpirun_test(harden_poll_longer_than_timeout NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--poll-us '1000000' is not allowed with --timeout '3s': expected microseconds from 1 to 300000 \\(the timeout / 10\\)\n$"
  ARGS --timeout 3s --poll-us 1000000 -o never.h5)
pipebench_cli_test(harden_poll_far_too_long RC 2 MATCH "^pipebench: error: --poll-us '100000000' is not allowed"
  ARGS run --timeout 3s --poll-us 100000000)
pipebench_cli_test(harden_poll_zero RC 2 MATCH "^pipebench: error: --poll-us '0' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS run --poll-us 0)

# Item 7: --config is strict; each of these ran the default sweep with exit 0.
pipebench_cli_test(harden_config_empty RC 2
  MATCH "^pipebench: error: --config '[^']*empty.toml' holds no .run. table: [^\n]*\n$" ARGS --config ${_cfg}/empty.toml run)
pipebench_cli_test(harden_config_junk RC 2
  MATCH "^pipebench: error: --config '[^']*junk.toml' line 1: control byte 0x01 is not allowed: expected TOML text\n$"
  ARGS --config ${_gen}/junk.toml run)
pipebench_cli_test(harden_config_misspelled_table RC 2
  MATCH "^pipebench: error: --config '[^']*misspelled_table.toml' line 1: table '.rnu.' is not allowed: the only table is .run. [^\n]*\n$"
  ARGS run --config ${_cfg}/misspelled_table.toml)
pipebench_cli_test(harden_config_misspelled_key RC 2
  MATCH "^pipebench: error: --config '[^']*misspelled_key.toml' line 2: key 'microbatchs' is not a flag of `pipebench run` \\(did you mean 'microbatches'\\?\\)[^\n]*\n$"
  ARGS --config ${_cfg}/misspelled_key.toml run)
pipebench_cli_test(harden_config_bom RC 2
  MATCH "^pipebench: error: --config '[^']*bom.toml' line 1: starts with a byte order mark [^\n]*\n$" ARGS --config ${_gen}/bom.toml run)
pipebench_cli_test(harden_config_array_of_tables RC 2
  MATCH "^pipebench: error: --config '[^']*array_of_tables.toml' line 1: '..run..' \\(an array of tables\\) is not allowed[^\n]*\n$"
  ARGS --config ${_cfg}/array_of_tables.toml run)
pipebench_cli_test(harden_config_no_equals RC 2
  MATCH "^pipebench: error: --config '[^']*no_equals.toml' line 2: 'steps 1' is not allowed: expected `key = value`[^\n]*\n$"
  ARGS --config ${_cfg}/no_equals.toml run)
pipebench_cli_test(harden_config_bad_value RC 2
  MATCH "^pipebench: error: --config '[^']*bad_value.toml' line 3: key 'steps': --steps 'abc' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS --config ${_cfg}/bad_value.toml run --steps 2)
pipebench_cli_test(harden_config_dev_zero RC 2 MATCH "^pipebench: error: --config '/dev/zero' is not a regular file[^\n]*\n$"
  ARGS --config /dev/zero run)
pipebench_cli_test(harden_config_directory RC 2 MATCH "^pipebench: error: --config '[^']*' is not a regular file[^\n]*\n$"
  ARGS --config ${_cfg} run)
pipebench_cli_test(harden_config_missing RC 2
  MATCH "^pipebench: error: --config 'missing.toml': cannot open it: No such file or directory\n$" ARGS --config missing.toml run)
pipebench_cli_test(harden_config_other_command RC 2
  MATCH "^pipebench: error: --config '[^']*run_sweep.toml': a config file holds flags of `pipebench run` only\n$"
  ARGS --config ${CMAKE_CURRENT_SOURCE_DIR}/data/run_sweep.toml schedule --schedule 1f1b -p 2 -m 4)
pipebench_mpirun_test(harden_config_error_once NP 2 RC 2 ONCE "pipebench: error:" MATCH "line 2: key 'microbatchs'"
  ARGS --config ${_cfg}/misspelled_key.toml)

# Item 12: equal configurations have equal keys, so --resume skips them, and a sweep runs each once.
pipebench_mpirun_test(harden_resume_default_group NP 1 RC 0 MATCH "1 configuration"
  ARGS --schedule interleaved -m 4 ${_quick} -o r.h5
  THEN run --schedule interleaved -m 4 --group 1 ${_quick} -o r.h5 --append --resume
  THEN_MATCH "interleaved 1x1x1 m=4: already in r.h5, skipped \\(--resume\\)")
pipebench_mpirun_test(harden_resume_uniform_stage_cost NP 1 RC 0 MATCH "1 configuration"
  ARGS --schedule 1f1b -m 4 ${_quick} -o r.h5
  THEN run --schedule 1f1b -m 4 --stage-cost 1 ${_quick} -o r.h5 --append --resume
  THEN_MATCH "1f1b 1x1x1 m=4: already in r.h5, skipped \\(--resume\\)")
pipebench_mpirun_test(harden_sweep_duplicates NP 1 RC 0 ONCE "equal to an earlier one"
  MATCH "# pipebench run: 1 ranks, 1 configuration\\(s\\).*# 3 configuration\\(s\\) equal to an earlier one in the sweep, dropped: 1f1b 1x1x1 m=4, 1f1b 1x1x1 m=4, 1f1b 1x1x1 m=4\n"
  ARGS --schedule 1f1b,1f1b -m 4,4 ${_quick} -o r.h5 THEN report r.h5 THEN_MATCH "1 complete run\\(s\\)")

# Item 13: integers are decimal everywhere (leading zeros too), never hex, octal or wrapped around.
pipebench_cli_test(harden_leading_zero_decimal RC 0 MATCH "t=1 p=16 d=1 .*2 nodes, 6-10 ranks per node"
  ARGS topology -p 016 --ranks-per-node 010)
pipebench_cli_test(harden_hex_rank RC 2
  MATCH "^pipebench: error: --rank '0x1' is not allowed: expected a decimal integer from 0 to 16777216\n$" ARGS topology -p 4 --rank 0x1)
pipebench_cli_test(harden_rank_list RC 0 MATCH "\n +1 +0 +0 +1 +0 [^\n]*\n +3 +0 +0 +3 +0 [^\n]*\n$"
  ARGS topology -p 4 --rank 1 --rank 3 --ranks-per-node 4)
pipebench_cli_test(harden_report_run_zero RC 2
  MATCH "^pipebench: error: --run '0' is not allowed: expected a decimal integer from 1 to 16777216\n$" ARGS report x.h5 --run 0)
pipebench_cli_test(harden_report_run_hex RC 2 MATCH "^pipebench: error: --run '0x1' is not allowed" ARGS report x.h5 --run 0x1)
pipebench_cli_test(harden_mapping_wraps RC 2
  MATCH "^pipebench: error: --mapping '4294967297x1x1' is not allowed: expected TxPxD, three decimal integers from 1 to 16777216, e.g. 2x2x1\n$"
  ARGS run --mapping 4294967297x1x1)
# Empty values are refused, never taken as "not given".
# (Through sh: an empty argument does not survive a CMake list.)
foreach(_case "out:schedule --schedule 1f1b -p 2 -m 4" "mapping:run" "order:topology" "import-csv:schedule"
              "hostfile:topology" "svg:simulate --schedule 1f1b -p 2 -m 4" "trace:report x.h5"
              "chunks:schedule --schedule 1f1b -p 2 -m 4")
  string(FIND "${_case}" ":" _colon)
  string(SUBSTRING "${_case}" 0 ${_colon} _flag)
  math(EXPR _colon "${_colon} + 1")
  string(SUBSTRING "${_case}" ${_colon} -1 _command)
  add_test(NAME cli.harden_empty_${_flag}
           COMMAND ${CMAKE_COMMAND} -DEXE=/bin/sh "-DARGS=-c;exec $<TARGET_FILE:pipebench> ${_command} --${_flag} ''" -DRC=2
                   "-DMATCH=^pipebench: error: --${_flag} '' is not allowed: expected [^\n]*\n$"
                   -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/cli_work -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.cmake)
  set_tests_properties(cli.harden_empty_${_flag} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
# Times and multipliers are bounded, so no sum overflows into inf and -nan.
pipebench_cli_test(harden_huge_time RC 2 MATCH "^pipebench: error: --tf '1e308' is not allowed: expected a time > 0 and <= 1e\\+09"
  ARGS simulate --schedule 1f1b -p 4 -m 8 --tf 1e308 --tb 1.5e308)
pipebench_cli_test(harden_run_huge_tf RC 2 MATCH "^pipebench: error: --tf '2e9s' is not allowed" ARGS run --tf 2e9s)
pipebench_cli_test(harden_run_huge_stage_cost RC 2 MATCH "^pipebench: error: --stage-cost '1e10' is not allowed: expected a decimal number > 0 and <= 1e\\+09\n$"
  ARGS run --stage-cost 1e10)
pipebench_cli_test(harden_run_huge_m RC 2 MATCH "^pipebench: error: --microbatches '16777217' is not allowed" ARGS run -m 16777217)
pipebench_cli_test(harden_run_huge_steps RC 2 MATCH "^pipebench: error: --steps '16777217' is not allowed" ARGS run --steps 16777217)
pipebench_mpirun_test(harden_run_sweep_too_large NP 1 RC 2 ONCE "pipebench: error:"
  MATCH "configuration gpipe 1x1x1 m=16777216: the sweep would plan 16777216 \\(chunk, micro-batch\\) pairs \\(p\\*m\\*v summed over its configurations\\): at most 4194304\n$"
  ARGS --schedule gpipe -m 16777216 -o never.h5)
pipebench_mpirun_test(harden_run_records_too_many NP 1 RC 2 ONCE "pipebench: error:"
  MATCH "configuration 1f1b 1x1x1 m=8: p\\*m\\*v x t\\*d x --steps = 134217728 \\(chunk, micro-batch\\) pairs to record on rank 0: at most 2097152"
  ARGS --schedule 1f1b -m 8 --steps 16777216 -o never.h5)

# Item 14: one line naming the flag, the value escaped and what is allowed; unknown flags named.
pipebench_cli_test(harden_one_line_value RC 2 MATCH "^pipebench: error: --tensor 'abc' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS topology -t abc)
pipebench_cli_test(harden_newline_escaped RC 2 MATCH "^pipebench: error: --pipeline '4\\\\n5' is not allowed: [^\n]*\n$"
  ARGS topology -p "4\n5")
pipebench_cli_test(harden_schedule_name_escaped RC 2 MATCH "^pipebench: error: unknown schedule 'x\\\\ny'[^\n]*\n$"
  ARGS schedule --schedule "x\ny" -p 2 -m 2)
pipebench_cli_test(harden_order_escaped RC 2 MATCH "^pipebench: error: order 'x\\\\ny': unknown axis 'x\\\\ny'[^\n]*\n$"
  ARGS topology -p 2 --order "x\ny")
pipebench_cli_test(harden_unknown_flag RC 2
  MATCH "^pipebench: error: unknown flag '--stepz' \\(did you mean '--steps'\\?\\), then '3' \\(`pipebench run --help` lists the allowed flags\\)\n$"
  ARGS run --stepz 3)
pipebench_cli_test(harden_missing_value RC 2 MATCH "^pipebench: error: --tf[^\n]*\\(`pipebench schedule --help` lists the allowed flags\\)\n$"
  ARGS schedule --tf)
pipebench_cli_test(harden_no_subcommand RC 2 MATCH "^pipebench: error: [^\n]*subcommand[^\n]*\n$" ARGS)
# The last resort: out of memory is one line and exit 1, not an abort. Not under a sanitizer, whose
# shadow memory cannot be mapped under `ulimit -v`.
if(NOT PIPEBENCH_SANITIZE)
  add_test(NAME cli.harden_out_of_memory
           COMMAND ${CMAKE_COMMAND} -DEXE=/bin/sh
                   "-DARGS=-c;ulimit -v 1000000 && exec $<TARGET_FILE:pipebench> simulate --schedule zbv -p 2048 -m 4096"
                   -DRC=1 "-DMATCH=^pipebench: error: out of memory while running `pipebench simulate`[^\n]*\n$"
                   -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/cli_work -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.cmake)
  set_tests_properties(cli.harden_out_of_memory PROPERTIES LABELS unit TIMEOUT 60)
endif()

# Issue 27: newlines, ESC, CR and bytes that are not UTF-8 in user text are escaped in every message
# (tests/cli/raw_bytes.sh).
add_test(NAME cli.raw_bytes COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/raw_bytes.sh $<TARGET_FILE:pipebench> ${MPIEXEC_EXECUTABLE}
                                    ${CMAKE_CURRENT_BINARY_DIR}/cli_work/raw_bytes)
set_tests_properties(cli.raw_bytes PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 60)
