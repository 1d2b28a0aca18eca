# `pipebench comm` (docs/comm-bench.md). Bad input: one line, exit code 2, on every rank, before any
# traffic. Under mpiexec: each operation with its data check (-c 1), the groups of a mapping at once
# and --one-group, the table, JSON and the /comm group read back by `pipebench report`. Small sizes
# and few iterations; --poll-us 20 so that the ranks waiting on 2 cores do not spin.

# Flags alone, without mpiexec.
pipebench_cli_test(comm_min_above_max RC 2
  MATCH "^pipebench: error: -b 1048576 \\(minimum bytes\\) is above -e 8 \\(maximum bytes\\): give -b <= -e\n$"
  ARGS comm -b 1M -e 8)
pipebench_cli_test(comm_factor_below_2 RC 2
  MATCH "^pipebench: error: -f 1 is not allowed: the size factor must be 2 or more \\(or give -i BYTES\\)\n$"
  ARGS comm -b 8 -e 64 -f 1)
# 16-bit reductions on MPI: a user operation rounds each partial sum to bfloat16 (comm/mpi_communicator.cpp),
# and the check pattern's sums come out exact.
pipebench_cli_test(comm_dtype_mpi_bf16 RC 0
  MATCH "float|bfloat16 +sum[^\n]*\n(.|\n)*Out of bounds values : 0 OK"
  ARGS comm all_reduce -d bfloat16 -b 8 -e 64K)
pipebench_cli_test(comm_unknown_dtype RC 2
  MATCH "^pipebench: error: -d 'fp8' is not allowed: expected one of float, double, half, bfloat16, int32\n$"
  ARGS comm -d fp8)
pipebench_cli_test(comm_unknown_redop RC 2
  MATCH "^pipebench: error: -o 'prod' is not allowed: expected one of sum, max, min\n$"
  ARGS comm -o prod)
pipebench_cli_test(comm_unknown_group RC 2
  MATCH "^pipebench: error: --group 'xp' is not allowed: expected one of world, tp, pp, dp, pp-pairs, cp, dp-cp, tp-cp, ep, expert-tp, expert-dp, tp-ep\n$"
  ARGS comm --group xp)
pipebench_cli_test(comm_unknown_op RC 2
  MATCH "^pipebench: error: operation 'allreduce' is not allowed: expected one of all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv, latency, bw, bibw, alltoallv\n$"
  ARGS comm allreduce)
pipebench_cli_test(comm_pp_pairs_only_sendrecv RC 2
  MATCH "^pipebench: error: operation all_reduce with --group pp-pairs is not allowed: pp-pairs runs sendrecv"
  ARGS comm all_reduce --group pp-pairs)
pipebench_cli_test(comm_p2p_activation_collective RC 2
  MATCH "^pipebench: error: --p2p activation sizes point-to-point traffic: not allowed with all_reduce"
  ARGS comm all_reduce --p2p activation)
pipebench_cli_test(comm_json_and_csv RC 2 MATCH "^pipebench: error: --json and --csv exclude each other: give one\n$"
  ARGS comm --json --csv)
pipebench_cli_test(comm_bad_size_unit RC 2 MATCH "^pipebench: error: --minbytes '4Q'"
  ARGS comm -b 4Q)
# A flag that would change nothing is refused: the activation's sizes without --p2p activation, and
# the sweep's step and -d under it (one size of --precision's elements).
foreach(_flag --seq --micro-batch-size --hidden)
  string(REGEX REPLACE "^--" "" _name ${_flag})
  pipebench_cli_test(comm_${_name}_needs_p2p RC 2
    MATCH "^pipebench: error: ${_flag} sizes the activation of --p2p activation and has no effect without it: give --p2p activation \\(with sendrecv, latency, bw or bibw\\) or drop ${_flag}\n$"
    ARGS comm sendrecv ${_flag} 64)
endforeach()
pipebench_cli_test(comm_precision_needs_p2p RC 2
  MATCH "^pipebench: error: --precision sizes the activation of --p2p activation and has no effect without it"
  ARGS comm --precision fp32)
pipebench_cli_test(comm_p2p_activation_step RC 2
  MATCH "^pipebench: error: --p2p activation measures one size: give it without -f\n$"
  ARGS comm sendrecv --p2p activation -f 4)
pipebench_cli_test(comm_p2p_activation_stepbytes RC 2
  MATCH "^pipebench: error: --p2p activation measures one size: give it without -i\n$"
  ARGS comm bw --p2p activation --stepbytes 1K)
pipebench_cli_test(comm_p2p_activation_dtype RC 2
  MATCH "^pipebench: error: -d has no effect under --p2p activation, whose element type is --precision: give --precision fp32, fp64, bf16 or fp16 instead\n$"
  ARGS comm sendrecv --p2p activation --datatype float)

# Under mpiexec. NAME runs `mpiexec -n NP pipebench comm ARGS` in a fresh folder; THEN (pipebench ARGS)
# runs after it in the same folder.
function(pipebench_comm_test name)
  cmake_parse_arguments(T "" "NP;RC;MATCH;ONCE;THEN_MATCH" "ARGS;THEN" ${ARGN})
  add_test(NAME cli.comm_${name}
           COMMAND ${CMAKE_COMMAND} -DEXE=${MPIEXEC_EXECUTABLE}
                   "-DARGS=${MPIEXEC_NUMPROC_FLAG};${T_NP};$<TARGET_FILE:pipebench>;comm;${T_ARGS}" -DRC=${T_RC}
                   "-DMATCH=${T_MATCH}" "-DONCE=${T_ONCE}" -DTHEN_EXE=$<TARGET_FILE:pipebench> "-DTHEN_ARGS=${T_THEN}"
                   "-DTHEN_MATCH=${T_THEN_MATCH}" -DFRESH=1 -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/cli_work/comm_${name}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.cmake)
  set_tests_properties(cli.comm_${name} PROPERTIES LABELS mpi PROCESSORS ${T_NP} TIMEOUT 60)
endfunction()
set(_comm_quick -n 2 -w 1 --poll-us 20 --out c.h5)

pipebench_comm_test(mapping_not_world NP 2 RC 2
  MATCH "^pipebench: error: --mapping 2x2x1 needs t\\*p\\*d = 4 ranks but the job has 2: give a mapping whose product is 2\n$"
  ONCE "pipebench: error:" ARGS --mapping 2x2x1 ${_comm_quick})
pipebench_comm_test(root_outside_group NP 4 RC 2
  MATCH "^pipebench: error: -r 2 is not a member of a tp group: allowed 0..1\n$"
  ARGS broadcast --mapping 2x2x1 --group tp -r 2 ${_comm_quick})
pipebench_comm_test(latency_needs_pairs NP 2 RC 2
  MATCH "latency pairs the members of each tp group, which has 1 rank under --mapping 1x2x1"
  ARGS latency --group tp ${_comm_quick})

# Every operation with its data check: 0 wrong everywhere, in place and out of place, and the footer.
foreach(_op all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv)
  pipebench_comm_test(check_${_op} NP 4 RC 0
    MATCH "\n +(8|16) +(2|4) +float .*# Out of bounds values : 0 OK\n# Avg bus bandwidth    : [0-9.e+-]+\n# fit ${_op} over world: t\\(bytes\\) = "
    ARGS ${_op} -b 8 -e 4K -f 8 -r 3 ${_comm_quick})
endforeach()
foreach(_case "double;max" "int32;min" "int32;sum")
  list(GET _case 0 _t)
  list(GET _case 1 _o)
  pipebench_comm_test(check_all_reduce_${_t}_${_o} NP 2 RC 0 MATCH "${_t} +${_o} .*# Out of bounds values : 0 OK"
    ARGS all_reduce -d ${_t} -o ${_o} -b 64 -e 1K -f 4 ${_comm_quick})
endforeach()
foreach(_op latency bw bibw)
  # OSU's columns, and no nccl-tests "Avg bus bandwidth" line under them.
  pipebench_comm_test(check_${_op} NP 2 RC 0 MATCH "# Size .*\n8 +[0-9.]+\n.*# Out of bounds values : 0 OK\n# fit ${_op} over world: "
    ARGS ${_op} -b 8 -e 1K -f 16 ${_comm_quick})
endforeach()

# The groups of a 2x2x1 mapping all at once, then only rank 0's; read back by report.
pipebench_comm_test(tp_groups NP 4 RC 0
  MATCH "group tp: 2 group\\(s\\) of 2 rank\\(s\\), all at once.*  min-t    max-t\n.*# fit all_reduce over tp: "
  ARGS --mapping 2x2x1 --group tp -b 8 -e 1K -f 4 ${_comm_quick}
  THEN report c.h5
  THEN_MATCH "# comm 1: all_reduce over tp, 2 group\\(s\\) of 2 rank\\(s\\) at once, mapping 2x2x1, backend mpi")
pipebench_comm_test(one_group_json NP 4 RC 0
  MATCH "\"op\": \"all_reduce\",\n    \"group\": \"tp\",\n    \"groups\": 1,\n    \"group_size\": 2,\n    \"backend\": \"mpi\",\n    \"bytes\": 8,\n    \"count\": 2,\n    \"dtype\": \"float\",\n    \"redop\": \"sum\",\n    \"in_place\": false,.*only rank 0's runs \\(--one-group\\)"
  ARGS --mapping 2x2x1 --group tp --one-group --json -b 8 -e 8 ${_comm_quick}
  THEN report c.h5 THEN_MATCH "all_reduce over tp, 1 group\\(s\\) of 2 rank\\(s\\) \\(--one-group\\)")
# --csv: stdout is the header (the row objects' keys, units apart) and a line per object, out of place
# and in place; stderr holds the notes and the fit alone. Refused with --json on every rank, before MPI.
set(_n "[0-9.e+-]+")
set(_csv_tail "${_n},${_n},${_n},${_n},${_n},0\n")
pipebench_comm_test(csv NP 2 RC 0
  MATCH "^op,group,groups,group_size,backend,bytes \\(B\\),count \\(elements\\),dtype,redop,in_place,time \\(us\\),time_min \\(us\\),time_max \\(us\\),algbw \\(GB/s\\),busbw \\(GB/s\\),wrong\nall_reduce,world,1,2,mpi,8,2,float,sum,false,${_csv_tail}all_reduce,world,1,2,mpi,8,2,float,sum,true,${_csv_tail}all_reduce,world,1,2,mpi,64,16,float,sum,false,${_csv_tail}all_reduce,world,1,2,mpi,64,16,float,sum,true,${_csv_tail}# pipebench comm all_reduce: backend mpi, mapping 1x2x1 .*\n# results: c.h5\n#\n# fit all_reduce over world: t\\(bytes\\) = [^\n]*\n$"
  ARGS all_reduce -b 8 -e 64 -f 8 --csv ${_comm_quick}
  THEN report c.h5 THEN_MATCH "# comm 1: all_reduce over world")
# -I 1 (nccl-tests 2.19's per-iteration report): the header line, the four columns after each variant,
# --json's per_iter object with one raw time per timed iteration (-n 3), OSU tables too; the file keeps
# the times, so report prints the same columns.
pipebench_comm_test(per_iter NP 2 RC 0
  MATCH "# Per-Iteration Report: .*#wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%
"
  ARGS all_reduce -b 8 -e 8 -I 1 ${_comm_quick}
  THEN report c.h5 THEN_MATCH "\n +8 +2 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+\n")
pipebench_comm_test(per_iter_json NP 2 RC 0
  MATCH "\"i_cv_pct\": ${_n},\n    \"per_iter\": {\n      \"skipped_iterations\": 0,\n      \"min_us\": ${_n},\n.*\"times_us\": \[\n        ${_n},\n        ${_n},\n        ${_n}\n      \]"
  ARGS latency -b 8 -e 8 -I 1 --json -n 3 -w 1 --poll-us 20 --out c.h5)
pipebench_comm_test(json_and_csv_mpi NP 2 RC 2 MATCH "^pipebench: error: --json and --csv exclude each other: give one\n$"
  ONCE "pipebench: error:" ARGS --json --csv ${_comm_quick})
# pp-pairs: both pipeline neighbours at once, sized as one activation (s*b*h bf16 = 16*2*32*2 B).
pipebench_comm_test(pp_pairs_activation NP 4 RC 0
  MATCH "group pp-pairs: 1 group\\(s\\) of 4 rank\\(s\\).*\n +2048 +1024 +bfloat16 +none +-1 .* 0 .*# Out of bounds values : 0 OK"
  ARGS --group pp-pairs --p2p activation --seq 16 --micro-batch-size 2 --hidden 32 -n 2 -w 1 --poll-us 20 --out c.h5)
# A wrong element is counted in #wrong, said, and makes the exit code 1; the results are still stored.
pipebench_comm_test(wrong_exits_1 NP 2 RC 1
  MATCH "# Out of bounds values : 2 FAILED.*pipebench: error: 2 wrong element\\(s\\) in the data check \\(-c 1\\)"
  ARGS all_reduce -b 64 -e 64 ${_comm_quick}
  THEN report c.h5 THEN_MATCH "# Out of bounds values : 2 FAILED")
set_tests_properties(cli.comm_wrong_exits_1 PROPERTIES ENVIRONMENT PIPEBENCH_TEST_COMM_WRONG=1)
# An existing results file is refused without --append, before any traffic.
pipebench_comm_test(file_exists NP 2 RC 2
  MATCH "^pipebench: error: results file '.*/CMakeLists.txt' already exists; pass --append"
  ONCE "pipebench: error:" ARGS -b 8 -e 8 ${_comm_quick} --out ${CMAKE_CURRENT_SOURCE_DIR}/CMakeLists.txt)
# The default --poll-us 0: MPI's blocking collectives (as OSU times them), each size under a watchdog.
foreach(_op all_reduce all_gather reduce_scatter broadcast reduce alltoall)
  pipebench_comm_test(blocking_${_op} NP 2 RC 0 MATCH "# Out of bounds values : 0 OK\n"
    ARGS ${_op} -b 8 -e 4K -f 8 -n 2 -w 1 --out c.h5)
endforeach()
# A rank that stops inside the timed loop: the blocking collective of the others is ended by the
# progress watchdog within --timeout, naming what did not complete (default --poll-us 0), and the
# polled wait names the operation (--poll-us 20).
pipebench_comm_test(stopped_rank_blocking NP 2 RC nonzero
  MATCH "pipebench: error: rank 0: no operation of size 8 completed within --timeout 2 s \\(a rank stopped or died inside a blocking MPI collective\\)"
  ARGS all_reduce -b 8 -e 8 -n 2 -w 1 --timeout 2s --out c.h5)
set_tests_properties(cli.comm_stopped_rank_blocking PROPERTIES ENVIRONMENT PIPEBENCH_TEST_COMM_STOP=1)
pipebench_comm_test(stopped_rank_polled NP 2 RC nonzero
  MATCH "pipebench: error: rank 0: timed out after 2 s waiting for allreduce of 'world' \\(2 ranks, mpi\\)"
  ARGS all_reduce -b 8 -e 8 -n 2 -w 1 --timeout 2s --poll-us 20 --out c.h5)
set_tests_properties(cli.comm_stopped_rank_polled PROPERTIES ENVIRONMENT PIPEBENCH_TEST_COMM_STOP=1)
# -I takes nccl-tests' 0 or 1 only.
pipebench_cli_test(comm_per_iter_range RC 2 MATCH "^pipebench: error: --per_iter_timing '2' is not allowed: expected [^\n]*\n$"
  ARGS comm -I 2)

# Issue 27: comm's --timeout has run's bound and check (bench/run/plan.hpp check_timeout), before MPI starts.
pipebench_cli_test(comm_timeout_too_short RC 2
  MATCH "^pipebench: error: --timeout '1e-9ns' is not allowed: expected a time from 1s to 604800s \\(7 days\\)\n$"
  ARGS comm all_reduce --timeout 1e-9ns)
pipebench_cli_test(comm_timeout_without_unit RC 2 MATCH "^pipebench: error: --timeout '5' needs a unit" ARGS comm --timeout 5)
