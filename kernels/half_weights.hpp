#pragma once
// A 16-bit run's weights (--precision bf16|fp16, docs/transformer.md "16-bit training state"): what a
// stage keeps between actions is a 16-bit array, 2 bytes a parameter (Megatron-Core's bf16 params beside
// the fp32 main weights the optimizer steps), whole, or under ZeRO-3 the rank's shards only (compact, in
// the layout of kernels/zero_state.hpp) with the whole array only while gathered. The kernels compute
// in fp32: each action that reads a stage's weights (F, I, B, both stages of an F&B pair; W reads none)
// decodes them into an fp32 buffer bound to the stage for that action and released after, from the
// view cache (kernels/view_cache.hpp, as a GPU framework's caching allocator keeps the block for the next
// action); the most of those held at once is the "decoded weights" figure
// (analysis::decoded_peak_bytes). Host memory only, as kernels/half_storage.hpp.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "kernels/half_storage.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

template <class Stage>
class HalfWeights {
 public:
  using Flat = typename Stage::Flat;
  using Bits = Kokkos::View<std::uint16_t*, typename Flat::memory_space>;

  explicit HalfWeights(Half h = Half::none) : h_(h) {}

  // The stage's initial fp32 weights rounded to 16 bits; the fp32 buffer goes back to the view cache.
  void adopt(int st, Stage& stage) {
    Held& w = held_[st];
    w.stage = &stage;
    w.whole = bits(stage.parameter_count());
    typename Flat::execution_space().fence();
    encode_weights_16(f32(stage.weights().data()), w.whole.data(), stage.parameter_count(), h_);
    stage.bind_weights(Flat());
  }
  // ZeRO-3: the rank's shards, compact (the whole array is freed by release, gathered again by acquire).
  template <class Zero>
  void shard(int st, const Zero& z) {
    Held& w = held_.at(st);
    w.shards = z.template compact<Bits>("pipebench::weight_shards_16", w.whole.data());
  }
  std::uint16_t* whole(int st) { return held_.at(st).whole.data(); }
  std::uint16_t* shards(int st) { return held_.at(st).shards.data(); }
  void acquire(int st) {
    Held& w = held_.at(st);
    if (!w.whole.data()) w.whole = bits(w.stage->parameter_count());
  }
  void release(int st) { held_.at(st).whole = Bits(); }
  // n fp32 main weights rounded into the 16-bit ones from element `at` of the whole array, or of the
  // compact shards.
  void store(int st, bool into_shards, std::size_t at, const float* main, std::size_t n) {
    encode_weights_16(main, (into_shards ? shards(st) : whole(st)) + at, n, h_);
  }

  // An action starts (use) and ends (done) reading stage st's weights: the first user decodes them,
  // the last releases the fp32 buffer (the two passes of an overlapped pair may share a stage).
  void use(int st) {
    Held& w = held_.at(st);
    if (w.users > 0) {
      ++w.users;
      return;
    }
    if (!w.whole.data())
      throw Error("16-bit weights: stage " + std::to_string(st) + " is read without its weights gathered");
    w.users = 1;
    const std::size_t n = w.stage->parameter_count();
    const Flat f = alloc<Flat>("pipebench::decoded_weights", n);
    decode_16(w.whole.data(), f32(f.data()), n, h_, 1.0f);
    w.stage->bind_weights(f);
    decoded_ += bytes_of(f);
    peak_ = std::max(peak_, decoded_);
  }
  void done(int st) {
    Held& w = held_.at(st);
    if (--w.users > 0) return;
    typename Flat::execution_space().fence();
    decoded_ -= bytes_of(w.stage->weights());
    w.stage->bind_weights(Flat());
  }

  // The weights as floats in the whole layout (parameter_count values): the whole array, else the
  // shards (z: the stage's ZeRO state) with NaN elsewhere.
  template <class Zero>
  void copy(int st, float* out, const Zero* z) const {
    const Held& w = held_.at(st);
    const std::size_t n = w.stage->parameter_count();
    std::vector<std::uint16_t> b(n, 0x7fff);  // a NaN in bfloat16 and in half
    if (w.whole.data()) std::copy(w.whole.data(), w.whole.data() + n, b.data());
    else if (z && w.shards.data()) z->expand(w.shards, b.data());
    decode_16(b.data(), out, n, h_, 1.0f);
  }
  // 16-bit bytes held now (whole arrays and shards); the most fp32 decoded bytes held at once since
  // begin_step.
  std::size_t bytes() const {
    std::size_t n = 0;
    for (const auto& [st, w] : held_) n += bytes_of(w.whole) + bytes_of(w.shards);
    return n;
  }
  std::size_t decoded_peak() const { return peak_; }
  void begin_step() { peak_ = decoded_; }

 private:
  // 16-bit storage computes in fp32 (the workload's Flat is a float view where it is used).
  static float* f32(typename Flat::value_type* p) { return reinterpret_cast<float*>(p); }
  static Bits bits(std::size_t n) { return Bits(Kokkos::view_alloc(Kokkos::WithoutInitializing, "pipebench::weights_16"), n); }
  struct Held {
    Stage* stage = nullptr;
    Bits whole, shards;
    int users = 0;
  };
  Half h_;
  std::map<int, Held> held_;
  std::size_t decoded_ = 0, peak_ = 0;
};

// An action's hold on a stage's decoded weights (nothing without 16-bit weights: h null).
template <class Stage>
class DecodedWeights {
 public:
  DecodedWeights(HalfWeights<Stage>* h, int st) : h_(h), st_(st) {
    if (h_) h_->use(st_);
  }
  ~DecodedWeights() {
    if (h_) h_->done(st_);
  }
  DecodedWeights(const DecodedWeights&) = delete;
  DecodedWeights& operator=(const DecodedWeights&) = delete;

 private:
  HalfWeights<Stage>* h_;
  int st_;
};

}  // namespace pipebench::kernels
