#include "bench/cmd/comm_settings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/run/configuration.hpp"
#include "comm/factory.hpp"

namespace pipebench::bench {

using comm::DType;
using comm::ReduceOp;
using comm::bench::GroupChoice;
using comm::bench::op_row;

// nccl-tests' sizes: a number of bytes with an optional K, M or G meaning 2^10, 2^20, 2^30 (as its
// -b/-e/-i read them); the explicit forms of pipebench's byte sizes (KiB, MB, ...) are read as
// everywhere else (bench/parse.hpp).
std::uint64_t parse_size(const std::string& text, const std::string& flag, bool zero_ok) {
  const std::string t = trim(text);
  if (zero_ok && t == "0") return 0;
  if (!t.empty() && (t.back() == 'K' || t.back() == 'M' || t.back() == 'G' || t.back() == 'k' || t.back() == 'm' ||
                     t.back() == 'g')) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
    const std::string digits = t.substr(0, t.size() - 1);
    const int shift = u == 'K' ? 10 : u == 'M' ? 20 : 30;
    if (!digits.empty() && digits.size() <= 9 && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const std::uint64_t v = std::stoull(digits) << shift;
      if (v > 0) return v;
    }
    throw UsageError(flag + " " + pipebench::quoted(text) + " is not allowed: expected a size in bytes >= 1, e.g. 8, 1K, 4M, 1G (K, M, G: 2^10, 2^20, 2^30)");
  }
  return parse_bytes(text, flag);
}

namespace {

// The operation without --group pp-pairs (which runs sendrecv) when none is named.
constexpr comm::bench::BenchOp kDefaultOp = comm::bench::BenchOp::all_reduce;

DType parse_dtype(const std::string& t) {
  if (t == "float") return DType::f32;
  if (t == "double") return DType::f64;
  if (t == "half") return DType::f16;
  if (t == "bfloat16") return DType::bf16;
  if (t == "int32") return DType::i32;
  throw UsageError("-d " + pipebench::quoted(t) + " is not allowed: expected one of float, double, half, bfloat16, int32");
}

ReduceOp parse_redop(const std::string& t) {
  if (t == "sum") return ReduceOp::sum;
  if (t == "max") return ReduceOp::max;
  if (t == "min") return ReduceOp::min;
  throw UsageError("-o " + pipebench::quoted(t) + " is not allowed: expected one of sum, max, min");
}

std::size_t precision_bytes(const std::string& p) {
  if (p == "fp32") return 4;
  if (p == "fp64") return 8;
  if (p == "bf16" || p == "fp16") return 2;
  throw UsageError("--precision " + pipebench::quoted(p) + " is not allowed: expected one of fp32, fp64, bf16, fp16");
}

}  // namespace

topology::Grid comm_grid(const CommSettings& s, const Mapping& m) {
  return topology::Grid(topology::Sizes{m.t, s.cp, m.p, m.d, s.ep}, 1, s.order);
}

std::string op_help() {
  std::string s;
  for (const comm::bench::OpRow& o : comm::bench::op_rows())
    s += (s.empty() ? "" : ", ") + std::string(o.name) + (o.op == kDefaultOp ? " (default)" : "");
  return s;
}

// Everything the flags alone decide; UsageError otherwise. Needs no MPI.
Resolved resolve_flags(CommSettings& s) {
  Resolved r;
  r.format = output_format(s.json, s.csv);
  check_timeout(s.timeout);  // run's bound (bench/run/plan.hpp)
  r.group = comm::bench::parse_group_choice(s.group);
  if (s.op_text.empty()) s.op_text = r.group == GroupChoice::pp_pairs ? "sendrecv" : op_row(kDefaultOp).name;
  r.op = comm::bench::parse_bench_op(s.op_text);
  const comm::bench::OpRow& op = op_row(r.op);
  r.dtype = parse_dtype(s.dtype);
  r.redop = parse_redop(s.redop);
  const auto built = comm::built_backends();
  if (s.backend != "mpi" && s.backend != "nccl")
    throw UsageError("--backend " + pipebench::quoted(s.backend) + " is not allowed: expected mpi or nccl");
  if (std::find(built.begin(), built.end(), s.backend) == built.end())
    throw UsageError("--backend nccl is not built into this pipebench: configure with CUDA and NCCL installed "
                     "(PIPEBENCH_ENABLE_NCCL=ON or AUTO); built backends: mpi");
  if (!(op.backends & (s.backend == "nccl" ? comm::bench::kNccl : comm::bench::kMpi)))
    throw UsageError(std::string("operation ") + op.name + " is not allowed on --backend " + s.backend +
                     ": it runs on " + (op.backends & comm::bench::kMpi ? "mpi" : "nccl"));
  if (r.group == GroupChoice::pp_pairs && op.run != comm::bench::Run::ring)
    throw UsageError(std::string("operation ") + op.name +
                     " with --group pp-pairs is not allowed: pp-pairs runs sendrecv (both pipeline neighbours at once)");
  const std::string p2p_ops = comm::bench::op_names(comm::bench::point_to_point, " or ");
  const auto given = [&s](const char* flag) { return std::find(s.given.begin(), s.given.end(), flag) != s.given.end(); };
  if (s.p2p.empty()) {
    // The activation's sizes are read only under --p2p activation: alone they would change nothing.
    for (const char* f : {"--seq", "--micro-batch-size", "--hidden", "--precision"})
      if (given(f))
        throw UsageError(std::string(f) + " sizes the activation of --p2p activation and has no effect without it: "
                         "give --p2p activation (with " + p2p_ops + ") or drop " + f);
  } else {
    if (s.p2p != "activation") throw UsageError("--p2p " + pipebench::quoted(s.p2p) + " is not allowed: expected activation");
    if (!comm::bench::point_to_point(op))
      throw UsageError(std::string("--p2p activation sizes point-to-point traffic: not allowed with ") + s.op_text +
                       " (expected " + p2p_ops + ")");
    if (given("-b") || given("-e")) throw UsageError("--p2p activation sets the size: give it without -b and -e");
    // One size, of --precision's elements: the sweep's step and -d would be ignored.
    for (const char* f : {"-f", "-i"})
      if (given(f)) throw UsageError(std::string("--p2p activation measures one size: give it without ") + f);
    if (given("-d"))
      throw UsageError("-d has no effect under --p2p activation, whose element type is --precision: give --precision "
                       "fp32, fp64, bf16 or fp16 instead");
    const std::uint64_t bytes = static_cast<std::uint64_t>(s.seq) * static_cast<std::uint64_t>(s.micro_batch) *
                                static_cast<std::uint64_t>(s.hidden) * precision_bytes(s.precision);
    s.min_bytes = s.max_bytes = bytes;
    // The activation's own element type (data movement takes any type on every backend).
    r.dtype = s.precision == "fp32" ? DType::f32 : s.precision == "fp64" ? DType::f64 : s.precision == "fp16" ? DType::f16 : DType::bf16;
  }
  if (s.mappings.size() > 1) throw UsageError("--mapping takes one TxPxD here (pipebench comm measures one mapping at a time)");
  r.sizes = comm::bench::size_list(s.min_bytes, s.max_bytes, static_cast<std::uint64_t>(s.factor), s.increment);
  return r;
}

// What needs the world size: the mapping and the group size.
void resolve_world(const CommSettings& s, Resolved& r, int world) {
  const std::string cp = std::to_string(s.cp);
  if (s.mappings.empty() && world % s.cp != 0)
    throw UsageError("--context-parallel " + cp + " does not divide the job's " + std::to_string(world) +
                     " ranks: give --mapping TxPxD with t*cp*p*d = " + std::to_string(world));
  r.mapping = s.mappings.empty() ? Mapping{1, world / s.cp, 1} : s.mappings.front();
  const topology::Grid grid = comm_grid(s, r.mapping);  // checks the order and sizes
  if (grid.world_size() != world)
    throw UsageError("--mapping " + to_string(r.mapping) + (s.cp > 1 ? " with --context-parallel " + cp : "") +
                     " needs " + grid.product_name() + " = " + std::to_string(grid.world_size()) +
                     " ranks but the job has " + std::to_string(world) + ": give a mapping whose product " +
                     (s.cp > 1 ? "times cp " : "") + "is " + std::to_string(world));
  r.group_size = r.group == GroupChoice::world ? world : grid.size(comm::bench::group_kind(r.group));
  if (r.group == GroupChoice::pp_pairs && r.group_size < 2)
    throw UsageError("--group pp-pairs needs a pipeline of 2 or more ranks; --mapping " + to_string(r.mapping) + " has p = 1");
  if (comm::bench::pairs_members(op_row(r.op)) && r.group_size < 2)
    throw UsageError(std::string(op_row(r.op).name) + " pairs the members of each " + s.group +
                     " group, which has 1 rank under --mapping " + to_string(r.mapping) + ": choose a group of 2 or more");
  if (s.imbalance != 1 && !op_row(r.op).uneven)
    throw UsageError("--imbalance " + num(s.imbalance, 9) + " is not allowed with " + op_row(r.op).name +
                     ": only alltoallv sends uneven blocks");
  if (s.imbalance < 1 || s.imbalance > r.group_size)
    throw UsageError("--imbalance " + num(s.imbalance, 9) + " is not allowed: expected 1 to the group size " +
                     std::to_string(r.group_size) + " (member 0 cannot receive more than every block)");
  if (op_row(r.op).root && s.root >= r.group_size)
    throw UsageError("-r " + std::to_string(s.root) + " is not a member of a " + s.group + " group: allowed 0.." +
                     std::to_string(r.group_size - 1));
}

std::map<std::string, std::string> config_of(const CommSettings& s, const Resolved& r) {
  const comm::bench::OpRow& op = op_row(r.op);
  std::map<std::string, std::string> c = {{"op", op.name},
          {"group", comm::bench::group_choice_name(r.group)},
          {"mapping", to_string(r.mapping)},
          {"order", s.order},
          {"backend", s.backend},
          {"dtype", comm::dtype_name(r.dtype)},
          {"redop", op.reduces ? comm::reduce_op_name(r.redop) : "none"},
          {"root", op.root ? std::to_string(s.root) : "-1"},
          {"min_bytes", std::to_string(s.min_bytes)},
          {"max_bytes", std::to_string(s.max_bytes)},
          {"step_factor", std::to_string(s.factor)},
          {"step_bytes", std::to_string(s.increment)},
          {"iters", std::to_string(s.iters)},
          {"warmup_iters", std::to_string(s.warmup)},
          {"check", std::to_string(s.check)},
          {"one_group", s.one_group ? "1" : "0"},
          {"p2p", s.p2p.empty() ? "none" : s.p2p},
          {"window", std::to_string(op.window)},
          {"poll_us", std::to_string(s.poll_us)}};
  // Only where they are not 1, so that files of three axes keep their keys (absent reads as 1).
  if (s.cp > 1) c["context_parallel"] = std::to_string(s.cp);
  if (s.ep > 1) c["expert_parallel"] = std::to_string(s.ep);
  if (s.per_iter) c["per_iter_timing"] = "1";
  if (op.uneven) c["imbalance"] = num(s.imbalance, 9);
  return c;
}

CommBenchRow make_row(const Resolved& r, std::uint64_t requested, const std::vector<comm::bench::Sample>& all, int v,
                      const std::vector<std::vector<int>>& groups, bool checked, std::int64_t& groups_ran) {
  const auto shape = comm::bench::shape_of(r.op, requested, comm::dtype_size(r.dtype), r.group_size);
  std::vector<double> t(all.size());
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < all.size(); ++i) t[i] = all[i].time_s[v], wrong += all[i].wrong[v];
  const auto gt = comm::bench::group_times(t, groups);
  groups_ran = gt.groups;
  CommBenchRow row;
  row.bytes = static_cast<std::int64_t>(shape.bytes);
  row.count = static_cast<std::int64_t>(shape.count);
  row.in_place = v;
  row.time_us = gt.slowest * 1e6;
  row.time_us_min = gt.fastest * 1e6;
  row.time_us_max = gt.slowest * 1e6;
  row.wrong = checked ? wrong : -1;
  const comm::bench::OpRow& op = op_row(r.op);
  const double moved = op.directions * static_cast<double>(shape.bytes);
  row.algbw_GBps = gt.slowest > 0 ? moved / gt.slowest / 1e9 : 0;
  row.busbw_GBps = row.algbw_GBps * comm::bench::bus_factor(r.op, r.group_size);
  const comm::bench::Table table = comm::bench::table_of(op);
  if (table == comm::bench::Table::osu_latency) row.latency_us = row.time_us;
  if (table == comm::bench::Table::osu_bandwidth) row.bandwidth_MBps = gt.slowest > 0 ? moved / gt.slowest / 1e6 : 0;
  return row;
}

}  // namespace pipebench::bench
