#include "analysis/plan/validation.hpp"

#include <cmath>

namespace pipebench::analysis::plan {

namespace {

ModelSpec gpt(const std::string& name, int layers, int hidden, int heads) {
  ModelSpec m;
  m.name = name;
  m.source = "Narayanan et al. 2021, Table 1 (vocabulary 51,200, sequence 2,048)";
  m.layers = layers, m.hidden = hidden, m.heads = heads, m.seq = 2048, m.vocab = 51200;
  return m;
}

Layout layout(int t, int p, int d, int b, const std::string& schedule, int v, Recompute rc, bool zero = false,
              bool sp = false) {
  Layout l;
  l.sequence_parallel = sp;
  l.t = t, l.p = p, l.d = d, l.micro_batch_size = b, l.schedule = schedule, l.v = v, l.recompute = rc, l.zero = zero;
  return l;
}

}  // namespace

std::vector<ValidationRow> validation_rows() {
  std::vector<ValidationRow> rows;
  const char* mega = "Narayanan et al. 2021 Table 1 (137 and 163 TFLOP/s per GPU); configuration: NVIDIA/Megatron-LM "
                     "examples/sc21/run_table_1.sh";
  rows.push_back({"Megatron-LM GPT 1.7B, 32 GPUs", mega, "a100-80gb", gpt("gpt-1.7b", 24, 2304, 24), 512,
                  layout(1, 1, 32, 16, "1f1b", 1, Recompute::full), true, 137});
  rows.push_back({"Megatron-LM GPT 1T, 3072 GPUs", mega, "a100-80gb", gpt("gpt-1t", 128, 25600, 160), 3072,
                  layout(8, 64, 6, 1, "1f1b", 1, Recompute::full), true, 163});
  const char* mt = "Smith et al. 2022 Section 2.4 (batch 1920 on 280, 350, 420 DGX A100: 126, 121, 113 TFLOP/s per GPU; "
                   "t = 8, p = 35), as cli99/llm-analysis examples/megatron-turing-nlg quotes it";
  const ModelSpec mtnlg = model_preset("mt-nlg-530b");
  rows.push_back({"MT-NLG 530B, 2240 GPUs", mt, "a100-80gb", mtnlg, 1920, layout(8, 35, 8, 1, "1f1b", 1, Recompute::full),
                  true, 126});
  rows.push_back({"MT-NLG 530B, 2800 GPUs", mt, "a100-80gb", mtnlg, 1920, layout(8, 35, 10, 1, "1f1b", 1, Recompute::full),
                  true, 121});
  rows.push_back({"MT-NLG 530B, 3360 GPUs", mt, "a100-80gb", mtnlg, 1920, layout(8, 35, 12, 1, "1f1b", 1, Recompute::full),
                  true, 113});
  rows.push_back({"BLOOM 176B, 384 GPUs",
                  "bigscience-workshop/bigscience train/tr11-176B-ml/README.md (TP=4 PP=12 DP=8 MBS=2, GBS 2048, ZeRO-1, "
                  "activation checkpointing, hardware TFLOPs); about 150 TFLOPs: BigScience 176B model notes",
                  "a100-80gb", model_preset("bloom-176b"), 2048, layout(4, 12, 8, 2, "1f1b", 1, Recompute::full, true), true,
                  150});
  const char* llama = "Meta 2024, The Llama 3 Herd of Models, Table 4 (8K sequences, 16M tokens per batch)";
  const ModelSpec l3 = model_preset("llama3-405b");
  rows.push_back({"Llama 3 405B, 8192 GPUs", llama, "h100-80gb", l3, 2048,
                  layout(8, 16, 64, 1, "interleaved", 2, Recompute::none, true, true), false, 430});
  rows.push_back({"Llama 3 405B, 16384 GPUs", llama, "h100-80gb", l3, 2048,
                  layout(8, 16, 128, 1, "interleaved", 2, Recompute::none, true, true), false, 400});
  return rows;
}

double validate(std::vector<ValidationRow>& rows) {
  double sum = 0;
  for (ValidationRow& r : rows) {
    Problem pr;
    pr.model = r.model;
    pr.machine = machine_preset(r.machine);
    pr.global_batch = r.global_batch;
    const Prediction p = evaluate(pr, r.layout);
    r.predicted = r.hardware ? p.hardware_tflops_per_gpu : p.model_tflops_per_gpu;
    sum += std::abs(r.predicted - r.published) / r.published;
  }
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

}  // namespace pipebench::analysis::plan
