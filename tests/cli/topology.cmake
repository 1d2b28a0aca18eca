# `pipebench topology`: mapping, placement summary, JSON and bad input (exit code 2, one error line).
pipebench_cli_test(topology_reference_example RC 0
  MATCH "order tp-dp-pp.*rank = tp \\+ 2\\*dp \\+ 4\\*pp.*\n      6     0   0   1   1       6,7       2,6       4,6\n"
  ARGS topology -t 2 -p 2 -d 2)
pipebench_cli_test(topology_tp_pp_dp_order RC 0
  MATCH "rank = tp \\+ 2\\*pp \\+ 4\\*dp.*\n      6     0   0   1   1       6,7       4,6       2,6\n"
  ARGS topology -t 2 -p 2 -d 2 --order tp-pp-dp)
pipebench_cli_test(topology_llama3_summary RC 0
  MATCH "16384 ranks.*2048 nodes, 8 ranks per node.*\n +tp +2048 +8 +0 +1\n +pp +1024 +16 +1024 +16\n +dp +128 +128 +128 +128\n.*pass --rank R"
  ARGS topology -t 8 -p 16 -d 128 --ranks-per-node 8)
pipebench_cli_test(topology_llama3_rank_row RC 0
  MATCH "\n   16383  2047   7  15  127  16376..16383  1023,2047..16383  15367,15375..16383\n$"
  ARGS topology -t 8 -p 16 -d 128 --rank 16383)
pipebench_cli_test(topology_tensor_groups_across_nodes_warn RC 0
  MATCH "# warning: 2048 of 2048 tp groups span more than one node"
  ARGS topology -t 8 -p 16 -d 128 --order dp-tp-pp)
pipebench_cli_test(topology_hostfile RC 0
  MATCH "2 nodes, 4 ranks per node \\(hostfile .*\n +tp +4 +2 +0 +1\n.*\n      7  gpu02   1   1   1"
  ARGS topology -t 2 -p 2 -d 2 --hostfile ${CMAKE_CURRENT_SOURCE_DIR}/cli/topology_hosts.txt)
pipebench_cli_test(topology_json RC 0
  MATCH ".world_size.: 8,.*.spanning_nodes.: 0.*.ranks.: .*.dp_group.: 3.*.groups.: {"
  ARGS topology -t 2 -p 2 -d 2 --json)
pipebench_cli_test(topology_bad_order RC 2
  MATCH "^pipebench: error: order 'tp-xp-pp': unknown axis 'xp'. allowed: tp, pp, dp"
  ARGS topology -t 2 -p 2 -d 2 --order tp-xp-pp)
pipebench_cli_test(topology_repeated_axis RC 2 MATCH "^pipebench: error: order 'tp-dp-dp': axis 'dp' appears twice"
  ARGS topology --order tp-dp-dp)
pipebench_cli_test(topology_zero_size RC 2 MATCH "^pipebench: error: --pipeline '0' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS topology -p 0)
pipebench_cli_test(topology_rank_outside RC 2 MATCH "^pipebench: error: rank 8 is outside the grid: allowed 0..7\n$"
  ARGS topology -t 2 -p 2 -d 2 --rank 8)
pipebench_cli_test(topology_bad_ranks_per_node RC 2 MATCH "^pipebench: error: --ranks-per-node '0' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS topology -t 2 --ranks-per-node 0)
pipebench_cli_test(topology_hostfile_count RC 2
  MATCH "^pipebench: error: [^\n]*topology_hosts.txt lists more than 4 ranks \\(t\\*p\\*d\\)"
  ARGS topology -t 2 -p 2 --hostfile ${CMAKE_CURRENT_SOURCE_DIR}/cli/topology_hosts.txt)
