// The executor's sharded weights: the all-gathers of ZeRO-1 and 2 after the optimizer step, and ZeRO-3's
// (FSDP). Under ZeRO-3 each rank keeps the weights of its shards of every bucket
// (kernels/workload.hpp, zero_shards; the workload keeps them compact, kernels/zero_state.hpp) and frees
// the whole buffer, which it allocates again and all-gathers from the data-parallel group before the
// actions analysis::gather_plan names and frees after (docs/transformer.md "ZeRO"). A gather left out
// (a test hook) leaves NaN outside the rank's shard, so that an action run on weights that were not
// gathered cannot match the single-rank run. The next action's gathers are posted, into staging buffers
// of their own, before this action computes (prefetch) and completed before that action starts. The
// gathers move the weights as the workload keeps them (Workload::weight_element_bytes): 2 bytes a value
// for a 16-bit run's weights (kernels/half_weights.hpp), whose shards are rounded once after the step.
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
    const auto values = w_.grad_bytes(st) / static_cast<std::size_t>(w_.element_bytes());
    weights_[st].bytes = values * static_cast<std::size_t>(w_.weight_element_bytes());
    weights_[st].whole = true;
    w_.shard(st, cfg_.zero, std::max(cfg_.dp_buckets, 1), dp_->size(), dp_->rank());
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

void Executor::post_gather(int st) {
  StageWeights& sw = weights_.at(st);
  if (!sw.pending.empty()) return;
  const auto elem = static_cast<std::size_t>(w_.weight_element_bytes());
  const auto d = static_cast<std::size_t>(dp_->size());
  const bool drop = gathers_++ == cfg_.test_drop_gather;
  // The rank's shards: ZeRO-3's compact copies, or the whole weights of ZeRO-1 and 2 at their place.
  const auto* weights = static_cast<const char*>(fsdp_ ? w_.weight_shard(st) : w_.weight_data(st));
  std::size_t at = 0;
  for (const kernels::ZeroShard& z : kernels::zero_shards(sw.bytes / elem, std::max(cfg_.dp_buckets, 1), dp_->size(),
                                                          dp_->rank())) {
    sw.pending.emplace_back();
    PendingGather& g = sw.pending.back();
    g.z = z;
    g.at = fsdp_ ? at : z.lo;
    g.dropped = drop;
    at += z.hi - z.lo;
    if (drop) continue;
    g.send.assign(z.shard * elem, 0);
    if (z.hi > z.lo) std::memcpy(g.send.data(), weights + g.at * elem, (z.hi - z.lo) * elem);
    g.recv.resize(z.shard * d * elem);
    g.rec = dp_record(CommKind::AllGather, z.shard * d * elem, st);
    g.req = dp_->iallgather(g.send.data(), g.recv.data(), z.shard * elem);
  }
}

void Executor::complete_gather(int st) {
  StageWeights& sw = weights_.at(st);
  const auto elem = static_cast<std::size_t>(w_.weight_element_bytes());
  if (fsdp_) w_.acquire_weights(st);
  auto* weights = static_cast<char*>(w_.weight_data(st));
  const auto* shards = static_cast<const char*>(w_.weight_shard(st));
  for (PendingGather& g : sw.pending) {
    if (g.dropped) {  // test-only: ZeRO-3's bucket is NaN but for the rank's own shard; ZeRO-1's, 2's stale
      if (!fsdp_) continue;
      fill_nan(weights, g.z.bucket_lo, g.z.bucket_hi, elem);
      std::memcpy(weights + g.z.lo * elem, shards + g.at * elem, (g.z.hi - g.z.lo) * elem);
      continue;
    }
    dp_->wait(g.req);
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
      if (!g.dropped) dp_->test(g.req);
}

}  // namespace pipebench::bench
