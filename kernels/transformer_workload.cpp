#include "kernels/transformer_workload.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "analysis/error.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half_storage.hpp"
#include "kernels/host_tuning.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/transformer_stage.hpp"

namespace pipebench::kernels {

const char* to_string(Optimizer o) { return o == Optimizer::adam ? "adam" : "sgd"; }
const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp64: return "fp64";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp32: break;
  }
  return "fp32";
}

void set_precision(TransformerWorkloadConfig& c, Precision p) {
  c.fp64 = p == Precision::fp64;
  c.half = p == Precision::bf16 ? Half::bf16 : p == Precision::fp16 ? Half::fp16 : Half::none;
}

Precision precision_of(const TransformerWorkloadConfig& c) {
  if (c.fp64) return Precision::fp64;
  return c.half == Half::bf16 ? Precision::bf16 : c.half == Half::fp16 ? Precision::fp16 : Precision::fp32;
}
const char* to_string(Balance b) { return b == Balance::flops ? "flops" : "measured"; }

TransformerConfig stage_config(const TransformerWorkloadConfig& c, const std::vector<int>& split, int depth) {
  TransformerConfig t = TransformerConfig::whole_model(c.hidden, c.heads, c.seq, c.micro_batch, c.vocab, c.layers);
  t.first_layer = 0;
  for (int d = 0; d < depth; ++d) t.first_layer += split[d];
  t.num_layers = split[depth];
  t.embedding = depth == 0;
  t.head = depth == static_cast<int>(split.size()) - 1;
  t.tp_size = c.tp_size;
  t.tp_rank = c.tp_rank;
  t.recompute = c.recompute;
  t.attention = c.attention;
  t.seed = c.seed;
  t.tie_embeddings = c.tie_embeddings;
  t.vocab_parallel = c.vocab_parallel;
  t.sequence_parallel = c.sequence_parallel;
  static_cast<analysis::transformer::Moe&>(t) = c.moe;
  t.context_parallel = c.context_parallel;
  t.cp_rank = c.cp_rank;
  t.cp_chunks = c.cp_chunks;
  t.cp_comm = c.cp_comm;
  return t;
}

std::uint64_t optimizer_state_bytes(const TransformerWorkloadConfig& c, const analysis::Schedule& s, int pp_rank,
                                    bool zero, int buckets, int dp, int dp_rank) {
  if (c.optimizer != Optimizer::adam) return 0;
  const auto split = stage_layers(c, s.stages_per_pipe());
  const std::uint64_t e = c.fp64 ? 8 : 4;
  std::uint64_t n = 0;
  for (int st : s.stages_of_rank(pp_rank)) {
    const std::uint64_t params = estimate_memory(stage_config(c, split, s.depth_of_stage(st)), e).parameters;
    if (!zero || dp <= 1) {
      n += params;
      continue;
    }
    for (const ZeroShard& z : zero_shards(params, buckets, dp, dp_rank)) n += z.hi - z.lo;
  }
  return 2 * e * n;
}

void validate_model(const TransformerWorkloadConfig& c, int stages_per_pipe) {
  const auto split = stage_layers(c, stages_per_pipe);
  for (int d = 0; d < stages_per_pipe; ++d) validate(stage_config(c, split, d));
}

namespace {

template <class S>
class TransformerWorkload final : public Workload {
  using Stage = TransformerStage<S>;
  using Act = typename Stage::Activations;
  using Exec = Kokkos::DefaultExecutionSpace;

 public:
  TransformerWorkload(const TransformerWorkloadConfig& c, const analysis::Schedule& s, int pp_rank, TpAllReduce tp,
                      TpSequenceOps seq, const CpOps& cp)
      : c_(c), s_(s) {
    const auto split = stage_layers(c, s.stages_per_pipe());
    typename Stage::AllReduce hook;
    if (tp && c.tp_size > 1)
      hook = [tp](const typename Stage::Matrix& m, TpPoint) { tp(m.data(), m.span() * sizeof(S), sizeof(S)); };
    for (int st : s.stages_of_rank(pp_rank)) {
      const TransformerConfig sc = stage_config(c, split, s.depth_of_stage(st));
      local_seq_ = sc.local_seq();
      auto stage = std::make_unique<Stage>(sc, hook);
      if (c.sequence_parallel && seq.all_gather && seq.reduce_scatter)
        stage->set_sequence_parallel(
            [ag = seq.all_gather](const typename Stage::Matrix& send, const typename Stage::Matrix& recv, TpPoint) {
              ag(send.data(), recv.data(), send.span() * sizeof(S), sizeof(S));
            },
            [rs = seq.reduce_scatter](const typename Stage::Matrix& send, const typename Stage::Matrix& recv, TpPoint) {
              rs(send.data(), recv.data(), recv.span() * sizeof(S), sizeof(S));
            });
      if (c.context_parallel > 1) stage->set_context_parallel(cp);
      stage->set_between_layers([this] {
        if (progress_) progress_();
      });
      stages_.emplace(st, std::move(stage));
    }
    if (half())  // the kernels read the 16-bit rounding of the fp32 main weights
      for (auto& [st, stage] : stages_) {
        main_[st] = Flat("pipebench::main_weights", stage->weights().extent(0));
        Kokkos::deep_copy(Exec(), main_[st], stage->weights());
        Exec().fence();
        round_to_16(host(stage->weights().data()), stage->weights().extent(0), c_.half);
      }
  }

  // The next configuration may have other shapes: what this one cached goes back (kernels/view_cache.hpp).
  ~TransformerWorkload() override {
    stages_.clear();
    adam_state_.clear();
    main_.clear();
    in_ = Act();
    grad_ = Act();
    trim_view_cache();
  }

  std::string name() const override { return "transformer"; }
  std::size_t p2p_bytes() const override {
    return static_cast<std::size_t>(c_.micro_batch) * static_cast<std::size_t>(local_seq_) *
           static_cast<std::size_t>(c_.hidden) * (half() ? 2 : sizeof(S));
  }
  void finish_grads(int st) override {
    at(st).sum_sequence_parallel_grads();
    if (c_.grad_reduce_bf16 && half()) {
      Exec().fence();
      round_to_16(host(at(st).gradients().data()), at(st).gradients().extent(0), Half::bf16);
    }
  }
  int element_bytes() const override { return static_cast<int>(sizeof(S)); }

  void begin_step(int step) override {
    overflow_ = step == c_.test_overflow_step;
    for (auto& [st, stage] : stages_) stage->zero_grad();
    ++adam_step_;
    losses_.clear();
    model_flops_ = 0;
  }

  void forward(int st, int mb, const void* in, void* out) override {
    Stage& stage = at(st);
    const Act y = stage.forward(sample(mb), input(in, in_, false));
    output(out, y, false);
    if (stage.config().head) losses_[st].push_back(stage.loss(sample(mb)));
    done(stage.flops().forward);
    model_flops_ += model_share(stage.flops().forward, stage.flops());
  }
  void backward_input(int st, int mb, const void* grad_out, void* grad_in) override {
    Stage& stage = at(st);
    const Act gx = stage.backward_input(sample(mb), input(grad_out, grad_, true));
    output(grad_in, gx, true);
    done(stage.flops().backward_input);
    model_flops_ += model_share(stage.flops().backward_input - stage.flops().recompute, stage.flops());
  }
  void backward_weight(int st, int mb) override {
    Stage& stage = at(st);
    stage.backward_weight(sample(mb));
    done(stage.flops().backward_weight);
    model_flops_ += model_share(stage.flops().backward_weight, stage.flops());
  }
  void backward(int st, int mb, const void* grad_out, void* grad_in) override {
    Stage& stage = at(st);
    const Act gx = stage.backward(sample(mb), input(grad_out, grad_, true));
    output(grad_in, gx, true);
    done(stage.flops().backward_input + stage.flops().backward_weight);
    model_flops_ += model_share(stage.flops().backward_input - stage.flops().recompute, stage.flops()) +
                    model_share(stage.flops().backward_weight, stage.flops());
  }
  void forward_backward(int f_stage, int f_mb, const void* in, void* out, int b_stage, int b_mb,
                        const void* grad_out, void* grad_in) override {
    forward(f_stage, f_mb, in, out);
    const double f = flops_;
    backward(b_stage, b_mb, grad_out, grad_in);
    flops_ += f;
  }

  std::size_t grad_bytes(int st) const override { return at(st).gradients().span() * sizeof(S); }
  void* grad_data(int st) override { return at(st).gradients().data(); }
  void optimizer_step() override {
    for (auto& [st, stage] : stages_) optimizer_step_range(st, 0, stage->gradients().extent(0));
  }

  void accumulate_grads(int st, std::size_t offset, const void* other, std::size_t n, bool replace) override {
    using Flat1 = Kokkos::View<S*, typename Act::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    const Flat1 g(at(st).gradients().data() + offset, n);
    const Flat1 o(static_cast<S*>(const_cast<void*>(other)), n);
    Kokkos::parallel_for(
        "pipebench::sum_copies", Kokkos::RangePolicy<Exec>(0, n),
        KOKKOS_LAMBDA(const std::size_t i) { g(i) = replace ? o(i) : g(i) + o(i); });
    Exec().fence();
  }

  void* weight_data(int st) override { return at(st).weights().data(); }
  // The step on the weights, or with 16-bit storage on the fp32 main weights, then rounded into the
  // weights the kernels read.
  void optimizer_step_range(int st, std::size_t lo, std::size_t hi) override {
    if (hi <= lo) return;
    step_range(st, lo, hi);
    if (half()) {
      Exec().fence();
      const Stage& stage = at(st);
      float* w = host(stage.weights().data());
      const float* m = host(main_.at(st).data());
      for (std::size_t i = lo; i < hi; ++i) w[i] = from_16(to_16(m[i], c_.half), c_.half);
    }
  }
  void step_range(int st, std::size_t lo, std::size_t hi) {
    Stage& stage = at(st);
    const Flat weights = half() ? main_.at(st) : stage.weights();
    if (c_.optimizer != Optimizer::adam) {
      if (c_.lr == 0) return;
      const auto w = weights;
      const auto g = stage.gradients();
      const S lr = static_cast<S>(c_.lr);
      Kokkos::parallel_for(
          "pipebench::sgd", Kokkos::RangePolicy<Exec>(lo, hi),
          KOKKOS_LAMBDA(const std::size_t i) { w(i) -= lr * g(i); });
      Exec().fence();
      return;
    }
    // State for exactly this range, made at its first step (zero, as Adam starts).
    auto& state = adam_state_[{st, lo}];
    if (state.first.extent(0) != hi - lo) {
      state.first = Flat("pipebench::adam_m", hi - lo);
      state.second = Flat("pipebench::adam_v", hi - lo);
    }
    AdamSettings a;
    a.lr = c_.lr;
    a.weight_decay = c_.weight_decay;
    const Flat g(stage.gradients().data() + lo, hi - lo);
    adam_update<S, Exec>(weights, g, state.first, state.second, lo, hi, adam_step_, a, stage.parameters());
    Exec().fence();
  }
  bool loss_scaled() const override { return c_.half == Half::fp16 && c_.loss_scaling; }
  bool overflowed() const override { return overflow_; }
  void loss_scale_verdict(bool skipped) override {
    if (skipped) {
      scale_ = std::max(1.0, scale_ / 2);
      good_steps_ = 0;
      ++skipped_;
      --adam_step_;  // the step did not happen: Adam's bias correction counts the steps taken
    } else if (++good_steps_ >= c_.scale_window) {
      scale_ *= 2;
      good_steps_ = 0;
    }
  }
  bool tied_copy(int st, std::size_t& offset, std::size_t& count) const override {
    const Stage& stage = at(st);
    // A stage with both the embedding and the head holds one shared matrix: nothing to keep equal.
    if (!c_.tie_embeddings || stage.config().embedding == stage.config().head) return false;
    for (const ParamInfo& p : stage.parameters())
      if (p.name == "embedding.tokens") {
        offset = p.offset;
        count = p.size();
        return true;
      }
    return false;
  }
  std::int64_t optimizer_bytes() const {
    std::size_t n = 0;
    for (const auto& [key, mv] : adam_state_) n += bytes_of(mv.first) + bytes_of(mv.second);
    return static_cast<std::int64_t>(n);
  }

  std::int64_t held_activation_bytes() const override {
    std::size_t n = 0;
    for (const auto& [st, stage] : stages_) n += stage->stash_bytes();
    return static_cast<std::int64_t>(n);
  }
  std::int64_t take_peak_activation_bytes() override {
    const std::int64_t p = std::max(peak_, held_activation_bytes());
    peak_ = held_activation_bytes();
    return p;
  }
  double last_flops() const override { return flops_; }

  std::vector<Figure> step_figures() const override {
    std::vector<Figure> f;
    for (const auto& [st, losses] : losses_) {
      double sum = 0;
      for (double l : losses) sum += l;
      f.push_back({st, FigureKind::loss_sum, sum});
      f.push_back({st, FigureKind::loss_count, static_cast<double>(losses.size())});
    }
    for (const auto& [st, stage] : stages_) f.push_back({st, FigureKind::grad_norm, stage->grad_norm()});
    f.push_back({-1, FigureKind::model_flops, model_flops_});
    if (c_.optimizer == Optimizer::adam)
      f.push_back({-1, FigureKind::optimizer_state_bytes, static_cast<double>(optimizer_bytes())});
    if (loss_scaled()) {
      f.push_back({-1, FigureKind::loss_scale, scale_});
      f.push_back({-1, FigureKind::skipped_steps, static_cast<double>(skipped_)});
    }
    std::size_t main = 0;
    for (const auto& [st, w] : main_) main += bytes_of(w);
    if (half()) f.push_back({-1, FigureKind::main_weight_bytes, static_cast<double>(main)});
    return f;
  }

 private:
  Stage& at(int st) const {
    const auto it = stages_.find(st);
    if (it == stages_.end()) throw Error("transformer workload: stage " + std::to_string(st) + " is not on this rank");
    return *it->second;
  }
  // Message buffers are host memory (the MPI backend's) or, with device_messages, the kernels' memory
  // (NCCL's). Where the message and the stages share a memory space a buffer is used in place as an
  // unmanaged [b, s, h] view (the stage copies what it keeps); host messages on a device are copied
  // through one device staging buffer per direction.
  using HostAct = Kokkos::View<S***, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr bool host_memory = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Act::memory_space>::accessible;
  template <class V>
  V wrap(const void* p) const {
    return V(static_cast<S*>(const_cast<void*>(p)), static_cast<std::size_t>(c_.micro_batch),
             static_cast<std::size_t>(local_seq_), static_cast<std::size_t>(c_.hidden));
  }
  // 16-bit messages (host memory): decoded into the staging buffer, a gradient unscaled.
  Act input(const void* p, Act& staging, bool grad) const {
    if (!p) return Act();
    if (half()) {
      if (!staging.data()) staging = alloc<Act>("pipebench::staging", c_.micro_batch, local_seq_, c_.hidden);
      decode_16(static_cast<const std::uint16_t*>(p), host(staging.data()), staging.span(), c_.half,
                grad ? static_cast<float>(1 / scale()) : 1.0f);
      return staging;
    }
    if (host_memory || c_.device_messages) return wrap<Act>(p);
    if (!staging.data()) staging = alloc<Act>("pipebench::staging", c_.micro_batch, local_seq_, c_.hidden);
    Kokkos::deep_copy(Exec(), staging, wrap<HostAct>(p));
    return staging;
  }
  void output(void* p, const Act& y, bool grad) {
    if (!p) return;
    if (half()) {  // a gradient encoded scaled: what does not fit in fp16 is the step's overflow
      Exec().fence();
      overflow_ |= encode_16(host(y.data()), static_cast<std::uint16_t*>(p), y.span(), c_.half,
                             grad ? static_cast<float>(scale()) : 1.0f);
      return;
    }
    if (host_memory || c_.device_messages)
      Kokkos::deep_copy(Exec(), wrap<Act>(p), y);
    else
      Kokkos::deep_copy(Exec(), wrap<HostAct>(p), y);
    Exec().fence();
  }
  int sample(int mb) const { return c_.mb_offset + mb; }
  bool half() const { return c_.half != Half::none && std::is_same_v<S, float>; }
  double scale() const { return loss_scaled() ? scale_ : 1.0; }
  // 16-bit storage runs on host memory only (a device build refuses it): the views' data as floats.
  static float* host(S* p) { return reinterpret_cast<float*>(p); }
  static const float* host(const S* p) { return reinterpret_cast<const float*>(p); }
  void done(double flops) {
    flops_ = flops;
    peak_ = std::max(peak_, held_activation_bytes());
  }

  using Flat = typename Stage::Flat;
  // Model FLOPs of a pass: the replicated part once over the tensor-parallel ranks (a 1/t share each).
  double model_share(double pass, const StageFlops& f) const { return pass - f.replicated * (1.0 - 1.0 / c_.tp_size); }

  TransformerWorkloadConfig c_;
  const analysis::Schedule& s_;
  std::map<std::pair<int, std::size_t>, std::pair<Flat, Flat>> adam_state_;  // (stage, first element): m, v
  std::map<int, Flat> main_;  // 16-bit storage: the fp32 main weights per stage
  // fp16's dynamic loss scale (PyTorch's GradScaler defaults: 2^16, x0.5 on an overflow, x2 after
  // scale_window steps without one), the steps it skipped, and this step's overflow.
  double scale_ = 65536;
  int good_steps_ = 0;
  long skipped_ = 0;
  bool overflow_ = false;
  long adam_step_ = 0;
  std::map<int, std::unique_ptr<Stage>> stages_;
  std::map<int, std::vector<double>> losses_;
  mutable Act in_, grad_;  // device staging of received activations and gradients (unused on the host)
  double flops_ = 0;        // of the last call, recomputation included (what the hardware did)
  double model_flops_ = 0;  // this step, without recomputation (what the model needs)
  std::int64_t peak_ = 0;
  int local_seq_ = 0;  // positions per sequence in a stage's input and output (s/t under sequence parallelism)
};

}  // namespace

KokkosSession::KokkosSession(int blas_threads) {
  if (!Kokkos::is_initialized()) {
    Kokkos::initialize();
    owner_ = true;
  }
  set_blas_threads(blas_threads);
  retain_freed_host_memory();
}

KokkosSession::~KokkosSession() {
  if (owner_ && Kokkos::is_initialized()) Kokkos::finalize();
}

std::unique_ptr<Workload> make_transformer_workload(const TransformerWorkloadConfig& c, const analysis::Schedule& s,
                                                    int pp_rank, TpAllReduce tp_allreduce, TpSequenceOps tp_sequence,
                                                    CpOps cp) {
  if (c.fp64)
    return std::make_unique<TransformerWorkload<double>>(c, s, pp_rank, std::move(tp_allreduce), std::move(tp_sequence),
                                                         cp);
  return std::make_unique<TransformerWorkload<float>>(c, s, pp_rank, std::move(tp_allreduce), std::move(tp_sequence), cp);
}


}  // namespace pipebench::kernels
