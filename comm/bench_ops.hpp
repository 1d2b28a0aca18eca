#pragma once
// The operations of `pipebench comm` (docs/comm-bench.md) as one table, a row per operation holding
// everything the rest of the code asks about it, after nccl-tests' testColl (name, byte counts, data,
// bus bandwidth, the call). Adding an operation is an enumerator and a row: the table's size and order
// are checked against the enum when comm/bench_ops.cpp compiles, and no question about an operation
// has an answer outside its row.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace pipebench::comm::bench {

// In the table's order. `count` is no operation: the number of them, which the table must match.
enum class BenchOp { all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv, latency, bw, bibw, alltoallv, count };
inline constexpr std::size_t kBenchOpCount = static_cast<std::size_t>(BenchOp::count);

// OSU's window of non-blocking messages of bw and bibw (osu_bw's default window size).
inline constexpr int kWindow = 64;

// What a buffer of an operation holds: the whole count of elements, or one member's block of it.
enum class Part { whole, block };

// How the harness runs an operation (Harness::run dispatches on it once per size).
enum class Run {
  collective,  // one call of the communicator per iteration: the row's `post`
  ring,        // nccl-tests' sendrecv: to member r+1, from r-1 (under pp-pairs: both pipeline neighbours)
  ping_pong,   // OSU's latency: members 2k and 2k+1 in turn, half a round trip per message
  window,      // OSU's bw and bibw: `window` non-blocking messages per iteration between 2k and 2k+1
};

// Whose table the results follow: nccl-tests' (out-of-place and in-place columns, busbw, the mean
// busbw at the end) or OSU's latency or bandwidth columns (one figure per size).
enum class Table { nccl_tests, osu_latency, osu_bandwidth };

// The backends that run an operation, as bits.
enum Backend : unsigned { kMpi = 1u, kNccl = 2u };

// One row's buffers. bytes: the size column (nccl-tests' convention: the whole buffer of all_reduce,
// broadcast and reduce; all_gather's receive buffer; reduce_scatter's send buffer; alltoall's send
// buffer; what a point-to-point message carries); count = bytes / element size; block = elements per
// member for the blocked operations (else count). The requested size is rounded down to a whole number
// of elements (of blocks), and up to one element (block) when it would be empty.
// An uneven row (alltoallv) sends member j blocks[j] elements instead of `block`: member 0 gets
// `imbalance` times the mean, the others share the rest (uneven_blocks); recv_elems is then member 0's,
// the largest.
struct Shape {
  std::uint64_t bytes = 0, count = 0, block = 0;
  std::uint64_t send_elems = 0, recv_elems = 0;
  std::vector<std::uint64_t> blocks;  // uneven rows: elements to each member, summing to count
};

// What one call of a collective works on (the buffers hold shape's elements of dtype).
struct Collective {
  Communicator& comm;
  void* send;
  void* recv;
  const Shape& shape;
  bool in_place;
  DType dtype;
  ReduceOp redop;
  int root;
  double imbalance = 1;  // uneven rows: the busiest member receives this times the mean (1 <= x <= n)
};

// A collective's data check on one member: the values it writes to its input buffer from the start
// (the receive buffer in place, else the send buffer), and those it then expects in the receive buffer
// from element `at` (none: it receives nothing, as reduce off the root).
struct Expectation {
  std::vector<double> input, expected;
  std::uint64_t at = 0;
};

struct OpRow {
  BenchOp op;
  const char* name;
  double (*factor)(int n);  // nccl-tests' busbw / algbw for n >= 1 members (its doc/PERFORMANCE.md)
  bool blocked;             // sized in whole blocks of n elements, one per member
  Part send, recv;          // what the send and the receive buffer hold
  bool in_place;            // measured in place as well (nccl-tests' second column set)
  bool root;                // has a root (-r)
  bool reduces;             // reduces (takes -o; the backend must reduce the type)
  Run run;
  int directions;  // 2: both members of a pair send at once (bibw), moving twice the size
  int window;      // messages per OSU window (bw, bibw), else 0
  unsigned backends;
  Request (*post)(const Collective& c);        // Run::collective: the call, else nullptr
  Expectation (*expect)(const Collective& c);  // Run::collective: its data check, else nullptr
  bool uneven = false;  // blocks of different sizes per member (Shape::blocks, --imbalance)
};

// Every row, in the enum's order.
struct OpRows {
  const OpRow* first;
  const OpRow* last;
  const OpRow* begin() const { return first; }
  const OpRow* end() const { return last; }
};
OpRows op_rows();
// The row of `op`; Error for a value that has none (BenchOp::count, or a cast out of range).
const OpRow& op_row(BenchOp op);
inline const char* bench_op_name(BenchOp op) { return op_row(op).name; }
// The row named `name`, or nullptr.
const OpRow* find_op(const std::string& name);
// UsageError naming the text and the allowed names.
BenchOp parse_bench_op(const std::string& text);
// The names of the rows `keep` accepts (every row without it), in table order: "a, b, c", or with
// last = " or ", "a, b or c".
std::string op_names(bool (*keep)(const OpRow&) = nullptr, const char* last = ", ");

// Traffic between pairs of members, one link at a time: sendrecv and OSU's tests (--p2p activation
// sizes it; a calibration takes its fit as a link's).
inline bool point_to_point(const OpRow& o) { return o.run != Run::collective; }
// OSU's pairing of members 2k and 2k+1 (a group needs two members).
inline bool pairs_members(const OpRow& o) { return o.run == Run::ping_pong || o.run == Run::window; }
// Whose table the results follow: OSU's latency for its ping-pong, OSU's bandwidth for its windows,
// else nccl-tests'.
inline Table table_of(const OpRow& o) {
  return o.run == Run::ping_pong ? Table::osu_latency : o.run == Run::window ? Table::osu_bandwidth : Table::nccl_tests;
}

// The bus-bandwidth factor of `op` for a group of n members (0 for n < 1).
double bus_factor(BenchOp op, int n);
// `imbalance` sizes an uneven row's blocks (uneven_blocks) and is ignored by the others.
Shape shape_of(BenchOp op, std::uint64_t requested_bytes, std::size_t elem_size, int n, double imbalance = 1);
// n blocks of `block` elements on average, the first round(x * block) (x in [1, n]) and the others the
// rest as evenly as whole elements allow (the earlier ones one more); their sum is n * block.
std::vector<std::uint64_t> uneven_blocks(std::uint64_t block, int n, double x);

}  // namespace pipebench::comm::bench
