#include "comm/bench_ops.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "analysis/error.hpp"
#include "comm/bench_model.hpp"

namespace pipebench::comm::bench {

namespace {

// nccl-tests' bus-bandwidth factors (doc/PERFORMANCE.md): what each member's links carry per byte of
// the size column, so that busbw compares with a link's bandwidth whatever n is.
double ring_all_reduce(int n) { return 2.0 * (n - 1) / n; }  // a reduce-scatter, then an all-gather
double ring_share(int n) { return (n - 1.0) / n; }           // every member's block but its own
double one_message(int) { return 1; }

std::vector<double> reduced(const Collective& c, std::uint64_t from, std::uint64_t n) {
  std::vector<double> v(n);
  for (std::uint64_t i = 0; i < n; ++i) v[i] = reduce_pattern(c.redop, c.comm.size(), from + i);
  return v;
}

// Every member's block j of its pattern, starting at element `from` of each member's pattern.
std::vector<double> blocks_of_all(const Collective& c, std::uint64_t from) {
  std::vector<double> v;
  for (int j = 0; j < c.comm.size(); ++j) {
    const auto b = patterns(j, from, c.shape.block);
    v.insert(v.end(), b.begin(), b.end());
  }
  return v;
}

const void* input(const Collective& c) { return c.in_place ? c.recv : c.send; }

Request post_all_reduce(const Collective& c) {
  return c.comm.iallreduce(input(c), c.recv, c.shape.count, c.dtype, c.redop);
}
Expectation expect_all_reduce(const Collective& c) {
  return {patterns(c.comm.rank(), 0, c.shape.count), reduced(c, 0, c.shape.count)};
}

// In place, a member's contribution already sits at its own block of the receive buffer.
Request post_all_gather(const Collective& c) {
  const std::size_t block_bytes = c.shape.block * dtype_size(c.dtype);
  const void* own = static_cast<const char*>(c.recv) + static_cast<std::size_t>(c.comm.rank()) * block_bytes;
  return c.comm.iallgather(c.in_place ? own : c.send, c.recv, block_bytes);
}
Expectation expect_all_gather(const Collective& c) {
  const std::uint64_t b = c.shape.block, me = static_cast<std::uint64_t>(c.comm.rank());
  Expectation e{patterns(c.comm.rank(), 0, b), blocks_of_all(c, 0)};
  if (c.in_place) {
    std::vector<double> whole(c.shape.count, -1);
    std::copy(e.input.begin(), e.input.end(), whole.begin() + static_cast<std::ptrdiff_t>(me * b));
    e.input = whole;
  }
  return e;
}

Request post_reduce_scatter(const Collective& c) {
  return c.comm.ireduce_scatter(input(c), c.recv, c.shape.block, c.dtype, c.redop);
}
Expectation expect_reduce_scatter(const Collective& c) {
  const std::uint64_t b = c.shape.block, me = static_cast<std::uint64_t>(c.comm.rank());
  Expectation e{patterns(c.comm.rank(), 0, c.shape.count), reduced(c, me * b, b)};
  // In place, MPI leaves the block in front (MPI_IN_PLACE); NCCL at the member's own offset.
  if (c.in_place && std::string(c.comm.backend()) == "nccl") e.at = me * b;
  return e;
}

Request post_broadcast(const Collective& c) {
  return c.comm.ibroadcast(input(c), c.recv, c.shape.count, c.dtype, c.root);
}
Expectation expect_broadcast(const Collective& c) {
  return {patterns(c.comm.rank(), 0, c.shape.count), patterns(c.root, 0, c.shape.count)};
}

Request post_reduce(const Collective& c) {
  return c.comm.ireduce(input(c), c.recv, c.shape.count, c.dtype, c.redop, c.root);
}
Expectation expect_reduce(const Collective& c) {
  Expectation e{patterns(c.comm.rank(), 0, c.shape.count), {}};
  if (c.comm.rank() == c.root) e.expected = reduced(c, 0, c.shape.count);
  return e;
}

Request post_alltoall(const Collective& c) { return c.comm.ialltoall(c.send, c.recv, c.shape.block, c.dtype); }
Expectation expect_alltoall(const Collective& c) {
  return {patterns(c.comm.rank(), 0, c.shape.count), blocks_of_all(c, static_cast<std::uint64_t>(c.comm.rank()) * c.shape.block)};
}

// alltoallv: member j gets blocks[j] elements of every member's send buffer (from offset
// sum_{i<j} blocks[i]), so member 0 receives `imbalance` times the mean.
Request post_alltoallv(const Collective& c) {
  const std::size_t es = dtype_size(c.dtype), me = static_cast<std::size_t>(c.comm.rank());
  std::vector<std::size_t> send, recv(c.shape.blocks.size(), c.shape.blocks[me] * es);
  for (std::uint64_t b : c.shape.blocks) send.push_back(b * es);
  return c.comm.ialltoallv(c.send, send, c.recv, recv);
}
Expectation expect_alltoallv(const Collective& c) {
  const std::size_t me = static_cast<std::size_t>(c.comm.rank());
  std::uint64_t from = 0;
  for (std::size_t j = 0; j < me; ++j) from += c.shape.blocks[j];
  Expectation e{patterns(c.comm.rank(), 0, c.shape.count), {}};
  for (int i = 0; i < c.comm.size(); ++i) {
    const auto b = patterns(i, from, c.shape.blocks[me]);
    e.expected.insert(e.expected.end(), b.begin(), b.end());
  }
  return e;
}

constexpr unsigned kBoth = kMpi | kNccl;
using P = Part;

// name, factor, blocked, send, recv, in place, root, reduces, run, directions, window, backends,
// post, expect
constexpr OpRow kRows[] = {
    {BenchOp::all_reduce, "all_reduce", ring_all_reduce, false, P::whole, P::whole, true, false, true, Run::collective,
     1, 0, kBoth, post_all_reduce, expect_all_reduce},
    {BenchOp::all_gather, "all_gather", ring_share, true, P::block, P::whole, true, false, false, Run::collective, 1, 0,
     kBoth, post_all_gather, expect_all_gather},
    {BenchOp::reduce_scatter, "reduce_scatter", ring_share, true, P::whole, P::block, true, false, true, Run::collective,
     1, 0, kBoth, post_reduce_scatter, expect_reduce_scatter},
    {BenchOp::broadcast, "broadcast", one_message, false, P::whole, P::whole, true, true, false, Run::collective, 1, 0,
     kBoth, post_broadcast, expect_broadcast},
    {BenchOp::reduce, "reduce", one_message, false, P::whole, P::whole, true, true, true, Run::collective, 1, 0, kBoth,
     post_reduce, expect_reduce},
    {BenchOp::alltoall, "alltoall", ring_share, true, P::whole, P::whole, false, false, false, Run::collective, 1, 0,
     kBoth, post_alltoall, expect_alltoall},
    {BenchOp::sendrecv, "sendrecv", one_message, false, P::whole, P::whole, false, false, false, Run::ring, 1, 0, kBoth,
     nullptr, nullptr},
    {BenchOp::latency, "latency", one_message, false, P::whole, P::whole, false, false, false, Run::ping_pong, 1, 0,
     kBoth, nullptr, nullptr},
    {BenchOp::bw, "bw", one_message, false, P::whole, P::whole, false, false, false, Run::window, 1, kWindow, kBoth,
     nullptr, nullptr},
    {BenchOp::bibw, "bibw", one_message, false, P::whole, P::whole, false, false, false, Run::window, 2, kWindow, kBoth,
     nullptr, nullptr},
    {BenchOp::alltoallv, "alltoallv", ring_share, true, P::whole, P::whole, false, false, false, Run::collective, 1, 0,
     kBoth, post_alltoallv, expect_alltoallv, true},
};

static_assert(std::size(kRows) == kBenchOpCount, "every BenchOp needs its row in kRows, and every row its BenchOp");

constexpr bool same_name(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

// The facts a row may not contradict: what the harness, the table and the checks rely on.
constexpr bool row_is_whole(const OpRow& o) {
  const bool collective = o.run == Run::collective;
  return o.name && o.factor && o.backends != 0 && collective == (o.post != nullptr) &&
         collective == (o.expect != nullptr) &&
         (collective || !(o.in_place || o.root || o.reduces || o.blocked)) &&
         (o.blocked || (o.send == Part::whole && o.recv == Part::whole)) && (o.window > 0) == (o.run == Run::window) &&
         (o.directions == 1 || (o.directions == 2 && o.run == Run::window)) &&
         (!o.uneven || (o.blocked && !o.in_place && o.run == Run::collective));
}

constexpr bool table_is_whole() {
  for (std::size_t i = 0; i < kBenchOpCount; ++i) {
    if (kRows[i].op != static_cast<BenchOp>(i) || !row_is_whole(kRows[i])) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (same_name(kRows[i].name, kRows[j].name)) return false;
  }
  return true;
}
static_assert(table_is_whole(), "kRows: rows in the enum's order, distinct names, and the facts of each row agreeing");

}  // namespace

OpRows op_rows() { return {std::begin(kRows), std::end(kRows)}; }

const OpRow& op_row(BenchOp op) {
  const auto i = static_cast<std::size_t>(op);
  if (i >= kBenchOpCount) throw Error("operation " + std::to_string(i) + " has no row in comm/bench_ops.cpp");
  return kRows[i];
}

const OpRow* find_op(const std::string& name) {
  for (const OpRow& o : kRows)
    if (name == o.name) return &o;
  return nullptr;
}

BenchOp parse_bench_op(const std::string& text) {
  if (const OpRow* o = find_op(text)) return o->op;
  throw UsageError("operation '" + text + "' is not allowed: expected one of " + op_names());
}

std::string op_names(bool (*keep)(const OpRow&), const char* last) {
  std::vector<const char*> names;
  for (const OpRow& o : kRows)
    if (!keep || keep(o)) names.push_back(o.name);
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + std::string(names[i]);
  return s;
}

double bus_factor(BenchOp op, int n) { return n < 1 ? 0 : op_row(op).factor(n); }

std::vector<std::uint64_t> uneven_blocks(std::uint64_t block, int n, double x) {
  if (n <= 1) return {block};
  const std::uint64_t total = block * static_cast<std::uint64_t>(n);
  const auto wanted = static_cast<std::uint64_t>(std::llround(x * static_cast<double>(block)));
  const std::uint64_t first = std::min(total, std::max(block, wanted));
  const std::uint64_t rest = total - first, others = static_cast<std::uint64_t>(n - 1);
  std::vector<std::uint64_t> b{first};
  for (std::uint64_t j = 0; j < others; ++j) b.push_back(rest / others + (j < rest % others ? 1 : 0));
  return b;
}

Shape shape_of(BenchOp op, std::uint64_t requested_bytes, std::size_t elem_size, int n, double imbalance) {
  const OpRow& o = op_row(op);
  Shape s;
  const std::uint64_t unit = elem_size * static_cast<std::uint64_t>(o.blocked ? n : 1);
  const std::uint64_t units = std::max<std::uint64_t>(requested_bytes / unit, 1);
  s.bytes = units * unit;
  s.count = s.bytes / elem_size;
  s.block = o.blocked ? s.count / static_cast<std::uint64_t>(n) : s.count;
  s.send_elems = o.send == Part::whole ? s.count : s.block;
  s.recv_elems = o.recv == Part::whole ? s.count : s.block;
  if (o.uneven) {
    s.blocks = uneven_blocks(s.block, n, imbalance);
    s.recv_elems = s.blocks.front() * static_cast<std::uint64_t>(n);
  }
  return s;
}

}  // namespace pipebench::comm::bench
