#pragma once
// `pipebench plan --calibrate FILE.h5` (docs/model.md "Calibration"): what a results file says about the
// machine it ran on. The kernel FLOP rate comes from the action records of `run --workload transformer`
// runs (their compute actions' FLOPs over their durations, each (rank, stage, kind) at its median
// action), or, where the file holds a `pipebench gemm` sweep of their precision, the sweep's table of
// rates by shape (/gemm/NNNNNN); the link model from the α-β fits of
// `pipebench comm` (/comm/NNNNNN/fit, docs/results-schema.md), or, where the file has none, from the
// point-to-point transfers the runs recorded.
#include <map>
#include <string>
#include <vector>

#include "analysis/plan/gemm.hpp"
#include "analysis/plan/model.hpp"
#include "bench/results/comm_results.hpp"

namespace pipebench::bench {

struct Calibration {
  std::string path;
  double flop_rate = 0;             // per rank, FLOP/s, over the compute actions of the transformer runs
  std::vector<int> runs;            // the transformer runs it came from
  double value_bytes = 4;           // of the runs' precision (fp32 4, fp64 8)
  double action_gap = 0;            // the runs' executor overhead per action, s (mean of their medians)
  // What a pipeline message of the runs took beyond the link model below at its bytes (the mean over
  // stage boundaries of the runs' p2p_time.<b>, less the link of its tier: the time until its sender
  // entered MPI again, which UCX's rendezvous over TCP needs: docs/netns.md), and how long one still
  // took after its receiver arrived (the mean of their p2p_wait.<b>), s; 0 where the runs have none.
  double p2p_extra = 0, p2p_wait = 0;
  // The point-to-point link: t(bytes) = alpha + bytes / beta.
  double alpha = 0, beta = 0;
  std::string link_source;          // "comm fit /comm/000002 (op sendrecv)" or "p2p transfers of run 1 (least squares)"
  // The links of the two tiers where the file's comm fits tell them apart (their groups all inside one
  // node, or all across nodes: /comm metadata groups_span_nodes "none" or "all"); else the one above.
  struct Link {
    double alpha = 0, beta = 0;
    std::string source;
  };
  Link intra, inter;
  // A group kind's collectives (tp, dp): the file's all_reduce fit over that group with the most points,
  // as the ring's bus bandwidth and latency per step on the tier it ran on (its groups all inside a
  // node or all across nodes); bandwidth 0 where the file has none, and the plan takes the tier's link.
  struct GroupFit {
    analysis::plan::MachineSpec::GroupLink link;
    std::string source;
  };
  GroupFit tp, dp;
  std::vector<StoredComm> comms;    // every /comm group with a fit
  std::map<std::string, std::string> config;  // of the first transformer run
  double step_time = 0;             // of the first transformer run (its summary's median), s
  // The last `pipebench gemm` sweep of the runs' precision (/gemm/NNNNNN), where the file has one: the
  // products' rates by shape and the element-wise pass's bandwidth.
  int gemm_id = 0;
  analysis::plan::MeasuredGemm gemm;
  double elementwise_Bps = 0;
};

// Reads the file; UsageError (exit 2) naming the file when it is not a readable results file, holds no
// complete transformer run with FLOP counts, or holds neither a comm fit nor point-to-point records to fit.
Calibration read_calibration(const std::string& path);

}  // namespace pipebench::bench
