#include "kernels/transformer_workload.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <string>
#include <type_traits>
#include <vector>

#include "analysis/error.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half_storage.hpp"
#include "kernels/half_weights.hpp"
#include "kernels/interleave.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/transformer_stage.hpp"
#include "kernels/zero_state.hpp"

namespace pipebench::kernels {

namespace {

template <class S>
class TransformerWorkload final : public Workload {
  using Stage = TransformerStage<S>;
  using Act = typename Stage::Activations;
  using Exec = Kokkos::DefaultExecutionSpace;
  using Flat = typename Stage::Flat;

 public:
  TransformerWorkload(const TransformerWorkloadConfig& c, const analysis::Schedule& s, int pp_rank, TpAllReduce tp,
                      TpSequenceOps seq, const CpOps& cp, const EpOps& ep)
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
      // Posted, then waited for, unless an overlapped pair runs the other pass in between (pair_).
      if (c.ep_size > 1 && ep.post)
        stage->set_expert_parallel([this, ep](const void* send, const std::vector<std::size_t>& sb, void* recv,
                                              const std::vector<std::size_t>& rb, int kind) {
          const int stage_now = now_stage_, mb_now = now_mb_;
          pair_.exchange([&] { return ep.post(send, sb, recv, rb, stage_now, mb_now, kind); },  // yields in a pair
                         [&](int handle) {
                           now_stage_ = stage_now, now_mb_ = mb_now;  // the other pass set its own meanwhile
                           ep.wait(handle);
                         });
        });
      stage->set_between_layers([this] {
        if (progress_) progress_();
      });
      stages_.emplace(st, std::move(stage));
    }
    half_w_ = HalfWeights<Stage>(c_.half);
    if (half())  // fp32 main weights for the optimizer, 16-bit ones for the kernels (kernels/half_weights.hpp)
      for (auto& [st, stage] : stages_) {
        main_[st] = Flat("pipebench::main_weights", stage->weights().extent(0));
        Kokkos::deep_copy(Exec(), main_[st], stage->weights());
        half_w_.adopt(st, *stage);
      }
  }

  // The next configuration may have other shapes: what this one cached goes back (kernels/view_cache.hpp).
  ~TransformerWorkload() override {
    stages_.clear();
    adam_state_.clear();
    main_.clear();
    zero_.clear();
    in_ = Act();
    grad_ = Act();
    trim_view_cache();
  }

  std::string name() const override { return "transformer"; }
  std::size_t p2p_bytes() const override {
    return static_cast<std::size_t>(c_.micro_batch) * static_cast<std::size_t>(local_seq_) *
           static_cast<std::size_t>(c_.hidden) * (half() ? 2 : sizeof(S));
  }
  void finish_grads(int st) override { at(st).sum_sequence_parallel_grads(); }
  int element_bytes() const override { return static_cast<int>(sizeof(S)); }
  bool reduces_grads_in_bf16() const override { return c_.grad_reduce_bf16 && half() && sizeof(S) == 4; }

  void begin_step(int step) override {
    overflow_ = step == c_.test_overflow_step;
    half_w_.begin_step();
    for (auto& [st, stage] : stages_) stage->zero_grad(), stage->set_stash_scale(static_cast<float>(scale()));
    ++adam_step_;
    losses_.clear();
    model_flops_ = 0;
  }

  void forward(int st, int mb, const void* in, void* out) override {
    Stage& stage = at(st);
    const Decoded w = reading(st);
    now_stage_ = st, now_mb_ = mb;
    const Act y = stage.forward(sample(mb), input(in, in_, false));
    overflow_ |= stage.take_stash_overflows() > 0;  // fp16's 16-bit activations (kernels/stash16.hpp)
    output(out, y, false);
    if (stage.config().head) losses_[st].push_back(stage.loss(sample(mb)));
    done(stage.flops().forward);
    model_flops_ += model_share(stage.flops().forward, stage.flops());
  }
  void backward_input(int st, int mb, const void* grad_out, void* grad_in) override {
    Stage& stage = at(st);
    const Decoded w = reading(st);
    now_stage_ = st, now_mb_ = mb;
    const Act gx = stage.backward_input(sample(mb), input(grad_out, grad_, true));
    overflow_ |= stage.take_stash_overflows() > 0;
    output(grad_in, gx, true);
    done(stage.flops().backward_input);
    model_flops_ += model_share(stage.flops().backward_input - stage.flops().recompute, stage.flops());
  }
  void backward_weight(int st, int mb) override {
    Stage& stage = with_grads(st);
    stage.backward_weight(sample(mb));
    done(stage.flops().backward_weight);
    model_flops_ += model_share(stage.flops().backward_weight, stage.flops());
  }
  void backward(int st, int mb, const void* grad_out, void* grad_in) override {
    Stage& stage = with_grads(st);
    const Decoded w = reading(st);
    now_stage_ = st, now_mb_ = mb;
    const Act gx = stage.backward(sample(mb), input(grad_out, grad_, true));
    overflow_ |= stage.take_stash_overflows() > 0;
    output(grad_in, gx, true);
    done(stage.flops().backward_input + stage.flops().backward_weight);
    model_flops_ += model_share(stage.flops().backward_input - stage.flops().recompute, stage.flops()) +
                    model_share(stage.flops().backward_weight, stage.flops());
  }
  // DualPipe's pair. With the expert overlap the two passes take turns at each expert exchange
  // (kernels/interleave.hpp): the backward first, as DeepSeek-V3's pair starts with its combine.
  void forward_backward(int f_stage, int f_mb, const void* in, void* out, int b_stage, int b_mb,
                        const void* grad_out, void* grad_in) override {
    double f = 0, b = 0;
    const Decoded wf = reading(f_stage), wb = reading(b_stage);  // both held through the pair, taken in turns or not
    const std::function<void()> fwd = [&] { forward(f_stage, f_mb, in, out), f = flops_; };
    const std::function<void()> bwd = [&] { backward(b_stage, b_mb, grad_out, grad_in), b = flops_; };
    if (c_.ep_overlap && c_.ep_size > 1 && c_.moe.experts > 0) {
      pair_.run(bwd, fwd);
    } else {
      fwd();
      bwd();
    }
    flops_ = f + b;
  }

  std::size_t grad_bytes(int st) const override { return at(st).parameter_count() * sizeof(S); }
  void* grad_data(int st) override { return at(st).gradients().data(); }
  void optimizer_step() override {
    for (auto& [st, stage] : stages_) optimizer_step_range(st, 0, stage->parameter_count());
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

  void* weight_data(int st) override { return half() ? static_cast<void*>(half_w_.whole(st)) : at(st).weights().data(); }
  int weight_element_bytes() const override { return kernels::weight_element_bytes(c_); }
  void shard(int st, int zero, const std::vector<ZeroShard>& shards) override {
    Stage& stage = at(st);
    Exec().fence();
    Zero& z = zero_[st] = Zero(zero, shards);
    if (half()) main_.at(st) = z.compact("pipebench::main_weights", main_.at(st).data());
    if (zero >= 2) z.grads = z.compact("pipebench::gradient_shards", stage.gradients().data());
    if (zero >= 3 && half()) half_w_.shard(st, z);
    else if (zero >= 3) z.weights = z.compact("pipebench::weight_shards", stage.weights().data());
  }
  void* grad_shard(int st) override { return sharded(st, 2) ? zero_.at(st).grads.data() : nullptr; }
  void* weight_shard(int st) override {
    if (!sharded(st, 3)) return nullptr;
    return half() ? static_cast<void*>(half_w_.shards(st)) : zero_.at(st).weights.data();
  }
  void release_grads(int st) override {
    if (sharded(st, 2)) at(st).bind_gradients(Flat());
  }
  void acquire_weights(int st) override {
    Stage& stage = at(st);
    if (sharded(st, 3) && half()) half_w_.acquire(st);
    else if (sharded(st, 3) && !stage.weights().data())
      stage.bind_weights(Flat(Kokkos::view_alloc(Kokkos::WithoutInitializing, "pipebench::weights"), stage.parameter_count()));
  }
  void release_weights(int st) override {
    if (sharded(st, 3) && half()) half_w_.release(st);
    else if (sharded(st, 3)) at(st).bind_weights(Flat());
  }
  void copy_state(int st, void* grads, void* weights) const override {
    const Stage& stage = at(st);
    const std::size_t n = stage.parameter_count();
    Exec().fence();
    for (auto [out, whole, shards] : {std::tuple{static_cast<S*>(grads), stage.gradients(), 2},
                                      std::tuple{static_cast<S*>(weights), stage.weights(), 3}}) {
      std::fill(out, out + n, std::numeric_limits<S>::quiet_NaN());
      if (whole.data()) std::memcpy(out, whole.data(), n * sizeof(S));
      else if (sharded(st, shards) && !(half() && shards == 3)) zero_.at(st).expand(shards == 2 ? zero_.at(st).grads : zero_.at(st).weights, out);
    }
    if (half())  // 16-bit weights: decoded, whole or shards
      half_w_.copy(st, host(static_cast<S*>(weights)), sharded(st, 3) ? &zero_.at(st) : nullptr);
  }
  // The step on the weights, or with 16-bit storage on the fp32 main weights, then rounded into the
  // 16-bit weights.
  void optimizer_step_range(int st, std::size_t lo, std::size_t hi) override {
    if (hi <= lo) return;
    step_range(st, lo, hi);
    if (half()) {  // the main weights rounded into the 16-bit weights (their shard under ZeRO-3)
      Exec().fence();
      const std::size_t at_shard = sharded(st, 1) ? zero_.at(st).offset_of(lo) : lo;  // main: compact from ZeRO-1
      half_w_.store(st, sharded(st, 3), sharded(st, 3) ? at_shard : lo, host(main_.at(st).data()) + at_shard, hi - lo);
    }
  }
  void step_range(int st, std::size_t lo, std::size_t hi) {
    Stage& stage = at(st);
    // Where elements [lo, hi) are: the whole buffers (weights indexed from 0), or the shards' compact
    // copies (weights indexed from `base`, element lo at its compact offset).
    const auto [weights, base] = stepped_weights(st, lo);
    const Flat g(sharded(st, 2) && !stage.gradients().data() ? zero_.at(st).grads.data() + zero_.at(st).offset_of(lo)
                                                             : stage.gradients().data() + lo,
                 hi - lo);
    if (c_.optimizer != Optimizer::adam) {
      if (c_.lr == 0) return;
      const auto w = weights;
      const S lr = static_cast<S>(c_.lr);
      const std::size_t b = base;
      Kokkos::parallel_for(
          "pipebench::sgd", Kokkos::RangePolicy<Exec>(lo, hi),
          KOKKOS_LAMBDA(const std::size_t i) { w(i - b) -= lr * g(i - lo); });
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
    adam_update<S, Exec>(weights, g, state.first, state.second, lo, hi, adam_step_, a, stage.parameters(), base);
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
    return tied_range(at(st).config(), at(st).parameters(), offset, count);
  }
  bool expert_grads(int st, std::size_t& offset, std::size_t& count) const override {
    return routed_expert_range(at(st).parameters(), offset, count);
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
    for (const auto& [st, stage] : stages_) {
      f.push_back({st, FigureKind::grad_norm, stage->grad_norm()});
      if (!stage->has_moe()) continue;
      double aux = 0;
      for (int mb = 0; mb < s_.m; ++mb) aux += stage->aux_loss(sample(mb));
      f.push_back({st, FigureKind::moe_aux_loss_sum, aux});
      f.push_back({st, FigureKind::moe_dropped_tokens, static_cast<double>(stage->dropped_tokens())});
    }
    f.push_back({-1, FigureKind::model_flops, model_flops_});
    if (c_.optimizer == Optimizer::adam)
      f.push_back({-1, FigureKind::optimizer_state_bytes, static_cast<double>(optimizer_bytes())});
    if (loss_scaled()) {
      f.push_back({-1, FigureKind::loss_scale, scale_});
      f.push_back({-1, FigureKind::skipped_steps, static_cast<double>(skipped_)});
    }
    std::size_t main = 0, weights = half_w_.bytes(), grads = 0;  // the 16-bit weights' arrays, and the others'
    for (const auto& [st, w] : main_) main += bytes_of(w);
    if (half()) f.push_back({-1, FigureKind::main_weight_bytes, static_cast<double>(main)});
    if (half()) f.push_back({-1, FigureKind::decoded_weight_bytes, static_cast<double>(half_w_.decoded_peak())});
    for (const auto& [st, stage] : stages_) weights += bytes_of(stage->weights()), grads += bytes_of(stage->gradients());
    for (const auto& [st, z] : zero_) weights += bytes_of(z.weights), grads += bytes_of(z.grads);
    f.push_back({-1, FigureKind::weight_bytes, static_cast<double>(weights)});
    f.push_back({-1, FigureKind::gradient_bytes, static_cast<double>(grads)});
    return f;
  }

 private:
  // The buffer the optimizer steps for elements from lo, and the index its element 0 stands for.
  std::pair<Flat, std::size_t> stepped_weights(int st, std::size_t lo) const {
    const bool compact = half() ? sharded(st, 1) : sharded(st, 3);
    const Flat w = half() ? main_.at(st) : compact ? zero_.at(st).weights : at(st).weights();
    return {w, compact ? lo - zero_.at(st).offset_of(lo) : 0};
  }
  bool sharded(int st, int zero) const {
    const auto it = zero_.find(st);
    return it != zero_.end() && it->second.zero >= zero;
  }
  // The stage, its whole gradients allocated (zeroed) where ZeRO-2 freed them after the last step.
  Stage& with_grads(int st) {
    Stage& stage = at(st);
    if (!stage.gradients().data() && stage.parameter_count()) stage.bind_gradients(Flat("pipebench::gradients", stage.parameter_count()));
    return stage;
  }
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

  // Model FLOPs of a pass: the replicated part once over the tensor-parallel ranks (a 1/t share each).
  double model_share(double pass, const StageFlops& f) const { return pass - f.replicated * (1.0 - 1.0 / c_.tp_size); }

  TransformerWorkloadConfig c_;
  const analysis::Schedule& s_;
  std::map<std::pair<int, std::size_t>, std::pair<Flat, Flat>> adam_state_;  // (stage, first element): m, v
  std::map<int, Flat> main_;  // 16-bit storage: the fp32 main weights per stage (its shards under ZeRO)
  HalfWeights<Stage> half_w_;  // 16-bit storage: the weights the kernels read, decoded per action
  using Decoded = DecodedWeights<Stage>;
  Decoded reading(int st) { return Decoded(half() ? &half_w_ : nullptr, st); }
  using Zero = ZeroStageState<Flat>;
  std::map<int, Zero> zero_;  // per stage, what this rank keeps of it under ZeRO (kernels/zero_state.hpp)
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
  int now_stage_ = -1, now_mb_ = -1;  // the action computing now (for the expert exchanges' records)
  Interleaver pair_;                  // an overlapped F&B pair's two passes (forward_backward)
  int local_seq_ = 0;  // positions per sequence in a stage's input and output (s/t under sequence parallelism)
};

}  // namespace

std::unique_ptr<Workload> make_transformer_workload(const TransformerWorkloadConfig& c, const analysis::Schedule& s,
                                                    int pp_rank, TpAllReduce tp_allreduce, TpSequenceOps tp_sequence,
                                                    CpOps cp, EpOps ep) {
  if (c.fp64)
    return std::make_unique<TransformerWorkload<double>>(c, s, pp_rank, std::move(tp_allreduce), std::move(tp_sequence),
                                                         cp, ep);
  return std::make_unique<TransformerWorkload<float>>(c, s, pp_rank, std::move(tp_allreduce), std::move(tp_sequence), cp,
                                                      ep);
}

}  // namespace pipebench::kernels
