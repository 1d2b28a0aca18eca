// The protobuf wire format of the Chakra traces (bench/render/chakra.hpp), byte for byte against the
// encoding rules (protobuf.dev/programming-guides/encoding), and a trace's framing: one
// length-delimited GlobalMetadata, then one length-delimited Node per record of the rank.
#include <gtest/gtest.h>

#include <string>

#include "bench/render/chakra.hpp"

using namespace pipebench::bench;

namespace {
std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) h += std::string{d[c >> 4], d[c & 15]} + " ";
  return h;
}
}  // namespace

TEST(ProtoWriter, VarintsKeysAndLengths) {
  ProtoWriter w;
  w.varint(1);
  w.varint(300);  // 0b10_0101100: ac 02
  EXPECT_EQ(hex(w.data()), "01 ac 02 ");
  ProtoWriter f;
  f.uint(1, 150);       // key 08, 96 01 (the encoding guide's example)
  f.uint(2, 0);         // proto3 default: left out
  f.uint(27, 0, true);  // a oneof member: key 27<<3 = 216 = d8 01, then 00
  f.sint(7, -1, true);  // int32 -1: ten bytes
  f.bytes(2, "testing");
  f.packed(4, {3, 270});  // 22 03 03 8e 02
  EXPECT_EQ(hex(f.data()), "08 96 01 d8 01 00 38 ff ff ff ff ff ff ff ff ff 01 12 07 74 65 73 74 69 6e 67 22 03 03 8e 02 ");
  ProtoWriter outer;
  outer.message(10, f);
  EXPECT_EQ(static_cast<unsigned char>(outer.data()[0]), 0x52);  // field 10, wire type 2
  EXPECT_EQ(static_cast<unsigned char>(outer.data()[1]), f.data().size());
}

// One rank, one forward then a send: the metadata, then the compute node and the send depending on it.
TEST(ChakraTrace, FramesMetadataThenNodes) {
  RunResult run;
  RankSummary r0, r1;
  r1.global_rank = 1, r1.pp = 1;
  run.ranks = {r0, r1};
  ActionRecord f;
  f.t_start = 0, f.t_end = 0.002;
  run.actions = {f};
  CommRecord s;
  s.peer = 1, s.stage = 0, s.mb = 0, s.tag = 5, s.bytes = 64, s.t_posted = 0.002, s.t_done = 0.003;
  run.comms = {s};
  const std::string t = chakra_trace(run, 0);
  std::size_t at = 0;
  std::vector<std::string> messages;
  while (at < t.size()) {
    std::size_t n = 0;
    for (int shift = 0;; shift += 7) {
      const auto c = static_cast<unsigned char>(t[at++]);
      n |= static_cast<std::size_t>(c & 0x7f) << shift;
      if (c < 0x80) break;
    }
    messages.push_back(t.substr(at, n));
    at += n;
  }
  ASSERT_EQ(at, t.size());
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].substr(0, 7), std::string("\x0a\x05" "0.0.4", 7));  // GlobalMetadata.version
  EXPECT_EQ(messages[1].substr(0, 9), std::string("\x08\x00\x12\x03" "0F0\x18\x04", 9));  // id 0, "0F0", COMP_NODE
  // The send: id 1, type COMM_SEND_NODE (5), data_deps [0] (field 5, packed: 2a 01 00).
  EXPECT_EQ(messages[2].substr(0, 2), std::string("\x08\x01", 2));
  EXPECT_NE(messages[2].find(std::string("\x18\x05", 2)), std::string::npos);
  EXPECT_NE(messages[2].find(std::string("\x2a\x01\x00", 3)), std::string::npos);
}
