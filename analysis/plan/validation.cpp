// The published runs of docs/model.md "Validation", each row with its source.
#include "analysis/plan/validation.hpp"

#include <cmath>

namespace pipebench::analysis::plan {

namespace {

// Narayanan et al. 2021's and Korthikanti et al. 2022's GPT models: vocabulary 51,200, sequence 2,048.
ModelSpec gpt(const std::string& name, int layers, int hidden, int heads) {
  ModelSpec m;
  m.name = name;
  m.source = "Narayanan et al. 2021, Table 1 (vocabulary 51,200, sequence 2,048)";
  m.layers = layers, m.hidden = hidden, m.heads = heads, m.seq = 2048, m.vocab = 51200;
  return m;
}

Layout layout(int t, int p, int d, int b, const std::string& schedule, int v, Recompute rc, int zero = 0,
              bool sp = false) {
  Layout l;
  l.async_tp = true;
  l.sequence_parallel = sp;
  l.t = t, l.p = p, l.d = d, l.micro_batch_size = b, l.schedule = schedule, l.v = v, l.recompute = rc, l.zero = zero;
  return l;
}

// Runs on Megatron-LM's 2021 code (and the Megatron-DeepSpeed fork of it): no asynchronous TP
// all-reduce in the backward yet.
Layout code2021(Layout l) {
  l.async_tp = false;
  return l;
}

// Narayanan et al. 2021 Table 1 (weak scaling on Selene, A100 80 GB), its configurations from
// NVIDIA/Megatron-LM examples/academic_paper_scripts/sc21/run_table_1.sh (micro-batch, global batch,
// virtual stages as layers per virtual stage, DDP "local" = no overlap of the gradient all-reduce,
// full "uniform" recomputation); hardware TFLOP/s per GPU.
void narayanan_table1(std::vector<ValidationRow>& rows) {
  struct R {
    const char* run;
    int L, h, a, t, p, gpus, b, G, layers_per_chunk;
    bool torch_ddp;
    double tflops;
  };
  const R table[] = {
      {"GPT 1.7B, 32 GPUs", 24, 2304, 24, 1, 1, 32, 16, 512, 0, true, 137},
      {"GPT 3.6B, 64 GPUs", 30, 3072, 32, 2, 1, 64, 16, 512, 0, true, 138},
      {"GPT 7.5B, 128 GPUs", 36, 4096, 32, 4, 1, 128, 16, 512, 0, true, 142},
      {"GPT 18.4B, 256 GPUs", 40, 6144, 48, 8, 1, 256, 8, 1024, 0, true, 135},
      {"GPT 39.1B, 512 GPUs", 48, 8192, 64, 8, 2, 512, 4, 1536, 0, false, 138},
      {"GPT 76.1B, 1024 GPUs", 60, 10240, 80, 8, 4, 1024, 2, 1792, 5, false, 140},
      {"GPT 145.6B, 1536 GPUs", 80, 12288, 96, 8, 8, 1536, 2, 2304, 5, false, 148},
      {"GPT 310.1B, 1920 GPUs", 96, 16384, 128, 8, 16, 1920, 1, 2160, 3, false, 155},
      {"GPT 529.6B, 2520 GPUs", 105, 20480, 128, 8, 35, 2520, 1, 2520, 1, false, 163},
      {"GPT 1T, 3072 GPUs", 128, 25600, 160, 8, 64, 3072, 1, 3072, 0, false, 163},
  };
  for (const R& r : table) {
    const int d = r.gpus / (r.t * r.p);
    const int v = r.layers_per_chunk > 0 ? r.L / r.p / r.layers_per_chunk : 1;
    Layout l = layout(r.t, r.p, d, r.b, v > 1 ? "interleaved" : "1f1b", v, Recompute::full);
    l.dp_overlap = r.torch_ddp;
    l.async_tp = false;
    rows.push_back({r.run, "narayanan-t1",
                    "Narayanan et al. 2021 (arXiv 2104.04473) Table 1; configuration: NVIDIA/Megatron-LM "
                    "examples/academic_paper_scripts/sc21/run_table_1.sh",
                    "Megatron-LM", "a100-80gb", gpt("gpt", r.L, r.h, r.a), r.G, l, Metric::hardware_tflops, r.tflops});
  }
}

// Narayanan et al. 2021 Table 2, the PTD-P rows (model-parallel size 96 = t 8 x p 12 for 175B and
// 280 = t 8 x p 35 for 530B, micro-batch 1; the schedule is not stated: 1F1B).
void narayanan_table2(std::vector<ValidationRow>& rows) {
  const char* src = "Narayanan et al. 2021 (arXiv 2104.04473) Table 2 (PTD-P rows)";
  const ModelSpec g175 = gpt("gpt3-175b", 96, 12288, 96), g530 = gpt("gpt-530b", 105, 20480, 128);
  const std::pair<int, double> small[] = {{384, 153}, {768, 149}, {1536, 141}};
  for (const auto& [gpus, tf] : small)
    rows.push_back({"GPT 174.6B, " + std::to_string(gpus) + " GPUs", "narayanan-t2", src, "Megatron-LM", "a100-80gb", g175,
                    1536, code2021(layout(8, 12, gpus / 96, 1, "1f1b", 1, Recompute::full)), Metric::hardware_tflops, tf});
  const std::pair<int, double> big[] = {{560, 171}, {1120, 167}, {2240, 159}};
  for (const auto& [gpus, tf] : big)
    rows.push_back({"GPT 529.6B, " + std::to_string(gpus) + " GPUs", "narayanan-t2", src, "Megatron-LM", "a100-80gb", g530,
                    2240, code2021(layout(8, 35, gpus / 280, 1, "1f1b", 1, Recompute::full)), Metric::hardware_tflops, tf});
}

// Korthikanti et al. 2022 Table 5: seconds per iteration, full recomputation (no SP) against selective
// recomputation with sequence parallelism; configurations as Calculon's validation inputs give them
// (calculon-ai/calculon validation/seqsel/tab5: d = 1, global batch = 4, 64, 280, 512, micro-batch 4, 1,
// 1, 1, interleaving 1, 3, 3, 1).
void korthikanti_table5(std::vector<ValidationRow>& rows) {
  struct R {
    const char* name;
    int L, h, a, p, G, b, v;
    double full, seqsel;
  };
  const R table[] = {{"GPT 22B, 8 GPUs", 48, 6144, 64, 1, 4, 4, 1, 1.42, 1.10},
                     {"GPT 175B, 64 GPUs", 96, 12288, 96, 8, 64, 1, 3, 18.13, 13.75},
                     {"GPT 530B, 280 GPUs", 105, 20480, 128, 35, 280, 1, 3, 49.05, 37.83},
                     {"GPT 1T, 512 GPUs", 128, 25600, 160, 64, 512, 1, 1, 94.42, 71.49}};
  const char* src = "Korthikanti et al. 2022 (arXiv 2205.05198) Table 5; configurations: calculon-ai/calculon "
                    "validation/seqsel/tab5";
  for (const R& r : table) {
    const std::string sched = r.v > 1 ? "interleaved" : "1f1b";
    rows.push_back({std::string(r.name) + ", full recompute", "korthikanti-t5", src, "Megatron-LM", "a100-80gb",
                    gpt("gpt", r.L, r.h, r.a), r.G, layout(8, r.p, 1, r.b, sched, r.v, Recompute::full),
                    Metric::step_seconds, r.full});
    rows.push_back({std::string(r.name) + ", selective + SP", "korthikanti-t5", src, "Megatron-LM", "a100-80gb",
                    gpt("gpt", r.L, r.h, r.a), r.G, layout(8, r.p, 1, r.b, sched, r.v, Recompute::selective, 0, true),
                    Metric::step_seconds, r.seqsel});
  }
}

// Korthikanti et al. 2022 Table 4: one layer of the 22B model (t 8, micro-batch 4, Table 3's
// configuration), forward and backward milliseconds, five ways.
void korthikanti_table4(std::vector<ValidationRow>& rows) {
  struct R {
    const char* name;
    Recompute rc;
    bool sp;
    double f, b;
  };
  const R table[] = {{"no recompute", Recompute::none, false, 7.7, 11.9},
                     {"sequence parallel", Recompute::none, true, 7.2, 11.8},
                     {"full recompute", Recompute::full, false, 7.7, 19.5},
                     {"selective recompute", Recompute::selective, false, 7.7, 13.2},
                     {"selective + SP", Recompute::selective, true, 7.2, 13.1}};
  const char* src = "Korthikanti et al. 2022 (arXiv 2205.05198) Table 4 (22B: Table 3, t 8, micro-batch 4)";
  for (const R& r : table)
    for (int pass = 0; pass < 2; ++pass)
      rows.push_back({std::string("GPT 22B layer ") + (pass ? "backward, " : "forward, ") + r.name, "korthikanti-t4", src,
                      "Megatron-LM", "a100-80gb", gpt("gpt", 48, 6144, 64), 4,
                      layout(8, 1, 1, 4, "1f1b", 1, r.rc, 0, r.sp),
                      pass ? Metric::layer_backward_ms : Metric::layer_forward_ms, pass ? r.b : r.f});
}

// DeepSpeed's pipeline engine (microsoft/DeepSpeed deepspeed/runtime/pipe/schedule.py, TrainSchedule):
// a synchronous 1F1B whose ReduceGrads comes after the last micro-batch's backward, so the gradient
// reduction is never overlapped; the 2021 Megatron code underneath (no asynchronous TP all-reduce).
Layout deepspeed_pipe(Layout l) {
  l.dp_overlap = false;
  return code2021(l);
}

// Megatron-DeepSpeed runs: MT-NLG 530B and BLOOM 176B (BigScience tr11-176B-ml README: t 4 p 12 d 8,
// micro-batch 2, global batch 2048, ZeRO-1, full recomputation, about 150 TFLOP/s per GPU).
// MT-NLG (Smith et al. 2022): 105 layers, h 20480, 128 heads, s 2048, t 8 and p 35 (3 layers a stage),
// global batch 1920 on 280, 350, 420 DGX A100 80 GB (d 8, 10, 12), iteration times 60.1, 50.2, 44.4 s
// and 126, 121, 113 TFLOP/s per GPU (Section 2.4). Those rates count the recomputed forward: Korthikanti
// et al. 2022's hardware FLOPs of a step over GPUs x time give 125.7, 120.4, 113.5 (a test checks that
// the model's hardware FLOPs are those).
// Not stated, so chosen: micro-batch 1 (m = 240, 192, 160), full recomputation, ZeRO 0 (the state fits).
void deepspeed_rows(std::vector<ValidationRow>& rows) {
  const char* mt = "Smith et al. 2022 (arXiv 2201.11990) Section 2.4 (iteration times and TFLOP/s), as cli99/llm-analysis "
                   "examples/megatron-turing-nlg quotes it; PaLM (Chowdhery et al. 2022) takes its 65.43K tokens/s "
                   "= 1920 x 2048 / 60.1 s";
  const ModelSpec mtnlg = model_preset("mt-nlg-530b");
  for (const auto& [d, tf] : {std::pair{8, 126.0}, {10, 121.0}, {12, 113.0}})
    rows.push_back({"MT-NLG 530B, " + std::to_string(280 * d) + " GPUs", "mt-nlg", mt, "Megatron-DeepSpeed", "a100-80gb",
                    mtnlg, 1920, deepspeed_pipe(layout(8, 35, d, 1, "1f1b", 1, Recompute::full)), Metric::hardware_tflops, tf});
  rows.push_back({"BLOOM 176B, 384 GPUs", "bloom",
                  "bigscience-workshop/bigscience train/tr11-176B-ml/README.md (TP=4 PP=12 DP=8 MBS=2, GBS 2048, ZeRO-1, "
                  "activation checkpointing, about 150 hardware TFLOP/s)",
                  "Megatron-DeepSpeed", "a100-80gb", model_preset("bloom-176b"), 2048,
                  deepspeed_pipe(layout(4, 12, 8, 2, "1f1b", 1, Recompute::full, 1)), Metric::hardware_tflops, 150});
}

// Meta 2024 (arXiv 2407.21783) Table 4: 8K sequences on 8,192 and 16,384 H100s (t 8, p 16, d 64 and
// 128, 16M tokens per batch) and the 131,072-token context-parallel row (cp 16, d 8). Meta describes
// an interleaved schedule with one layer fewer on the first and last stage and sharded data
// parallelism that keeps the weights after the forward (ZeRO-2 here); b = 1 and v = 2 are choices.
void llama3_rows(std::vector<ValidationRow>& rows) {
  const char* src = "Meta 2024, The Llama 3 Herd of Models (arXiv 2407.21783), Table 4";
  const ModelSpec l3 = model_preset("llama3-405b");
  std::vector<int> balanced(32, 4);
  balanced.front() = balanced.back() = 3;
  for (const auto& [d, tf] : {std::pair{64, 430.0}, {128, 400.0}}) {
    Layout l = layout(8, 16, d, 1, "interleaved", 2, Recompute::none, 2, true);
    l.stage_layers = balanced;
    rows.push_back({"Llama 3 405B, " + std::to_string(128 * d) + " GPUs", "llama3", src, "Meta", "h100-80gb", l3, 2048, l,
                    Metric::model_tflops, tf});
  }
  ModelSpec long_ctx = l3;
  long_ctx.seq = 131072;
  Layout l = layout(8, 16, 8, 1, "interleaved", 2, Recompute::none, 2, true);
  l.stage_layers = balanced;
  l.cp = 16;
  rows.push_back({"Llama 3 405B, 16384 GPUs, 128K context (cp 16)", "llama3", src, "Meta", "h100-80gb", long_ctx, 128, l,
                  Metric::model_tflops, 380});
}

// DeepSeek-AI 2024 (DeepSeek-V3 Technical Report): "training DeepSeek-V3 on each trillion tokens
// requires only 180K H800 GPU hours, i.e., 3.7 days on our cluster with 2048 H800 GPUs" (Section 1),
// 10^12 / (180,000 x 3,600) = 1,543 tokens/s per GPU; 16-way pipeline (DualPipe), 64-way expert
// parallelism over 8 nodes, ZeRO-1 data parallelism, no TP (3.2); FP8 GEMMs (3.3); batch 15,360
// sequences of 4K after the ramp (4.2). b = 1 is a choice; the all-to-alls are hidden behind the paired
// chunk's computation as DualPipe does (3.2.1, ep_overlap).
void deepseek_v3_row(std::vector<ValidationRow>& rows) {
  Layout l = layout(1, 16, 128, 1, "dualpipe", 0, Recompute::none, 1);
  l.ep = 64, l.fp8 = true, l.ep_overlap = true;
  rows.push_back({"DeepSeek-V3 671B, 2048 GPUs", "deepseek-v3", "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, Sections 1, 3.2, 4.2",
                  "HAI-LLM", "h800-80gb", model_preset("deepseek-v3-671b"), 15360, l, Metric::tokens_per_gpu, 1e12 / (180e3 * 3600)});
}

}  // namespace

std::vector<ValidationRow> validation_rows() {
  std::vector<ValidationRow> rows;
  narayanan_table1(rows);
  narayanan_table2(rows);
  korthikanti_table4(rows);
  korthikanti_table5(rows);
  deepspeed_rows(rows);
  llama3_rows(rows);
  deepseek_v3_row(rows);
  return rows;
}

double validate(std::vector<ValidationRow>& rows, const std::vector<MachineSpec>& machines) {
  double sum = 0;
  for (ValidationRow& r : rows) {
    Problem pr;
    pr.model = r.model;
    pr.machine = machine_preset(r.machine);
    for (const MachineSpec& m : machines)
      if (m.name == r.machine) pr.machine = m;
    pr.global_batch = r.global_batch;
    const Prediction p = evaluate(pr, r.layout);
    switch (r.metric) {
      case Metric::hardware_tflops: r.predicted = p.hardware_tflops_per_gpu; break;
      case Metric::model_tflops: r.predicted = p.model_tflops_per_gpu; break;
      case Metric::step_seconds: r.predicted = p.step_time; break;
      case Metric::layer_forward_ms: r.predicted = 1e3 * p.layer_forward; break;
      case Metric::layer_backward_ms: r.predicted = 1e3 * p.layer_backward; break;
      case Metric::tokens_per_gpu:
        r.predicted = p.tokens_per_second / (double(r.layout.t) * r.layout.p * r.layout.d * r.layout.cp);
        break;
    }
    sum += std::abs(r.error());
  }
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

}  // namespace pipebench::analysis::plan
