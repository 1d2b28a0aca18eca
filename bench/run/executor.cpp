#include "bench/run/executor.hpp"
#include "bench/run/stop.hpp"

#include <mpi.h>

#include <algorithm>
#include <csignal>

#include "analysis/error.hpp"
#include "bench/run/links.hpp"
#include "kernels/device.hpp"

namespace pipebench::bench {

using analysis::Action;
using analysis::Kind;

namespace {

double now() { return MPI_Wtime(); }

bool has_forward(Kind k) { return k == Kind::F || k == Kind::FB; }
bool has_input_grad(Kind k) { return k == Kind::B || k == Kind::I || k == Kind::FB; }
// The backward half of an action: its own stage, or the overlapped pair's backward stage.
int bstage(const Action& a) { return a.kind == Kind::FB ? a.b_stage : a.stage; }
int bmb(const Action& a) { return a.kind == Kind::FB ? a.b_mb : a.mb; }

// Capacity for `more` elements past the current size, growing geometrically over the steps.
template <class T>
void reserve_more(std::vector<T>& v, std::size_t more) {
  if (v.capacity() - v.size() < more) v.reserve(std::max(v.size() + more, 2 * v.capacity()));
}

}  // namespace

Executor::Executor(const analysis::Schedule& schedule, comm::Communicator& pp, comm::Communicator* tp,
                   comm::Communicator* dp, comm::Communicator& world, kernels::Workload& workload, ExecutorConfig cfg)
    : s_(schedule), pp_(pp), tp_(tp), dp_(dp), world_(world), w_(workload), cfg_(cfg), me_(pp.rank()),
      msg_bytes_(std::max<std::size_t>(workload.p2p_bytes(), 1)) {
  if (pp.size() != s_.p)
    throw Error("executor: pipeline communicator has " + std::to_string(pp.size()) + " ranks, schedule has p = " +
                std::to_string(s_.p));
  const auto& list = s_.actions[me_];
  const int S = s_.num_stages();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Action& a = list[i];
    if (has_forward(a.kind) && !s_.is_first_stage(a.stage) && s_.stage_rank[a.stage - 1] != me_)
      needs_.push_back({i, tag(a.stage, a.mb, false), s_.stage_rank[a.stage - 1], a.stage, a.mb});
    const int b = bstage(a);
    if (has_input_grad(a.kind) && !s_.is_last_stage(b) && s_.stage_rank[b + 1] != me_)
      needs_.push_back({i, tag(b, bmb(a), true), s_.stage_rank[b + 1], b, bmb(a)});
  }
  // A chunk's weight gradients are final after its last B, W or overlapped pair.
  last_backward_.assign(list.size(), -1);
  std::vector<bool> seen(S, false);
  for (std::size_t i = list.size(); i-- > 0;) {
    const Action& a = list[i];
    const bool weights = a.kind == Kind::B || a.kind == Kind::W || a.kind == Kind::FB;
    if (weights && !seen[bstage(a)]) {
      seen[bstage(a)] = true;
      last_backward_[i] = bstage(a);
    }
  }
  for (int st : s_.stages_of_rank(me_)) {
    std::size_t off = 0, n = 0;
    if (w_.tied_copy(st, off, n)) tied_stages_.push_back(st);
  }
  if (cfg_.zero && dp_) zero_setup();
  if (cfg_.links) {
    for (int src = 0; src < s_.p; ++src)
      for (const SentMessage& m : sent_messages(s_, src))
        if (src != me_ && m.dest_rank == me_)
          link_order_.push_back({0, tag(m.dest_stage, m.mb, m.grad), src, m.dest_stage, m.mb});
    if (link_order_.size() != needs_.size())
      throw Error("executor: rank " + std::to_string(me_) + " needs " + std::to_string(needs_.size()) +
                  " messages per step, its senders send " + std::to_string(link_order_.size()));
  }
  recvs_.resize(static_cast<std::size_t>(2) * S * s_.m);
  if (!cfg_.roll) {
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(host, &len);
    own_roll_ = std::make_unique<comm::Roll>(world_, std::string(host, static_cast<std::size_t>(len)));
    cfg_.roll = own_roll_.get();
  }
  local_.resize(recvs_.size());
  w_.set_progress([this] { progress(); }, cfg_.progress_interval);
}

void Executor::progress() {
  poll_sends(false);
  if (fsdp_) zero3_progress();
  if (!ep_pending_.empty()) ep_progress();
  while (first_pending_need_ < next_need_ && !recvs_[needs_[first_pending_need_].tag].active) ++first_pending_need_;
  if (first_pending_need_ < next_need_) {
    PendingRecv& r = recvs_[needs_[first_pending_need_].tag];
    r.via->test(r.req);
  }
}

int Executor::tag(int dest_stage, int mb, bool grad) const {
  return (mb * s_.num_stages() + dest_stage) * 2 + (grad ? 1 : 0);
}

comm::Buffer Executor::take_buffer() {
  if (pool_.empty()) poll_sends(false);  // sends are otherwise collected only while actions compute
  if (pool_.empty()) return pp_.allocate(msg_bytes_);
  comm::Buffer b = std::move(pool_.back());
  pool_.pop_back();
  return b;
}

void Executor::note(CommRecord r) {
  if (comms_) comms_->push_back(r);
}

comm::Communicator& Executor::via(int src, int dst) const {
  if (!cfg_.links) return pp_;
  comm::Communicator* c = cfg_.links->link(src, dst);
  if (!c) throw Error("executor: no pipeline link from rank " + std::to_string(src) + " to " + std::to_string(dst));
  return *c;
}

void Executor::post_receive(const Need& n, comm::Communicator& c, int src, int wire_tag) {
  PendingRecv& r = recvs_[n.tag];
  r.buf = take_buffer();
  r.posted = now();
  r.via = &c;
  r.req = c.irecv(r.buf.data(), msg_bytes_, src, wire_tag);
  r.peer = n.peer;
  r.stage = n.stage;
  r.mb = n.mb;
  r.active = true;
}

void Executor::post_link_receives() {
  for (const Need& n : link_order_) post_receive(n, via(n.peer, me_), Links::kSrc, 0);
  next_need_ = needs_.size();
  posted_ahead_ = needs_.size();
}

void Executor::post_receives_up_to(std::size_t action_index) {
  if (cfg_.links) {
    if (next_need_ == 0 && !needs_.empty()) post_link_receives();
    return;
  }
  // Post every receive needed up to `action_index` (at least) and further ahead within the byte budget.
  while (next_need_ < needs_.size() &&
         (needs_[next_need_].action <= action_index || (posted_ahead_ + 1) * msg_bytes_ <= cfg_.recv_ahead_bytes)) {
    const Need& n = needs_[next_need_++];
    post_receive(n, pp_, n.peer, n.tag);
    ++posted_ahead_;
  }
}

CommRecord Executor::pp_record(CommKind kind, int peer, int stage, int mb, int tag) const {
  CommRecord rec;
  rec.step = step_;
  rec.global_rank = world_.world_rank();
  rec.peer = pp_.world_rank_of(peer);
  rec.kind = kind;
  rec.group = CommGroup::pp;
  rec.bytes = static_cast<std::int64_t>(msg_bytes_);
  rec.stage = stage;
  rec.mb = mb;
  rec.tag = tag;
  return rec;
}

bool Executor::waits_for_flush(int stage) const {
  return s_.pipes > 1 || std::find(tied_stages_.begin(), tied_stages_.end(), stage) != tied_stages_.end();
}

CommRecord Executor::tp_record(CommKind kind, std::size_t bytes) const {
  CommRecord rec;
  rec.step = step_;
  rec.global_rank = world_.world_rank();
  rec.kind = kind;
  rec.group = CommGroup::tp;
  rec.bytes = static_cast<std::int64_t>(bytes);
  rec.t_posted = now();
  return rec;
}

const void* Executor::input(int dest_stage, int src_stage, int mb, bool grad, std::vector<comm::Buffer>& hold) {
  const int t = tag(dest_stage, mb, grad);
  if (s_.stage_rank[src_stage] == me_) {
    hold.push_back(std::move(local_[t]));
    return hold.back().data();
  }
  PendingRecv& r = recvs_[t];
  if (!r.active) throw Error("executor: receive for tag " + std::to_string(t) + " was never posted");
  const double t0 = now();
  r.via->wait(r.req);
  const double t1 = now();
  waited_ += t1 - t0;
  CommRecord rec = pp_record(CommKind::Recv, r.peer, dest_stage, mb, t);
  rec.t_posted = r.posted;
  rec.t_wait = t0;
  rec.t_done = t1;
  note(rec);
  r.active = false;
  --posted_ahead_;
  hold.push_back(std::move(r.buf));
  return hold.back().data();
}

void Executor::output(int src_stage, int dest_stage, int mb, bool grad, comm::Buffer buf) {
  const int t = tag(dest_stage, mb, grad);
  const int peer = s_.stage_rank[dest_stage];
  if (peer == me_) {
    local_[t] = std::move(buf);
    return;
  }
  PendingSend ps;
  ps.rec = pp_record(CommKind::Send, peer, src_stage, mb, t);
  ps.rec.t_posted = now();
  ps.via = &via(me_, peer);
  ps.req = cfg_.links ? ps.via->isend(buf.data(), msg_bytes_, Links::kDst, 0) : pp_.isend(buf.data(), msg_bytes_, peer, t);
  ps.buf = std::move(buf);
  sends_.push_back(std::move(ps));
}

void Executor::poll_sends(bool wait) {
  for (auto& ps : sends_) {
    if (ps.req.done()) continue;
    if (wait)
      ps.via->wait(ps.req);
    else if (!ps.via->test(ps.req))
      continue;
    ps.rec.t_done = now();
    note(ps.rec);
    pool_.push_back(std::move(ps.buf));
  }
  sends_.erase(std::remove_if(sends_.begin(), sends_.end(), [](const PendingSend& p) { return p.req.done(); }),
               sends_.end());
}

void Executor::tp_allreduce(void* data, std::size_t bytes, int element_bytes) {
  if (!tp_) return;
  CommRecord rec = tp_record(CommKind::AllReduce, bytes);
  tp_->allreduce_sum(data, bytes / static_cast<std::size_t>(element_bytes),
                     element_bytes == 8 ? comm::DType::f64 : comm::DType::f32);
  rec.t_done = now();
  note(rec);
}

void Executor::tp_allgather(const void* send, void* recv, std::size_t bytes_per_rank, int) {
  if (!tp_) return;
  CommRecord rec = tp_record(CommKind::AllGather, bytes_per_rank * static_cast<std::size_t>(tp_->size()));
  comm::Request r = tp_->iallgather(send, recv, bytes_per_rank);
  tp_->wait(r);
  rec.t_done = now();
  note(rec);
}

void Executor::tp_reduce_scatter(const void* send, void* recv, std::size_t bytes_per_rank, int element_bytes) {
  if (!tp_) return;
  CommRecord rec = tp_record(CommKind::ReduceScatter, bytes_per_rank * static_cast<std::size_t>(tp_->size()));
  comm::Request r = tp_->ireduce_scatter_sum(send, recv, bytes_per_rank / static_cast<std::size_t>(element_bytes),
                                             element_bytes == 8 ? comm::DType::f64 : comm::DType::f32);
  tp_->wait(r);
  rec.t_done = now();
  note(rec);
}

// The step starts together on every rank. Arrivals are announced to rank 0 first (comm::Roll), so that
// a rank that never arrives (stopped, hung, or dead without taking the job down) is named; then a
// non-blocking all-reduce (a barrier carrying rank 0's stop verdict) releases everyone at once. A rank
// that stops after it arrived holds the barrier: nobody can name it then, and the message says so.
void Executor::start_barrier(int step) {
  const std::string phase = "the start of step " + std::to_string(step) + (cfg_.where.empty() ? "" : " of " + cfg_.where);
  // Each arrival carries the rank's stop request (a signal number, bench/run/stop.hpp); rank 0 alone
  // puts the verdict into the all-reduce that releases everyone, so every rank learns the same one.
  const auto arrived = cfg_.roll->collect(phase, stop_signal());
  double verdict = 0;
  if (world_.rank() == 0) {
    verdict = stop_signal();
    for (auto v : arrived) verdict = std::max(verdict, static_cast<double>(v));
  }
  comm::Request release = world_.iallreduce_sum(&verdict, 1, comm::DType::f64);
  try {
    world_.wait(release, cfg_.roll->release_limit());
  } catch (const comm::TimeoutError&) {
    throw Error("rank " + std::to_string(world_.rank()) + ": every rank reached " + phase +
                ", but the barrier that starts it did not complete " + cfg_.roll->within() +
                " (a rank stopped or died after it arrived)");
  }
  if (verdict != 0) throw SweepStopped{static_cast<int>(verdict)};
}

long long largest_tag(const analysis::Schedule& s) {
  return 2LL * s.m * s.num_stages() - 1;
}

void Executor::begin_step(int step, std::vector<ActionRecord>* actions, std::vector<CommRecord>* comms) {
  step_ = step;
  comms_ = comms;
  waited_ = 0;
  next_need_ = 0;
  first_pending_need_ = 0;
  posted_ahead_ = 0;
  reduce_scatters_ = gathers_ = expert_gathers_ = expert_scatters_ = 0;
  gather_waited_ = gathered_peak_ = 0;
  w_.begin_step(step);
  const auto& list = s_.actions[me_];
  // Room for the step's records up front, so that recording never reallocates between actions.
  if (actions) reserve_more(*actions, list.size());
  if (comms) {
    // Two messages per action at most, four TP all-reduces and four expert exchanges (an F&B pair), the
    // DP buckets of each chunk.
    const std::size_t dp = dp_ ? s_.stages_of_rank(me_).size() * static_cast<std::size_t>(std::max(cfg_.dp_buckets, 1)) : 0;
    reserve_more(*comms, ((tp_ ? 6 : 2) + (cfg_.ep ? 4 : 0)) * list.size() + dp);
  }
  // Receives are posted before the barrier so that no message of this step arrives unexpected.
  post_receives_up_to(0);
  start_barrier(step);
}

// Waits for the action's inputs, computes it, sends its outputs; returns its [start, end] times.
std::pair<double, double> Executor::run_action(std::size_t i) {
  const Action& a = s_.actions[me_][i];
  post_receives_up_to(i);
  std::vector<comm::Buffer>& hold = hold_;
  hold.clear();
  const bool fwd = has_forward(a.kind), bwd = has_input_grad(a.kind);
  const int b = bstage(a), bm = bmb(a);
  const void* in = fwd && !s_.is_first_stage(a.stage) ? input(a.stage, a.stage - 1, a.mb, false, hold) : nullptr;
  const void* gout = bwd && !s_.is_last_stage(b) ? input(b, b + 1, bm, true, hold) : nullptr;
  comm::Buffer out, gin;
  if (fwd && !s_.is_last_stage(a.stage)) out = take_buffer();
  if (bwd && !s_.is_first_stage(b)) gin = take_buffer();
  if (fsdp_) zero3_before(i);  // ZeRO-3: its weights whole (their wait is not the action's)
  w_.take_peak_activation_bytes();  // start this action's peak from what is held now
  const double t0 = now();
  switch (a.kind) {
    case Kind::F: w_.forward(a.stage, a.mb, in, out.data()); break;
    case Kind::B: w_.backward(a.stage, a.mb, gout, gin.data()); break;
    case Kind::I: w_.backward_input(a.stage, a.mb, gout, gin.data()); break;
    case Kind::W: w_.backward_weight(a.stage, a.mb); break;
    case Kind::FB: w_.forward_backward(a.stage, a.mb, in, out.data(), b, bm, gout, gin.data()); break;
  }
  const double t1 = now();
  if (!ep_pending_.empty()) ep_check_waited(i);
  // Outputs leave first; the record can wait the microsecond it takes.
  if (out.data()) output(a.stage, a.stage + 1, a.mb, false, std::move(out));
  if (gin.data()) output(b, b - 1, bm, true, std::move(gin));
  if (fsdp_) zero3_after(i);
  return {t0, t1};
}

ActionRecord Executor::record_of(const Action& a, double t0, double t1) {
  ActionRecord r;
  r.step = step_;
  r.rank = me_;
  r.global_rank = world_.world_rank();
  r.stage = a.stage;
  r.chunk = s_.chunk_of_stage(a.stage);
  r.mb = a.mb;
  r.kind = a.kind;
  r.b_stage = a.b_stage;
  r.b_mb = a.b_mb;
  r.t_start = t0;
  r.t_end = t1;
  r.flops = w_.last_flops();
  r.activation_bytes = w_.take_peak_activation_bytes();
  return r;
}

// After the pipeline's last action: the data-parallel sync of what the buckets left, the tied copies'
// and twins' sums, the sends still pending, the optimizer step.
void Executor::end_step() {
  if (cfg_.dp_buckets == 0)
    for (int st : s_.stages_of_rank(me_))
      if (!waits_for_flush(st)) launch_dp(st);
  // Tied copies and twins: summed after the data-parallel sum (bitwise-equal copies whatever order the
  // DP reduction takes); under ZeRO-1 before it, since a shard holds only part of the sum.
  const bool zero = cfg_.zero && dp_;
  if (zero) sync_tied(), sync_copies();
  for (int st : s_.stages_of_rank(me_))
    if (waits_for_flush(st)) launch_dp(st);
  finish_dp();
  if (!zero) sync_tied(), sync_copies();
  poll_sends(true);
  if (w_.loss_scaled()) {  // fp16: an overflow on any rank skips the update on every rank
    double overflows = w_.overflowed() ? 1 : 0;
    comm::Request r = world_.iallreduce_sum(&overflows, 1, comm::DType::f64);
    world_.wait(r);
    w_.loss_scale_verdict(overflows > 0);
    if (overflows > 0) return;
  }
  if (zero)
    zero_update_and_gather();
  else
    w_.optimizer_step();
}

StepTiming Executor::run_step(int step, std::vector<ActionRecord>* actions, std::vector<CommRecord>* comms) {
  begin_step(step, actions, comms);
  const auto& list = s_.actions[me_];
  StepTiming t;
  t.actions = static_cast<int>(list.size());
  // With device spin kernels, each action's record takes its kernels' CUDA event times instead of the
  // host clock around them (launch and fence latency excluded), resolved once at the end of the step.
  const bool timeline = kernels::device_timeline_begin();
  t.begin = now();
  struct Span {
    std::size_t record, first, last;  // the record and its kernels [first, last) in the timeline
  };
  std::vector<Span> spans;
  if (timeline && actions) spans.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::size_t k0 = timeline ? kernels::device_timeline_count() : 0;
    const auto [t0, t1] = run_action(i);
    t.compute += t1 - t0;
    if (actions) {
      actions->push_back(record_of(list[i], t0, t1));
      const std::size_t k1 = timeline ? kernels::device_timeline_count() : 0;
      if (k1 > k0) spans.push_back({actions->size() - 1, k0, k1});
    }
    if ((cfg_.test_stop || cfg_.test_term) && step >= 0 && i == 0) std::raise(cfg_.test_stop ? SIGSTOP : SIGTERM);
    for (auto& h : hold_)
      if (h.data()) pool_.push_back(std::move(h));
    if (cfg_.dp_buckets > 0 && last_backward_[i] >= 0 && !waits_for_flush(last_backward_[i]))
      launch_dp(last_backward_[i]);
    // No polling of the pending sends here: each test of a pending request is a progress call of the
    // MPI library, which copies out whatever has arrived meanwhile; that is communication work, done
    // by progress() while the next action computes (as a GPU's copy engine would) and not charged to
    // every action's gap. take_buffer() collects them when the pool has run dry.
  }
  t.pipeline_end = list.empty() ? t.begin : now();
  end_step();
  t.end = now();
  if (timeline) {
    const auto timed = kernels::device_timeline_take();
    for (const Span& sp : spans)
      if (sp.last <= timed.size()) {
        (*actions)[sp.record].t_start = t.begin + timed[sp.first].start;
        (*actions)[sp.record].t_end = t.begin + timed[sp.last - 1].end;
      }
  }
  t.waited = waited_;
  t.gather_waited = gather_waited_;
  t.gathered_peak = gathered_peak_;
  comms_ = nullptr;
  return t;
}

}  // namespace pipebench::bench
