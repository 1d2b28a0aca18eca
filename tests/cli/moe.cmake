# The MoE flags of `pipebench run` (docs/transformer.md "Mixture of experts"): bad input is one line,
# exit code 2, on every rank (printed once), before any rank allocates or sends anything.
set(_moe --workload transformer --schedule 1f1b --hidden 16 --heads 2 --seq 8 --vocab 32 --layers 2 --warmup 0 --steps 1)
pipebench_mpirun_test(moe_experts_not_divisible_by_ep NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --experts 3 is not allowed with --expert-parallel 2: E must be a multiple of ep \\(each rank holds E/ep experts\\)\n$"
  ARGS ${_moe} --mapping 1x1x2 --expert-parallel 2 --experts 3 -o never.h5)
pipebench_mpirun_test(moe_top_k_above_experts NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: configuration 1f1b 1x2x1 m=[0-9]+: --top-k 5 is not allowed: must be in \\[1, --experts 4\\]\n$"
  ARGS ${_moe} --experts 4 --top-k 5 -o never.h5)
pipebench_mpirun_test(moe_top_k_zero NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --top-k '0' is not allowed: "
  ARGS ${_moe} --experts 4 --top-k 0 -o never.h5)
pipebench_mpirun_test(moe_experts_not_divisible_by_ep4 NP 4 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --experts 6 is not allowed with --expert-parallel 4: E must be a multiple of ep"
  ARGS ${_moe} --mapping 1x1x4 --expert-parallel 4 --experts 6 -o never.h5)
foreach(_c "0" "-1" "abc")
  pipebench_mpirun_test(moe_capacity_factor_${_c} NP 2 RC 2 ONCE "pipebench: error:"
    MATCH "^pipebench: error: --capacity-factor '${_c}' is not allowed: expected a number > 0, or dropless\n$"
    ARGS ${_moe} --experts 4 --capacity-factor=${_c} -o never.h5)
endforeach()
pipebench_mpirun_test(moe_bad_router NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --router 'relu' is not allowed: expected one of softmax, sigmoid\n$"
  ARGS ${_moe} --experts 4 --router relu -o never.h5)
pipebench_mpirun_test(moe_with_synthetic NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --experts needs --workload transformer: the synthetic workload has no MoE layer\n$"
  ARGS --schedule 1f1b -m 2 --experts 4 ${_quick} -o never.h5)
pipebench_mpirun_test(moe_option_without_experts NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --aux-loss-coeff needs --experts E >= 1: without experts no layer is an MoE layer\n$"
  ARGS ${_moe} --aux-loss-coeff 0.01 -o never.h5)
# The same from a --config file: the file's keys are the flags.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cli_work/moe_top_k.toml "[run]\ntop-k = 2\n")
pipebench_mpirun_test(moe_config_option_without_experts NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --top-k needs --experts E >= 1: without experts no layer is an MoE layer\n$"
  ARGS ${_moe} --config ${CMAKE_CURRENT_BINARY_DIR}/cli_work/moe_top_k.toml -o never.h5)
# MoE layers at t > 1 need sequence parallelism (Megatron-LM's rule); sharded experts (ZeRO) are refused.
pipebench_mpirun_test(moe_with_tensor_parallel NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: configuration 1f1b 2x1x1 m=[0-9]+: --experts 4 with t = 2 without --sequence-parallel is not allowed: MoE layers under tensor parallelism need sequence parallelism, as in Megatron-LM \\(add --sequence-parallel\\)\n$"
  ARGS ${_moe} --mapping 2x1x1 --experts 4 --top-k 2 -o never.h5)
# With it, the experts are tensor-parallel (expert tensor parallelism = t): the run completes.
pipebench_mpirun_test(moe_tensor_parallel_runs NP 2 RC 0
  MATCH "\n#   MoE aux loss [0-9.]+ per micro-batch, [0-9]+ routes dropped by capacity\n"
  ARGS ${_moe} --mapping 2x1x1 --sequence-parallel --experts 4 --top-k 2 --capacity-factor 1.25 -o moe_tp_runs.h5)
# The MoE options are part of a run's configuration: a run that differs only in --top-k is not skipped
# by --resume as already in the file.
pipebench_mpirun_test(moe_resume_keeps_top_k_apart NP 1 RC 0 MATCH "1 configuration"
  ARGS ${_moe} -m 4 --experts 4 --top-k 1 -o moe_resume.h5
  THEN run ${_moe} -m 4 --experts 4 --top-k 2 -o moe_resume.h5 --append --resume
  THEN_MATCH "# pipebench run: 1 ranks, 1 configuration\\(s\\)[^\n]*\n(.*\n)*#   MoE aux loss")
# ZeRO with experts (docs/transformer.md "ZeRO"): the dense buckets shard over dp, the routed experts'
# over expert-dp. 1x1x2 ep2 (expert-dp 1): the experts stay whole, only the dense part is gathered and
# reduce-scattered (0.0138 of the stage's 0.0463 MiB), ZeRO-3 holds 0.0069 + 0.0325 MiB of weights.
pipebench_mpirun_test(moe_zero3_expert_dp_one NP 2 RC 0
  MATCH "all_gathered 0.2207/0.2207, reduce_scattered 0.0138/0.0138\n#   ZeRO-3 gathered weights held at most, measured/formula \\(MiB\\): 0.0925/0.0925;[^\n]*\n#   held after the step, largest per rank, measured/formula \\(MiB\\): weights 0.0394/0.0394, gradients 0.0394/0.0394"
  ARGS ${_moe} -m 8 --mapping 1x1x2 --expert-parallel 2 --experts 4 --top-k 2 --optimizer adam --lr 1e-3 --zero 3 -o moe_zero3.h5)
# 1x1x4 ep2 (expert-dp 2): the experts' buckets over 2 ranks, the dense ones over 4.
pipebench_mpirun_test(moe_zero2_expert_dp_two NP 4 RC 0
  MATCH "all_gathered 0.0463/0.0463, reduce_scattered 0.0463/0.0463\n#   held after the step, largest per rank, measured/formula \\(MiB\\): weights 0.0463/0.0463, gradients 0.0197/0.0197"
  ARGS ${_moe} -m 8 --mapping 1x1x4 --expert-parallel 2 --experts 4 --top-k 2 --optimizer adam --lr 1e-3 --zero 2 --dp-buckets 2 -o moe_zero2.h5)
# Experts replicated (ep = 1): their gradients are all-reduced over the whole data-parallel group, with
# the dense ones (before, they were not reduced at all: 0.0138 of the formula's 0.0787 MiB measured).
pipebench_mpirun_test(moe_replicated_experts_reduced NP 2 RC 0
  MATCH "all_reduced 0.0787/0.0787"
  ARGS ${_moe} -m 8 --mapping 1x1x2 --experts 4 --top-k 2 --optimizer adam --lr 1e-3 -o moe_ep1.h5)
# A valid MoE model on 2 ranks, experts split over ep = 2: the aux loss and dropped routes in the file.
pipebench_mpirun_test(moe_runs NP 2 RC 0
  MATCH "\n#   MoE aux loss [0-9.]+ per micro-batch, [0-9]+ routes dropped by capacity\n"
  ARGS ${_moe} --mapping 1x1x2 --expert-parallel 2 --experts 4 --top-k 2 --capacity-factor 1.25 --router sigmoid
       --aux-loss-coeff 0.01 -o moe_runs.h5
  THEN report moe_runs.h5 --json THEN_MATCH "\"moe_dropped_tokens\"")
# --ep-overlap applies to the MoE layers of DualPipe(V)'s overlapped pairs (kernels/interleave.hpp):
# accepted with ep > 1 and recorded in the configuration, refused without expert parallelism.
pipebench_mpirun_test(moe_ep_overlap_off_runs NP 2 RC 0
  MATCH "\n#   expert all-to-all per step"
  ARGS ${_moe} --mapping 1x1x2 --expert-parallel 2 --experts 4 --top-k 2 --ep-overlap off
       -o moe_overlap_off.h5
  THEN report moe_overlap_off.h5 --json THEN_MATCH "\"ep_overlap\": \"off\"")
pipebench_mpirun_test(moe_ep_overlap_without_ep NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --ep-overlap needs --expert-parallel > 1 \\(it is 1\\): without it the MoE layers exchange nothing\n$"
  ARGS ${_moe} --mapping 1x1x2 --experts 4 --ep-overlap on -o never.h5)

# comm's alltoallv over the expert-parallel groups: member 0 receives --imbalance times the mean block
# (the data check counts every element), and the imbalance is kept with the results.
pipebench_comm_test(alltoallv_imbalance NP 4 RC 0
  MATCH "group ep: 2 group\\(s\\) of 2 rank\\(s\\), all at once\n.*# Out of bounds values : 0 OK\n.*# fit alltoallv over ep: "
  ARGS alltoallv --mapping 1x1x4 --expert-parallel 2 --group ep --imbalance 1.5 -b 8 -e 4K -f 8 ${_comm_quick}
  THEN report c.h5 --json THEN_MATCH "\"imbalance\": \"1.5\"")
pipebench_comm_test(alltoallv_imbalance_above_group NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --imbalance 3 is not allowed: expected 1 to the group size 2 \\(member 0 cannot receive more than every block\\)\n$"
  ARGS alltoallv --imbalance 3 ${_comm_quick})
pipebench_comm_test(imbalance_without_alltoallv NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --imbalance 2 is not allowed with alltoall: only alltoallv sends uneven blocks\n$"
  ARGS alltoall --imbalance 2 ${_comm_quick})
