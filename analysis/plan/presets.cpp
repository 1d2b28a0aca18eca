// Model and machine presets of `pipebench plan`, each figure with its public source (docs/model.md).
#include <cstdint>
#include <string>

#include "analysis/error.hpp"
#include "analysis/plan/model.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis::plan {

// The fitted parameters (docs/model.md "Machine presets"): each GEMM table's e_max and half width, and
// the fraction of a link's bandwidth a ring collective reaches.
constexpr double kAmpereGemm[2] = {0.73, 149};
constexpr double kHopperGemm[2] = {0.66, 149};
constexpr double kNvlinkEfficiency = 0.80, kNetworkEfficiency = 0.90;
constexpr double kElementwisePasses = 1.5;

namespace {

// A DeepSeek-MoE model: 128 heads, SwiGLU, rotary positions, untied output layer, 4K sequence. Two
// approximations (docs/model.md "Model presets"): multi-head latent attention as multi-head attention of
// the same h and heads, and every layer an MoE layer (the first few are dense, of the same FLOPs).
struct DeepSeekShape {
  int layers, hidden, vocab;
  std::int64_t ffn;
  int experts, top_k;
  std::int64_t expert_ffn;
  int shared;
};

ModelSpec deepseek(const std::string& name, const std::string& source, const DeepSeekShape& x) {
  ModelSpec m;
  m.name = name;
  m.source = source + " (MLA as MHA; every layer MoE)";
  m.layers = x.layers, m.hidden = x.hidden, m.heads = 128, m.seq = 4096, m.vocab = x.vocab;
  m.ffn = x.ffn, m.gated_mlp = true, m.flash_attention = true, m.learned_positions = false, m.tie_embeddings = false;
  m.experts = x.experts, m.top_k = x.top_k, m.expert_ffn = x.expert_ffn, m.shared_experts = x.shared;
  return m;
}

}  // namespace

const std::vector<ModelSpec>& model_presets() {
  static const std::vector<ModelSpec> presets = [] {
    std::vector<ModelSpec> v;
    ModelSpec g;
    // Brown et al. 2020 (Language Models are Few-Shot Learners), Table 2.1: 96 layers, d_model 12288,
    // 96 heads, context 2048; vocabulary 51,200 as Megatron-LM pads GPT-2's 50,257 (Narayanan et al. 2021).
    g.name = "gpt3-175b";
    g.source = "Brown et al. 2020, Table 2.1; vocabulary padded to 51,200 as in Narayanan et al. 2021";
    g.layers = 96, g.hidden = 12288, g.heads = 96, g.seq = 2048, g.vocab = 51200;
    v.push_back(g);
    // Meta 2024 (The Llama 3 Herd of Models), Table 3: 126 layers, model dimension 16,384, FFN 53,248
    // (SwiGLU), 128 heads, 8 key/value heads, vocabulary 128K (128,256 in the released config), 8K
    // context in pre-training.
    ModelSpec l;
    l.name = "llama3-405b";
    l.source = "Meta 2024, The Llama 3 Herd of Models, Table 3 (SwiGLU, GQA with 8 KV heads, 8K context)";
    l.layers = 126, l.hidden = 16384, l.heads = 128, l.kv_heads = 8, l.seq = 8192, l.vocab = 128256;
    l.ffn = 53248, l.gated_mlp = true, l.flash_attention = true;
    v.push_back(l);
    // BigScience tr11-176B-ml README: 70 layers, hidden 14336, 112 heads, sequence 2048, embedding
    // 250,880 x 14,336.
    ModelSpec b;
    b.name = "bloom-176b";
    b.source = "BigScience, bigscience-workshop/bigscience train/tr11-176B-ml/README.md";
    b.layers = 70, b.hidden = 14336, b.heads = 112, b.seq = 2048, b.vocab = 250880;
    v.push_back(b);
    // Smith et al. 2022 (Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B): 105 layers,
    // hidden 20480, 128 heads, sequence 2048; vocabulary 50,272 (GPT-2's, padded) as llm-analysis'
    // reproduction of the paper's configuration lists it.
    ModelSpec t;
    t.name = "mt-nlg-530b";
    t.source = "Smith et al. 2022 (MT-NLG), Section 2; vocabulary as in cli99/llm-analysis examples/megatron-turing-nlg";
    t.layers = 105, t.hidden = 20480, t.heads = 128, t.seq = 2048, t.vocab = 50272;
    v.push_back(t);
    // Jiang et al. 2024 (Mixtral of Experts), Table 1: dim 4096, 32 layers, 32 heads of 128, 8 kv heads,
    // hidden_dim 14336 (SwiGLU), 8 experts, top 2, vocabulary 32,000, context 32,768.
    ModelSpec x;
    x.name = "mixtral-8x7b";
    x.source = "Jiang et al. 2024, Mixtral of Experts, Table 1 (8 experts, top-2, SwiGLU, GQA 8)";
    x.layers = 32, x.hidden = 4096, x.heads = 32, x.kv_heads = 8, x.seq = 32768, x.vocab = 32000;
    x.ffn = 14336, x.gated_mlp = true, x.flash_attention = true, x.learned_positions = false;
    x.experts = 8, x.top_k = 2;
    v.push_back(x);
    // DeepSeek-AI 2024 (DeepSeek-V3 Technical Report) §4.2: 61 layers, hidden 7168, 128 heads, MoE
    // layers of 1 shared and 256 routed experts of inner size 2048, 8 routed per token (sigmoid router),
    // 4K pre-training sequence, 128K vocabulary (129,280 in the released config); dense FFN 18,432;
    // trained with 16-way pipeline (DualPipe), 64-way expert parallelism over 8 nodes and ZeRO-1 (§3.2).
    ModelSpec ds = deepseek("deepseek-v3-671b", "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, Sections 3.2 and 4.2",
                            {61, 7168, 129280, 18432, 256, 8, 2048, 1});
    ds.router = transformer::Router::sigmoid;
    v.push_back(ds);
    // DeepSeek-AI 2024 (DeepSeek-V2), Section 3.1 (hyper-parameters, infrastructures): 60 layers, hidden
    // 5120, 128 heads, 2 shared and 160 routed experts of inner size 1536, 6 routed per token, 4K
    // sequence, 100K vocabulary (102,400 in the released config); dense FFN 12,288; trained with a
    // 16-way zero-bubble pipeline, 8-way expert parallelism and ZeRO-1 data parallelism.
    v.push_back(deepseek("deepseek-v2-236b", "DeepSeek-AI 2024, DeepSeek-V2, Section 3.1 (hyper-parameters, infrastructures)",
                         {60, 5120, 102400, 12288, 160, 6, 1536, 2}));
    return v;
  }();
  return presets;
}

namespace {
template <class T>
const T& find_preset(const std::vector<T>& all, const std::string& name, const char* flag) {
  std::string names;
  for (const auto& x : all) {
    if (x.name == name) return x;
    names += (names.empty() ? "" : ", ") + x.name;
  }
  throw UsageError(std::string(flag) + " " + quoted(name) + " is not allowed: expected one of " + names);
}
}  // namespace

const ModelSpec& model_preset(const std::string& name) { return find_preset(model_presets(), name, "--model"); }

namespace {

// The figures every preset shares: 8 GPUs per node, latencies of 5 us inside a node and 10 us between
// nodes and the 2 GiB reserve (pipebench's choice), one element-wise pass, the gradient reduction hidden
// behind the last backward where it can be. The GEMM tables' two parameters per generation and the
// links' efficiencies: docs/model.md "Machine presets" (fitted on one source's rows, then frozen).
MachineSpec base(const std::string& name, const std::string& source) {
  MachineSpec m;
  m.name = name, m.source = source;
  m.gpus_per_node = 8;
  m.intra_latency = 5e-6;
  m.inter_latency = 10e-6;
  m.elementwise_passes = kElementwisePasses;
  m.dp_overlap = 1.0;
  m.memory_reserve_bytes = 2 * kGiB;
  return m;
}

}  // namespace

const std::vector<MachineSpec>& machine_presets() {
  static const std::vector<MachineSpec> presets = [] {
    std::vector<MachineSpec> v;
    // NVIDIA A100 Tensor Core GPU datasheet: BF16 dense 312 TFLOP/s (no FP8); 40 GB HBM2 at 1,555 GB/s
    // (80 GB HBM2e at 2,039 GB/s); NVLink 600 GB/s per GPU (both directions). DGX A100 user guide: eight
    // 200 Gb/s HDR InfiniBand adapters for the compute fabric, one per GPU (25 GB/s per direction).
    const GemmTable ampere = saturating_table(kAmpereGemm[0], kAmpereGemm[1], "saturating form, fitted on Narayanan et al. 2021 Table 1");
    MachineSpec a = base("a100-40gb", "NVIDIA A100 datasheet (312 TFLOP/s BF16 dense, 40 GB, 1,555 GB/s, NVLink 600 GB/s); DGX A100: 8x HDR 200 Gb/s");
    a.peak_flops = 312e12;
    a.memory_bytes = 40 * kGiB;
    a.hbm_bandwidth = 1555e9;
    a.intra_bandwidth = 300e9;
    a.inter_bandwidth = 25e9;
    a.intra_efficiency = kNvlinkEfficiency;
    a.inter_efficiency = kNetworkEfficiency;
    a.gemm = ampere;
    v.push_back(a);
    MachineSpec a8 = a;
    a8.name = "a100-80gb";
    a8.source = "NVIDIA A100 datasheet (312 TFLOP/s BF16 dense, 80 GB, 2,039 GB/s, NVLink 600 GB/s); DGX A100: 8x HDR 200 Gb/s";
    a8.memory_bytes = 80 * kGiB;
    a8.hbm_bandwidth = 2039e9;
    v.push_back(a8);
    // NVIDIA H100 Tensor Core GPU datasheet (SXM): BF16 989 TFLOP/s dense (1,979 with sparsity), FP8
    // 1,979 dense, 80 GB HBM3 at 3.35 TB/s, NVLink 900 GB/s per GPU. DGX H100: eight 400 Gb/s
    // ConnectX-7 (NDR) ports for the compute fabric, one per GPU (50 GB/s per direction).
    const GemmTable hopper = saturating_table(kHopperGemm[0], kHopperGemm[1], "saturating form, fitted on Meta 2024 Table 4 (8,192 GPUs)");
    MachineSpec h = base("h100-80gb", "NVIDIA H100 SXM datasheet (989 TFLOP/s BF16 dense, 80 GB, 3.35 TB/s, NVLink 900 GB/s); DGX H100: 8x NDR 400 Gb/s");
    h.peak_flops = 989e12;
    h.peak_fp8_flops = 1979e12;
    h.memory_bytes = 80 * kGiB;
    h.hbm_bandwidth = 3.35e12;
    h.intra_bandwidth = 450e9;
    h.inter_bandwidth = 50e9;
    h.intra_efficiency = kNvlinkEfficiency;
    h.inter_efficiency = kNetworkEfficiency;
    h.gemm = hopper;
    v.push_back(h);
    // H800 (DeepSeek-AI 2024, DeepSeek-V3 Technical Report §3.1 and §3.2.2): the H100's compute and
    // memory with NVLink of 160 GB/s achieved per GPU (200 at the Hopper preset's 0.8 efficiency) and
    // IB of 50 GB/s per GPU, 8 GPUs per node.
    MachineSpec h8 = h;
    h8.name = "h800-80gb";
    h8.source = "DeepSeek-V3 Technical Report 3.1, 3.2.2 (H800: NVLink 160 GB/s achieved, IB 50 GB/s); H100 SXM compute and memory";
    h8.intra_bandwidth = 160e9 / kNvlinkEfficiency;
    v.push_back(h8);
    // H200 SXM datasheet: the H100's compute (989 BF16, 1,979 FP8 dense) with 141 GB HBM3e at 4.8 TB/s;
    // DGX H200: NVLink 900 GB/s per GPU, 8x 400 Gb/s ConnectX-7.
    MachineSpec h2 = h;
    h2.name = "h200-141gb";
    h2.source = "NVIDIA H200 SXM datasheet (989 TFLOP/s BF16 dense, 141 GB, 4.8 TB/s, NVLink 900 GB/s); DGX H200: 8x NDR 400 Gb/s";
    h2.memory_bytes = 141e9;
    h2.hbm_bandwidth = 4.8e12;
    v.push_back(h2);
    // DGX B200 datasheet: 72 PFLOP/s FP8 training per system of 8 GPUs (4.5 PFLOP/s FP8 and 2.25 BF16
    // dense per GPU), 1,440 GB HBM3e (180 GB per GPU) at 8 TB/s per GPU, NVLink 5 at 1.8 TB/s per GPU
    // (both directions), 8x 400 Gb/s ConnectX-7. The Hopper table's shape, not yet validated on Blackwell.
    MachineSpec b = h;
    b.name = "b200-180gb";
    b.source = "NVIDIA DGX B200 datasheet (2.25 PFLOP/s BF16 and 4.5 FP8 dense per GPU, 180 GB, 8 TB/s, NVLink 1.8 TB/s); 8x NDR 400 Gb/s";
    b.peak_flops = 2250e12;
    b.peak_fp8_flops = 4500e12;
    b.memory_bytes = 180e9;
    b.hbm_bandwidth = 8e12;
    b.intra_bandwidth = 900e9;
    v.push_back(b);
    return v;
  }();
  return presets;
}

const MachineSpec& machine_preset(const std::string& name) { return find_preset(machine_presets(), name, "--machine"); }

}  // namespace pipebench::analysis::plan
