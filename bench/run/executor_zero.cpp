// The executor's sharded weights: the all-gathers of ZeRO-1 and 2 after the optimizer step, and ZeRO-3's
// (FSDP). Under ZeRO-3 each rank keeps the weights of its shards of every bucket
// (kernels/workload.hpp, stage_zero_shards; the workload keeps them compact, kernels/zero_state.hpp) and
// frees the whole buffer, which it allocates again and all-gathers before the actions
// analysis::gather_plan names and frees after (docs/transformer.md "ZeRO"). The dense buckets gather
// over the data-parallel group, the routed experts' over the expert-data-parallel group (Megatron-Core's
// expert buffers); where that group is one rank, the expert buckets are the rank's own, whole, and are
// copied rather than gathered. A gather left out (a test hook) leaves NaN outside the rank's shard, so
// that an action run on weights that were not gathered cannot match the single-rank run. The next
// action's gathers are posted, into staging buffers of their own, before this action computes
// (prefetch) and completed before that action starts. The gathers move the weights as the workload
// keeps them (Workload::weight_element_bytes): 2 bytes a value for a 16-bit run's weights
// (kernels/half_weights.hpp), whose shards are rounded once after the step.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "analysis/error.hpp"
#include "analysis/zero.hpp"
#include "bench/run/executor.hpp"

namespace pipebench::bench {

namespace {
double now() { return MPI_Wtime(); }

template <class T>
void fill_nan(char* data, std::size_t lo, std::size_t hi) {
  std::fill(reinterpret_cast<T*>(data) + lo, reinterpret_cast<T*>(data) + hi, std::numeric_limits<T>::quiet_NaN());
}
void fill_nan(char* data, std::size_t lo, std::size_t hi, std::size_t elem) {
  if (elem == 8) fill_nan<double>(data, lo, hi);
  else if (elem == 4) fill_nan<float>(data, lo, hi);
  else std::fill(reinterpret_cast<std::uint16_t*>(data) + lo, reinterpret_cast<std::uint16_t*>(data) + hi, 0x7fff);  // NaN in bf16 and half
}
}  // namespace

void Executor::zero_setup() {
  for (int st : s_.stages_of_rank(me_)) {
    if (!w_.weight_data(st))
      throw Error("executor: --zero " + std::to_string(cfg_.zero) +
                  " needs a workload whose weights it can shard (the transformer)");
    const std::size_t count = w_.grad_bytes(st) / static_cast<std::size_t>(w_.element_bytes());
    weights_[st].bytes = count * static_cast<std::size_t>(w_.weight_element_bytes());
    weights_[st].whole = true;
    std::size_t first = count, n = 0;
    if (!w_.expert_grads(st, first, n)) first = count;
    kernels::ZeroGroups g{dp_->size(), dp_->rank(), 1, 0};
    if (cfg_.expert_dp) g.edp = cfg_.expert_dp->size(), g.er = cfg_.expert_dp->rank();
    shards_[st] = kernels::stage_zero_shards(count, first, std::max(cfg_.dp_buckets, 1), g);
    w_.shard(st, cfg_.zero, shards_[st]);
  }
  if (cfg_.zero < 3) return;
  fsdp_ = true;
  const analysis::GatherPlan g = analysis::gather_plan(s_, me_, cfg_.reshard_after_forward);
  gather_before_ = g.gather_before;
  release_after_ = g.release_after;
  // Every rank starts from the same whole weights and keeps its shards.
  for (int st : s_.stages_of_rank(me_)) release_weights(st);
}

void Executor::release_weights(int st) {
  StageWeights& sw = weights_.at(st);
  if (!sw.whole) return;
  sw.whole = false;
  w_.release_weights(st);  // the shards stay, compact, in the workload
}

comm::Communicator* Executor::zero_group(const kernels::ZeroShard& z) const {
  comm::Communicator* c = z.expert ? cfg_.expert_dp : dp_;
  return c && c->size() > 1 ? c : nullptr;
}

void Executor::post_gather(int st) {
  StageWeights& sw = weights_.at(st);
  if (!sw.pending.empty()) return;
  const auto elem = static_cast<std::size_t>(w_.weight_element_bytes());
  const bool drop = gathers_++ == cfg_.test_drop_gather;
  int expert_drop = -1;  // the stage's expert buckets: not counted yet (-1), kept (0), dropped (1)
  // The rank's shards: ZeRO-3's compact copies, or the whole weights of ZeRO-1 and 2 at their place.
  const auto* weights = static_cast<const char*>(fsdp_ ? w_.weight_shard(st) : w_.weight_data(st));
  std::size_t at = 0;
  for (const kernels::ZeroShard& z : shards_.at(st)) {
    sw.pending.emplace_back();
    PendingGather& g = sw.pending.back();
    g.z = z;
    g.at = fsdp_ ? at : z.lo;
    g.via = zero_group(z);
    at += z.hi - z.lo;
    if (!g.via) continue;  // the rank's own bucket, whole (complete_gather)
    if (z.expert && expert_drop < 0) expert_drop = expert_gathers_++ == cfg_.test_drop_expert_gather;
    g.dropped = z.expert ? expert_drop == 1 : drop;
    if (g.dropped) continue;
    const auto d = static_cast<std::size_t>(g.via->size());
    g.send.assign(z.shard * elem, 0);
    if (z.hi > z.lo) std::memcpy(g.send.data(), weights + g.at * elem, (z.hi - z.lo) * elem);
    g.recv.resize(z.shard * d * elem);
    g.rec = dp_record(CommKind::AllGather, z.shard * d * elem, st);
    g.req = g.via->iallgather(g.send.data(), g.recv.data(), z.shard * elem);
  }
}

void Executor::complete_gather(int st) {
  StageWeights& sw = weights_.at(st);
  const auto elem = static_cast<std::size_t>(w_.weight_element_bytes());
  if (fsdp_) w_.acquire_weights(st);
  auto* weights = static_cast<char*>(w_.weight_data(st));
  const auto* shards = static_cast<const char*>(w_.weight_shard(st));
  for (PendingGather& g : sw.pending) {
    // The rank's own whole bucket, or (test-only) a dropped gather: ZeRO-3's bucket is NaN but for the
    // rank's own shard; ZeRO-1's, 2's stale.
    if (g.dropped || !g.via) {
      if (!fsdp_) continue;
      if (g.dropped) fill_nan(weights, g.z.bucket_lo, g.z.bucket_hi, elem);
      std::memcpy(weights + g.z.lo * elem, shards + g.at * elem, (g.z.hi - g.z.lo) * elem);
      continue;
    }
    g.via->wait(g.req);
    g.rec.t_done = now();
    note(g.rec);
    std::memcpy(weights + g.z.bucket_lo * elem, g.recv.data(), (g.z.bucket_hi - g.z.bucket_lo) * elem);
  }
  sw.pending.clear();
  sw.whole = true;
}

void Executor::zero3_before(std::size_t i) {
  const double t0 = now();
  for (int st : gather_before_[i]) {
    post_gather(st);  // nothing where it was prefetched
    complete_gather(st);
  }
  gather_waited_ += now() - t0;
  if (cfg_.prefetch && i + 1 < gather_before_.size())
    for (int st : gather_before_[i + 1]) post_gather(st);
  // What is held during the action: the whole stages, and the staging buffers of the gathers in flight.
  double held = 0;
  for (const auto& [st, sw] : weights_) {
    if (w_.weight_data(st)) held += static_cast<double>(sw.bytes);  // allocated now
    for (const PendingGather& g : sw.pending)
      held += static_cast<double>((g.z.bucket_hi - g.z.bucket_lo) * static_cast<std::size_t>(w_.weight_element_bytes()));
  }
  gathered_peak_ = std::max(gathered_peak_, held);
}

void Executor::zero3_after(std::size_t i) {
  for (int st : release_after_[i]) release_weights(st);
}

// While an action computes: one test of each gather in flight, so that MPI moves them on.
void Executor::zero3_progress() {
  for (auto& [st, sw] : weights_)
    for (PendingGather& g : sw.pending)
      if (!g.dropped && g.via) g.via->test(g.req);
}

}  // namespace pipebench::bench
