#pragma once
// A pipeline stage of a GPT-style transformer: layers [first_layer, first_layer + num_layers), with the
// token embedding on the first stage and the final LayerNorm, vocabulary projection and loss on the last.
// Per micro-batch it runs F, I (backward for inputs) and W (backward for weights) in any order a
// schedule allows (F before I before W for one micro-batch), holding each micro-batch's stash from its F
// to its W. Weight gradients accumulate (+=) over micro-batches until zero_grad().
//
// Every call returns with its device work finished (a fence of the execution space instance, never of
// the whole device, which would wait for communication posted ahead on other streams), so a caller may
// time it and hand its output to MPI or NCCL without synchronising. Library code: Kokkos must already
// be initialised by the program.
#include "kernels/embedding.hpp"
#include "kernels/head.hpp"
#include "kernels/layer.hpp"
#include "kernels/moe_stage.hpp"
#include "kernels/parameters.hpp"
#include "kernels/stash16.hpp"
#include "kernels/transformer_config.hpp"

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pipebench::kernels {

template <class S = float, class E = Kokkos::DefaultExecutionSpace>
class TransformerStage {
 public:
  using Scalar = S;
  using ExecutionSpace = E;
  using Activations = typename Views<S, E>::Act;  // [b, s, h]
  using Matrix = typename Views<S, E>::Mat;
  using Flat = typename Views<S, E>::Vec;
  using AllReduce = AllReduceHook<S, E>;

  // Validates `config` (UsageError) before allocating. `all_reduce` is called at the four tensor-parallel
  // points of every layer (TpPoint), and again at the two forward ones when full recomputation reruns
  // F inside I; empty means identity (t = 1).
  explicit TransformerStage(const TransformerConfig& config, AllReduce all_reduce = {});
  // Sequence parallelism (config().sequence_parallel): the all-gather and reduce-scatter over the
  // tensor-parallel group (kernels/sequence_parallel.hpp). Needed before the first forward.
  void set_sequence_parallel(typename SeqParallel<S, E>::Gather all_gather, typename SeqParallel<S, E>::Scatter
                                                                               reduce_scatter) {
    sp_.all_gather = std::move(all_gather);
    sp_.reduce_scatter = std::move(reduce_scatter);
  }
  // Sequence-parallel: sums the LayerNorms' and the MoE routers' weight gradients over the
  // tensor-parallel group (each rank saw only its s/t positions) with one all-reduce
  // (TpPoint::layernorm_grads). Call once per step, after the last W and before the gradients are
  // read or reduced over data-parallel ranks.
  void sum_sequence_parallel_grads();
  // Context parallelism (config().context_parallel > 1): the exchanges of the keys and values over the
  // cp group (kernels/context_parallel.hpp). Needed before the first forward.
  void set_context_parallel(CpOps ops) { cp_.ops = std::move(ops); }
  // Expert parallelism (config().ep_size > 1): the all-to-all-v over the ep group (kernels/moe.hpp).
  void set_expert_parallel(MoeAllToAll exchange) { *moe_.exchange = std::move(exchange); }
  // The MoE layers' aux loss of micro-batch mb (with its coefficient, summed over the stage's MoE
  // layers; 0 without) and the routes capacity dropped, every micro-batch's, since zero_grad().
  double aux_loss(int mb) const { return moe_.aux.count(mb) ? moe_.aux.at(mb) : 0.0; }
  long dropped_tokens() const { return moe_.dropped; }
  bool has_moe() const { return !moe_.layers.empty(); }
  // The rows of micro-batch mb's MoE layers that its stash holds now, layer by layer (none before
  // its I under full recomputation): what the memory formula needs, since the routing decides them.
  std::vector<analysis::transformer::MoeRows> moe_rows(int mb) const {
    std::vector<analysis::transformer::MoeRows> rows;
    if (const auto it = in_flight_.find(mb); it != in_flight_.end())
      for (const auto& s : it->second.moe)
        if (s.routing.tokens > 0) rows.push_back(StageMoe<S, E>::rows_of(s));
    return rows;
  }

  const TransformerConfig& config() const { return cfg_; }

  // F. `input` is the previous stage's output [b, s, h] ([b, s/t, h], this rank's positions, under
  // sequence parallelism: so are the output and both gradients); the first stage ignores it and embeds
  // the tokens of micro-batch `mb`. Returns this stage's output, or an empty view on the last stage (see loss()).
  // Views passed in may be kept until the micro-batch's W (the input under full recomputation, the
  // output gradient always): a managed view is kept by reference, an unmanaged one (say, a wrapped
  // receive buffer the caller will reuse) is copied first.
  Activations forward(int mb, const Activations& input = Activations());
  // I. `grad_output` is the next stage's input gradient; the last stage ignores it (the loss is the
  // output). Returns the gradient of this stage's input, or an empty view on the first stage.
  Activations backward_input(int mb, const Activations& grad_output = Activations());
  // W: accumulates the weight gradients of micro-batch `mb` and releases its stash.
  void backward_weight(int mb);
  // B = I then W.
  Activations backward(int mb, const Activations& grad_output = Activations());
  // fp16 (TransformerConfig::stash16): the loss scale the stashed gradients are kept multiplied by
  // (kernels/stash16.hpp), and the stashed values that overflowed fp16 since the last call.
  void set_stash_scale(float s) { scale16_ = s; }
  long take_stash_overflows() { return std::exchange(overflows16_, 0); }
  // Drops micro-batch mb's stash without a backward (a forward-only evaluation, an aborted step).
  void discard(int mb) { in_flight_.erase(mb); }

  // Mean cross-entropy of micro-batch mb's b*s tokens (last stage, after its F). Kept until zero_grad().
  double loss(int mb) const;
  // L2 norm of this stage's weight gradients.
  double grad_norm() const;
  // Called between layers during F, I and W, so that a caller's communication in flight can progress
  // while the stage computes (an MPI rendezvous needs both sides to enter MPI). Empty: nothing.
  void set_between_layers(std::function<void()> fn) { between_layers_ = std::move(fn); }

  // Zeroes the gradients and forgets the losses: the start of a training step.
  void zero_grad();

  // Bytes held now (weights, gradients, every in-flight stash), measured from the views actually held.
  std::size_t bytes_held() const;
  // Bytes micro-batch mb's stash holds now (0 when it is not in flight), and all stashes together.
  std::size_t stash_bytes(int mb) const;
  std::size_t stash_bytes() const { return bytes_held() - bytes_of(weights_) - bytes_of(grads_); }
  // FLOPs of one F, I and W call (transformer_config.hpp for the convention).
  StageFlops flops() const { return stage_flops(cfg_); }

  const std::vector<ParamInfo>& parameters() const { return table_; }
  const Flat& weights() const { return weights_; }
  const Flat& gradients() const { return grads_; }
  std::size_t parameter_count() const { return table_.empty() ? 0 : table_.back().offset + table_.back().size(); }
  // ZeRO-2/3: the flat weights or gradients replaced by `f` (parameter_count() values) or dropped (an
  // empty view: nothing held, a call that reads them fails); every parameter's views are rebound.
  void bind_weights(const Flat& f) { weights_ = f, bind(); }
  void bind_gradients(const Flat& f) { grads_ = f, bind(); }

 private:
  enum class Phase { forward_done, input_done };
  struct MicroBatch {
    Phase phase = Phase::forward_done;
    std::vector<LayerStash<S, E>> layers;
    std::vector<typename StageMoe<S, E>::Stash> moe;  // per layer; empty for a dense one
    HeadStash<S, E> head;
    Activations embedding_grad;  // I -> W on the first stage
    // 16-bit activations (cfg_.stash16): the 16-bit copies of each layer's and its MoE layer's
    // stash, the head's and the embedding gradient's (kernels/stash16.hpp).
    std::vector<Slots16<E>> layer16, moe16;
    Slots16<E> head16, embedding16;
    std::size_t bytes() const;
  };
  float scale16_ = 1;    // fp16: the loss scale its stashed gradients are kept multiplied by
  long overflows16_ = 0;  // fp16: stashed values past its range since the last take_stash_overflows
  // The 16-bit type of this stage's stash, none unless a float stage of a 16-bit run.
  Half half16() const { return std::is_same_v<S, float> ? cfg_.stash16 : Half::none; }
  // Layer l's stash (and its MoE layer's) to 16 bits at the end of F and of I, back to fp32 views at
  // the start of I and of W (release: the 16-bit copies go).
  void pack_layer(MicroBatch& st, std::size_t l);
  void unpack_layer(MicroBatch& st, std::size_t l, bool release);

  LayerParams<S, E> layer_views(const Flat& flat, std::size_t first_param, bool moe) const;
  void bind();  // every parameter's views over weights_ and grads_
  // Where parameter k starts in `f`; null where the buffer is dropped (ZeRO): views over nothing.
  S* start(const Flat& f, std::size_t k) const { return f.data() ? f.data() + table_[k].offset : nullptr; }
  TokenSource tokens(int mb) const;
  Activations owned(const Activations& a) const;
  void check_shape(const Activations& a, const char* what) const;
  MicroBatch& in_flight(int mb, Phase expected, const char* call);

  TransformerConfig cfg_;
  AllReduce all_reduce_;
  LayerShape shape_;
  std::vector<ParamInfo> table_;
  Flat weights_, grads_;
  std::vector<LayerParams<S, E>> layer_w_, layer_g_;
  Matrix wte_, wpe_, gwte_, gwpe_;
  HeadParams<S, E> head_w_, head_g_;
  std::map<int, MicroBatch> in_flight_;
  std::map<int, double> losses_;
  std::function<void()> between_layers_;
  void between_layers() const {
    if (between_layers_) between_layers_();
  }
  // First vocabulary row this rank holds (vocabulary-parallel), else 0.
  int vocab_start() const { return cfg_.vocab_split() ? cfg_.tp_rank * cfg_.local_vocab() : 0; }
  void reduce(const Matrix& m, TpPoint p) const { all_reduce<S, E>(all_reduce_, m, p); }
  SeqParallel<S, E> sp_;
  const SeqParallel<S, E>* sp() const { return cfg_.seq_split() ? &sp_ : nullptr; }
  ContextParallel<S, E> cp_;
  const ContextParallel<S, E>* cp() const { return cfg_.context_parallel > 1 ? &cp_ : nullptr; }
  StageMoe<S, E> moe_;
  std::vector<Flat> layernorm_grads();  // and the MoE routers': what sum_sequence_parallel_grads sums
};

// ---------------------------------------------------------------------------------------------------

template <class S, class E>
TransformerStage<S, E>::TransformerStage(const TransformerConfig& config, AllReduce all_reduce)
    : cfg_(config), all_reduce_(std::move(all_reduce)) {
  validate(cfg_);
  if (cfg_.attention == Attention::fused)
    if (const std::string why = fused_attention_refusal(cfg_, sizeof(S)); !why.empty()) throw UsageError(why);
  shape_.batch = cfg_.micro_batch;
  shape_.seq = cfg_.cp_seq();
  shape_.hidden = cfg_.hidden;
  shape_.heads = cfg_.heads / cfg_.tp_size;
  shape_.head_dim = cfg_.hidden / cfg_.heads;
  shape_.fused_attention = cfg_.attention == Attention::fused;
  sp_.t = cfg_.tp_size;
  sp_.rank = cfg_.tp_rank;
  sp_.batch = cfg_.micro_batch;
  sp_.seq = cfg_.cp_seq();
  cp_.pos = {cfg_.context_parallel, cfg_.cp_rank, cfg_.cp_seq(), cfg_.cp_chunks};
  cp_.comm = cfg_.cp_comm;
  table_ = parameter_table(cfg_);
  weights_ = alloc<Flat>("pipebench::weights", parameter_count());
  grads_ = Flat("pipebench::gradients", parameter_count());  // zero-initialised
  for (const ParamInfo& p : table_) init_parameter<S, E>(weights_, p, cfg_);
  bind();
}

template <class S, class E>
void TransformerStage<S, E>::bind() {
  std::size_t i = 0;
  auto mat = [&](const Flat& f, std::size_t k) {
    return Matrix(start(f, k), table_[k].rows, table_[k].cols);
  };
  layer_w_.clear();
  layer_g_.clear();
  if (cfg_.embedding) {
    wte_ = mat(weights_, 0), wpe_ = mat(weights_, 1), gwte_ = mat(grads_, 0), gwpe_ = mat(grads_, 1);
    i = 2;
  }
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const bool moe = cfg_.moe_layer(cfg_.first_layer + l);
    layer_w_.push_back(layer_views(weights_, i, moe));
    layer_g_.push_back(layer_views(grads_, i, moe));
    i += StageMoe<S, E>::params_in_place(cfg_, cfg_.first_layer + l);
  }
  moe_.bind(cfg_, table_, weights_.data(), grads_.data());
  if (cfg_.head) {
    auto vec = [&](const Flat& f, std::size_t k) { return Flat(start(f, k), table_[k].size()); };
    const bool shared = cfg_.tie_embeddings && cfg_.embedding;  // the head reads wte_ itself
    head_w_ = {vec(weights_, i), vec(weights_, i + 1), shared ? wte_ : mat(weights_, i + 2), cfg_.tie_embeddings};
    head_g_ = {vec(grads_, i), vec(grads_, i + 1), shared ? gwte_ : mat(grads_, i + 2), cfg_.tie_embeddings};
    head_w_.vocab_split = head_g_.vocab_split = cfg_.vocab_split();
    head_w_.v0 = head_g_.v0 = vocab_start();
    head_w_.tp_size = head_g_.tp_size = cfg_.tp_size;
    head_w_.tp_rank = head_g_.tp_rank = cfg_.tp_rank;
  }
}

template <class S, class E>
LayerParams<S, E> TransformerStage<S, E>::layer_views(const Flat& f, std::size_t k, bool moe) const {
  auto vec = [&](std::size_t j) { return Flat(start(f, k + j), table_[k + j].size()); };
  auto mat = [&](std::size_t j) { return Matrix(start(f, k + j), table_[k + j].rows, table_[k + j].cols); };
  LayerParams<S, E> p;
  p.ln1_g = vec(0), p.ln1_b = vec(1), p.wqkv = mat(2), p.bqkv = vec(3), p.wo = mat(4), p.bo = vec(5);
  p.ln2_g = vec(6), p.ln2_b = vec(7);
  if (!moe) p.w1 = mat(8), p.b1 = vec(9), p.w2 = mat(10), p.b2 = vec(11);  // an MoE layer's: kernels/moe_stage.hpp
  return p;
}

template <class S, class E>
TokenSource TransformerStage<S, E>::tokens(int mb) const {
  return TokenSource{cfg_.seed, mb, cfg_.micro_batch, cfg_.cp_seq(), cfg_.vocab, cp_.pos};
}

template <class S, class E>
typename TransformerStage<S, E>::Activations TransformerStage<S, E>::owned(const Activations& a) const {
  if (a.use_count() > 0) return a;  // reference-counted: keeping it keeps the memory
  Activations copy = alloc<Activations>("pipebench::stage_boundary", a.extent(0), a.extent(1), a.extent(2));
  Kokkos::deep_copy(E(), copy, a);
  return copy;
}

template <class S, class E>
void TransformerStage<S, E>::check_shape(const Activations& a, const char* what) const {
  if (a.extent(0) != static_cast<std::size_t>(cfg_.micro_batch) || a.extent(1) != static_cast<std::size_t>(cfg_.local_seq()) ||
      a.extent(2) != static_cast<std::size_t>(cfg_.hidden))
    throw Error(std::string("transformer stage: ") + what + " is [" + std::to_string(a.extent(0)) + ", " +
                std::to_string(a.extent(1)) + ", " + std::to_string(a.extent(2)) + "], expected [b, s, h] = [" +
                std::to_string(cfg_.micro_batch) + ", " + std::to_string(cfg_.local_seq()) + ", " +
                std::to_string(cfg_.hidden) + "]");
}

template <class S, class E>
typename TransformerStage<S, E>::MicroBatch& TransformerStage<S, E>::in_flight(int mb, Phase expected,
                                                                                const char* call) {
  auto it = in_flight_.find(mb);
  if (it == in_flight_.end() || it->second.phase != expected)
    throw Error(std::string("transformer stage: ") + call + " of micro-batch " + std::to_string(mb) + " needs its " +
                (expected == Phase::forward_done ? "forward" : "backward_input") + " first");
  return it->second;
}

template <class S, class E>
typename TransformerStage<S, E>::Activations TransformerStage<S, E>::forward(int mb, const Activations& input) {
  if (in_flight_.count(mb))
    throw Error("transformer stage: forward of micro-batch " + std::to_string(mb) + " while it is still in flight");
  if (sp() && !(sp_.all_gather && sp_.reduce_scatter))
    throw Error("transformer stage: sequence parallelism needs set_sequence_parallel() before the first forward");
  if (cp() && !(cp_.comm == CpComm::ring ? bool(cp_.ops.ring) : cp_.ops.all_gather && cp_.ops.reduce_scatter))
    throw Error("transformer stage: context parallelism needs set_context_parallel() before the first forward");
  MicroBatch st;
  st.layers.resize(static_cast<std::size_t>(cfg_.num_layers));
  st.moe.resize(st.layers.size());  // a dense layer's stays empty
  st.layer16.resize(st.layers.size());
  st.moe16.resize(st.layers.size());
  Activations x;
  if (cfg_.embedding) {
    x = alloc<Activations>("pipebench::embedding_out", static_cast<std::size_t>(cfg_.micro_batch),
                           static_cast<std::size_t>(cfg_.cp_seq()), static_cast<std::size_t>(cfg_.hidden));
    const Matrix xm = as_matrix<Matrix>(x, shape_.rows(), x.extent(2));
    if (sp()) {
      // Sequence-parallel: the summed lookups are reduce-scattered (vocabulary-parallel) or this rank's
      // rows taken (replicated); the positions [k*s/t, (k+1)*s/t) are added to the shard.
      const Activations xl = alloc<Activations>("pipebench::embedding_out_local", x.extent(0),
                                                static_cast<std::size_t>(cfg_.local_seq()), x.extent(2));
      const Matrix xlm = as_matrix<Matrix>(xl, sp_.local_rows(), x.extent(2));
      if (cfg_.vocab_split()) {
        embedding_forward_partial<S, E>(tokens(mb), wte_, vocab_start(), xm);
        E().fence();
        sp_.scatter(xm, TpPoint::embedding_forward, xlm);
        embedding_add_positions<S, E>(cfg_.local_seq(), wpe_, xlm, cfg_.tp_rank * cfg_.local_seq(), cp_.pos);
      } else {
        embedding_forward<S, E>(tokens(mb), wte_, wpe_, xm);
        sp_.take(xm, xlm);
      }
      x = xl;
    } else if (cfg_.vocab_split()) {
      embedding_forward_partial<S, E>(tokens(mb), wte_, vocab_start(), xm);
      reduce(xm, TpPoint::embedding_forward);
      embedding_add_positions<S, E>(cfg_.cp_seq(), wpe_, xm, 0, cp_.pos);
    } else {
      embedding_forward<S, E>(tokens(mb), wte_, wpe_, xm);
    }
  } else {
    check_shape(input, "forward input");
    x = cfg_.recompute == Recompute::full ? owned(input) : input;
  }
  for (std::size_t l = 0; l < st.layers.size(); ++l) {
    if (cfg_.recompute == Recompute::full) {
      st.layers[l].input = x;
      LayerStash<S, E> discarded;
      typename StageMoe<S, E>::Stash dropped;
      x = moe_.forward(l, mb, false, shape_, layer_w_[l], x, discarded, dropped, false, all_reduce_, sp(), cp());
    } else {
      x = moe_.forward(l, mb, false, shape_, layer_w_[l], x, st.layers[l], st.moe[l],
                       modelled_recompute(cfg_) == Recompute::none, all_reduce_, sp(), cp());
    }
    pack_layer(st, l);
    between_layers();
  }
  if (cfg_.head) {
    losses_[mb] = head_forward<S, E>(tokens(mb), head_w_, x, st.head,
                                     [this](const Matrix& m, TpPoint p) { reduce(m, p); }, sp());
    overflows16_ += pack16(st.head, st.head16, half16());
    x = Activations();
  }
  in_flight_[mb] = std::move(st);
  E().fence();
  return x;
}

template <class S, class E>
typename TransformerStage<S, E>::Activations TransformerStage<S, E>::backward_input(int mb,
                                                                                   const Activations& grad_output) {
  MicroBatch& st = in_flight(mb, Phase::forward_done, "backward_input");
  Activations dx;
  if (cfg_.head) {
    unpack16(st.head, st.head16, half16(), false);
    dx = head_backward_input<S, E>(head_w_, st.head, static_cast<std::size_t>(cfg_.micro_batch),
                                   [this](const Matrix& m, TpPoint p) { reduce(m, p); }, sp());
    overflows16_ += pack16(st.head, st.head16, half16(), scale16_);
  } else {
    check_shape(grad_output, "backward_input gradient");
    dx = owned(grad_output);
  }
  for (std::size_t l = st.layers.size(); l-- > 0;) {
    LayerStash<S, E>& ls = st.layers[l];
    typename StageMoe<S, E>::Stash& ms = st.moe[l];
    unpack_layer(st, l, false);
    if (cfg_.recompute == Recompute::full) {
      // Rebuild the complete stash (probabilities included) from the kept input, which it replaces.
      LayerStash<S, E> rebuilt;
      moe_.forward(l, mb, true, shape_, layer_w_[l], ls.input, rebuilt, ms, true, all_reduce_, sp(), cp());
      ls = std::move(rebuilt);
    }
    dx = moe_.backward_input(l, shape_, layer_w_[l], ls, ms, dx, all_reduce_, sp(), cp());
    pack_layer(st, l);
    between_layers();
  }
  st.phase = Phase::input_done;
  E().fence();
  if (cfg_.embedding) {
    if (sp()) {  // the mirror of F's reduce-scatter: the embedding's W reads every row
      st.embedding_grad = alloc<Activations>("pipebench::embedding_grad", dx.extent(0),
                                             static_cast<std::size_t>(cfg_.cp_seq()), dx.extent(2));
      sp_.gather(as_matrix<Matrix>(dx, sp_.local_rows(), dx.extent(2)), TpPoint::embedding_backward,
                 as_matrix<Matrix>(st.embedding_grad, shape_.rows(), dx.extent(2)));
      E().fence();
    } else {
      st.embedding_grad = dx;
    }
    One16<Activations> grad{st.embedding_grad, true};
    overflows16_ += pack16(grad, st.embedding16, half16(), scale16_);
    return Activations();
  }
  return dx;
}

template <class S, class E>
void TransformerStage<S, E>::backward_weight(int mb) {
  MicroBatch& st = in_flight(mb, Phase::input_done, "backward_weight");
  if (cfg_.head) {
    unpack16(st.head, st.head16, half16(), true);
    head_backward_weight<S, E>(head_g_, st.head);
  }
  for (std::size_t l = st.layers.size(); l-- > 0;) {
    unpack_layer(st, l, true);
    moe_.backward_weight(l, shape_, layer_g_[l], st.layers[l], st.moe[l]);
    between_layers();
  }
  One16<Activations> grad{st.embedding_grad, true};
  unpack16(grad, st.embedding16, half16(), true);
  if (cfg_.embedding)
    embedding_backward_weight<S, E>(
        tokens(mb), as_matrix<Matrix>(st.embedding_grad, shape_.rows(), st.embedding_grad.extent(2)), gwte_, gwpe_,
        vocab_start());
  E().fence();
  in_flight_.erase(mb);
}

template <class S, class E>
typename TransformerStage<S, E>::Activations TransformerStage<S, E>::backward(int mb, const Activations& grad_output) {
  Activations dx = backward_input(mb, grad_output);
  backward_weight(mb);
  return dx;
}

template <class S, class E>
double TransformerStage<S, E>::loss(int mb) const {
  auto it = losses_.find(mb);
  if (it == losses_.end())
    throw Error("transformer stage: no loss for micro-batch " + std::to_string(mb) +
                (cfg_.head ? " (its forward has not run since zero_grad)" : " (only the last stage has a loss)"));
  return it->second;
}

}  // namespace pipebench::kernels

#include "kernels/transformer_stage_state.hpp"

namespace pipebench::kernels {

// Compiled once in transformer_stage.cpp for the default execution space.
extern template class TransformerStage<float, Kokkos::DefaultExecutionSpace>;
extern template class TransformerStage<double, Kokkos::DefaultExecutionSpace>;

}  // namespace pipebench::kernels
