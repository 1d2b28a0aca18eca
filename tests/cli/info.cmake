# Behaviour of the executable as a user sees it. One line per case; keep the regexes specific.
pipebench_cli_test(info_lists_components RC 0 MATCH "mpi: .*MPICH.*kokkos: .*precision: +fp32, fp64 on [A-Za-z]+; bf16, fp16: .*hdf5: +HDF5 .*nccl: " ARGS info)
pipebench_cli_test(unknown_subcommand RC 2 MATCH "pipebench: error: " ARGS frobnicate)
