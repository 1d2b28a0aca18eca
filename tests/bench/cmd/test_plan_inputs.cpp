// What `pipebench plan` reads: machine files ([machine] TOML) and calibration results files (transformer
// runs and `pipebench comm` fits in the agreed /comm/NNNNNN/fit layout).
#include <gtest/gtest.h>

#include <fstream>

#include "analysis/error.hpp"
#include "bench/cmd/plan_inputs.hpp"
#include "bench/results/calibration.hpp"
#include "bench/results/comm_results.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/layout.hpp"
#include "bench/results/store.hpp"
#include "sample_run.hpp"
#include "scratch.hpp"

namespace pipebench::bench::testing {
namespace {

class PlanInputs : public ScratchDir {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = path(name);
    std::ofstream(p) << text;
    return p;
  }
  // A transformer run whose compute actions did 3e9 FLOPs in 3 ms: 1e12 FLOP/s.
  RunResult transformer_run(const std::string& key) {
    RunResult r = sample_run(key);
    r.config["workload"] = "transformer";
    r.config["precision"] = "fp32";
    for (auto& a : r.actions) a.flops = 0;
    r.actions[0].flops = 1e9;  // 1 ms
    r.actions[2].flops = 2e9;  // 2 ms
    return r;
  }
  // One `pipebench comm` invocation with its fit, as issue 9's writer lays it out.
  // One `pipebench comm` result with its fit, as comm writes it (append_comm); `complete` false: cut
  // short (its complete attribute removed).
  void add_comm_fit(const std::string& file, const std::string& op, double alpha, double beta, bool complete = true,
                    const std::string& group = "world", const std::string& spans = "") {
    CommResult r;
    r.op = op;
    r.group = group;
    if (!spans.empty()) r.metadata["groups_span_nodes"] = spans;
    r.groups = 1;
    r.group_size = 2;
    r.backend = "mpi";
    r.mapping = "1x2x1";
    r.one_group = 1;
    r.rows = {{8, 2, 0, alpha * 1e6, alpha * 1e6, alpha * 1e6, 0, 0, 0, 0, 0}};
    r.fit = {alpha, beta, 0.01, 12};
    const int id = append_comm(file, r);
    if (complete) return;
    h5::Id f = h5::open_file(file, true);
    h5::Id g = h5::open_group(f.get(), "comm/" + run_name(id));
    H5Adelete(g.get(), "complete");
    h5::close_file(f);
  }
};

TEST_F(PlanInputs, MachineFileFromBaseOrFromScratch) {
  const auto m = load_machine(write("m.toml", "# a cluster\n[machine]\nname = \"mine\"\nbase = \"h100-80gb\"\n"
                                              "inter_node_gbps = 25\nmemory_reserve_gib = 4\n"));
  EXPECT_EQ(m.name, "mine");
  EXPECT_DOUBLE_EQ(m.peak_flops, 989e12);
  EXPECT_DOUBLE_EQ(m.inter_bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(m.memory_reserve_bytes, 4.0 * 1024 * 1024 * 1024);
  const auto s = load_machine(write("s.toml", "[machine]\npeak_tflops = 100\nmemory_gib = 16\nhbm_gbps = 900\n"
                                              "intra_node_gbps = 50\ninter_node_gbps = 12.5\ngpus_per_node = 4\n"));
  EXPECT_DOUBLE_EQ(s.peak_flops, 100e12);
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(load_machine("a100-40gb").name, "a100-40gb");
  EXPECT_TRUE(s.gemm.empty());  // no table: every product at the peak
  // The GEMM table from its two parameters, the FP8 peak and the links' efficiencies (docs/model.md).
  const auto g = load_machine(write("g.toml", "[machine]\nbase = \"h100-80gb\"\nmatmul_efficiency = 0.5\n"
                                              "gemm_half_width = 0\npeak_fp8_tflops = 1000\ninter_node_efficiency = 0.5\n"));
  EXPECT_DOUBLE_EQ(analysis::plan::gemm_efficiency(g.gemm, 4096, 4096, 4096), 0.5);
  EXPECT_DOUBLE_EQ(g.peak_fp8_flops, 1e15);
  EXPECT_DOUBLE_EQ(g.inter_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(g.intra_efficiency, analysis::plan::machine_preset("h100-80gb").intra_efficiency);
}

TEST_F(PlanInputs, MalformedMachineFilesAreOneLineErrors) {
  auto error = [&](const std::string& text) {
    try {
      load_machine(write("bad.toml", text));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("[machine]\npeak_flops = 3\n").find("line 2: key 'peak_flops' is not allowed: the keys are"),
            std::string::npos);
  EXPECT_NE(error("[machine]\npeak_tflops = 100\n").find("key 'memory_gib' is required"), std::string::npos);
  EXPECT_NE(error("[run]\nbase = \"a100-80gb\"\n").find("table '[run]' is not allowed: the only table is [machine]"),
            std::string::npos);
  EXPECT_NE(error("[machine]\nbase = \"a100-80gb\"\nmatmul_efficiency = 1.5\n").find("matmul_efficiency = 1.5 is not allowed"),
            std::string::npos);
  EXPECT_NE(error("[machine]\nbase = \"a100-80gb\"\ngemm_half_width = 100\n").find("go together"), std::string::npos);
  EXPECT_NE(error("[machine]\nbase = \"a100-80gb\"\ninter_node_efficiency = 1.5\n").find("inter_node_efficiency = 1.5 is not allowed"),
            std::string::npos);
  EXPECT_NE(error("[machine]\nbase = \"tpu\"\n").find("line 2: key 'base': --machine 'tpu' is not allowed"),
            std::string::npos);
  EXPECT_NE(error("").find("holds no [machine] table"), std::string::npos);
  EXPECT_THROW(load_machine(path("missing.toml")), UsageError);
}

TEST_F(PlanInputs, CalibrationTakesTheFlopRateAndTheCommFit) {
  const std::string file = path("cal.h5");
  append_run(file, transformer_run("a"));
  add_comm_fit(file, "all_reduce", 1e-5, 5e9);
  add_comm_fit(file, "sendrecv", 2e-6, 8e9);
  add_comm_fit(file, "sendrecv", 1.0, 1.0, false);  // incomplete: ignored
  const Calibration c = read_calibration(file);
  EXPECT_NEAR(c.flop_rate, 1e12, 1e3);
  EXPECT_EQ(c.runs, std::vector<int>{1});
  EXPECT_DOUBLE_EQ(c.alpha, 2e-6);
  EXPECT_DOUBLE_EQ(c.beta, 8e9);
  EXPECT_EQ(c.link_source, "comm fit /comm/000002 (op sendrecv)");
  EXPECT_EQ(c.comms.size(), 2u);
  EXPECT_DOUBLE_EQ(c.value_bytes, 4);
}

// The FLOP rate of a typical step: per (rank, stage, kind) the median action, so that one action the
// machine's other work slowed tenfold does not lower it (a rate over every duration would be 3.6e11).
// The pipeline messages' cost beyond the link: the run's p2p_time.0 less the comm fit's time at the
// run's 1024-byte sends, and its p2p_wait.0 (bench/results/calibration.hpp).
TEST_F(PlanInputs, CalibrationTakesATypicalStepAndThePipelineMessagesCost) {
  const std::string file = path("cal.h5");
  RunResult r = transformer_run("a");
  r.actions[1].flops = 1e9;  // rank 0's F of stage 0: 1 ms, 1 ms, and 10 ms in step 1
  r.actions[7].flops = 1e9;
  r.actions[7].t_end = 0.010;
  r.summary.extra["p2p_time.0"] = 0.004;
  r.summary.extra["p2p_wait.0"] = 0.0005;
  append_run(file, r);
  add_comm_fit(file, "sendrecv", 2e-6, 8e9);
  const Calibration c = read_calibration(file);
  EXPECT_NEAR(c.flop_rate, 5e9 / 0.005, 1e3);
  EXPECT_NEAR(c.p2p_extra, 0.004 - (2e-6 + 1024 / 8e9), 1e-15);
  EXPECT_DOUBLE_EQ(c.p2p_wait, 0.0005);
  const analysis::plan::MachineSpec m = calibrated(analysis::plan::machine_preset("a100-80gb"), c);
  EXPECT_DOUBLE_EQ(m.p2p_extra, c.p2p_extra);
  EXPECT_DOUBLE_EQ(m.p2p_wait, c.p2p_wait);
  EXPECT_NE(m.rates_from.find("pipeline messages 3.998 ms beyond the link and 0.500 ms after the receiver arrives"),
            std::string::npos)
      << m.rates_from;
}

// A group's all_reduce fit times that group's collectives (bench/results/calibration.hpp): at its 2 ranks a
// ring of 2 steps, so the latency per step is alpha / 2 and the bus bandwidth beta (a factor 2(n-1)/n = 1).
// A fit whose groups are neither all inside a node nor all across is not a tier's: ignored.
TEST_F(PlanInputs, EachGroupsAllReduceFitTimesItsCollectives) {
  const std::string file = path("cal.h5");
  append_run(file, transformer_run("a"));
  add_comm_fit(file, "sendrecv", 2e-6, 8e9, true, "world", "none");
  add_comm_fit(file, "all_reduce", 4e-4, 1e9, true, "tp", "none");
  add_comm_fit(file, "all_reduce", 1.0, 1.0, true, "dp", "some");
  const Calibration c = read_calibration(file);
  EXPECT_DOUBLE_EQ(c.tp.link.bandwidth, 1e9);
  EXPECT_DOUBLE_EQ(c.tp.link.latency, 2e-4);
  EXPECT_FALSE(c.tp.link.inter);
  EXPECT_EQ(c.dp.link.bandwidth, 0);
  EXPECT_DOUBLE_EQ(c.intra.beta, 8e9);  // the tiers keep the point-to-point fit
  const analysis::plan::MachineSpec m = calibrated(analysis::plan::machine_preset("a100-80gb"), c);
  EXPECT_DOUBLE_EQ(m.tp_link.latency, 2e-4);
  EXPECT_EQ(m.dp_link.bandwidth, 0);
  EXPECT_NE(m.rates_from.find("tp collectives from comm fit /comm/000002 (all_reduce over tp, inside a node), dp "
                              "collectives from the link (no all_reduce fit over dp groups)"),
            std::string::npos)
      << m.rates_from;
}

TEST_F(PlanInputs, WithoutCommFitsTheRunsTransfersAreFitted) {
  const std::string file = path("cal.h5");
  append_run(file, transformer_run("a"));
  const Calibration c = read_calibration(file);
  EXPECT_NE(c.link_source.find("point-to-point transfers of run 1"), std::string::npos);
  EXPECT_GT(c.beta, 0);
}

TEST_F(PlanInputs, CalibrationFileWithoutTransformerRunsIsRefused) {
  const std::string file = path("syn.h5");
  append_run(file, sample_run("a"));
  try {
    read_calibration(file);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holds no complete `run --workload transformer` run"), std::string::npos);
  }
  EXPECT_THROW(read_calibration(write("x.h5", "not hdf5")), UsageError);
}

}  // namespace
}  // namespace pipebench::bench::testing
