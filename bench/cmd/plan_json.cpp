// `pipebench plan --json`: one configuration's object (bench/cmd/plan_json.hpp, docs/plan.md "JSON").
#include "bench/cmd/plan_json.hpp"

#include <utility>
#include <vector>

namespace pipebench::bench {

namespace plan = analysis::plan;

// Per operation of one layer, of the embedding (first stage) and of the head and loss (last stage): its
// kind and its F, I (with the recomputed forward) and W seconds on one rank for one micro-batch.
namespace {

nlohmann::ordered_json ops_json(const plan::Prediction& p) {
  nlohmann::ordered_json out;
  const std::pair<const char*, const std::vector<plan::OpCost>*> parts[] = {
      {"layer", &p.layer_ops}, {"embedding", &p.embedding_ops}, {"head", &p.head_ops}, {"moe_layer", &p.moe_layer_ops}};
  for (const auto& [part, ops] : parts) {
    if (ops->empty() && ops == &p.moe_layer_ops) continue;  // a dense model
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const plan::OpCost& c : *ops)
      list.push_back({{"name", c.name}, {"kind", c.kind}, {"f", c.f}, {"i", c.i}, {"w", c.w}, {"recompute", c.recompute}});
    out[part] = list;
  }
  return out;
}

}  // namespace

nlohmann::ordered_json config_json(const plan::Prediction& p) {
  nlohmann::ordered_json j;
  const plan::Layout& l = p.layout;
  j["t"] = l.t, j["p"] = l.p, j["d"] = l.d, j["v"] = p.v, j["m"] = p.m;
  j["micro_batch_size"] = l.micro_batch_size;
  j["schedule"] = l.schedule;
  j["recompute"] = plan::recompute_name(l.recompute);
  j["sequence_parallel"] = l.sequence_parallel;
  j["zero"] = l.zero;
  j["context_parallel"] = l.cp;
  j["expert_parallel"] = l.ep;
  j["step_time"] = p.step_time;
  j["tokens_per_second"] = p.tokens_per_second;
  j["model_tflops_per_gpu"] = p.model_tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = p.hardware_tflops_per_gpu;
  j["mfu"] = p.mfu;
  j["memory_bytes_per_gpu"] = p.memory_bytes;
  j["bubble_fraction"] = p.bubble_fraction;
  j["fits"] = p.fits;
  const analysis::Breakdown& b = p.breakdown;
  j["breakdown"] = {{"compute", b.compute}, {"tp", b.tp},         {"pp", b.pp},
                    {"dp", b.dp},           {"bubble", b.bubble}, {"other", b.other}};
  if (!p.layer_ops.empty()) j["operations"] = ops_json(p);
  return j;
}

}  // namespace pipebench::bench
