#pragma once
// A measured run as Chakra execution traces, one per rank, for ASTRA-sim to replay (docs/run.md,
// "Traces others' tools read"). The format is Chakra's schema/protobuf/et_def.proto (MLCommons
// chakra, package ChakraProtoMsg; tests/data/chakra_et_def.proto repeats its field names and numbers):
// a file of length-delimited messages (a varint byte count, then the message, as chakra's
// protolib.encodeMessage writes them), one GlobalMetadata and then one Node per compute action, send,
// receive and collective of the rank.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/results/records.hpp"

namespace pipebench::bench {

// Protocol Buffers' wire format (protobuf.dev/programming-guides/encoding): enough of it to write
// Chakra's messages. Fields are written in the order they are added; proto3 defaults (0, "") are left out.
class ProtoWriter {
 public:
  void varint(std::uint64_t v);                         // the bare base-128 varint
  // uint64, int64 >= 0, enum, bool: wire type 0; `always`: also a 0 (a member of a oneof has presence).
  void uint(int field, std::uint64_t v, bool always = false);
  void sint(int field, std::int64_t v, bool always = false);  // int32 / int64 (two's complement: 10 bytes if < 0)
  void bytes(int field, const std::string& s);          // string, bytes: wire type 2
  void message(int field, const ProtoWriter& m);        // an embedded message: wire type 2
  void packed(int field, const std::vector<std::uint64_t>& v);  // repeated uint64 / int64 >= 0, packed
  const std::string& data() const { return out_; }

 private:
  void key(int field, int wire) { varint(static_cast<std::uint64_t>(field) << 3 | static_cast<std::uint64_t>(wire)); }
  std::string out_;
};

// Rank `rank`'s trace: the bytes of the file.
//   COMP_NODE per action: its name (torch's action text), start and duration in microseconds, ctrl_deps
//     on the rank's previous compute or collective node, data_deps on the receives whose messages it
//     consumed; attributes is_cpu_op = false, num_ops = its FLOPs.
//   COMM_SEND_NODE / COMM_RECV_NODE per message: data_deps on the action that produced it (sends);
//     comm_src, comm_dst (world ranks), comm_tag (the executor's tag: a send and its receive agree),
//     comm_size (bytes), pg_name.
//   COMM_COLL_NODE per collective: comm_type (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BARRIER),
//     comm_size, pg_name, ctrl_deps on the rank's previous compute or collective node.
// GlobalMetadata: version "0.0.4", attributes rank, world_size, and per process group (pg_name) an
// int64 list of its world ranks ("pg_ranks:<name>").
std::string chakra_trace(const RunResult& run, int rank);

// chakra_trace of every rank to PREFIX.<rank>.et; every path checked first (UsageError, as --trace).
std::size_t write_chakra_traces(const RunResult& run, const std::string& prefix, bool overwrite);

}  // namespace pipebench::bench
