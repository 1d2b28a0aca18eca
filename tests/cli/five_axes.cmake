# The five-axis layout flags (--context-parallel, --expert-parallel; docs/topology.md) in `comm`, which
# runs over the cp, ep, dp-cp and expert-dp groups, and in `run` and `plan`, which refuse
# --expert-parallel until its stages land (run's --context-parallel: run_context_parallel.cmake). Bad input: one line, exit code 2, on every rank, before any traffic (under mpiexec,
# printed once). pipebench_comm_test and _comm_quick come from comm.cmake.

# The context-parallel groups of 1x1x2 with cp 2 (order tp-cp-dp-pp: ranks 0,1 and 2,3), read back.
pipebench_comm_test(cp_groups NP 4 RC 0
  MATCH "mapping 1x1x2 cp=2 \\(order tp-cp-dp-pp\\), group cp: 2 group\\(s\\) of 2 rank\\(s\\), all at once\n.*#  Rank  1 Group  0 .*#  Rank  2 Group  1 .*# Out of bounds values : 0 OK\n.*# fit all_reduce over cp: "
  ARGS --mapping 1x1x2 --context-parallel 2 --group cp -b 8 -e 1K -f 4 ${_comm_quick}
  THEN report c.h5
  THEN_MATCH "# comm 1: all_reduce over cp, 2 group\\(s\\) of 2 rank\\(s\\) at once, mapping 1x1x2, backend mpi")
# The expert-parallel groups of 1x1x4 with ep 2 (order tp-ep-dp-pp: ep is fastest, 0,1 and 2,3).
pipebench_comm_test(ep_groups NP 4 RC 0
  MATCH "mapping 1x1x4 ep=2 \\(order tp-ep-dp-pp\\), group ep: 2 group\\(s\\) of 2 rank\\(s\\), all at once\n.*#  Rank  1 Group  0 .*#  Rank  2 Group  1 .*# Out of bounds values : 0 OK\n.*# fit alltoall over ep: "
  ARGS alltoall --mapping 1x1x4 --expert-parallel 2 --group ep -b 8 -e 1K -f 4 ${_comm_quick})
# The expert layers' data-parallel groups (0,2 and 1,3), only rank 0's; the dense one with cp, all ranks.
pipebench_comm_test(expert_dp_one_group NP 4 RC 0
  MATCH "group expert-dp: 2 group\\(s\\) of 2 rank\\(s\\), only rank 0's runs \\(--one-group\\)\n.*#  Rank  1 Group  1 .*#  Rank  2 Group  0 .*# Out of bounds values : 0 OK\n"
  ARGS --mapping 1x1x4 --expert-parallel 2 --group expert-dp --one-group -b 8 -e 64 -f 8 ${_comm_quick})
pipebench_comm_test(dp_cp_groups NP 4 RC 0
  MATCH "group dp-cp: 1 group\\(s\\) of 4 rank\\(s\\), all at once\n.*# Out of bounds values : 0 OK\n"
  ARGS reduce_scatter --mapping 1x1x2 --context-parallel 2 --group dp-cp -b 64 -e 256 -f 4 ${_comm_quick})

pipebench_comm_test(cp_mapping_not_world NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --mapping 1x1x1 with --context-parallel 2 needs t\\*cp\\*p\\*d = 2 ranks but the job has 4: give a mapping whose product times cp is 4\n$"
  ARGS --mapping 1x1x1 --context-parallel 2 ${_comm_quick})
pipebench_comm_test(cp_not_dividing_world NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --context-parallel 3 does not divide the job's 4 ranks: give --mapping TxPxD with t\\*cp\\*p\\*d = 4\n$"
  ARGS --context-parallel 3 ${_comm_quick})
pipebench_comm_test(ep_not_dividing NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: ep \\(expert-parallel size\\) = 3 does not divide cp\\*d = 4: allowed 1, 2, 4 "
  ARGS --mapping 1x1x4 --expert-parallel 3 --group ep ${_comm_quick})
pipebench_comm_test(ep_missing_from_order NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: order 'tp-dp-pp': axis 'ep' is missing, and ep = 2 needs a place in it. allowed: "
  ARGS --mapping 1x1x2 --expert-parallel 2 --order tp-dp-pp ${_comm_quick})
pipebench_comm_test(pp_not_last NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: order 'tp-ep-pp-dp' with p = 2, cp = 1 and ep = 2: pp must be the last axis unless p = 1 or ep = cp"
  ARGS --mapping 1x2x2 --expert-parallel 2 --order tp-ep-pp-dp ${_comm_quick})

# run: --expert-parallel carries the synthetic stage's expert traffic (tests/cli/expert_traffic.cmake); an
# ep that does not divide d is refused with the grid's one line (on every rank, in the meeting that shares
# the verdict of the checks); --context-parallel: tests/cli/run_context_parallel.cmake.
pipebench_mpirun_test(run_expert-parallel_refused NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "pipebench: error: [^\n]*ep \\(expert-parallel size\\) = 4 does not divide cp\\*d = 1"
  ARGS --expert-parallel 4 -o never.h5)
# plan predicts and searches context- and expert-parallel layouts (t cp p d GPUs, ep drawn from cp d;
# docs/model.md): a dense model refuses ep, an MoE preset's search shows the ep column.
pipebench_cli_test(plan_expert-parallel_refused RC 2
  MATCH "^pipebench: error: --expert-parallel 4 is not allowed: the model has no MoE layers .give --experts.\n$"
  ARGS plan --model gpt3-175b --gpus 64 --global-batch 64 --expert-parallel 4)
pipebench_cli_test(plan_expert-parallel_search RC 0
  MATCH "# pipebench plan: mixtral-8x7b [^\n]*\n.*#  rank  t  ep +p +d [^\n]*\n#[^\n]*\n +1 +[0-9]+ +[248] "
  ARGS plan --model mixtral-8x7b --machine h100-80gb --seq 4096 --gpus 64 --global-batch 256 --schedule 1f1b --top 1)
pipebench_cli_test(plan_expert-parallel_not_dividing RC 2
  MATCH "^pipebench: error: --experts 8 is not allowed with --expert-parallel 3: E must be a multiple of ep[^\n]*\n$"
  ARGS plan --model mixtral-8x7b --gpus 64 --global-batch 64 --expert-parallel 3)
pipebench_cli_test(plan_capacity-factor_refused RC 2
  MATCH "^pipebench: error: --capacity-factor is not allowed in plan: the planner models dropless routing\n$"
  ARGS plan --model mixtral-8x7b --gpus 64 --global-batch 64 --capacity-factor 1.25)
pipebench_cli_test(plan_context-parallel_refused RC 2
  MATCH "^pipebench: error: --context-parallel 3 is not allowed: it must divide --gpus 64 .t cp p d GPUs.\n$"
  ARGS plan --model gpt3-175b --gpus 64 --global-batch 64 --context-parallel 3)
pipebench_cli_test(plan_context-parallel_search RC 0
  MATCH "# pipebench plan: llama3-405b [^\n]* on 16384 x h100-80gb.*\n +1  8  +[0-9]+ +[0-9]+ "
  ARGS plan --model llama3-405b --machine h100-80gb --gpus 16384 --global-batch 2048 --context-parallel 2 --top 1)
# Given as 1 they change nothing: the same run as without them.
pipebench_mpirun_test(run_size_one_cp_ep NP 2 RC 0 MATCH "# pipebench run: 2 ranks, 1 configuration"
  ARGS --schedule 1f1b -m 2 --context-parallel 1 --expert-parallel 1 ${_quick} -o one.h5)
