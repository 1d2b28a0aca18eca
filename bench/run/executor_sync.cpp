// The executor's end-of-step gradient work: the data-parallel sync of each chunk's gradients
// (all-reduce buckets, or ZeRO-1's reduce-scatter, sharded optimizer step and all-gather) and the
// embedding group of tied embeddings. Split from executor.cpp, which runs the pipeline itself.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bench/run/executor.hpp"
#include "kernels/half_storage.hpp"

namespace pipebench::bench {

namespace {
double now() { return MPI_Wtime(); }
}  // namespace

CommRecord Executor::dp_record(CommKind kind, std::size_t bytes, int stage) const {
  CommRecord rec = tp_record(kind, bytes);
  rec.group = CommGroup::dp;
  rec.stage = stage;
  return rec;
}

namespace {
// --grad-reduce-dtype bf16: n fp32 values as bfloat16 (kernels/half_storage.hpp's encoding), zero-padded to
// `padded` values. They travel and are summed with a rounding after each partial sum (the MPI backend's
// user operation, NCCL's bfloat16): Megatron-Core's reduction without grad_reduce_in_fp32.
std::vector<unsigned char> to_bf16(const char* from, std::size_t n, std::size_t padded) {
  std::vector<unsigned char> out(padded * 2, 0);
  kernels::encode_16(reinterpret_cast<const float*>(from), reinterpret_cast<std::uint16_t*>(out.data()), n,
                     kernels::Half::bf16, 1.0f);
  return out;
}
void from_bf16(const unsigned char* from, std::size_t n, char* to) {
  kernels::decode_16(reinterpret_cast<const std::uint16_t*>(from), reinterpret_cast<float*>(to), n, kernels::Half::bf16, 1.0f);
}
}  // namespace

// ZeRO: each bucket of the stage, padded to equal shards over its group (the dense ones over dp, the
// routed experts' over expert_dp), is reduce-scattered: this rank receives its shard's sums.
void Executor::launch_reduce_scatters(int stage) {
  const auto elem = static_cast<std::size_t>(w_.element_bytes());
  auto* data = static_cast<char*>(w_.grad_data(stage));
  const bool b16 = w_.reduces_grads_in_bf16();
  const std::size_t wire = b16 ? 2 : elem;  // bytes a value on the wire
  const comm::DType type = b16 ? comm::DType::bf16 : elem == 8 ? comm::DType::f64 : comm::DType::f32;
  std::size_t at = 0;  // where the shard's sums go in the workload's compact gradient shards (ZeRO-2, 3)
  for (const kernels::ZeroShard& z : shards_.at(stage)) {
    comm::Communicator* via = zero_group(z);
    const std::size_t n = z.bucket_hi - z.bucket_lo;
    if (!via) {  // a routed experts' bucket of one rank: its gradients are the sums (as without ZeRO)
      if (cfg_.zero >= 2) std::memcpy(static_cast<char*>(w_.grad_shard(stage)) + at * elem, data + z.lo * elem, n * elem);
      at += n;
      continue;
    }
    const auto d = static_cast<std::size_t>(via->size());
    PendingDp p;
    p.via = via == dp_ ? nullptr : via;
    p.stage = stage;
    p.shard = z;
    p.at = at;
    p.bf16 = b16;
    at += z.hi - z.lo;
    const void* send = data + z.bucket_lo * elem;
    if (b16) {
      p.send = to_bf16(static_cast<const char*>(send), n, z.shard * d);
      send = p.send.data();
    } else if (n != z.shard * d) {
      p.send.assign(z.shard * d * elem, 0);
      std::memcpy(p.send.data(), send, n * elem);
      send = p.send.data();
    }
    p.recv.assign(z.shard * wire, 0);
    p.rec = dp_record(CommKind::ReduceScatter, z.shard * d * wire, stage);
    const bool drop = z.expert ? expert_scatters_++ == cfg_.test_drop_expert_reduce_scatter
                               : reduce_scatters_++ == cfg_.test_drop_reduce_scatter;
    if (drop) {  // test-only: the shard keeps its own gradients
      std::memcpy(p.recv.data(), static_cast<const char*>(send) + z.shard * static_cast<std::size_t>(via->rank()) * wire,
                  (z.hi - z.lo) * wire);
    } else {
      p.req = via->ireduce_scatter_sum(send, p.recv.data(), z.shard, type);
    }
    dp_pending_.push_back(std::move(p));
  }
}

void Executor::launch_dp(int stage) {
  w_.finish_grads(stage);  // once per stage and step: every stage's gradients pass here
  if (!dp_) return;
  const auto elem = static_cast<std::size_t>(w_.element_bytes());
  const std::size_t count = w_.grad_bytes(stage) / elem;
  if (count == 0) return;
  if (cfg_.zero) return launch_reduce_scatters(stage);  // which reads the same types for its buckets
  const std::size_t buckets = static_cast<std::size_t>(std::max(cfg_.dp_buckets, 1));
  auto* data = static_cast<char*>(w_.grad_data(stage));
  const bool b16 = w_.reduces_grads_in_bf16();
  const std::size_t wire = b16 ? 2 : elem;  // bytes a value on the wire
  const comm::DType type = b16 ? comm::DType::bf16 : elem == 8 ? comm::DType::f64 : comm::DType::f32;
  // All-reduces in place, or under bf16 on a 16-bit copy decoded back when done (finish_dp).
  auto all_reduce = [&](comm::Communicator* via, char* at, std::size_t n) {
    PendingDp d;
    d.via = via == dp_ ? nullptr : via;
    d.rec = dp_record(CommKind::AllReduce, n * wire, stage);
    if (b16) {
      d.bf16 = true;
      d.send = to_bf16(at, n, n);
      d.decode_to = at;
      d.decode_n = n;
      d.req = via->iallreduce_sum(d.send.data(), n, type);
    } else {
      d.req = via->iallreduce_sum(at, n, type);
    }
    dp_pending_.push_back(std::move(d));
  };
  // Routed experts' gradients (the buffer's tail) over the expert-data-parallel group, the rest over dp.
  std::size_t first = count, n = 0;
  const bool experts = w_.expert_grads(stage, first, n);
  const std::size_t dense = experts ? first : count;
  for (std::size_t k = 0; k < buckets; ++k) {
    const std::size_t lo = dense * k / buckets, hi = dense * (k + 1) / buckets;
    if (hi != lo) all_reduce(dp_, data + lo * elem, hi - lo);
  }
  if (!experts || !cfg_.expert_dp || n == 0) return;
  if (cfg_.test_half_expert_reduce) n /= 2;
  all_reduce(cfg_.expert_dp, data + first * elem, n);
}

void Executor::finish_dp() {
  const auto elem = static_cast<std::size_t>(w_.element_bytes());
  for (auto& d : dp_pending_) {
    (d.via ? d.via : dp_)->wait(d.req);
    d.rec.t_done = now();
    note(d.rec);
    if (d.decode_to) from_bf16(d.send.data(), d.decode_n, d.decode_to);
    // ZeRO-1: the shard's sums go where the shard's gradients were (the rest of the buffer is stale);
    // ZeRO-2 and 3: into the workload's compact shard, and the whole buffer is freed below.
    if (d.stage < 0 || d.shard.bucket_hi == d.shard.bucket_lo || d.shard.hi == d.shard.lo) continue;
    auto* g = cfg_.zero >= 2 ? static_cast<char*>(w_.grad_shard(d.stage)) + d.at * elem
                             : static_cast<char*>(w_.grad_data(d.stage)) + d.shard.lo * elem;
    if (d.bf16)
      from_bf16(d.recv.data(), d.shard.hi - d.shard.lo, g);
    else
      std::memcpy(g, d.recv.data(), (d.shard.hi - d.shard.lo) * elem);
  }
  dp_pending_.clear();
  if (cfg_.zero >= 2 && dp_)
    for (int st : s_.stages_of_rank(me_)) w_.release_grads(st);
}

void Executor::sync_tied() {
  if (tied_stages_.empty()) return;
  const int S = s_.num_stages();
  const auto elem = static_cast<std::size_t>(w_.element_bytes());
  std::size_t off_a = 0, n_a = 0, off_b = 0, n_b = 0;
  const bool a = s_.stage_rank[0] == me_ && w_.tied_copy(0, off_a, n_a);
  const bool b = s_.stage_rank[S - 1] == me_ && w_.tied_copy(S - 1, off_b, n_b);
  const std::size_t n = a ? n_a : n_b;
  if (a && b) {  // both copies here: first += last, then last = first
    w_.accumulate_grads(0, off_a, static_cast<const char*>(w_.grad_data(S - 1)) + off_b * elem, n);
    w_.accumulate_grads(S - 1, off_b, static_cast<const char*>(w_.grad_data(0)) + off_a * elem, n, true);
    return;
  }
  // The embedding group of this pipeline: the ranks of its first and its last stage. Tag 0 is free:
  // it would be a forward message into stage 0, which never receives one. The peer's copy arrives in
  // the communicator's memory (device memory under NCCL), kept across steps.
  const int peer = a ? s_.stage_rank[S - 1] : s_.stage_rank[0];
  const int mine = a ? 0 : S - 1;
  const std::size_t off = a ? off_a : off_b;
  comm::Buffer& other = sum_recv_[mine];
  if (other.bytes() != n * elem) other = pp_.allocate(n * elem);
  CommRecord rec = pp_record(CommKind::AllReduce, peer, mine, -1, 0);
  rec.bytes = static_cast<std::int64_t>(n * elem);
  rec.t_posted = now();
  std::vector<comm::Request> reqs;
  pp_.group_start();  // NCCL: the pair sends and receives at once
  reqs.push_back(pp_.irecv(other.data(), n * elem, peer, 0));
  reqs.push_back(pp_.isend(static_cast<const char*>(w_.grad_data(mine)) + off * elem, n * elem, peer, 0));
  pp_.group_end();
  pp_.wait_all(reqs);
  rec.t_done = now();
  note(rec);
  w_.accumulate_grads(mine, off, other.data(), n);
}

void Executor::sync_copies() {
  if (s_.pipes != 2) return;
  const int per = s_.stages_per_pipe();
  // The synthetic workload's gradients are bytes to move (device memory over NCCL): exchanged, not summed.
  const bool sum = w_.grads_hold_values();
  // Tags past every pipeline message's ((mb * S + stage) * 2 + 1) and the embedding group's (0).
  const int base = (s_.m * s_.num_stages() + s_.num_stages()) * 2;
  std::vector<int> received;  // stages whose twin's gradients arrived in sum_recv_[-1 - stage]
  std::vector<comm::Request> reqs;
  const double posted = now();
  pp_.group_start();  // NCCL: each pair of ranks sends and receives at once
  for (int st : s_.stages_of_rank(me_)) {
    const int twin = st < per ? st + per : st - per;
    const std::size_t bytes = w_.grad_bytes(st);
    if (bytes == 0) continue;
    // DualPipe needs an even p (its catalog row's m rule, analysis/catalog.cpp), so a stage's twin is always on another rank.
    const int peer = s_.stage_rank[twin], tag = base + s_.depth_of_stage(st);
    comm::Buffer& other = sum_recv_[-1 - st];
    if (other.bytes() != bytes) other = pp_.allocate(bytes);
    received.push_back(st);
    reqs.push_back(pp_.irecv(other.data(), bytes, peer, tag));
    reqs.push_back(pp_.isend(w_.grad_data(st), bytes, peer, tag));
  }
  pp_.group_end();
  if (reqs.empty()) return;
  pp_.wait_all(reqs);
  const double done = now();
  for (int st : received) {
    const int twin = st < per ? st + per : st - per;
    const comm::Buffer& other = sum_recv_.at(-1 - st);
    if (sum) w_.accumulate_grads(st, 0, other.data(), other.bytes() / static_cast<std::size_t>(w_.element_bytes()));
    CommRecord r = pp_record(CommKind::AllReduce, s_.stage_rank[twin], st, -1, base + s_.depth_of_stage(st));
    r.bytes = static_cast<std::int64_t>(other.bytes());
    r.t_posted = posted;
    r.t_done = done;
    note(r);
  }
}

// ZeRO: each rank steps its shards; under ZeRO-1 and 2 the updated weights are gathered at once (with
// the gathers of bench/run/executor_zero.cpp), under ZeRO-3 before their next use.
void Executor::zero_update_and_gather() {
  for (int st : s_.stages_of_rank(me_)) {
    for (const kernels::ZeroShard& z : shards_.at(st)) w_.optimizer_step_range(st, z.lo, z.hi);
  }
  if (cfg_.zero >= 3) return;
  for (int st : s_.stages_of_rank(me_)) post_gather(st);
  for (int st : s_.stages_of_rank(me_)) complete_gather(st);
}

}  // namespace pipebench::bench
