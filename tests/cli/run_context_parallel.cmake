# run --context-parallel (docs/run.md, docs/transformer.md "Context parallelism"): bad input refused on
# every rank with one line and exit code 2 before anything is allocated; a run with either exchange and
# either chunking has the loss of the same model without cp (fp32, 6 digits), and its key names them.
set(_cp --workload transformer --schedule 1f1b --hidden 16 --heads 2 --seq 8 --vocab 32 --layers 2 --warmup 0 --steps 1 -m 2)
pipebench_mpirun_test(run_cp_zigzag_seq NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "pipebench: error: configuration 1f1b 1x1x1 m=2: --seq 6 with --context-parallel 2 and --cp-chunks zigzag is not allowed: s must be a multiple of 2 x cp = 4 \\(each rank holds two chunks of s/\\(2 cp\\)\\)\n"
  ARGS ${_cp} --seq 6 --context-parallel 2 -o never.h5)
pipebench_mpirun_test(run_cp_contiguous_seq NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "pipebench: error: configuration 1f1b 1x1x1 m=2: --context-parallel 2 is not allowed: must be >= 1 and divide --seq 9"
  ARGS ${_cp} --seq 9 --context-parallel 2 --cp-chunks contiguous -o never.h5)
pipebench_mpirun_test(run_cp_synthetic NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "pipebench: error: --context-parallel 2 needs --workload transformer \\(the synthetic workload has no context-parallel traffic\\)\n"
  ARGS --schedule 1f1b --context-parallel 2 -o never.h5)
foreach(_flag cp-comm cp-chunks)
  set(_value allgather)
  if(_flag STREQUAL "cp-chunks")
    set(_value contiguous)
  endif()
  pipebench_mpirun_test(run_${_flag}_without_cp NP 2 RC 2 ONCE "pipebench: error:"
    MATCH "pipebench: error: --${_flag} needs --context-parallel > 1 \\(it is 1\\)\n"
    ARGS ${_cp} --${_flag} ${_value} -o never.h5)
endforeach()
pipebench_mpirun_test(run_cp_fused NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "--attention fused with --context-parallel 2 is not allowed: the transformer kernels run context-parallel attention unfused"
  ARGS ${_cp} --context-parallel 2 --attention fused -o never.h5)
pipebench_mpirun_test(run_cp_mapping NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "pipebench: error: --mapping 1x2x1 with --context-parallel 2 needs t\\*cp\\*p\\*d = 4 ranks, but the job has 2"
  ARGS ${_cp} --mapping 1x2x1 --context-parallel 2 -o never.h5)
pipebench_mpirun_test(run_cp_nccl NP 2 RC 2 ONCE "pipebench: error:"
  MATCH "pipebench: error: --context-parallel 2 needs --backend mpi"
  ARGS ${_cp} --context-parallel 2 --backend nccl -o never.h5)
# The loss of this model without cp, on 2 pipeline ranks: 3.471575.
pipebench_mpirun_test(run_cp_ring NP 2 RC 0 MATCH "#   loss 3.471575,"
  ARGS ${_cp} --context-parallel 2 -o cp_ring.h5 THEN report cp_ring.h5 --run 1
  THEN_MATCH "context_parallel=2 cp_chunks=zigzag cp_comm=ring .*order=tp-cp-dp-pp")
pipebench_mpirun_test(run_cp_allgather NP 2 RC 0 MATCH "#   loss 3.471575,"
  ARGS ${_cp} --context-parallel 2 --cp-comm allgather --cp-chunks contiguous -o cp_ag.h5 THEN report cp_ag.h5 --run 1
  THEN_MATCH "context_parallel=2 cp_chunks=contiguous cp_comm=allgather")
# pipebench comm over the cp groups: the ring's pattern (each rank to r+1, from r-1) and the all-gather,
# every cp group at once, data checked (pipebench_comm_test and _comm_quick: comm.cmake).
foreach(_op sendrecv all_gather)
  pipebench_comm_test(cp_${_op} NP 4 RC 0
    MATCH "pipebench comm ${_op}: backend mpi, mapping 1x1x2 cp=2 \\(order tp-cp-dp-pp\\), group cp: 2 group\\(s\\) of 2 rank\\(s\\), all at once\n.*# Out of bounds values : 0 OK\n"
    ARGS ${_op} --mapping 1x1x2 --context-parallel 2 --group cp -b 64K -e 256K -f 4 ${_comm_quick})
endforeach()
