# `pipebench schedule`: each output format, the import of a user's CSV, and every kind of bad input
# (exit code 2 and one `pipebench: error:` line naming the value).
set(_data ${CMAKE_CURRENT_SOURCE_DIR}/data)
pipebench_cli_test(schedule_grid RC 0
  MATCH "rank 3: 3F0 3B0 3F1 3B1.*# simulated: makespan 33 units, bubble 27.273 % \\(formula 27.273 %\\)"
  ARGS schedule --schedule 1f1b -p 4 -m 8)
pipebench_cli_test(schedule_csv RC 0 MATCH "^0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n$"
  ARGS schedule --schedule 1f1b -p 2 -m 2 --format csv)
pipebench_cli_test(schedule_json RC 0
  MATCH "\"stage_rank\": ..*\"actions\": ..*\"0F0\".*\"simulated\": {.*\"analytic_bubble_fraction\": 0.333"
  ARGS schedule --schedule gpipe -p 2 -m 2 --format json)
pipebench_cli_test(schedule_svg_out RC 0 MATCH "^# wrote sched.svg \\(svg\\)\n"
  ARGS schedule --schedule gpipe -p 2 -m 4 --format svg --out sched.svg --force)
pipebench_cli_test(schedule_svg_stdout RC 0 MATCH "^<\\?xml version=.*<svg .*</svg>\n$"
  ARGS schedule --schedule gpipe -p 2 -m 2 --format svg)
pipebench_cli_test(schedule_import RC 0
  MATCH "# import_ok: p=2 m=2 v=1, 8 actions, valid.*makespan 9 units, bubble 33.333 % \\(imported schedule: no formula\\)"
  ARGS schedule --import-csv ${_data}/import_ok.csv)
pipebench_cli_test(schedule_import_times RC 0 MATCH "makespan 18 ms"
  ARGS schedule --import-csv ${_data}/import_ok.csv --tf 2ms --tb 4ms --tw 1ms)
pipebench_cli_test(schedule_import_csv_figures RC 0 MATCH "^0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n# simulated: makespan 9"
  ARGS schedule --import-csv ${_data}/import_ok.csv --format csv)

pipebench_cli_test(schedule_unknown RC 2 MATCH "^pipebench: error: unknown schedule 'nope'. allowed: gpipe, 1f1b[^\n]*\n$"
  ARGS schedule --schedule nope -p 2 -m 2)
pipebench_cli_test(schedule_zero_p RC 2 MATCH "^pipebench: error: --pipeline '0' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS schedule --schedule 1f1b -p 0 -m 2)
pipebench_cli_test(schedule_negative_m RC 2 MATCH "^pipebench: error: --microbatches '-3' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS schedule --schedule 1f1b -p 2 -m -3)
pipebench_cli_test(schedule_zero_v RC 2 MATCH "^pipebench: error: --chunks '0' is not allowed"
  ARGS schedule --schedule 1f1b -p 2 -m 2 -v 0)
pipebench_cli_test(schedule_fixed_v RC 2 MATCH "^pipebench: error: schedule '1f1b' has v = 1 chunks per rank. got v = 2\n$"
  ARGS schedule --schedule 1f1b -p 2 -m 2 -v 2)
pipebench_cli_test(schedule_bad_format RC 2 MATCH "^pipebench: error: --format 'png' is not allowed: expected one of grid, csv, json, svg\n$"
  ARGS schedule --schedule 1f1b -p 2 -m 2 --format png)
pipebench_cli_test(schedule_unwritable_out RC 2
  MATCH "^pipebench: error: --out '/nonexistent-dir/x.csv': directory '/nonexistent-dir' does not exist\n$"
  ARGS schedule --schedule 1f1b -p 2 -m 2 --format csv --out /nonexistent-dir/x.csv)
pipebench_cli_test(schedule_nothing RC 2 MATCH "^pipebench: error: no schedule given: pass --schedule NAME -p P -m M, or --import-csv FILE\n$"
  ARGS schedule)
pipebench_cli_test(schedule_import_and_generate RC 2 MATCH "--import-csv cannot be combined with --schedule"
  ARGS schedule --import-csv ${_data}/import_ok.csv --schedule 1f1b)
pipebench_cli_test(schedule_import_unreadable RC 2 MATCH "^pipebench: error: cannot read schedule CSV '/nonexistent-dir/s.csv'"
  ARGS schedule --import-csv /nonexistent-dir/s.csv)
pipebench_cli_test(schedule_import_malformed RC 2 MATCH "^pipebench: error: schedule CSV line 1, cell 2: invalid action '0X1'"
  ARGS schedule --import-csv ${_data}/import_malformed.csv)
pipebench_cli_test(schedule_import_missing_action RC 2 MATCH "^pipebench: error: invalid schedule 'import_missing': missing B"
  ARGS schedule --import-csv ${_data}/import_missing.csv)
pipebench_cli_test(schedule_import_dependency RC 2
  MATCH "^pipebench: error: invalid schedule 'import_order': .*rank 1, step 0 \\(1B0\\) waits for F of stage 1, micro-batch 0, which this rank runs later"
  ARGS schedule --import-csv ${_data}/import_order.csv)
pipebench_cli_test(schedule_import_deadlock RC 2 MATCH "^pipebench: error: invalid schedule 'import_deadlock': deadlock: rank 0, step 1 \\(0B0\\)"
  ARGS schedule --import-csv ${_data}/import_deadlock.csv)
pipebench_cli_test(schedule_bad_time RC 2 MATCH "^pipebench: error: --tw '-1' is not allowed"
  ARGS schedule --import-csv ${_data}/import_ok.csv --tw -1)
# PyTorch interchange: overlapped pairs carry torch's OVERLAP_F_B suffix, and torch's older zero-bubble
# CSVs (I written as B) are read with a warning. (Keep ; out of MATCH: CMake splits lists on it.)
pipebench_cli_test(schedule_csv_overlap RC 0 MATCH "^0F0,0F1,0F2,3F0,3I0,3W0,3F1,\\(0F3.3B1\\)OVERLAP_F_B,\\(3F2.0B0\\)OVERLAP_F_B,3B2,"
  ARGS schedule --schedule dualpipev -p 2 -m 4 --format csv)
pipebench_cli_test(schedule_import_old_zb RC 0
  MATCH "# import_zb_old: p=3 m=4 v=1, 36 actions, valid\nrank 0: 0F0 0F1 0F2 0I0 0W0 .*pipebench: warning: [^\n]*import_zb_old.csv: 12 B actions followed by a W of the same stage and micro-batch were read as I \\(torch's older zero-bubble CSVs\\)\n$"
  ARGS schedule --import-csv ${_data}/import_zb_old.csv)
