# The synthetic stage's expert traffic (docs/run.md "Expert traffic"): bad input is one line, exit code 2,
# on every rank (printed once), before anything runs; a valid run prints its exposed all-to-all per step.
set(_ep --schedule 1f1b -m 2 ${_quick} -o never.h5)
pipebench_mpirun_test(ep_bytes_without_ep NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --ep-alltoall-bytes 65536 needs --expert-parallel > 1 \\(it is 1\\): the exchanges run over the ep group\n$"
  ARGS --ep-alltoall-bytes 64KiB ${_ep})
pipebench_mpirun_test(ep_imbalance_below_one NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --routing-imbalance 0.5 is not allowed with --expert-parallel 2: expected 1 to ep \\(the busiest rank receives X times the mean, at most every block\\)\n$"
  ARGS --mapping 1x1x2 --expert-parallel 2 --ep-alltoall-bytes 64KiB --routing-imbalance 0.5 ${_ep})
pipebench_mpirun_test(ep_imbalance_above_ep NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --routing-imbalance 3 is not allowed with --expert-parallel 2: expected 1 to ep "
  ARGS --mapping 1x1x2 --expert-parallel 2 --ep-alltoall-bytes 64KiB --routing-imbalance 3 ${_ep})
pipebench_mpirun_test(ep_imbalance_without_bytes NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --routing-imbalance needs --ep-alltoall-bytes B > 0: without it there is no expert traffic\n$"
  ARGS --mapping 1x1x2 --expert-parallel 2 --routing-imbalance 2 ${_ep})
pipebench_mpirun_test(ep_overlap_without_bytes NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --ep-overlap needs --ep-alltoall-bytes B > 0: without it there is no expert traffic\n$"
  ARGS --ep-overlap off ${_ep})
pipebench_mpirun_test(ep_bytes_not_multiple NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --ep-alltoall-bytes 1001 is not allowed with --expert-parallel 2: expected a multiple of ep \\(one block per member\\)\n$"
  ARGS --mapping 1x1x2 --expert-parallel 2 --ep-alltoall-bytes 1001 ${_ep})
pipebench_mpirun_test(ep_bytes_with_transformer NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --ep-alltoall-bytes needs --workload synthetic \\(it is the synthetic stage's expert traffic\\)\n$"
  ARGS --workload transformer --ep-alltoall-bytes 64KiB ${_ep})
pipebench_mpirun_test(ep_with_transformer NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: --expert-parallel 2 needs --experts E >= 1 with --workload transformer: without experts there is nothing to split\n$"
  ARGS --workload transformer --mapping 1x1x2 --expert-parallel 2 ${_ep})
pipebench_mpirun_test(ep_not_dividing_d NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "^pipebench: error: [^\n]*ep \\(expert-parallel size\\) = 2 does not divide cp\\*d = 1"
  ARGS --expert-parallel 2 --ep-alltoall-bytes 64KiB ${_ep})
# A valid run: the exchanges' line under the row; in the file, dualpipev p=2 m=4 v=2: 32 exchanges per rank
# and step, member 0 taking 2 x 48 KiB of each (X = 1.5: 1.5 x 64 KiB / 2 from each member).
pipebench_mpirun_test(ep_traffic_runs NP 4 RC 0
  MATCH "\n#   expert all-to-all per step, busiest rank: [0-9]+ exchanges, [0-9.]+ MiB, in flight [0-9.]+ ms, exposed a2a [0-9.]+ ms"
  ARGS --schedule dualpipev -m 4 --mapping 1x2x2 --expert-parallel 2 --ep-alltoall-bytes 64KiB --routing-imbalance 1.5
       --tf 1ms --tb 2ms --tw 1ms --warmup 0 --steps 1 -o ep.h5
  THEN report ep.h5 --run 1 --json THEN_MATCH "\"ep_bytes\": 3145728.0,[^}]*\"ep_exchanges\": 32.0,")
