#include "bench/run/configuration.hpp"
#include "bench/run/zero_formula.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <thread>

#include "bench/run/context_parallel.hpp"
#include "bench/run/gather.hpp"
#include "bench/run/job.hpp"
#include "bench/run/stop.hpp"
#include "bench/results/metadata.hpp"
#include "kernels/gemm_sweep.hpp"
#include "kernels/synthetic.hpp"
#include "kernels/transformer_workload.hpp"
#include "topology/mpi_grid.hpp"

namespace pipebench::bench {

namespace {

void inject_failure(const RunSettings& rs, int config, int step) {
  if (world_rank() != rs.fail_rank || config != rs.fail_config || step != rs.fail_step) return;
  std::fprintf(stderr, "pipebench: rank %d: injected failure (%s) in configuration %d, step %d\n", rs.fail_rank,
               rs.fail_hang ? "hang" : "exit", config, step);
  std::fflush(stderr);
  if (!rs.fail_hang) std::_Exit(3);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// The stage workload of this rank. For the transformer, also measures the reference matrix product's
// FLOP rate (all ranks at once, sharing the cores as the run will) into `blas_rate`.
std::unique_ptr<kernels::Workload> make_workload(const RunSettings& rs, const Plan& pl, const topology::Coords& me,
                                                 int pp_rank, const kernels::TpAllReduce& tp,
                                                 const kernels::TpSequenceOps& tp_sequence, const kernels::CpOps& cp,
                                                 const kernels::EpOps& ep, double& blas_rate) {
  const analysis::Schedule& s = pl.schedule;
  if (rs.workload == WorkloadKind::transformer) {
    kernels::TransformerWorkloadConfig m = pl.model;
    m.tp_rank = me.tp;
    m.cp_rank = me.cp;
    m.mb_offset = me.dp * s.m;  // data-parallel replicas read different samples
    m.ep_size = rs.ep;
    m.ep_rank = me.ep;
    m.ep_overlap = rs.synthetic.ep_overlap;  // one flag for both workloads
    m.device_messages = rs.backend == "nccl";
    // Measured once per shape in a sweep: the configurations of one model share it.
    static std::map<std::tuple<int, int, int, bool>, double> measured;
    const auto shape = std::make_tuple(m.seq / m.context_parallel * m.micro_batch, m.hidden, 4 * m.hidden / m.tp_size, m.fp64);
    auto it = measured.find(shape);
    if (it == measured.end())
      it = measured.emplace(shape, kernels::measure_gemm_rate(std::get<0>(shape), std::get<1>(shape), std::get<2>(shape),
                                                              m.fp64, 0.2)).first;
    blas_rate = it->second;
    return kernels::make_transformer_workload(m, s, pp_rank, tp, tp_sequence, cp, ep);
  }
  const SyntheticSettings& y = rs.synthetic;
  const Times& t = pl.times;
  kernels::SyntheticConfig sc;
  sc.tf = t.tf;
  sc.tb = t.tb;
  sc.tw = t.tw;
  sc.t_overlap = t.t_overlap;
  sc.v = s.v();
  sc.stage_mult = t.stage_cost;
  sc.stages_per_pipe = s.stages_per_pipe();
  sc.spin = y.spin;
  sc.activation_bytes = y.activation_bytes;
  sc.p2p_bytes = y.p2p_bytes;
  sc.device_buffers = rs.backend == "nccl";
  sc.tp_allreduce_bytes = y.tp_allreduce_bytes;
  sc.grad_bytes = y.dp_grad_bytes;
  sc.ep = rs.ep;
  sc.ep_rank = me.ep;
  sc.ep_alltoall_bytes = y.ep_alltoall_bytes;
  sc.routing_imbalance = y.routing_imbalance;
  sc.ep_overlap = y.ep_overlap;
  // At t = 1 there is no tensor-parallel group: no all-reduce, so no buffer for one (issue 27).
  return std::make_unique<kernels::SyntheticWorkload>(sc, pl.mapping.t > 1 ? tp : kernels::TpAllReduce{}, ep);
}

}  // namespace

std::string placement_line(const topology::PlacementSummary& s) {
  std::string line = std::to_string(s.nodes) + " node(s);";
  for (topology::GroupKind k : topology::kGroupKinds) {
    const auto& g = s[k];
    line += std::string(" ") + topology::group_kind_name(k) + " groups spanning nodes " + std::to_string(g.spanning) +
            "/" + std::to_string(g.groups) + ",";
  }
  line += " pipeline links across nodes " + std::to_string(s.pp_links_cross) + "/" + std::to_string(s.pp_links);
  for (const auto& w : s.warnings) line += "; warning: " + w;
  return line;
}

comm::CommOptions comm_options(const RunSettings& rs) {
  comm::CommOptions o;
  o.wait.poll_interval = std::chrono::microseconds(rs.poll_us);
  o.wait.max_poll_interval = std::max(o.wait.poll_interval, std::chrono::microseconds(1000));
  o.wait.timeout = std::chrono::duration<double>(rs.timeout.value);
  return o;
}

void check_tags(const std::vector<Plan>& plans, long long tag_ub) {
  for (const Plan& pl : plans) {
    const long long top = largest_tag(pl.schedule);
    if (top > tag_ub)
      throw UsageError("configuration " + pl.label + ": its pipeline messages need MPI tags up to " + std::to_string(top) +
                       " (2 * m * stages - 1 = 2 * " + std::to_string(pl.schedule.m) + " * " +
                       std::to_string(pl.schedule.num_stages()) + " - 1), above this MPI's MPI_TAG_UB " +
                       std::to_string(tag_ub) + ": use fewer micro-batches or stages");
  }
}

void check_tags(const std::vector<Plan>& plans) {
  int* ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
  check_tags(plans, found && ub ? *ub : 32767);
}

const TestFault& test_fault() {
  static const TestFault fault = [] {
    TestFault f;
    const char* text = std::getenv("PIPEBENCH_TEST_FAULT");
    char mode[8] = {};
    if (text && std::sscanf(text, "%d:%d:%7[a-z1]:%d", &f.rank, &f.config, mode, &f.repeat) >= 3) {
      const std::string m = mode;
      f.mode = m == "stop" ? 's' : m == "kill" ? 'k' : m == "step" ? 'a' : m == "end" ? 'e' : m == "usr1" ? 'u'
               : m == "term" ? 't' : 0;
    }
    if (!f.mode) f.rank = -1;
    return f;
  }();
  return fault;
}

SweepComms::SweepComms(const RunSettings& rs, const std::vector<Plan>& plans, comm::Communicator& world,
                       comm::Roll& roll)
    : roll_(roll) {
  roll_.meet("the start of the sweep");
  // Every rank arrived and was released; one that stops inside the calls below holds the others in
  // them, and only the watchdog can end that. Rank 0 speaks first, the others a timeout later.
  Watchdog dog("rank " + std::to_string(world.rank()) + ": the communicators of the sweep were not built " +
                   roll_.within() + ", though every rank had arrived (a rank stopped or died inside MPI_Comm_split)",
               roll_.release_limit());
  const auto opts = comm_options(rs);
  for (const Plan& pl : plans) {
    const Mapping& mp = pl.mapping;
    auto [it, fresh] = groups_.try_emplace(to_string(mp));
    if (!fresh) continue;
    Groups& g = it->second;
    using topology::GroupKind;
    std::vector<GroupKind> kinds(topology::kGroupKinds.begin(), topology::kGroupKinds.end());
    if (rs.cp > 1) kinds.insert(kinds.end(), {GroupKind::cp, GroupKind::dp_cp});
    if (rs.ep > 1) kinds.insert(kinds.end(), {GroupKind::ep, GroupKind::expert_dp});
    g.grid = std::make_unique<topology::MpiGrid>(run_grid(rs, mp), MPI_COMM_WORLD, kinds);
    g.pp = comm::make_communicator(rs.backend, g.grid->comm(GroupKind::pp).get(), "pp", opts);
    if (mp.t > 1) g.tp = comm::make_communicator(rs.backend, g.grid->comm(GroupKind::tp).get(), "tp", opts);
    if (mp.d > 1) g.dp = comm::make_communicator(rs.backend, g.grid->comm(GroupKind::dp).get(), "dp", opts);
    if (rs.cp > 1) {
      g.cp = comm::make_communicator(rs.backend, g.grid->comm(GroupKind::cp).get(), "cp", opts);
      g.dp_cp = comm::make_communicator(rs.backend, g.grid->comm(GroupKind::dp_cp).get(), "dp-cp", opts);
    }
    if (rs.ep > 1) g.ep = comm::make_communicator(rs.backend, g.grid->comm(GroupKind::ep).get(), "ep", opts);
    if (rs.ep > 1 && rs.cp * mp.d > rs.ep)
      g.expert_dp = comm::make_communicator(rs.backend, g.grid->comm(GroupKind::expert_dp).get(), "expert-dp", opts);
  }
  // NCCL matches point-to-point by order and runs a communicator's operations in turn: the pipeline's
  // messages take one link per direction (bench/run/links.hpp), built for the links every schedule of
  // the mapping uses. PIPEBENCH_TEST_LINKS=1 does the same over MPI, for the tests.
  const char* test_links = std::getenv("PIPEBENCH_TEST_LINKS");
  if (rs.backend != "nccl" && !(test_links && std::string(test_links) == "1")) return;
  std::map<std::string, std::set<std::pair<int, int>>> pairs;
  for (const Plan& pl : plans)
    for (const auto& pr : link_pairs(pl.schedule)) pairs[to_string(pl.mapping)].insert(pr);
  for (auto& [key, g] : groups_) {
    const auto& set = pairs[key];
    g.links = std::make_unique<Links>(rs.backend, g.grid->comm(topology::GroupKind::pp).get(),
                                      std::vector<std::pair<int, int>>(set.begin(), set.end()), opts);
  }
}

const SweepComms::Groups& SweepComms::groups(const Mapping& m) const { return groups_.at(to_string(m)); }

ConfigurationStart start_configuration(SweepComms& sweep, const Plan& pl, bool skip, int repeat) {
  const TestFault& f = test_fault();
  const bool here = f.rank == world_rank() && f.config == pl.index && f.repeat == repeat + 1;
  if (here && (f.mode == 's' || f.mode == 'k')) std::raise(f.mode == 's' ? SIGSTOP : SIGKILL);
  if (here && f.mode == 'u') std::raise(SIGUSR1);
  const std::string phase = "the start of configuration " + std::to_string(pl.index) +
                            (repeat > 0 ? " (repeat " + std::to_string(repeat + 1) + ")" : "");
  // Every arrival carries the rank's stop request; rank 0 releases its verdict with its skip.
  const auto arrived = sweep.roll().collect(phase, stop_signal());
  std::int64_t stop = stop_signal();
  for (auto v : arrived) stop = std::max(stop, v);
  const std::int64_t got = sweep.roll().release(phase, stop * 2 + (skip ? 1 : 0));
  return {(got & 1) != 0, static_cast<int>(got / 2)};
}

void finish_sweep(SweepComms& sweep) {
  sweep.roll().meet("the end of the sweep");
  if (test_fault().mode == 'e' && test_fault().rank == world_rank()) std::raise(SIGSTOP);
}

namespace {

// The steps of one configuration on this rank, warm-up then timed, and the records gathered to rank 0
// (empty elsewhere). A wait that times out may wait for a rank that itself waits for the one that
// stopped: the roll call finds the right one (comm::Roll::alarm) instead of blaming the neighbour.
std::vector<RankRecords> run_steps(const RunSettings& rs, const Plan& pl, SweepComms& sweep, const topology::MpiGrid& mg,
                                   Executor& exec, kernels::Workload& work, RankRecords& mine) {
  const std::string where = "configuration " + std::to_string(pl.index);
  std::string doing = "the clock alignment of " + where;
  std::vector<RankRecords> all;
  try {
    mine.clock = estimate_clock_offset(sweep.world(), [&mg](int r) { return mg.placement().node_of(r); });
    mine.host = host_name();
    mine.affinity = cpu_affinity();
    for (int k = -rs.warmup; k < rs.steps; ++k) {
      doing = "step " + std::to_string(k) + (k < 0 ? " (warm-up)" : "") + " of " + where;
      inject_failure(rs, pl.index, k);
      if (k < 0)
        exec.run_step(k, nullptr, nullptr);
      else
        mine.timing.push_back(exec.run_step(k, &mine.actions, &mine.comms));
    }
    mine.figures = work.step_figures();
    doing = "the gathering of the records of " + where;
    all = gather_records(sweep.roll(), doing, mine);
  } catch (const comm::TimeoutError& e) {
    sweep.roll().alarm(doing, e.what());
  }
  return all;
}

// Rank 0: every rank's records as measure() takes them, with the plan's nominal times and stashes.
MeasureInput measure_input(const RunSettings& rs, const Plan& pl, std::vector<RankRecords> all) {
  MeasureInput in;
  in.group = pl.group;
  if (rs.workload == WorkloadKind::synthetic) {
    const Times& t = pl.times;
    const auto& cost = t.stage_cost;
    const bool uniform = std::all_of(cost.begin(), cost.end(), [&cost](double k) { return k == cost[0]; });
    in.nominal = MeasureInput::Nominal{t.tf, t.tb, t.tw, t.t_overlap, uniform};
  }
  in.stash = pl.stash;
  for (auto& r : all) {
    in.actions.insert(in.actions.end(), r.actions.begin(), r.actions.end());
    in.comms.insert(in.comms.end(), r.comms.begin(), r.comms.end());
    in.clocks.push_back(r.clock);
    in.timing.push_back(std::move(r.timing));
    in.hosts.push_back(std::move(r.host));
    in.affinities.push_back(std::move(r.affinity));
    in.figures.push_back(std::move(r.figures));
    in.blas_rate.push_back(r.blas_rate);
  }
  return in;
}

// Rank 0: the measured run, with the plan's config and key, the metadata and the formulas beside it.
Measurement measured_run(const RunSettings& rs, const Plan& pl, const topology::Grid& grid, const topology::MpiGrid& mg,
                         MeasureInput in) {
  MetadataInput meta;
  meta.command_line = rs.command_line;
  meta.hosts = in.hosts;
  meta.affinities = in.affinities;
  meta.warmup_steps = rs.warmup;
  meta.timed_steps = rs.steps;
  meta.statistic = "median over timed steps";
  Measurement result = measure(pl.schedule, grid, std::move(in));
  result.run.config = pl.config;
  result.run.key = pl.key;
  result.run.metadata = collect_metadata(meta);
  result.run.metadata["job_warmup_steps"] = std::to_string(rs.job_warmup);
  result.run.metadata["group_placement"] = placement_line(topology::summarize(grid, mg.placement()));
  // The formula beside the measurement: the most any rank should hold.
  auto& state = result.run.summary.extra;
  if (pl.model.optimizer == kernels::Optimizer::adam && rs.workload == WorkloadKind::transformer)
    state["optimizer_state_bytes_formula"] = pl.optimizer_state_bytes;
  if (state.count("weight_bytes")) {  // the transformer's weights, gradients and main weights
    const kernels::StateBytes sf = state_formula(rs, pl);
    state["weight_bytes_formula"] = static_cast<double>(sf.weights);
    state["gradient_bytes_formula"] = static_cast<double>(sf.gradients);
    if (state.count("main_weight_bytes")) state["main_weight_bytes_formula"] = static_cast<double>(sf.main_weights);
    if (state.count("decoded_weight_bytes")) state["decoded_weight_bytes_formula"] = static_cast<double>(sf.decoded);
  }
  // Data-parallel bytes per step and ZeRO-3's gathered weights: their formulas beside the measured ones.
  const ZeroFormula zf = zero_formula(rs, pl);
  auto& x = result.run.summary.extra;
  if (x.count("dp_all_gathered_bytes")) x["dp_all_gathered_bytes_formula"] = zf.all_gathered;
  if (x.count("dp_reduce_scattered_bytes")) x["dp_reduce_scattered_bytes_formula"] = zf.reduce_scattered;
  if (x.count("dp_all_reduced_bytes")) x["dp_all_reduced_bytes_formula"] = zf.all_reduced;
  if (x.count("gathered_peak_bytes")) x["gathered_peak_bytes_formula"] = zf.gathered_peak;
  // Under ZeRO-1 a rank's gradients are summed over the data-parallel group in its shards only: the
  // norm of its whole buffer would mix summed and unsummed values.
  if (rs.zero >= 1 && rs.cp * pl.mapping.d > 1)
    for (auto it = result.run.summary.extra.begin(); it != result.run.summary.extra.end();)
      it = it->first.rfind("grad_norm.", 0) == 0 ? result.run.summary.extra.erase(it) : std::next(it);
  return result;
}

}  // namespace

std::optional<Measurement> run_configuration(const RunSettings& rs, const Plan& pl, SweepComms& sweep) {
  const Mapping& mp = pl.mapping;
  const topology::Grid grid = run_grid(rs, mp);
  const SweepComms::Groups& groups = sweep.groups(mp);
  const topology::MpiGrid& mg = *groups.grid;
  comm::Communicator* const pp = groups.pp.get();
  // The workload's tensor-parallel collectives go through the executor, made after it.
  std::unique_ptr<Executor> exec;
  const kernels::TpAllReduce tp_fn = [&exec](void* data, std::size_t n, int elem) { exec->tp_allreduce(data, n, elem); };
  kernels::TpSequenceOps tp_seq;
  tp_seq.all_gather = [&exec](const void* send, void* recv, std::size_t n, int elem) {
    exec->tp_allgather(send, recv, n, elem);
  };
  tp_seq.reduce_scatter = [&exec](const void* send, void* recv, std::size_t n, int elem) {
    exec->tp_reduce_scatter(send, recv, n, elem);
  };
  RankRecords mine;
  const kernels::CpOps cp_ops = groups.cp ? make_cp_ops(*groups.cp) : kernels::CpOps{};
  kernels::EpOps ep_ops;
  if (groups.ep) {
    ep_ops.post = [&exec](const void* send, const std::vector<std::size_t>& sb, void* recv,
                          const std::vector<std::size_t>& rb, int stage, int mb, int exchange) {
      return exec->ep_post(send, sb, recv, rb, stage, mb, exchange);
    };
    ep_ops.wait = [&exec](int h) { exec->ep_wait(h); };
  }
  const auto work = make_workload(rs, pl, mg.coords(), pp->rank(), tp_fn, tp_seq, cp_ops, ep_ops, mine.blas_rate);
  ExecutorConfig ec;
  ec.dp_buckets = rs.dp_buckets;
  ec.zero = rs.zero;
  ec.reshard_after_forward = rs.reshard_after_forward != 0;
  ec.prefetch = rs.gather_prefetch;
  ec.roll = &sweep.roll();
  ec.links = groups.links.get();
  ec.ep = groups.ep.get();
  ec.where = "configuration " + std::to_string(pl.index);
  const bool faulty = test_fault().rank == world_rank() && test_fault().config == pl.index;
  ec.test_stop = faulty && test_fault().mode == 'a';
  ec.test_term = faulty && test_fault().mode == 't';
  // Megatron-Core reduces the gradients (and shards ZeRO-1's state) over the cp x d ranks of a replica.
  comm::Communicator* const dp = groups.dp_cp ? groups.dp_cp.get() : groups.dp.get();
  // The routed experts' gradients reduce over the ranks holding the same experts: with ep = 1 every
  // rank of the replica's group (dp-cp) holds all of them.
  ec.expert_dp = rs.ep == 1 ? dp : groups.expert_dp.get();
  exec = std::make_unique<Executor>(pl.schedule, *pp, groups.tp.get(), dp, sweep.world(), *work, ec);
  std::vector<RankRecords> all = run_steps(rs, pl, sweep, mg, *exec, *work, mine);
  if (sweep.world().rank() != 0) return std::nullopt;
  return measured_run(rs, pl, grid, mg, measure_input(rs, pl, std::move(all)));
}

}  // namespace pipebench::bench
