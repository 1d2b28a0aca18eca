pipebench_mpirun_test(run_wrong_world_size NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "--mapping 2x3x1 needs t\\*p\\*d = 6 ranks, but the job has 4" ARGS --mapping 2x3x1 -o never.h5)
pipebench_mpirun_test(run_bad_microbatches NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "configuration dualpipe 1x4x1 m=4: schedule 'dualpipe' needs m >= 2p = 8" ARGS --schedule dualpipe -m 4 -o never.h5)
pipebench_mpirun_test(run_bad_v NP 2 RC 2 ONCE "pipebench: error:" MATCH "schedule '1f1b' has v = 1 chunks per rank. got v = 3"
  ARGS --schedule 1f1b -v 3 -o never.h5)
pipebench_mpirun_test(run_unwritable_output NP 2 RC 2 ONCE "pipebench: error:" MATCH "cannot create results file '/nonexistent/r.h5'"
  ARGS -o /nonexistent/r.h5)
pipebench_mpirun_test(run_time_without_unit NP 2 RC 2 ONCE "pipebench: error:" MATCH "--tf '2' needs a unit" ARGS --tf 2 -o never.h5)
pipebench_mpirun_test(run_rank_exits NP 4 RC nonzero MATCH "injected failure \\(exit\\) in configuration 2"
  ARGS --schedule 1f1b -m 4,8 ${_quick} -o died.h5 --inject-failure 2:2:0:exit
  THEN report died.h5 THEN_MATCH "1 complete run\\(s\\)\n.*\n.*\n.*\n +1  1f1b +1 +4 +1 +1 +4 ")
pipebench_mpirun_test(run_rank_hangs NP 4 RC nonzero ONCE "did not reach"
  MATCH "rank 1 \\(host [^)]+\\) did not reach the start of step 0 of configuration 2 within --timeout 2 s. the other 3 ranks did"
  ARGS --schedule 1f1b -m 4,8 ${_quick} -o hung.h5 --inject-failure 1:2:0:hang --timeout 2s
  THEN report hung.h5 THEN_MATCH "1 complete run\\(s\\)")

# The transformer workload: bad models are refused before any rank allocates; a run reports its loss,
# MFU, per-stage times and activation memory measured against the formula.
set(_model --workload transformer --schedule 1f1b --hidden 16 --heads 2 --seq 8 --vocab 32 --warmup 0 --steps 1)
pipebench_mpirun_test(run_heads_do_not_divide NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--heads 4 is not allowed: must divide --hidden 18" ARGS ${_model} --hidden 18 --heads 4 -o never.h5)
pipebench_mpirun_test(run_fewer_layers_than_stages NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "--layers 3 is fewer than the 4 stages of the pipeline" ARGS ${_model} --layers 3 -o never.h5)
pipebench_mpirun_test(run_stage_list_sum NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--layers-per-stage sums to 5 layers, the model has --layers 4" ARGS ${_model} --layers 4 --layers-per-stage 2,3 -o never.h5)
pipebench_mpirun_test(run_model_too_large NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "needs about [0-9.]+ GiB on pipeline rank 0, but this node has [0-9.]+ GiB available per rank"
  ARGS ${_model} --hidden 16384 --heads 16 --layers 32 -o never.h5)
pipebench_mpirun_test(run_transformer_reports_model_figures NP 2 RC 0
  MATCH "#   loss [0-9.]+, MFU [0-9.]+ %.*#   per stage F/backward \\(ms\\): 0:[0-9.]+/[0-9.]+ 1:.*#   peak activations per rank, measured/formula \\(MiB\\): 0:[0-9.]+/[0-9.]+ 1:"
  ARGS ${_model} --layers 4 -m 4 -o model.h5)
# --attention: a value outside fused|unfused is refused; fused runs and gives unfused's loss (the
# kernel tests hold them to the derived tolerance), and the results record says which ran.
pipebench_mpirun_test(run_attention_bad_value NP 2 RC 2 ONCE "pipebench: error:" MATCH "--attention"
  ARGS ${_model} --attention flash -o never.h5)
pipebench_mpirun_test(run_attention_fused NP 2 RC 0 MATCH "#   loss [0-9.]+, MFU"
  ARGS ${_model} --layers 2 -m 2 --attention fused -o fused.h5
  THEN report fused.h5 --run 1 THEN_MATCH "#   attention = fused\n")

# Flags from a file ([run] section), the command line winning; a flag error is reported once.
pipebench_mpirun_test(run_config_file NP 2 RC 0
  MATCH "2 configuration\\(s\\).*0 warm-up \\+ 2 timed steps.* 1  1f1b .* 2  zb-h1 "
  ARGS --config ${CMAKE_CURRENT_SOURCE_DIR}/data/run_sweep.toml --steps 2 -o cfg.h5
  THEN report cfg.h5 --run 1 THEN_MATCH "#   tf = 0.0005\n")
pipebench_mpirun_test(run_flag_error_once NP 2 RC 2 ONCE "pipebench: error:" MATCH "--steps" ARGS --steps abc)
# --json is the contract of docs/json.md: the run object, the same from `run` and from `report`.
# (No brackets in these regexes: CMake splits lists at them.)
pipebench_mpirun_test(run_json NP 2 RC 0
  MATCH "^.\n  {\n    \"id\": 1,\n    \"key\": \"activation_bytes=.*\"summary\": {\n      \"step_time\": [0-9.e-]+,.*\"bubble_measured\": [0-9.e-]+,.*\"bubble_formula\": [0-9.e-]+,.*\"analytic_peak_inflight\": ..*\"stages\": ..*\"ranks\": ..*\"peak_activation_bytes\": 2097152"
  ARGS --schedule 1f1b -m 4 ${_quick} --json -o j.h5)
add_test(NAME cli.run_json_equals_report_json
         COMMAND ${CMAKE_COMMAND} "-DRUN=${MPIEXEC_EXECUTABLE};${MPIEXEC_NUMPROC_FLAG};2;$<TARGET_FILE:pipebench>;run;--schedule;1f1b;-m;4;${_quick};--json;-o;run.h5"
                 -DEXE=$<TARGET_FILE:pipebench> -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/cli_work/run_same_json
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/same_json.cmake)
set_tests_properties(cli.run_json_equals_report_json PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 60)
# --resume skips what the file already holds and appends the rest.
pipebench_mpirun_test(run_resume NP 1 RC 0 MATCH " 1  1f1b " ARGS --schedule 1f1b -m 4 ${_quick} -o r.h5
  THEN run --schedule 1f1b -m 4,8 ${_quick} --append --resume -o r.h5
  THEN_MATCH " 2  1f1b  .* 8 .*1f1b 1x1x1 m=4: already in r.h5, skipped \\(--resume\\)")
# (a build without NCCL; tests/cli/run_device.cmake has the other refusals)
pipebench_mpirun_test(run_nccl_refused NP 1 RC 2 ONCE "pipebench: error:" MATCH "--backend nccl(: this pipebench was built without NCCL| needs | is not usable by `run` yet)"
  ARGS --backend nccl -o never.h5)
# A message names a time the user did not give by its default value, not by an empty string.
pipebench_mpirun_test(run_tw_not_below_default_tb NP 1 RC 2 ONCE "pipebench: error:"
  MATCH "--tw '5ms' is not allowed: the weight part of the backward must be < --tb '4ms'" ARGS --tw 5ms -o never.h5)

# Issue 26: repeats, scoring and the system description. Bad values: one line, exit 2, before MPI traffic.
pipebench_mpirun_test(run_repeats_zero NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--repeats '0' is not allowed: expected a decimal integer from 1" ARGS --repeats 0 -o never.h5)
pipebench_mpirun_test(run_olympic_needs_three NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--scoring olympic drops the fastest and the slowest repeat and needs --repeats 3 or more, got --repeats 2"
  ARGS --repeats 2 --scoring olympic -o never.h5)
pipebench_mpirun_test(run_system_unknown_key NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--system '.*system_bad.toml' line 3: unknown key 'gpu_model'. a .system. table takes system_name, number_of_nodes"
  ARGS --system ${CMAKE_CURRENT_SOURCE_DIR}/data/system_bad.toml -o never.h5)
# Three repeats of two steps each: six steps stored, scored olympic (the middle repeat's median), the
# system description in the metadata.
pipebench_mpirun_test(run_repeats_olympic NP 2 RC 0
  MATCH "0 warm-up \\+ 2 timed steps, 3 repeats each \\(scoring olympic, interleaved\\)"
  ARGS --schedule 1f1b -m 4 --tf 500us --tb 1ms --tw 500us --warmup 0 --steps 2 --repeats 3 --scoring olympic
       --system ${CMAKE_CURRENT_SOURCE_DIR}/data/system.toml -o rep.h5
  THEN report rep.h5 --run 1
  THEN_MATCH "; 3 repeats, scoring olympic.*#   statistic: olympic mean of 3 repeats' medians over timed steps\n.*#   system.cooling: air\n.*#   system.system_name: test-vm\n")

# Issue 27: a synthetic action longer than --timeout (here 16777217 x 1 ms = 4.7 h) cannot work: the rank
# waiting for it would time out, and a stop would wait for it; refused before anything runs.
pipebench_mpirun_test(run_action_longer_than_timeout NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "configuration [^:]*: its longest synthetic action takes [^ ]+ \\(--tf, --tb, --t-overlap / v times --stage-cost\\), not less than --timeout 60s"
  ARGS --schedule 1f1b -m 2 --tf 1ms --tb 2ms --tw 1ms --stage-cost 16777217,1 -o never.h5)
