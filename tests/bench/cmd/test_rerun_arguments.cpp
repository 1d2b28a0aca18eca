// run_arguments (bench/cmd/rerun_arguments.hpp) against config_of (bench/run/plan.cpp): the flags of a
// configuration, planned, stored and turned back into flags, plan the same configuration, for settings
// that reach every key config_of writes; a key no flag sets is named.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "bench/cmd/rerun_arguments.hpp"
#include "bench/cmd/run_flags.hpp"

using namespace pipebench;
using namespace pipebench::bench;

namespace {

using Config = std::map<std::string, std::string>;

// The one configuration that `pipebench run ARGS` on `ranks` ranks plans.
Config planned(std::vector<std::string> args, int ranks) {
  RunSettings rs;
  CLI::App app{"pipebench run"};
  add_run_flags(app, rs);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
  app.parse(args);
  settle_run_flags(rs);
  const auto plans = plan_sweep(rs, ranks);
  EXPECT_EQ(plans.size(), 1u);
  return plans.at(0).config;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::string cur;
  for (char c : s + " ")
    if (c == ' ') {
      if (!cur.empty()) w.push_back(cur);
      cur.clear();
    } else
      cur += c;
  return w;
}

const std::string kModel = "--workload transformer --hidden 32 --heads 4 --seq 16 --vocab 64 --layers 4 -m 4 ";

// Each with the ranks it plans for; together they set every key config_of writes to a non-default value.
const std::pair<std::string, int> kRuns[] = {
    {kModel + "--schedule zb-h1 --mapping 1x1x2 --zero 3 --reshard-after-forward off --gather-prefetch off "
              "--optimizer adam --weight-decay 0.1 --precision bf16 --grad-reduce-dtype bf16 --attention fused "
              "--recompute selective --dp-buckets 2 --seed 5 --lr 0.01 --blas-threads 1 --warmup 2 --steps 3",
     2},
    {kModel + "--schedule 1f1b --mapping 2x2x1 --sequence-parallel --vocab-parallel off --tie-embeddings "
              "--layers-per-stage 1,3 --order tp-pp-dp --micro-batch-size 2 --precision fp64",
     4},
    {kModel + "--schedule interleaved -v 2 --mapping 1x2x1 --layers-per-stage auto --balance flops --embedding-stage "
              "--head-stage --layers 6",
     2},
    {kModel + "--schedule dualpipev --mapping 1x2x2 --expert-parallel 2 --experts 4 --top-k 2 --moe-ffn 48 "
              "--shared-experts 1 --moe-every 2 --router sigmoid --capacity-factor 1.5 --aux-loss-coeff 0.02 "
              "--ep-overlap off",
     4},
    {kModel + "--schedule 1f1b --mapping 1x1x1 --context-parallel 2 --cp-comm allgather --cp-chunks contiguous", 2},
    {"--schedule 1f1b --mapping 1x2x2 --group 2 -m 4 --tf 3ms --tb 5ms --tw 1ms --t-overlap 7ms --stage-cost 1,2 "
     "--synthetic-mode spin --activation-bytes 1024 --p2p-bytes 2048 --tp-allreduce-bytes 0 --dp-grad-bytes 4096 "
     "--expert-parallel 2 --ep-alltoall-bytes 1024 --routing-imbalance 1.5 --ep-overlap off --backend mpi",
     4},
};

}  // namespace

TEST(RerunArguments, EveryStoredSettingComesBackThroughItsFlag) {
  std::set<std::string> keys;
  for (const auto& [flags, ranks] : kRuns) {
    SCOPED_TRACE(flags);
    const Config first = planned(words(flags), ranks);
    const RerunArguments ra = run_arguments(first);
    EXPECT_TRUE(ra.unrepeated.empty());
    const Config again = planned(ra.args, ranks);
    EXPECT_EQ(again, first);
    for (const auto& [k, v] : first) keys.insert(k);
  }
  // The runs above reach the keys config_of writes only where a setting is not its default.
  for (const char* k : {"zero", "reshard_after_forward", "gather_prefetch", "optimizer", "weight_decay", "grad_reduce_dtype",
                        "attention", "sequence_parallel", "tie_embeddings", "layers_auto", "embedding_stage", "head_stage",
                        "experts", "expert_parallel", "context_parallel", "cp_comm", "ep_alltoall_bytes", "stage_cost"})
    EXPECT_TRUE(keys.count(k)) << k;
}

TEST(RerunArguments, AKeyNoFlagSetsIsNamed) {
  Config c = planned(words("--schedule 1f1b --mapping 1x2x1 -m 4"), 2);
  c["from_a_newer_pipebench"] = "1";
  const RerunArguments ra = run_arguments(c);
  EXPECT_EQ(ra.unrepeated, std::vector<std::string>{"from_a_newer_pipebench"});
  c.erase("from_a_newer_pipebench");
  EXPECT_EQ(planned(ra.args, 2), c);
}
