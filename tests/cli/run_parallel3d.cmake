# 3D-parallel features of the transformer run (docs/transformer.md "3D parallelism"): bad combinations
# are refused on every rank with one line and exit code 2; --zero 1 with d = 1 warns and runs; a run
# with Adam and ZeRO-1 prints its optimizer state measured against the formula.
set(_p3 --workload transformer --schedule 1f1b --hidden 16 --heads 2 --seq 8 --vocab 32 --layers 2 --warmup 0 --steps 1 -m 2)
pipebench_mpirun_test(run_zero_value NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--zero.*4.*0 to 3" ARGS ${_p3} --zero 4 -o never.h5)
# ZeRO-2 and 3 (docs/run.md "ZeRO"): their flags need --zero 3, d = 1 warns; a run prints its
# data-parallel bytes and ZeRO-3's gathered weights, each measured beside its formula (equal here).
pipebench_mpirun_test(run_reshard_needs_zero3 NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--reshard-after-forward needs --zero 3" ARGS ${_p3} --zero 2 --reshard-after-forward off -o never.h5)
pipebench_mpirun_test(run_prefetch_needs_zero3 NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--gather-prefetch off needs --zero 3" ARGS ${_p3} --gather-prefetch off -o never.h5)
pipebench_mpirun_test(run_zero3_synthetic NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--zero 3 needs --workload transformer" ARGS --schedule 1f1b --zero 3 -o never.h5)
pipebench_mpirun_test(run_zero3_one_replica_warns NP 2 RC 0 ONCE "pipebench: warning: --zero 3 with d = 1"
  MATCH "optimizer state, gradients and weights stay whole" ARGS ${_p3} --optimizer adam --zero 3 -o warn3.h5)
# 1x2x2, 1F1B, m = 4: each rank gathers its stage before each of its 8 actions, in 2 buckets padded to
# 2 shards (0.0275 MiB a gather), holding at most its stage and the next gather's staging.
pipebench_mpirun_test(run_zero3_formulas NP 4 RC 0
  MATCH "all_gathered 0.2197/0.2197, reduce_scattered 0.0275/0.0275\n#   ZeRO-3 gathered weights held at most, measured/formula \\(MiB\\): 0.0549/0.0549; exposed gather wait"
  ARGS ${_p3} --mapping 1x2x2 -m 4 --layers 4 --optimizer adam --lr 1e-3 --zero 3 --dp-buckets 2 --steps 2 -o zero3.h5
  THEN report zero3.h5 --run 1 THEN_MATCH "zero = 3")
# The same in bf16: the 16-bit weights are gathered in 2 bytes a value (half the all-gathered bytes and
# the gathered peak), the gradients reduce-scattered in fp32, and the chunk's decoded fp32 weights held
# during an action beside their formula (docs/transformer.md "16-bit training state").
pipebench_mpirun_test(run_zero3_formulas_bf16 NP 4 RC 0
  MATCH "all_gathered 0.1099/0.1099, reduce_scattered 0.0275/0.0275\n#   ZeRO-3 gathered weights held at most, measured/formula \\(MiB\\): 0.0275/0.0275;.*weights 0.0069/0.0069, gradients 0.0137/0.0137\n#   fp32 main weights, largest per rank, measured/formula \\(MiB\\): 0.0137/0.0137; decoded weights held at most 0.0275/0.0275"
  ARGS ${_p3} --mapping 1x2x2 -m 4 --layers 4 --optimizer adam --lr 1e-3 --zero 3 --dp-buckets 2 --steps 2 --precision bf16 -o zero3_bf16.h5)
pipebench_mpirun_test(run_zero2_formulas NP 2 RC 0
  MATCH "all_gathered 0.0295/0.0295, reduce_scattered 0.0295/0.0295"
  ARGS ${_p3} --mapping 1x1x2 --optimizer adam --lr 1e-3 --zero 2 -o zero2.h5)
# With context parallelism ZeRO shards over the cp d ranks of a replica (dp-cp): 1x1x1 cp2 shards in
# halves, with no d = 1 warning (the formulas counted d alone and were 0).
pipebench_mpirun_test(run_zero3_context_parallel_formulas NP 2 RC 0
  MATCH "all_gathered 0.2363/0.2363, reduce_scattered 0.0295/0.0295\n(.*\n)*#   held after the step, largest per rank, measured/formula \\(MiB\\): weights 0.0148/0.0148, gradients 0.0148/0.0148"
  ARGS ${_p3} --mapping 1x1x1 --context-parallel 2 -m 4 --optimizer adam --lr 1e-3 --zero 3 -o zero3cp.h5)
pipebench_mpirun_test(run_zero_synthetic NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--zero 1 needs --workload transformer" ARGS --schedule 1f1b --zero 1 -o never.h5)
pipebench_mpirun_test(run_weight_decay_needs_adam NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--weight-decay 0.1 needs --optimizer adam" ARGS ${_p3} --weight-decay 0.1 -o never.h5)
pipebench_mpirun_test(run_tie_dualpipe NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--tie-embeddings with dualpipe: its two model copies" ARGS ${_p3} --schedule dualpipe -m 4 --tie-embeddings -o never.h5)
pipebench_mpirun_test(run_zero_one_replica_warns NP 2 RC 0 ONCE "pipebench: warning: --zero 1 with d = 1"
  MATCH "optimizer state, largest per rank, measured/formula \\(MiB\\): [0-9.]+/[0-9.]+"
  ARGS ${_p3} --optimizer adam --zero 1 -o warn.h5)
pipebench_mpirun_test(run_adam_zero_state NP 2 RC 0
  MATCH "optimizer state, largest per rank, measured/formula \\(MiB\\): [0-9.]+/[0-9.]+"
  ARGS ${_p3} --mapping 1x1x2 --optimizer adam --weight-decay 0.01 --lr 1e-3 --zero 1 --dp-buckets 2 --tie-embeddings -o zero.h5)
pipebench_mpirun_test(run_vocab_not_divisible NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "vocabulary size 33 is not divisible by the tensor-parallel size 2 .*use a multiple of 2, e.g. 34, or --vocab-parallel off"
  ARGS ${_p3} --mapping 2x1x1 --vocab 33 -o never.h5)
pipebench_mpirun_test(run_vocab_parallel_off NP 2 RC 0 MATCH "#   loss [0-9.]+"
  ARGS ${_p3} --mapping 2x1x1 --vocab 33 --vocab-parallel off -o vpoff.h5)
pipebench_mpirun_test(run_end_stages_need_stages NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--embedding-stage/--head-stage need more stages than the 2 they take: the pipeline has 2"
  ARGS ${_p3} --embedding-stage --head-stage -o never.h5)
pipebench_mpirun_test(run_head_stage NP 2 RC 0 MATCH "#   per stage F/backward \\(ms\\): 0:[0-9.]+/[0-9.]+ 1:[0-9.]+/[0-9.]+"
  ARGS ${_p3} --head-stage --layers-per-stage 2,0 -o headstage.h5 THEN report headstage.h5 --run 1
  THEN_MATCH "layers_per_stage = 2,0")
# --sequence-parallel: refused with t = 1 and with s not divisible by t; a run prints its activations.
pipebench_mpirun_test(run_sequence_parallel_needs_tp NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--sequence-parallel needs a tensor-parallel size t > 1 \\(t is 1\\)" ARGS ${_p3} --sequence-parallel -o never.h5)
pipebench_mpirun_test(run_sequence_parallel_seq NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--sequence-parallel: sequence length 9 is not divisible by the tensor-parallel size 2"
  ARGS ${_p3} --mapping 2x1x1 --seq 9 --sequence-parallel -o never.h5)
pipebench_mpirun_test(run_sequence_parallel NP 2 RC 0 MATCH "#   loss [0-9.]+"
  ARGS ${_p3} --mapping 2x1x1 --sequence-parallel -o sp.h5 THEN report sp.h5 --run 1
  THEN_MATCH "sequence_parallel = 1")
# --layers-per-stage auto: the measured balance (default) calibrates and prints the stage costs before
# and after balancing with the step-time gain; --balance flops prints the same from FLOPs.
pipebench_mpirun_test(run_balance_measured NP 2 RC 0
  MATCH "# stage F\\+I\\+W \\(ms\\): even 1,1: [0-9.e+-]+ [0-9.e+-]+ \\(max/min [0-9.]+\\) -> auto [0-9]+,[0-9]+: .*step time [-+][0-9.]+ %"
  ARGS ${_p3} --layers-per-stage auto -o balm.h5 THEN report balm.h5 --run 1 THEN_MATCH "layers_auto = measured")
pipebench_mpirun_test(run_balance_flops NP 2 RC 0
  MATCH "# balance \\(flops, t=1\\): per micro-batch F\\+I\\+W, layer [0-9.e+-]+ GFLOP"
  ARGS ${_p3} --layers-per-stage auto --balance flops -o balf.h5)
pipebench_mpirun_test(run_balance_value NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--balance" ARGS ${_p3} --layers-per-stage auto --balance time -o never.h5)
# 16-bit storage (docs/transformer.md "16-bit training state"): fp16 without loss scaling, the
# loss-scale and gradient-reduction flags without their precision, and the synthetic workload are refused;
# an fp16 run prints its scale and skipped steps, a bf16 run its fp32 main weights.
pipebench_mpirun_test(run_fp16_without_scaling NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--precision fp16 with --loss-scale off: without a scale" ARGS ${_p3} --precision fp16 --loss-scale off -o never.h5)
pipebench_mpirun_test(run_loss_scale_needs_fp16 NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--loss-scale off needs --precision fp16" ARGS ${_p3} --precision bf16 --loss-scale off -o never.h5)
pipebench_mpirun_test(run_grad_reduce_bf16_needs_bf16 NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--grad-reduce-dtype bf16 needs --precision bf16 \\(got --precision fp32\\)" ARGS ${_p3} --grad-reduce-dtype bf16 -o never.h5)
pipebench_mpirun_test(run_bf16_synthetic NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--precision bf16 needs --workload transformer" ARGS --schedule 1f1b --precision bf16 -o never.h5)
pipebench_mpirun_test(run_fp16 NP 2 RC 0 MATCH "#   fp16 loss scale 65536, steps skipped for an overflow 0"
  ARGS ${_p3} --precision fp16 --optimizer adam --lr 1e-3 -o fp16.h5 THEN report fp16.h5 --run 1 THEN_MATCH "precision = fp16")
pipebench_mpirun_test(run_bf16_zero3 NP 2 RC 0 MATCH "#   fp32 main weights, largest per rank, measured/formula \\(MiB\\): [0-9.]+/[0-9.]+"
  ARGS ${_p3} --mapping 1x1x2 --precision bf16 --grad-reduce-dtype bf16 --optimizer adam --lr 1e-3 --zero 3 -o bf16.h5)
