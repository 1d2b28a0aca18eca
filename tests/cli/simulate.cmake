# `pipebench simulate`: the table, the JSON contract, sweeps that skip what a schedule rejects, and
# every kind of bad input (exit code 2 and one `pipebench: error:` line naming the value).
# (CMake splits lists inside [ ] differently: keep MATCH regexes free of unbalanced brackets; use . instead.)
pipebench_cli_test(simulate_table RC 0
  MATCH "#  schedule  p   m  v  makespan  bubble  formula    diff  max_idle      peak  peak_formula\n#  +\\(units\\) +\\(%\\) +\\(%\\) +\\(pp\\) +\\(units\\) +\\(chunks\\) +\\(chunks\\)\n +gpipe  4   4  1  +21  42.857   42.857  \\+0.000  +9  +4/4  +4/4\n.* 1f1b  8  64  1  +213   9.859    9.859  \\+0.000  +21  +8/8  +8/8\n"
  ARGS simulate --schedule gpipe,1f1b -p 4,8 -m 4,64 --tf 1 --tb 2 --tw 1)
pipebench_cli_test(simulate_seconds RC 0 MATCH "\\(ms\\).*1f1b  4  4  1  +21  42.857"
  ARGS simulate --schedule 1f1b -p 4 -m 4 --tf 1ms --tb 2ms --tw 1ms)
pipebench_cli_test(simulate_json RC 0
  MATCH "^.\n  {\n    \"schedule\": \"1f1b\",\n    \"p\": 4,\n    \"m\": 8,\n    \"v\": 1,.*\"makespan\": 33.0,\n    \"bubble_fraction\": 0.2727.*\"analytic_bubble_fraction\": 0.2727.*\"ranks\": .\n      {\n        \"rank\": 0,\n        \"busy\": 24.0,\n        \"idle\": 9.0,\n        \"span_bubble\": 9.0,\n        \"peak_inflight\": 4\n"
  ARGS simulate --schedule 1f1b -p 4 -m 8 --json)
pipebench_cli_test(simulate_json_null_formula RC 0 MATCH "\"analytic_bubble_fraction\": null,.*\"bubble_fraction\": \"stages are not uniform"
  ARGS simulate --schedule 1f1b -p 2 -m 2 --stage-cost 1,2 --json)
pipebench_cli_test(simulate_json_timeline RC 0
  MATCH "\"timeline\": .\n      {\n        \"rank\": 0,\n        \"action\": \"0F0\",\n        \"kind\": \"F\",\n        \"stage\": 0,\n        \"mb\": 0,\n        \"start\": 0.0,\n        \"end\": 1.0\n"
  ARGS simulate --schedule 1f1b -p 2 -m 2 --json --timeline)
pipebench_cli_test(simulate_text_timeline RC 0 MATCH "# timeline: 1f1b p=2 m=2 v=1\n.* +0 +0B1 +B +0 +1 +7 +9\n +1 +1F0 +F +1 +0 +1 +2\n"
  ARGS simulate --schedule 1f1b -p 2 -m 2 --timeline)
pipebench_cli_test(simulate_skips_rejected RC 0
  MATCH "# skipped gpipe p=4 m=4 v=2: schedule 'gpipe' has v = 1 chunks per rank. got v = 2\n.*      gpipe  4  4  1  +21"
  ARGS simulate --schedule gpipe,1f1b -p 4 -m 4 -v 1,2)
pipebench_cli_test(simulate_footnotes RC 0 MATCH "n/a.1..*# .1. 1f1b: p2p time = 0.5 > 0"
  ARGS simulate --schedule 1f1b -p 4 -m 4 --p2p-time 0.5)
pipebench_cli_test(simulate_svg RC 0 MATCH "# wrote t_1f1b_p2_m2_v1.svg\n# wrote t_1f1b_p2_m3_v1.svg\n"
  ARGS simulate --schedule 1f1b -p 2 -m 2,3 --svg t.svg --force)
pipebench_cli_test(simulate_svg_one RC 0 MATCH "# wrote one.svg\n" ARGS simulate --schedule zbv -p 2 -m 4 --svg one.svg --force)

pipebench_cli_test(simulate_single_rejected RC 2 MATCH "^pipebench: error: schedule '1f1b' has v = 1 chunks per rank. got v = 2\n$"
  ARGS simulate --schedule 1f1b -p 4 -m 4 -v 2)
pipebench_cli_test(simulate_zero_p RC 2 MATCH "^pipebench: error: --pipeline '0' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS simulate --schedule 1f1b -p 4,0 -m 4)
pipebench_cli_test(simulate_negative_m RC 2 MATCH "^pipebench: error: --microbatches '-4' is not allowed"
  ARGS simulate --schedule 1f1b -p 4 -m -4)
pipebench_cli_test(simulate_zero_v RC 2 MATCH "^pipebench: error: --chunks '0' is not allowed"
  ARGS simulate --schedule 1f1b -p 4 -m 4 -v 0)
pipebench_cli_test(simulate_zero_tf RC 2 MATCH "^pipebench: error: --tf '0' is not allowed: expected a time > 0[^\n]*\n$"
  ARGS simulate --schedule 1f1b -p 4 -m 4 --tf 0)
pipebench_cli_test(simulate_negative_tb RC 2 MATCH "^pipebench: error: --tb '-2' is not allowed"
  ARGS simulate --schedule 1f1b -p 4 -m 4 --tb -2)
pipebench_cli_test(simulate_tw_not_below_tb RC 2 MATCH "^pipebench: error: --tw '3' is not allowed: the weight part of the backward must be < --tb '2'\n$"
  ARGS simulate --schedule 1f1b -p 4 -m 4 --tw 3)
pipebench_cli_test(simulate_bad_unit RC 2 MATCH "^pipebench: error: --tf '2min' is not allowed"
  ARGS simulate --schedule 1f1b -p 4 -m 4 --tf 2min)
pipebench_cli_test(simulate_mixed_units RC 2 MATCH "^pipebench: error: --tb '2' has no unit but --tf '1ms' has one"
  ARGS simulate --schedule 1f1b -p 4 -m 4 --tf 1ms)
pipebench_cli_test(simulate_unknown_schedule RC 2 MATCH "^pipebench: error: unknown schedule 'foo'. allowed: "
  ARGS simulate --schedule 1f1b,foo -p 4 -m 4)
pipebench_cli_test(simulate_malformed_list RC 2 MATCH "^pipebench: error: --pipeline '2,,4' is not allowed: expected a comma-separated list"
  ARGS simulate --schedule 1f1b -p 2,,4 -m 4)
pipebench_cli_test(simulate_stage_cost_count RC 2 MATCH "^pipebench: error: stage cost list has 2 entries. schedule '1f1b' has 4 stages"
  ARGS simulate --schedule 1f1b -p 4 -m 4 --stage-cost 1,2)
pipebench_cli_test(simulate_bad_stage_cost RC 2 MATCH "^pipebench: error: --stage-cost '0' is not allowed"
  ARGS simulate --schedule 1f1b -p 2 -m 4 --stage-cost 1,0)
pipebench_cli_test(simulate_unwritable_svg RC 2 MATCH "^pipebench: error: --svg '/proc/pipebench-svg/t.svg': directory '/proc/pipebench-svg' does not exist\n$"
  ARGS simulate --schedule 1f1b -p 2 -m 2 --svg /proc/pipebench-svg/t.svg)
pipebench_cli_test(simulate_missing_flag RC 2 MATCH "pipebench: error: --microbatches is required" ARGS simulate --schedule 1f1b -p 4)
pipebench_cli_test(simulate_all_rejected RC 2
  MATCH "^pipebench: error: no combination of --schedule, -p, -m, -v can be simulated, e.g. 1f1b p=4 m=4 v=2: schedule '1f1b' has v = 1"
  ARGS simulate --schedule 1f1b -p 4 -m 4 -v 2,3)
pipebench_cli_test(simulate_too_large RC 2 MATCH "^pipebench: error: p\\*v\\*m = 100000\\*1\\*1000 = 100000000 \\(stage, micro-batch\\) pairs is not allowed: at most 16777216 fit in memory"
  ARGS simulate --schedule 1f1b -p 100000 -m 1000)
