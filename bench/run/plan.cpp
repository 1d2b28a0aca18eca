#include "bench/run/plan.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "analysis/validate.hpp"
#include "bench/run/zero_formula.hpp"
#include "kernels/host_tuning.hpp"
#include "kernels/synthetic.hpp"
#include "topology/grid.hpp"

namespace pipebench::bench {

kernels::TransformerWorkloadConfig default_model() {
  kernels::TransformerWorkloadConfig m;
  m.layers = 8;
  m.hidden = 256;
  m.heads = 8;
  m.seq = 128;
  m.micro_batch = 1;
  m.vocab = 1024;
  return m;
}

const char* workload_name(WorkloadKind w) { return w == WorkloadKind::transformer ? "transformer" : "synthetic"; }

namespace {

// "dualpipev (one V-shaped copy)": what to run instead of a schedule with several model copies.
std::string one_copy_name(const analysis::ScheduleRow& row) {
  const analysis::ScheduleRow* one = analysis::one_copy_form(row);
  if (!one) return "a schedule with one model copy";
  return one->name + (one->layout == analysis::ChunkLayout::v ? " (one V-shaped copy)" : " (one copy)");
}

// What one stage of the transformer costs in memory (kernels/transformer_config.hpp), per stage.
std::vector<kernels::StageMemory> stage_memories(const kernels::TransformerWorkloadConfig& m, const analysis::Schedule& s) {
  const auto split = kernels::stage_layers(m, s.stages_per_pipe());
  std::vector<kernels::StageMemory> out;
  for (int st = 0; st < s.num_stages(); ++st)
    out.push_back(kernels::estimate_memory(kernels::stage_config(m, split, s.depth_of_stage(st)), m.fp64 ? 8 : 4));
  return out;
}

// Stash sizes per stage, and each pipeline rank's peak need.
void plan_memory(const RunSettings& rs, Plan& pl) {
  const analysis::Schedule& s = pl.schedule;
  if (rs.workload == WorkloadKind::synthetic) {
    const double b = static_cast<double>(rs.synthetic.activation_bytes / static_cast<std::uint64_t>(s.v()));
    pl.stash.assign(s.num_stages(), {b, b});
    pl.memory_need = analysis::peak_activation_bytes(s, pl.stash);
    // The executor holds at least a received input and an output of p2p_bytes each (more when
    // receives are posted ahead: bench/run/executor.cpp); the workload one TP all-reduce buffer
    // where t > 1 and as much again for MPI's scratch of it (MPICH's MPI_Iallreduce ran out of memory
    // there: issue 27), the gradients of its stages (dp_grad_bytes in all) where d > 1, and with two model
    // copies (DualPipe) those and the twin's received copy (bench/run/executor_sync.cpp); with expert
    // traffic the two exchange buffers of the busiest ep member (0, receiving X times the mean), which
    // each pipeline rank has in one of its data-parallel replicas.
    const SyntheticSettings& y = rs.synthetic;
    const double grads = static_cast<double>(y.dp_grad_bytes);
    const double ep = y.ep_alltoall_bytes == 0 ? 0.0
                                               : 2.0 * static_cast<double>(kernels::ep_buffer_bytes(
                                                           y.ep_alltoall_bytes, rs.ep, 0, y.routing_imbalance));
    const double more = (s.p > 1 ? 2.0 * static_cast<double>(y.p2p_bytes) : 0.0) +
                        (pl.mapping.t > 1 ? 2.0 * static_cast<double>(y.tp_allreduce_bytes) : 0.0) +
                        (s.pipes > 1 ? 2.0 * grads : pl.mapping.d > 1 ? grads : 0.0) + ep;
    for (auto& need : pl.memory_need) need += more;
    return;
  }
  const auto mem = stage_memories(pl.model, s);
  for (const auto& x : mem) pl.stash.push_back({static_cast<double>(x.forward_stash), static_cast<double>(x.weight_stash)});
  pl.memory_need = analysis::peak_activation_bytes(s, pl.stash);
  for (int st = 0; st < s.num_stages(); ++st)
    pl.memory_need[s.stage_rank[st]] += static_cast<double>(mem[st].weights + mem[st].grads + mem[st].workspace);
  // and once per rank, the host BLAS's own buffers (OpenBLAS hung at its first product without room for them)
  for (auto& need : pl.memory_need) need += kernels::blas_buffer_bytes(rs.blas_threads);
}

template <class List>
std::string list(const List& xs) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : ",") + num(x, 9);
  return out;
}

// The MoE layer's options, so that runs differing only there are different configurations.
void add_moe(std::map<std::string, std::string>& m, const analysis::transformer::Moe& e) {
  m.insert({{"experts", std::to_string(e.experts)}, {"top_k", std::to_string(e.top_k)},
            {"moe_ffn", std::to_string(e.expert_ffn)}, {"shared_experts", std::to_string(e.shared_experts)},
            {"moe_every", std::to_string(e.moe_every)}, {"router", analysis::transformer::router_name(e.router)},
            {"capacity_factor", e.capacity_factor > 0 ? num(e.capacity_factor, 9) : "dropless"},
            {"aux_loss_coeff", num(e.aux_loss_coeff, 9)}});
}

// Every setting of the configuration as text: what RunResult::config records, and the resume key.
std::map<std::string, std::string> config_of(const RunSettings& rs, const Plan& pl) {
  const analysis::Schedule& s = pl.schedule;
  std::map<std::string, std::string> m = {
      {"schedule", s.name},
      {"t", std::to_string(pl.mapping.t)},
      {"p", std::to_string(pl.mapping.p)},
      {"d", std::to_string(pl.mapping.d)},
      {"v", std::to_string(s.v())},
      {"m", std::to_string(s.m)},
      // 0 is the default, p: `--group p` is the same configuration.
      {"group", std::to_string(pl.group == s.p ? 0 : pl.group)},
      {"order", run_order(rs)},
      {"backend", rs.backend},
      {"workload", workload_name(rs.workload)},
      {"dp_buckets", std::to_string(rs.dp_buckets)},
      {"warmup_steps", std::to_string(rs.warmup)},
      {"timed_steps", std::to_string(rs.steps)},
  };
  if (rs.workload == WorkloadKind::transformer) {
    const auto& md = pl.model;
    m.insert({{"hidden", std::to_string(md.hidden)},
              {"heads", std::to_string(md.heads)},
              {"seq", std::to_string(md.seq)},
              {"micro_batch_size", std::to_string(md.micro_batch)},
              {"vocab", std::to_string(md.vocab)},
              {"layers", std::to_string(md.layers)},
              {"layers_per_stage", list(kernels::stage_layers(md, s.stages_per_pipe()))},
              {"recompute", analysis::recompute_name(md.recompute)},
              {"precision", kernels::to_string(kernels::precision_of(md))},
              {"lr", num(md.lr, 9)},
              {"seed", std::to_string(md.seed)},
              {"blas_threads", std::to_string(rs.blas_threads)}});
    // Added only where not the default, so that earlier results files keep their resume keys.
    if (md.optimizer != kernels::Optimizer::sgd) m["optimizer"] = kernels::to_string(md.optimizer);
    if (md.weight_decay != 0) m["weight_decay"] = num(md.weight_decay, 9);
    if (md.tie_embeddings) m["tie_embeddings"] = "1";
    if (md.attention == kernels::Attention::fused) m["attention"] = kernels::attention_name(md.attention);
    if (md.vocab_parallel && pl.mapping.t > 1) m["vocab_parallel"] = "1";
    if (md.sequence_parallel) m["sequence_parallel"] = "1";
    if (md.moe.experts > 0) add_moe(m, md.moe);
    if (rs.cp > 1) {  // only where set, so that earlier files' keys stay the same
      m["context_parallel"] = std::to_string(rs.cp);
      m["cp_comm"] = kernels::cp_comm_name(md.cp_comm);
      m["cp_chunks"] = kernels::cp_chunks_name(md.cp_chunks);
    }
    if (rs.zero) m["zero"] = std::to_string(rs.zero);
    if (rs.ep > 1) m["expert_parallel"] = std::to_string(rs.ep), m["ep_overlap"] = rs.synthetic.ep_overlap ? "on" : "off";
    if (md.grad_reduce_bf16) m["grad_reduce_dtype"] = "bf16";
    if (rs.zero == 3 && rs.reshard_after_forward == 0) m["reshard_after_forward"] = "0";
    if (rs.zero == 3 && !rs.gather_prefetch) m["gather_prefetch"] = "0";
    // The split itself is in layers_per_stage; these say how it was chosen and what the end stages hold.
    if (md.layers_auto) m["layers_auto"] = kernels::to_string(md.balance);
    if (md.embedding_stage) m["embedding_stage"] = "1";
    if (md.head_stage) m["head_stage"] = "1";
    return m;
  }
  const SyntheticSettings& y = rs.synthetic;
  const Times& t = pl.times;
  m.insert({{"tf", num(t.tf, 9)},
            {"tb", num(t.tb, 9)},
            {"tw", num(t.tw, 9)},
            {"t_overlap", num(t.t_overlap < 0 ? t.tf + t.tb : t.t_overlap, 9)},
            {"stage_cost", t.stage_cost.empty() ? "uniform" : list(t.stage_cost)},
            {"synthetic_mode", y.spin ? "spin" : "sleep"},
            {"activation_bytes", std::to_string(y.activation_bytes)},
            {"p2p_bytes", std::to_string(y.p2p_bytes)},
            {"tp_allreduce_bytes", std::to_string(y.tp_allreduce_bytes)},
            {"dp_grad_bytes", std::to_string(y.dp_grad_bytes)}});
  if (rs.ep > 1)
    m.insert({{"expert_parallel", std::to_string(rs.ep)},
              {"ep_alltoall_bytes", std::to_string(y.ep_alltoall_bytes)},
              {"routing_imbalance", num(y.routing_imbalance, 9)},
              {"ep_overlap", y.ep_overlap ? "on" : "off"}});
  return m;
}

std::string key_of(const std::map<std::string, std::string>& config) {
  std::string key;
  for (const auto& [k, v] : config) key += (key.empty() ? "" : " ") + k + "=" + v;
  return key;
}

// The settings that do not depend on the configuration; returns the synthetic times in seconds.
Times check_settings(const RunSettings& rs, int world_size) {
  check_moe(rs);
  check_expert_traffic(rs);
  check_context_parallel(rs, world_size);
  auto need_unit = [](const Duration& d, const char* flag) {
    if (!d.has_unit) throw UsageError(std::string(flag) + " '" + to_text(d) + "' needs a unit: s, ms, us or ns (e.g. 2ms)");
  };
  const SyntheticSettings& y = rs.synthetic;
  need_unit(y.times.tf, "--tf");
  need_unit(y.times.tb, "--tb");
  need_unit(y.times.tw, "--tw");
  if (y.times.t_overlap.value >= 0) need_unit(y.times.t_overlap, "--t-overlap");
  // One message is one MPI call, whose count is an int (comm/mpi_communicator.cpp).
  if (y.p2p_bytes > 2147483647ull)
    throw UsageError("--p2p-bytes " + std::to_string(y.p2p_bytes) + " is not allowed: at most 2147483647 bytes (2 GiB - 1), MPI's message size limit");
  // A timeout shorter than a poll can resolve blames a healthy rank; a poll longer than the timeout
  // defeats it (docs/run.md "Bounds").
  check_timeout(rs.timeout);
  const double timeout = rs.timeout.value;
  const long long max_poll_us = static_cast<long long>(timeout * 1e6 / kPollsPerTimeout);
  if (rs.poll_us < 1 || rs.poll_us > max_poll_us)
    throw UsageError("--poll-us " + quoted(std::to_string(rs.poll_us)) + " is not allowed with --timeout " +
                     quoted(to_text(rs.timeout)) + ": expected microseconds from 1 to " + std::to_string(max_poll_us) +
                     " (the timeout / " + std::to_string(kPollsPerTimeout) + ")");
  if (y.tp_allreduce_bytes % 4 || y.dp_grad_bytes % 4)
    throw UsageError("--tp-allreduce-bytes and --dp-grad-bytes must be multiples of 4 (they are float32 sums)");
  if (rs.resume && !rs.append) throw UsageError("--resume needs --append: it adds to an existing results file");
  const std::string precision = std::string("--precision ") + kernels::to_string(rs.precision);
  const bool half = rs.precision == kernels::Precision::bf16 || rs.precision == kernels::Precision::fp16;
  if (half && rs.workload != WorkloadKind::transformer)
    throw UsageError(precision + " needs --workload transformer (the synthetic workload computes nothing)");
  if (rs.precision == kernels::Precision::fp16 && !rs.loss_scaling)
    throw UsageError("--precision fp16 with --loss-scale off: without a scale, gradients below fp16's 6e-8 vanish "
                     "and large ones overflow; use --loss-scale dynamic, or --precision bf16");
  if (!rs.loss_scaling && rs.precision != kernels::Precision::fp16)
    throw UsageError("--loss-scale off needs --precision fp16 (only fp16 scales its loss)");
  if (rs.grad_reduce_bf16 && rs.precision != kernels::Precision::bf16)
    throw UsageError("--grad-reduce-dtype bf16 needs --precision bf16 (got " + precision + ")");
  const std::string zero = "--zero " + std::to_string(rs.zero);
  if (rs.zero && rs.workload != WorkloadKind::transformer)
    throw UsageError(zero + " needs --workload transformer (the synthetic workload has no weights to shard)");
  if (rs.zero && rs.backend != "mpi")
    throw UsageError(zero + " needs --backend mpi (its shards are copied through host memory)");
  if (rs.reshard_after_forward >= 0 && rs.zero != 3)
    throw UsageError("--reshard-after-forward needs --zero 3 (only ZeRO-3 drops the weights between uses)");
  if (!rs.gather_prefetch && rs.zero != 3)
    throw UsageError("--gather-prefetch off needs --zero 3 (only ZeRO-3 gathers weights before their use)");
  if (rs.model.sequence_parallel && rs.workload != WorkloadKind::transformer)
    throw UsageError("--sequence-parallel needs --workload transformer (it splits the model's sequence)");
  if (rs.model.tie_embeddings && rs.backend != "mpi")
    throw UsageError("--tie-embeddings needs --backend mpi (the two copies' gradients are summed in host memory)");
  if (rs.model.weight_decay < 0 || !(rs.model.weight_decay < 1))
    throw UsageError("--weight-decay " + num(rs.model.weight_decay, 9) + " is not allowed: expected a value in [0, 1)");
  if (rs.model.weight_decay != 0 && rs.model.optimizer != kernels::Optimizer::adam)
    throw UsageError("--weight-decay " + num(rs.model.weight_decay, 9) + " needs --optimizer adam");
  // Whether nccl can run here is the device check's (bench/run/device_check.hpp), on rank 0 after planning.
  if (rs.backend != "mpi" && rs.backend != "nccl")
    throw UsageError("--backend " + quoted(rs.backend) + " is not allowed: mpi or nccl");
  for (const auto& mp : rs.mappings)
    if (static_cast<long long>(mp.t) * rs.cp * mp.p * mp.d != world_size)
      throw UsageError("--mapping " + to_string(mp) + (rs.cp > 1 ? " with --context-parallel " + std::to_string(rs.cp) : "") +
                       " needs t*" + (rs.cp > 1 ? "cp*" : "") + "p*d = " +
                       std::to_string(static_cast<long long>(mp.t) * rs.cp * mp.p * mp.d) + " ranks, but the job has " +
                       std::to_string(world_size) + " (start it with mpiexec -n <t*" + (rs.cp > 1 ? "cp*" : "") +
                       "p*d>, or change --mapping)");
  return parse_times(y.times);  // also checks tw < tb
}

// One configuration, planned; UsageError without the configuration's name (the caller adds it).
void plan_one(const RunSettings& rs, Plan& pl, const std::string& name, int m, int v) {
  run_grid(rs, pl.mapping);  // checks the order string
  const analysis::ScheduleRow& row = analysis::schedule_row(name);
  pl.group = row.takes_group() ? rs.group : 0;
  pl.schedule = analysis::make_schedule({name, pl.mapping.p, m, v, pl.group});
  analysis::validate(pl.schedule);
  const analysis::Schedule& s = pl.schedule;
  const auto& cost = pl.times.stage_cost;
  if (!cost.empty() && static_cast<int>(cost.size()) != s.stages_per_pipe())
    throw UsageError("--stage-cost has " + std::to_string(cost.size()) + " entries; it has " +
                     std::to_string(s.stages_per_pipe()) + " stages (p*v)");
  // All ones is what no list means: the same configuration, the same key.
  if (std::all_of(cost.begin(), cost.end(), [](double k) { return k == 1.0; })) pl.times.stage_cost.clear();
  // A synthetic action is one sleep that neither a stop nor the next rank's wait can cut short: one
  // longer than --timeout makes that rank blame this one, and defers a stop past its deadline.
  if (rs.workload == WorkloadKind::synthetic) {
    const Times& t = pl.times;
    const double widest = std::max({t.tf, t.tb, t.t_overlap}) / s.v() *
                          (cost.empty() ? 1.0 : *std::max_element(cost.begin(), cost.end()));
    if (widest >= rs.timeout.value)
      throw UsageError("its longest synthetic action takes " + to_text(seconds(widest)) + " (--tf, --tb, --t-overlap / v" +
                       std::string(cost.empty() ? "" : " times --stage-cost") + "), not less than --timeout " +
                       to_text(rs.timeout) + ": the rank waiting for it would time out; give a longer --timeout");
  }
  pl.model = rs.model;
  pl.model.tp_size = pl.mapping.t;
  pl.model.context_parallel = rs.cp;
  pl.model.ep_size = rs.ep;  // every ep rank holds as many experts: the formulas are ep rank 0's
  if (rs.workload == WorkloadKind::transformer) kernels::validate_model(pl.model, s.stages_per_pipe());
  // A schedule with two copies of the model (DualPipe) holds embedding and head copies this run does not tie.
  if (pl.model.tie_embeddings && row.pipes > 1)
    throw UsageError("--tie-embeddings with " + row.name + ": its two model copies hold four copies of the tied matrix, "
                     "which pipebench does not keep equal; use " + one_copy_name(row) + " or another schedule");
  plan_memory(rs, pl);
  if (rs.workload == WorkloadKind::transformer) pl.optimizer_state_bytes = static_cast<double>(state_formula(rs, pl).optimizer);
  pl.config = config_of(rs, pl);
  pl.key = key_of(pl.config);
}

}  // namespace

std::string run_order(const RunSettings& s) {
  return (s.cp > 1 || s.ep > 1) && s.order == topology::default_order() ? topology::default_order(s.cp, s.ep) : s.order;
}

topology::Grid run_grid(const RunSettings& s, const Mapping& m) {
  return topology::Grid(topology::Sizes{m.t, s.cp, m.p, m.d, s.ep}, 1, run_order(s));
}

std::vector<Mapping> sweep_mappings(const RunSettings& s, int world_size) {
  return s.mappings.empty() ? std::vector<Mapping>{{1, world_size / s.cp, 1}} : s.mappings;
}

std::vector<Plan> plan_sweep(const RunSettings& rs, int world_size, std::vector<std::string>* duplicates) {
  if (rs.schedules.empty()) throw UsageError("--schedule: give at least one schedule");
  if (rs.microbatches.empty()) throw UsageError("--microbatches: give at least one micro-batch count");
  const Times times = check_settings(rs, world_size);
  const std::vector<Mapping> maps = sweep_mappings(rs, world_size);
  // Each list holds at most as many items as its flag has characters, but their product can be huge.
  long double configurations = 1;
  for (std::size_t n : {rs.schedules.size(), maps.size(), rs.vs.size(), rs.microbatches.size()}) configurations *= n;
  if (configurations > kMaxConfigurations)
    throw UsageError("the sweep has " + std::to_string(static_cast<unsigned long long>(configurations)) +
                     " configurations (--schedule x --mapping x --chunks x --microbatches): at most " +
                     std::to_string(kMaxConfigurations));
  std::vector<Plan> plans;
  std::set<std::string> keys;
  long long pairs = 0;  // p*m*v over the configurations kept so far
  for (const auto& name : rs.schedules)
    for (const auto& mp : maps)
      for (int v : rs.vs)
        for (int m : rs.microbatches) {
          Plan pl;
          pl.mapping = mp;
          pl.times = times;
          pl.label = name + " " + to_string(mp) + " m=" + std::to_string(m) + (v ? " v=" + std::to_string(v) : "");
          long long mine = 0;
          try {
            // Bounded before the schedule is generated: every rank holds every plan until the sweep ends.
            // Each factor is at most kMaxInteger (2^24), so the product needs more than 64 bits.
            const long double asked =
                static_cast<long double>(mp.p) * m * (v ? v : analysis::schedule_row(name).default_v);
            if (pairs + asked > kMaxSweepPairs)
              throw UsageError("the sweep would plan " + std::to_string(static_cast<unsigned long long>(
                                                             std::min<long double>(pairs + asked, 1e19L))) +
                               " (chunk, micro-batch) pairs (p*m*v summed over its configurations): at most " +
                               std::to_string(kMaxSweepPairs));
            const long double recorded = asked * mp.t * mp.d * rs.steps;
            if (recorded > kMaxRecordedPairs)
              throw UsageError("p*m*v x t*d x --steps = " + std::to_string(static_cast<unsigned long long>(
                                                                   std::min<long double>(recorded, 1e19L))) +
                               " (chunk, micro-batch) pairs to record on rank 0: at most " +
                               std::to_string(kMaxRecordedPairs) + " (fewer --steps or micro-batches)");
            mine = static_cast<long long>(asked);
            plan_one(rs, pl, name, m, v);
          } catch (const UsageError& e) {
            throw UsageError("configuration " + pl.label + ": " + e.what());
          }
          if (!keys.insert(pl.key).second) {
            if (duplicates) duplicates->push_back(pl.label);
            continue;
          }
          pairs += mine;
          pl.index = static_cast<int>(plans.size()) + 1;
          plans.push_back(std::move(pl));
        }
  if (rs.pick < 1 || rs.pick > static_cast<int>(plans.size()))
    throw UsageError("--trace-config = " + std::to_string(rs.pick) + " is not allowed: the sweep has configurations 1.." +
                     std::to_string(plans.size()));
  return plans;
}

double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024.0;
  return 0;
}

namespace {

// A number in a file (a cgroup's limit); 0 for "max", a missing file or no number.
double file_number(const std::string& path) {
  std::ifstream in(path);
  double x = 0;
  return in >> x ? x : 0;
}

// The memory limit of this process's cgroup (v2: memory.max; v1: memory.limit_in_bytes), in bytes,
// the node-level limit a Slurm job's --mem sets; 0 where there is none.
double cgroup_memory_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  double limit = 0;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctl = line.substr(a + 1, b - a - 1), where = line.substr(b + 1);
    double x = 0;
    if (ctl.empty()) x = file_number("/sys/fs/cgroup" + where + "/memory.max");
    else if (ctl == "memory") x = file_number("/sys/fs/cgroup/memory" + where + "/memory.limit_in_bytes");
    if (x > 0 && x < 1e18 && (limit == 0 || x < limit)) limit = x;
  }
  return limit;
}

// What this process may still map under its address-space limit (ulimit -v); 0 without a limit.
double address_space_left() {
  rlimit as {};
  if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return 0;
  std::ifstream statm("/proc/self/statm");
  double pages = 0;
  statm >> pages;
  const double left = static_cast<double>(as.rlim_cur) - pages * static_cast<double>(sysconf(_SC_PAGESIZE));
  return left > 1 ? left : 1;
}

}  // namespace

double memory_per_rank_bytes(int local_ranks) {
  const double ranks = local_ranks > 0 ? local_ranks : 1;
  double per_rank = available_memory_bytes() / ranks;
  if (const double cg = cgroup_memory_limit(); cg > 0 && (per_rank <= 0 || cg / ranks < per_rank)) per_rank = cg / ranks;
  if (const double as = address_space_left(); as > 0 && (per_rank <= 0 || as < per_rank)) per_rank = as;
  return per_rank;
}

void check_fits(const std::string& what, double need_bytes, const std::string& where, double per_rank_bytes,
                const std::string& counted) {
  if (per_rank_bytes <= 0 || need_bytes <= 0.9 * per_rank_bytes) return;
  const double gib = 1073741824.0;
  throw UsageError(what + " needs about " + fmt("%.2f", need_bytes / gib) + " GiB" + where + ", but this node has " +
                   fmt("%.2f", per_rank_bytes / gib) +
                   " GiB available per rank (MemAvailable, the cgroup's memory limit and ulimit -v) (" + counted + ")");
}

void check_memory(const std::vector<Plan>& plans, double per_rank_bytes) {
  for (const auto& pl : plans) {
    const auto worst = std::max_element(pl.memory_need.begin(), pl.memory_need.end());
    check_fits("configuration " + pl.label, *worst, " on pipeline rank " + std::to_string(worst - pl.memory_need.begin()),
               per_rank_bytes,
               "weights, gradients, peak activations and buffers; a smaller model, more stages or --recompute would fit");
  }
}

void check_timeout(const Duration& t) {
  if (!t.has_unit) throw UsageError("--timeout " + quoted(to_text(t)) + " needs a unit: s, ms, us or ns (e.g. 60s)");
  if (t.value < kMinTimeout || t.value > kMaxTimeout)
    throw UsageError("--timeout " + quoted(to_text(t)) + " is not allowed: expected a time from " +
                     to_text(seconds(kMinTimeout)) + " to " + to_text(seconds(kMaxTimeout)) + " (7 days)");
}

}  // namespace pipebench::bench
