#include "kernels/synthetic.hpp"

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "analysis/error.hpp"
#include "comm/bench_ops.hpp"
#include "kernels/device.hpp"

namespace pipebench::kernels {

namespace {

double now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Boundary messages start with this header so a stage can check it received what the schedule says
// (the right micro-batch from the right stage, this step); the rest of the message is payload.
struct Header {
  std::int32_t magic;
  std::int32_t stage;
  std::int32_t mb;
  std::int32_t step;
};
constexpr std::int32_t kMagic = 0x70697065;  // "pipe"

}  // namespace

EpCounts ep_counts(EpExchange e, std::size_t bytes, int ep, int member, double imbalance) {
  const auto blocks = comm::bench::uneven_blocks(bytes / static_cast<std::size_t>(ep), ep, imbalance);
  EpCounts c;
  c.send.assign(blocks.begin(), blocks.end());
  c.recv.assign(static_cast<std::size_t>(ep), static_cast<std::size_t>(blocks[static_cast<std::size_t>(member)]));
  // A combine returns what the dispatch brought: the same blocks the other way.
  if (e == EpExchange::f_combine || e == EpExchange::b_dispatch) std::swap(c.send, c.recv);
  return c;
}

std::size_t ep_buffer_bytes(std::size_t bytes, int ep, int member, double imbalance) {
  std::size_t received = 0;
  for (std::size_t b : ep_counts(EpExchange::f_dispatch, bytes, ep, member, imbalance).recv) received += b;
  return std::max(bytes, received);
}

SyntheticWorkload::SyntheticWorkload(SyntheticConfig cfg, TpAllReduce tp_allreduce, EpOps ep_ops)
    : cfg_(std::move(cfg)), tp_allreduce_(std::move(tp_allreduce)), ep_ops_(std::move(ep_ops)) {
  if (cfg_.v < 1) throw UsageError("synthetic workload: v = " + std::to_string(cfg_.v) + ", must be >= 1");
  if (!cfg_.stage_mult.empty() && static_cast<int>(cfg_.stage_mult.size()) != cfg_.stages_per_pipe)
    throw UsageError("stage cost list has " + std::to_string(cfg_.stage_mult.size()) + " entries, the pipeline has " +
                     std::to_string(cfg_.stages_per_pipe) + " stages (p*v)");
  if (cfg_.tp_allreduce_bytes && tp_allreduce_) tp_buffer_ = comm_buffer(cfg_.tp_allreduce_bytes, "pipebench::synthetic_tp");
  if (expert_traffic()) {
    if (!ep_ops_.post || !ep_ops_.wait) throw Error("synthetic workload: expert traffic needs the ep exchanges");
    const std::size_t most = ep_buffer_bytes(cfg_.ep_alltoall_bytes, cfg_.ep, cfg_.ep_rank, cfg_.routing_imbalance);
    ep_send_ = comm_buffer(most, "pipebench::synthetic_ep_send");
    ep_recv_ = comm_buffer(most, "pipebench::synthetic_ep_recv");
  }
  // The default 50 us timer slack would add that much to every sleep: ask for 1 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
}

SyntheticWorkload::~SyntheticWorkload() = default;

double SyntheticWorkload::chunk_time(char kind, int stage) const {
  const double k = cfg_.stage_mult.empty() ? 1.0 : cfg_.stage_mult[stage % cfg_.stages_per_pipe];
  const double scale = k / cfg_.v;
  switch (kind) {
    case 'F': return cfg_.tf * scale;
    case 'B': return cfg_.tb * scale;
    case 'I': return (cfg_.tb - cfg_.tw) * scale;
    case 'W': return cfg_.tw * scale;
    default: return 0;
  }
}

namespace {

void sleep_until(double t) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(t);
  ts.tv_nsec = static_cast<long>((t - static_cast<double>(ts.tv_sec)) * 1e9);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

}  // namespace

void SyntheticWorkload::work_until(double deadline) {
  const bool progress = progress_ && progress_interval_ > 0;
  // In a device build the spin is one kernel on the device clock; the host sleeps and keeps messages moving.
  if (cfg_.spin && device_spin(std::max(deadline - now(), 0.0), progress ? progress_ : nullptr, progress_interval_))
    return;
  double next = progress ? now() + progress_interval_ : deadline;
  for (;;) {
    const double until = std::min(next, deadline);
    if (cfg_.spin) {
      while (now() < until) {
      }
    } else {
      sleep_until(until);
    }
    if (until >= deadline) return;
    progress_();
    next = now() + progress_interval_;
  }
}

void SyntheticWorkload::work_with_tp(double seconds, std::size_t allreduces, double start) {
  if (!tp_buffer_ || allreduces == 0) return work_until(start + seconds);
  // Megatron's layer: compute, all-reduce, compute, all-reduce.
  const double slice = seconds / static_cast<double>(allreduces);
  double deadline = start;
  for (std::size_t i = 0; i < allreduces; ++i) {
    deadline = std::max(deadline, now()) + slice;
    work_until(deadline);
    tp_allreduce_(tp_buffer_.get(), cfg_.tp_allreduce_bytes, 4);
  }
}

void SyntheticWorkload::pieces(const std::vector<Piece>& list, bool overlap, double start) {
  for (const Piece& p : list) {
    int h = -1;
    if (p.exchange >= 0) {
      const auto e = static_cast<EpExchange>(p.exchange);
      const EpCounts c = ep_counts(e, cfg_.ep_alltoall_bytes, cfg_.ep, cfg_.ep_rank, cfg_.routing_imbalance);
      h = ep_ops_.post(ep_send_.get(), c.send, ep_recv_.get(), c.recv, p.stage, p.mb, p.exchange);
      if (!overlap) ep_ops_.wait(h);
      // The piece computes its whole time after the post (and, without overlap, after the wait): posting
      // and waiting are the exchange's cost, not time taken from the compute.
      start = now();
    }
    // The wait is polled while the piece computes (work_until's progress calls test the exchange).
    if (p.seconds > 0) work_with_tp(p.seconds, 1, start);
    if (h >= 0 && overlap) ep_ops_.wait(h);
    start = now();
  }
}

void SyntheticWorkload::hold(int stage, int mb) {
  const std::size_t bytes = cfg_.activation_bytes / static_cast<std::size_t>(cfg_.v);
  if (bytes == 0) return;
  // A released buffer is reused, as a GPU's caching allocator would: a fresh one page-faults on every
  // page and is unmapped again at release, hundreds of microseconds of kernel time per megabyte that
  // steal the cores shared with the other ranks.
  std::shared_ptr<char> buf;
  if (spare_.empty()) {
    buf = device_bytes(bytes);
    device_memory_ = buf != nullptr;
    if (!buf) buf = std::shared_ptr<char>(new char[bytes], std::default_delete<char[]>());
  } else {
    buf = std::move(spare_.back());
    spare_.pop_back();
  }
  // Write every byte, as a forward writes its activations (on the device: a kernel, waited for, so
  // that the action's remaining time is computed after it).
  if (device_memory_)
    device_fill(buf.get(), bytes, mb & 0xff);
  else
    std::memset(buf.get(), mb & 0xff, bytes);
  held_buffers_[{stage, mb}] = std::move(buf);
  held_ += static_cast<std::int64_t>(bytes);
  peak_ = std::max(peak_, held_);
}

void SyntheticWorkload::release(int stage, int mb) {
  auto it = held_buffers_.find({stage, mb});
  if (it == held_buffers_.end()) return;
  spare_.push_back(std::move(it->second));
  held_buffers_.erase(it);
  held_ -= static_cast<std::int64_t>(cfg_.activation_bytes / static_cast<std::size_t>(cfg_.v));
}

void SyntheticWorkload::write_header(void* out, int stage, int mb) const {
  if (!out || cfg_.device_buffers || cfg_.p2p_bytes < sizeof(Header)) return;
  const Header h{kMagic, stage, mb, step_};
  std::memcpy(out, &h, sizeof h);
}

void SyntheticWorkload::check_header(const void* in, int stage, int mb, const char* what) const {
  if (!in || cfg_.device_buffers || cfg_.p2p_bytes < sizeof(Header)) return;
  Header h{};
  std::memcpy(&h, in, sizeof h);
  if (h.magic != kMagic || h.stage != stage || h.mb != mb || h.step != step_)
    throw Error(std::string("synthetic workload: ") + what + " for stage " + std::to_string(stage) + ", micro-batch " +
                std::to_string(mb) + ", step " + std::to_string(step_) + " carries stage " + std::to_string(h.stage) +
                ", micro-batch " + std::to_string(h.mb) + ", step " + std::to_string(h.step) +
                (h.magic != kMagic ? " (not a pipebench message)" : ""));
}

void SyntheticWorkload::begin_step(int step) { step_ = step; }

void SyntheticWorkload::forward(int stage, int mb, const void* in, void* out) {
  const double start = now();
  check_header(in, stage - 1, mb, "activation");
  hold(stage, mb);
  const double f = chunk_time('F', stage);
  const int d = static_cast<int>(EpExchange::f_dispatch), c = static_cast<int>(EpExchange::f_combine);
  if (expert_traffic())
    pieces({{-1, stage, mb, f / 2}, {d, stage, mb, f / 2}, {c, stage, mb, 0}}, false, start);
  else
    work_with_tp(f, 2, start);
  write_header(out, stage, mb);
}

void SyntheticWorkload::backward_input(int stage, int mb, const void* grad_out, void* grad_in) {
  const double start = now();
  check_header(grad_out, stage + 1, mb, "gradient");
  backward_pieces(chunk_time('I', stage), stage, mb, start);
  write_header(grad_in, stage, mb);
}

void SyntheticWorkload::backward_pieces(double seconds, int stage, int mb, double start) {
  if (!expert_traffic()) return work_with_tp(seconds, 2, start);
  pieces({{static_cast<int>(EpExchange::b_combine), stage, mb, seconds / 2},
          {static_cast<int>(EpExchange::b_dispatch), stage, mb, seconds / 2}},
         false, start);
}

void SyntheticWorkload::backward_weight(int stage, int mb) {
  const double start = now();
  release(stage, mb);
  work_until(start + chunk_time('W', stage));
}

void SyntheticWorkload::backward(int stage, int mb, const void* grad_out, void* grad_in) {
  const double start = now();
  check_header(grad_out, stage + 1, mb, "gradient");
  release(stage, mb);
  backward_pieces(chunk_time('B', stage), stage, mb, start);
  write_header(grad_in, stage, mb);
}

void SyntheticWorkload::forward_backward(int f_stage, int f_mb, const void* in, void* out, int b_stage, int b_mb,
                                         const void* grad_out, void* grad_in) {
  const double start = now();
  check_header(in, f_stage - 1, f_mb, "activation");
  check_header(grad_out, b_stage + 1, b_mb, "gradient");
  hold(f_stage, f_mb);
  release(b_stage, b_mb);
  const double separate = chunk_time('F', f_stage) + chunk_time('B', b_stage);
  const double factor = cfg_.t_overlap < 0 ? 1.0 : cfg_.t_overlap / (cfg_.tf + cfg_.tb);
  if (expert_traffic()) {
    // DualPipe's pair (DeepSeek-V3 report, section 3.2.1): each exchange of one micro-batch is hidden
    // behind a piece of the other's compute, the backward's combine first, the forward's combine last.
    const double f = factor * chunk_time('F', f_stage) / 2, b = factor * chunk_time('B', b_stage) / 2;
    pieces({{static_cast<int>(EpExchange::b_combine), b_stage, b_mb, f},
            {static_cast<int>(EpExchange::f_dispatch), f_stage, f_mb, b},
            {static_cast<int>(EpExchange::b_dispatch), b_stage, b_mb, f},
            {static_cast<int>(EpExchange::f_combine), f_stage, f_mb, b}},
           cfg_.ep_overlap, start);
  } else {
    work_with_tp(factor * separate, 4, start);
  }
  write_header(out, f_stage, f_mb);
  write_header(grad_in, b_stage, b_mb);
}

std::size_t SyntheticWorkload::grad_bytes(int) const { return cfg_.grad_bytes / static_cast<std::size_t>(cfg_.v); }

void* SyntheticWorkload::grad_data(int stage) {
  auto& g = grads_[stage];
  if (!g) g = comm_buffer(grad_bytes(stage), "pipebench::synthetic_gradients");
  return g.get();
}

std::shared_ptr<char> SyntheticWorkload::comm_buffer(std::size_t bytes, const char* label) const {
  if (cfg_.device_buffers) {
    if (std::shared_ptr<char> d = device_bytes(bytes, label)) {
      device_fill(d.get(), bytes, 0);
      return d;
    }
    throw Error("synthetic workload: device buffers asked for, but this build's Kokkos has no device memory");
  }
  return std::shared_ptr<char>(new char[bytes ? bytes : 1](), std::default_delete<char[]>());
}

}  // namespace pipebench::kernels
