# `pipebench gemm` (bench/cmd/gemm.cpp): a small sweep lands in the results file and its table; bad input
# is one line with exit code 2 before anything is allocated or written; plan --calibrate takes the sweep.
add_test(NAME cli.gemm_sweep
         COMMAND sh -c "rm -f \"$1\" && \"$0\" gemm --sizes 16,32 --min-time 0.001 --elementwise-elements 4096 --out \"$1\" 2>&1 && \"$0\" gemm --sizes 16 --precision fp64 --min-time 0.001 --elementwise-elements 4096 --out \"$1\" --append --json"
                 $<TARGET_FILE:pipebench> ${CMAKE_CURRENT_BINARY_DIR}/cli_work/gemm.h5)
set_tests_properties(cli.gemm_sweep PROPERTIES LABELS unit TIMEOUT 60 PASS_REGULAR_EXPRESSION
  "\n +32 +32 +32 +[0-9.]+ +[0-9.]+ +[0-9.]+\n.*# results: [^ ]*gemm.h5 /gemm/000001 .*\"precision\": \"fp64\".*\"id\": 2,.*\"products\": \\[.*\"m\": 16,.*\"peak_flops\": [0-9.e+]+,")
pipebench_cli_test(gemm_sizes_descending RC 2
  MATCH "^pipebench: error: --sizes 32 after 64 is not allowed: the sizes must be ascending, each once\n$"
  ARGS gemm --sizes 64,32)
pipebench_cli_test(gemm_precision RC 2
  MATCH "^pipebench: error: --precision 'bf16' is not allowed: pipebench gemm times fp32 or fp64\n$"
  ARGS gemm --precision bf16)
pipebench_cli_test(gemm_size_zero RC 2 MATCH "^pipebench: error: --sizes" ARGS gemm --sizes 0,16)
pipebench_cli_test(gemm_too_large RC 2 MATCH "^pipebench: error: --sizes up to 65536 .* GiB, more than the .* GiB this process may use\n$"
  ARGS gemm --sizes 65536 --precision fp64)
# A calibration file with a transformer run, a comm fit and a GEMM sweep: the planner's rates come from
# the sweep (its "rates from" line names it).
add_test(NAME cli.plan_calibrate_gemm
         COMMAND sh -c "rm -f \"$2\" && \"$1\" -n 2 \"$0\" run --workload transformer --layers 2 --hidden 32 --heads 2 --seq 16 --schedule 1f1b -m 2 --steps 1 --warmup 0 -o \"$2\" >/dev/null && \"$0\" gemm --sizes 16,32 --min-time 0.001 --elementwise-elements 4096 --out \"$2\" --append >/dev/null && \"$0\" plan --calibrate \"$2\" --layers 2 --hidden 32 --heads 2 --seq 16 --vocab 1024 --global-batch 2 --mapping 1x2x1 --schedule 1f1b --micro-batch-size 1 --evaluate"
                 $<TARGET_FILE:pipebench> ${MPIEXEC_EXECUTABLE} ${CMAKE_CURRENT_BINARY_DIR}/cli_work/calibrate_gemm.h5)
set_tests_properties(cli.plan_calibrate_gemm PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 120 PASS_REGULAR_EXPRESSION
  "calibrated from [^ ]*calibrate_gemm.h5: GEMM rates of sweep /gemm/000001, element-wise [0-9.]+ GB/s x [0-9.]+ passes \\(fitted on run 1\\), link from ")
# merge copies /gemm groups as it copies /comm groups (none lost), and refuses one that arrives twice.
add_test(NAME cli.gemm_merge
         COMMAND sh -c "cd \"$1\" && rm -f a.h5 b.h5 m.h5 m2.h5 && for f in a b; do \"$0\" gemm --sizes 16 --min-time 0.001 --elementwise-elements 1024 --out $f.h5 >/dev/null || exit 9; done && \"$0\" merge m.h5 a.h5 b.h5 && \"$0\" merge m2.h5 a.h5 a.h5; echo rc=$?"
                 $<TARGET_FILE:pipebench> ${CMAKE_CURRENT_BINARY_DIR}/cli_work)
set_tests_properties(cli.gemm_merge PROPERTIES LABELS unit TIMEOUT 60 PASS_REGULAR_EXPRESSION
  "# merged 0 run\\(s\\) and 2 /gemm group\\(s\\) from 2 file\\(s\\) into m.h5\n#   a.h5: no complete runs\n#   b.h5: no complete runs\n#   a.h5: /gemm/000001 -> /gemm/000001\n#   b.h5: /gemm/000001 -> /gemm/000002\n.*/gemm group 000001 of 'a.h5' is the same as /gemm group 000001 of 'a.h5'.*rc=2")
