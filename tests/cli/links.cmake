# The pipeline links of bench/run/links.hpp (what --backend nccl uses), run over MPI with tag 0 on the
# wire (PIPEBENCH_TEST_LINKS=1), so that messages match by order as under NCCL: the synthetic header
# of every message must name the stage and micro-batch its receiver expects. zbv and dualpipev send
# activations and gradients both ways over one link, in an order the receiver's own action order
# does not give.
pipebench_mpirun_test(run_links_match_by_order NP 4 RC 0 MATCH " zbv .* dualpipev "
  ARGS --schedule 1f1b,zbv,dualpipev -m 8 ${_quick} -o links.h5)
set_tests_properties(cli.run_links_match_by_order PROPERTIES ENVIRONMENT PIPEBENCH_TEST_LINKS=1)
pipebench_mpirun_test(run_links_interleaved NP 4 RC 0 MATCH " interleaved "
  ARGS --schedule interleaved -v 2 -m 8 ${_quick} -o links.h5)
set_tests_properties(cli.run_links_interleaved PROPERTIES ENVIRONMENT PIPEBENCH_TEST_LINKS=1)
# The synthetic workload's tensor- and data-parallel all-reduces and DualPipe's exchange of twin
# gradients, as --backend nccl runs them (communicator memory, the twin exchange in one group).
pipebench_mpirun_test(run_links_3d NP 4 RC 0 MATCH " dualpipe +1 +2 +2 .* dualpipe +2 +2 +1 .* 1f1b +2 +2 +1 "
  ARGS --schedule dualpipe,1f1b -m 4 --mapping 1x2x2,2x2x1 --dp-grad-bytes 64KiB --tp-allreduce-bytes 4KiB
  ${_quick} -o links.h5)
set_tests_properties(cli.run_links_3d PROPERTIES ENVIRONMENT PIPEBENCH_TEST_LINKS=1)
