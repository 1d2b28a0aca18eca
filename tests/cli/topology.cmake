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

# Five axes (docs/topology.md): the expert layout, every kind of group, the new coordinates in the rows
# and the JSON's added keys; --mapping as the other form of -t -p -d.
pipebench_cli_test(topology_five_axes RC 0
  MATCH "t=1 cp=2 p=2 d=4 ep=4 v=1, 16 ranks, order tp-cp-ep-dp-pp .*\n# rank = cp \\+ 2\\*dp \\+ 8\\*pp\n# expert layers: etp=1 ep=4 edp=2 p=2, rank = ep \\+ 4\\*edp \\+ 8\\*pp\n.*\n   dp-cp +2 +8 +0 +1\n.*\n   ep +4 +4 +0 +1\n   expert-tp +16 +1 +0 +1\n   expert-dp +8 +2 +0 +1\n.*  etp  ep  edp  tp-group  cp-group .*\n      6     0   0   0   0   3    0   2    1         6       6,7      6,14     0,2,4,6         0..7      4,5,6,7                6              2,6\n"
  ARGS topology --mapping 1x2x4 --context-parallel 2 --expert-parallel 4)
pipebench_cli_test(topology_five_axes_json RC 0
  MATCH ".cp.: 2,\n .ep.: 4,\n .edp.: 2,\n .expert_rank_formula.: .rank = ep \\+ 4\\*edp \\+ 8\\*pp.,.*.rank.: 6,.*.dp_group.: 0,\n   .cp.: 0,\n   .ep.: 2,\n   .etp.: 0,\n   .edp.: 1,\n   .cp_group.: 3,\n   .dp_cp_group.: 0,.*.expert_dp.: .\n   .\n    0,\n    4\n   ."
  ARGS topology --mapping 1x2x4 --context-parallel 2 --expert-parallel 4 --json)
# Expert parallelism alone: the expert layers split the 4 data-parallel ranks into ep 2 x edp 2.
pipebench_cli_test(topology_expert_parallel_only RC 0
  MATCH "t=1 cp=1 p=1 d=4 ep=2 v=1, 4 ranks, order tp-ep-dp-pp .*\n# rank = dp\n# expert layers: etp=1 ep=2 edp=2 p=1, rank = ep \\+ 2\\*edp\n.*\n      2     0   0   0   0   2    0   0    1         2         2         2   0,1,2,3      0,1,2,3       2,3                2              0,2\n"
  ARGS topology --mapping 1x1x4 --expert-parallel 2)
pipebench_cli_test(topology_mapping_form RC 0
  MATCH "order tp-dp-pp.*\n      6     0   0   1   1       6,7       2,6       4,6\n"
  ARGS topology --mapping 2x2x2)
# Combined groups whose axes are apart in rank print their first members, ",...," and the last.
pipebench_cli_test(topology_combined_group_text RC 0 MATCH "\n   dp +0 +0,4..124\n.*\n   dp-cp +0 +0,1,4,5,...,125\n"
  ARGS topology --mapping 1x2x32 --context-parallel 2 --expert-parallel 2 --order tp-cp-ep-pp-dp)
pipebench_cli_test(topology_mapping_and_sizes RC 2
  MATCH "^pipebench: error: --mapping 2x2x2 and --tensor both give the sizes: give --mapping TxPxD or -t -p -d, not both\n$"
  ARGS topology --mapping 2x2x2 -t 2)
pipebench_cli_test(topology_one_mapping RC 2
  MATCH "^pipebench: error: --mapping takes one TxPxD here: pipebench topology shows one layout\n$"
  ARGS topology --mapping 2x2x2,1x1x1)
pipebench_cli_test(topology_ep_not_dividing RC 2
  MATCH "^pipebench: error: ep \\(expert-parallel size\\) = 2 does not divide cp\\*d = 3: allowed 1, 3 \\(the expert layers split the cp\\*d ranks of each tensor and pipeline position into ep x expert-data\\)\n$"
  ARGS topology --mapping 1x1x3 --expert-parallel 2)
pipebench_cli_test(topology_cp_missing_from_order RC 2
  MATCH "^pipebench: error: order 'tp-dp-pp': axis 'cp' is missing, and cp = 2 needs a place in it. allowed: tp, pp, dp [^\n]*\n$"
  ARGS topology --context-parallel 2 --order tp-dp-pp)
pipebench_cli_test(topology_ep_repeated RC 2 MATCH "^pipebench: error: order 'tp-ep-dp-ep-pp': axis 'ep' appears twice. allowed"
  ARGS topology --expert-parallel 1 --order tp-ep-dp-ep-pp)
pipebench_cli_test(topology_pp_not_last RC 2
  MATCH "^pipebench: error: order 'tp-cp-ep-pp-dp' with p = 2, cp = 2 and ep = 4: pp must be the last axis unless p = 1 or ep = cp \\(the expert layers' data-parallel size cp\\*d/ep then equals d\\), as Megatron-Core requires\n$"
  ARGS topology --mapping 1x2x2 --context-parallel 2 --expert-parallel 4 --order tp-cp-ep-pp-dp)
pipebench_cli_test(topology_pipeline_groups_differ RC 2
  MATCH "^pipebench: error: order 'tp-cp-pp-ep-dp' with cp = 2 and ep = 2: the dense layers' pipeline groups \\(pp stride 2\\) and the expert layers' \\(pp stride 1\\) differ. put cp and ep on the same side of pp, or pp last, as Megatron-Core requires\n$"
  ARGS topology --mapping 1x2x2 --context-parallel 2 --expert-parallel 2 --order tp-cp-pp-ep-dp)
pipebench_cli_test(topology_cp_zero RC 2
  MATCH "^pipebench: error: --context-parallel '0' is not allowed: expected a decimal integer from 1 to 16777216\n$"
  ARGS topology --context-parallel 0)
pipebench_cli_test(topology_five_axes_too_large RC 2
  MATCH "^pipebench: error: t\\*cp\\*p\\*d = 33554432 ranks: at most 16777216 are supported\n$"
  ARGS topology -t 4096 -p 4096 --context-parallel 2)
