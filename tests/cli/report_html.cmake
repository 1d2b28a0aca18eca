# `pipebench report --html` and `pipebench compare` (issue 11). Input files: the report fixtures
# (tests/cli/report_fixtures.cpp, written at test time); the browser test makes its own with mpiexec.
set(_rh_cases)
function(report_html_case name)
  pipebench_cli_test(${name} ${ARGN})
  set(_rh_cases ${_rh_cases} cli.${name} PARENT_SCOPE)
endfunction()

report_html_case(report_html_writes_page RC 0 MATCH "^# HTML report of 2 run\\(s\\) written to page.html\n$"
  ARGS report ${_rf}/results.h5 --html page.html --force)
report_html_case(report_html_v2_file RC 0 MATCH "# HTML report of 1 run\\(s\\) written to v2.html"
  ARGS report ${_rf}/v2.h5 --html v2.html --force)
report_html_case(report_html_no_runs RC 2
  MATCH "^pipebench: error: '.*empty.h5' holds no complete runs, so there is nothing to report\n$"
  ARGS report ${_rf}/empty.h5 --html nothing.html --force)
report_html_case(report_html_unwritable RC 2
  MATCH "^pipebench: error: --html 'no/such/dir/r.html': directory 'no/such/dir' does not exist\n$"
  ARGS report ${_rf}/results.h5 --html no/such/dir/r.html)
report_html_case(report_html_other_schema RC 2 MATCH "^pipebench: error: '.*schema99.h5' holds pipebench results of schema version 99"
  ARGS report ${_rf}/schema99.h5 --html s.html --force)
report_html_case(report_html_bad_timeline RC 2
  MATCH "^pipebench: error: --timeline 3 is not a complete run in '.*results.h5' \\(complete runs: 1-2\\)\n$"
  ARGS report ${_rf}/results.h5 --html t.html --timeline 3 --force)
report_html_case(report_timeline_needs_html RC 2
  MATCH "^pipebench: error: --timeline chooses the runs of the --html page. give --html OUT.html too\n$"
  ARGS report ${_rf}/results.h5 --timeline 1)
report_html_case(report_variability_line RC 0
  MATCH "# over timed steps: step time min 11.800 / median 12.000 / max 12.500 ms, cv 3.00 %. bubble min 24.00 / median 25.00 / max 26.00 %. spread 5.83 % > 5.00 %\n"
  ARGS report ${_rf}/results.h5 --run 1)
report_html_case(report_variability_unknown RC 0 MATCH "# variability over timed steps: unknown \\(written before schema version 3\\)\n"
  ARGS report ${_rf}/v2.h5 --run 1)
report_html_case(report_spread_flag RC 0
  MATCH "# step time spread \\(max - min\\) / median over timed steps above 5.00 %: run\\(s\\) 1\n$"
  ARGS report ${_rf}/results.h5)

# compare: results.h5 against compare_b.h5 (run 1 slower beyond the noise, run 2 within it, one
# configuration each file alone, a different CPU: not like for like, so --allow-different).
report_html_case(compare_unlike RC 2
  MATCH "^pipebench: error: '.*results.h5' and '.*compare_b.h5' are not like for like: CPU \\(Café CPU \\(x 2\\) \\| Other CPU \\(x 64\\)\\) differ; pass --allow-different to compare them anyway\n$"
  ARGS compare ${_rf}/results.h5 ${_rf}/compare_b.h5)
report_html_case(compare_text RC 0
  MATCH "# pipebench compare .*results.h5 \\(A\\) vs .*compare_b.h5 \\(B\\): 2 matched configuration\\(s\\), 0 only in A, 1 only in B\n# like for like: NO \\(compared with --allow-different\\); these differ \\(A \\| B\\):\n#   CPU: Café CPU \\(x 2\\)  \\|  Other CPU \\(x 64\\)\n.*\n +1 +1  1f1b t=1 p=2 d=1 v=1 m=2 +12.000 +18.000 +1.500  1.434-1.583  5/5 step  yes +25.00 +25.00 +1.000 .*\n +2 +2  zb-h1 t=1 p=2 d=1 v=1 m=2 +12.000 +12.120 +1.010  0.992-1.034  5/5 step  no .*# step time B/A, geometric mean: 1f1b 1.500 \\(1\\), zb-h1 1.010 \\(1\\), all 1.231 \\(2\\)\n# step time differences: 1 significant, 1 within the noise, 0 not enough samples\n# only in B: 1f1b t=1 p=2 d=1 v=1 m=4\n# metadata that differs \\(A \\| B\\):\n#   cpu: Café CPU \\(x 2\\)  \\|  Other CPU \\(x 64\\)\n$"
  ARGS compare ${_rf}/results.h5 ${_rf}/compare_b.h5 --allow-different)
report_html_case(compare_json RC 0
  MATCH "\"like_for_like\": false,.*\"matches\": .\n    {\n      \"key\": \"d=1 m=2 note= p=2 schedule=1f1b t=1 v=1\",.*\"ratio\": 1.49999.*\"ci_low\": 1.43.*\"basis\": \"steps\",\n        \"samples_a\": 5,.*\"significant\": true,\n      \"variability_known\": true\n    },.*\"only_in_b\": \\[\n    \"d=1 m=4 note= p=2 schedule=1f1b t=1 v=1\"\n  \\],\n  \"metadata_differs\": .\n    {\n      \"key\": \"cpu\","
  ARGS compare ${_rf}/results.h5 ${_rf}/compare_b.h5 --json --allow-different)
# --threshold: the practical floor the header line states and the JSON records; the 1f1b run's 50 %
# stays significant below a 60 % floor and not above it.
report_html_case(compare_threshold_text RC 0
  MATCH "sig: yes when the interval excludes 1 and B/A is 40 % or more from 1 \\(--threshold 40\\), few: not enough samples \\(fewer than 5 per side\\)\n.*# step time differences: 1 significant, 1 within the noise, 0 not enough samples\n"
  ARGS compare ${_rf}/results.h5 ${_rf}/compare_b.h5 --threshold 40 --allow-different)
report_html_case(compare_threshold_json RC 0
  MATCH "^{\n  \"a\": .*,\n  \"b\": .*,\n  \"threshold\": 0.6,\n.*\"significant\": 0,\n  \"insignificant\": 2,\n  \"unknown\": 0\n}"
  ARGS compare ${_rf}/results.h5 ${_rf}/compare_b.h5 --threshold 60 --json --allow-different)
report_html_case(compare_negative_tokens RC 2
  MATCH "^pipebench: error: --train-tokens .-5. is not allowed: expected a number >= 0 and <= 1e18"
  ARGS compare ${_rf}/results.h5 ${_rf}/compare_b.h5 --train-tokens -5)
report_html_case(report_negative_price RC 2
  MATCH "^pipebench: error: --gpu-hour-price '-1' is not allowed: expected a decimal number >= 0"
  ARGS report ${_rf}/results.h5 --train-tokens 1e9 --gpu-hour-price -1)
report_html_case(report_train_synthetic RC 0
  MATCH "# time to train 1e\\+09 tokens at each run's measured tokens per second \\(ranks as GPUs, at 2 per GPU-hour\\):\n#   no run has a throughput in tokens \\(transformer runs only\\)\n"
  ARGS report ${_rf}/results.h5 --train-tokens 1e9 --gpu-hour-price 2)
report_html_case(compare_threshold_negative RC 2
  MATCH "^pipebench: error: --threshold '-1' is not allowed: expected a decimal number >= 0"
  ARGS compare ${_rf}/results.h5 ${_rf}/compare_b.h5 --threshold -1)
report_html_case(compare_html RC 0 MATCH "# HTML comparison written to cmp.html\n$"
  ARGS compare ${_rf}/results.h5 ${_rf}/compare_b.h5 --html cmp.html --force --allow-different)
report_html_case(compare_nothing_in_common RC 2
  MATCH "^pipebench: error: '.*results.h5' and '.*disjoint.h5' have no configuration in common \\(2 and 1 configurations\\), so there is nothing to compare\n$"
  ARGS compare ${_rf}/results.h5 ${_rf}/disjoint.h5)
report_html_case(compare_no_runs RC 2 MATCH "^pipebench: error: '.*empty.h5' holds no complete runs, so there is nothing to compare\n$"
  ARGS compare ${_rf}/results.h5 ${_rf}/empty.h5)
report_html_case(compare_other_schema RC 2 MATCH "^pipebench: error: '.*schema99.h5' holds pipebench results of schema version 99"
  ARGS compare ${_rf}/schema99.h5 ${_rf}/results.h5)
report_html_case(compare_unwritable RC 2 MATCH "^pipebench: error: --html 'no/dir/c.html': directory 'no/dir' does not exist\n$"
  ARGS compare ${_rf}/results.h5 ${_rf}/compare_b.h5 --html no/dir/c.html)
set_tests_properties(${_rh_cases} PROPERTIES FIXTURES_REQUIRED report_files)

# The pages in headless Chromium (tests/cli/browser_check.py): no console messages, the expected
# plots by their titles, a 1280 px screenshot. Skipped (exit 77) without chromium.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli.report_html_browser
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/browser_check.py $<TARGET_FILE:pipebench>
                 ${MPIEXEC_EXECUTABLE} ${CMAKE_CURRENT_BINARY_DIR}/cli_work/browser)
set_tests_properties(cli.report_html_browser PROPERTIES LABELS mpi PROCESSORS 4 TIMEOUT 120 SKIP_RETURN_CODE 77)

# Communication results (/comm, written by `pipebench comm`): files that hold only those.
report_html_case(report_html_comm RC 0
  MATCH "^# HTML report of 0 run\\(s\\) and 1 communication result\\(s\\) written to comm.html\n$"
  ARGS report ${_rf}/comm_a.h5 --html comm.html --force)
report_html_case(compare_comm RC 0
  MATCH "# comm all_reduce world 1 x 4 mpi 1x4x1 \\(A 1, B 1\\): busbw B/A geometric mean 1.260\n#  +size +busbw A +busbw B +B/A +sig\n# +\\(B\\) +\\(GB/s\\) +\\(GB/s\\)\n +1024 +[0-9.]+ +[0-9.]+ +1.000  no\n +65536 +[0-9.]+ +[0-9.]+ +1.000  no\n +1048576 +[0-9.]+ +[0-9.]+ +2.000  yes\n.*#   cpu: Café CPU \\(x 2\\)  \\|  Other CPU \\(x 64\\)\n$"
  ARGS compare ${_rf}/comm_a.h5 ${_rf}/comm_b.h5)
set_tests_properties(cli.report_html_comm cli.compare_comm PROPERTIES FIXTURES_REQUIRED report_files)

# A real run stores its variability over timed steps (schema version 3) and report shows it.
pipebench_mpirun_test(run_stores_variability NP 2 RC 0 MATCH "# results: v.h5"
  ARGS --schedule 1f1b -m 2 --tf 500us --tb 1ms --tw 500us --warmup 0 --steps 3 -o v.h5
  THEN report v.h5 --run 1
  THEN_MATCH "# over timed steps: step time min [0-9.]+ / median [0-9.]+ / max [0-9.]+ ms, cv [0-9.]+ %. bubble min [0-9.]+ / median [0-9.]+ / max [0-9.]+ %")
