// The table from a stored configuration's keys to `pipebench run`'s flags (bench/cmd/rerun_arguments.hpp).
#include "bench/cmd/rerun_arguments.hpp"


namespace pipebench::bench {

namespace {

enum class Value {
  as_is,    // --flag VALUE
  seconds,  // --flag VALUEs: times are stored in seconds
  on_off,   // "1" -> --flag on, "0" -> --flag off
  presence  // "1" -> --flag (a switch)
};

struct KeyFlag {
  const char* key;
  const char* flag;
  Value how = Value::as_is;
  const char* skip = nullptr;    // the stored value that means the flag's default: no flag
  const char* absent = nullptr;  // the flag's value when config_of left the key out (its non-default)
};

// Every key config_of writes, but t, p, d (one --mapping) and layers_per_stage (below).
const KeyFlag kKeys[] = {
    {"schedule", "--schedule"}, {"v", "-v"}, {"m", "-m"}, {"group", "--group", Value::as_is, "0"},
    {"order", "--order"}, {"backend", "--backend"}, {"workload", "--workload"}, {"dp_buckets", "--dp-buckets"},
    {"warmup_steps", "--warmup"}, {"timed_steps", "--steps"},
    // the transformer
    {"hidden", "--hidden"}, {"heads", "--heads"}, {"seq", "--seq"}, {"micro_batch_size", "--micro-batch-size"},
    {"vocab", "--vocab"}, {"layers", "--layers"}, {"recompute", "--recompute"}, {"precision", "--precision"},
    {"lr", "--lr"}, {"seed", "--seed"}, {"blas_threads", "--blas-threads"}, {"optimizer", "--optimizer"},
    {"weight_decay", "--weight-decay"}, {"tie_embeddings", "--tie-embeddings", Value::presence},
    // config_of keeps attention only when fused, vocab_parallel only when on (run's default) with t > 1
    {"attention", "--attention", Value::as_is, nullptr, "unfused"},
    {"vocab_parallel", "--vocab-parallel", Value::on_off, nullptr, "off"},
    {"sequence_parallel", "--sequence-parallel", Value::presence}, {"context_parallel", "--context-parallel"},
    {"cp_comm", "--cp-comm"}, {"cp_chunks", "--cp-chunks"}, {"zero", "--zero"},
    {"grad_reduce_dtype", "--grad-reduce-dtype"}, {"reshard_after_forward", "--reshard-after-forward", Value::on_off},
    {"gather_prefetch", "--gather-prefetch", Value::on_off}, {"layers_auto", "--balance"},
    {"embedding_stage", "--embedding-stage", Value::presence}, {"head_stage", "--head-stage", Value::presence},
    {"experts", "--experts"}, {"top_k", "--top-k"}, {"moe_ffn", "--moe-ffn"}, {"shared_experts", "--shared-experts"},
    {"moe_every", "--moe-every"}, {"router", "--router"}, {"capacity_factor", "--capacity-factor"},
    {"aux_loss_coeff", "--aux-loss-coeff"},
    // both workloads
    {"expert_parallel", "--expert-parallel"}, {"ep_overlap", "--ep-overlap"},
    // the synthetic stage
    {"tf", "--tf", Value::seconds}, {"tb", "--tb", Value::seconds}, {"tw", "--tw", Value::seconds},
    {"t_overlap", "--t-overlap", Value::seconds}, {"stage_cost", "--stage-cost", Value::as_is, "uniform"},
    {"synthetic_mode", "--synthetic-mode"}, {"activation_bytes", "--activation-bytes"}, {"p2p_bytes", "--p2p-bytes"},
    {"tp_allreduce_bytes", "--tp-allreduce-bytes"}, {"dp_grad_bytes", "--dp-grad-bytes"},
    {"ep_alltoall_bytes", "--ep-alltoall-bytes"}, {"routing_imbalance", "--routing-imbalance"},
};

const KeyFlag* find(const std::string& key) {
  for (const KeyFlag& k : kKeys)
    if (key == k.key) return &k;
  return nullptr;
}

void append(std::vector<std::string>& a, const KeyFlag& k, const std::string& v) {
  if (k.skip && v == k.skip) return;
  switch (k.how) {
    case Value::as_is: a.insert(a.end(), {k.flag, v}); return;
    case Value::seconds: a.insert(a.end(), {k.flag, v + "s"}); return;
    case Value::on_off: a.insert(a.end(), {k.flag, v == "0" || v == "off" ? "off" : "on"}); return;
    case Value::presence: a.push_back(k.flag); return;
  }
}

std::string get(const std::map<std::string, std::string>& m, const std::string& k) {
  const auto it = m.find(k);
  return it == m.end() ? "" : it->second;
}

}  // namespace

RerunArguments run_arguments(const std::map<std::string, std::string>& c) {
  RerunArguments out;
  std::vector<std::string>& a = out.args;
  a = {"--mapping", get(c, "t") + "x" + get(c, "p") + "x" + get(c, "d")};
  for (const auto& [key, value] : c) {
    if (key == "t" || key == "p" || key == "d") continue;
    if (key == "layers_per_stage") {  // an automatic split is chosen again (--balance), not repeated
      if (!c.count("layers_auto")) a.insert(a.end(), {"--layers-per-stage", value});
      continue;
    }
    const KeyFlag* k = find(key);
    if (!k) {
      out.unrepeated.push_back(key);
      continue;
    }
    append(a, *k, value);
    if (key == "layers_auto") a.insert(a.end(), {"--layers-per-stage", "auto"});
  }
  const bool transformer = get(c, "workload") == "transformer";
  for (const KeyFlag& k : kKeys)
    if (k.absent && transformer && !c.count(k.key)) a.insert(a.end(), {k.flag, k.absent});
  return out;
}

}  // namespace pipebench::bench
