// The Chrome trace of a hand-made run: it parses, lanes never overlap, flows pair sends with receives,
// and names, times and args are the ones the records say.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "analysis/error.hpp"
#include "bench/render/trace.hpp"
#include "sample_run.hpp"
#include "scratch.hpp"

namespace pipebench::bench {
namespace {

using nlohmann::json;
using testing::sample_run;

class Trace : public testing::ScratchDir {};

std::vector<json> boxes(const json& trace) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X") out.push_back(e);
  return out;
}

const json& find_box(const std::vector<json>& bs, int pid, const std::string& name, int nth = 0) {
  for (const auto& b : bs)
    if (b.at("pid") == pid && b.at("name") == name && nth-- == 0) return b;
  throw std::runtime_error("no box " + name);
}

std::map<std::pair<int, int>, std::string> thread_names(const json& trace) {
  std::map<std::pair<int, int>, std::string> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      out[{e.at("pid").get<int>(), e.at("tid").get<int>()}] = e.at("args").at("name").get<std::string>();
  return out;
}

std::int64_t ns(double us) { return std::llround(us * 1e3); }

TEST_F(Trace, WrittenFileParsesAndCountsEvents) {
  const std::string out = path("t.json");
  const std::size_t n = write_chrome_trace(sample_run(), out, false);
  std::ifstream f(out);
  const json trace = json::parse(f);
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  EXPECT_EQ(trace.at("traceEvents").size(), n);
  // 20 records, 2 x 2 process entries, 2 x 10 lanes (rank 0: compute, send x2, recv, collective;
  // rank 1: compute, send, recv x2, collective).
  EXPECT_EQ(n, 44u);
  EXPECT_EQ(boxes(trace).size(), 20u);
}

TEST(TraceLanes, EveryLaneHoldsDisjointEventsOnly) {
  const json trace = chrome_trace(sample_run());
  std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> lanes;
  for (const auto& b : boxes(trace)) {
    ASSERT_TRUE(b.at("ts").is_number());
    ASSERT_TRUE(b.at("dur").is_number());
    const std::int64_t start = ns(b.at("ts").get<double>());
    lanes[{b.at("pid").get<int>(), b.at("tid").get<int>()}].push_back({start, start + ns(b.at("dur").get<double>())});
  }
  for (auto& [lane, spans] : lanes) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first) << "pid " << lane.first << " tid " << lane.second;
  }
  const auto names = thread_names(trace);
  EXPECT_EQ(names.size(), 10u);
  EXPECT_EQ(names.at({0, 0}), "compute");
  EXPECT_EQ(names.at({0, 1}), "send 1");
  EXPECT_EQ(names.at({0, 2}), "send 2");
  EXPECT_EQ(names.at({0, 3}), "recv");
  EXPECT_EQ(names.at({0, 4}), "collective");
  EXPECT_EQ(names.at({1, 1}), "send");
  EXPECT_EQ(names.at({1, 2}), "recv 1");
  EXPECT_EQ(names.at({1, 3}), "recv 2");
}

TEST(TraceFlows, EverySendMatchedToItsReceiveWithBothEnds) {
  const json trace = chrome_trace(sample_run());
  std::map<std::string, std::vector<json>> by_id;
  for (const auto& b : boxes(trace))
    if (b.contains("bind_id")) by_id[b.at("bind_id").get<std::string>()].push_back(b);
  ASSERT_EQ(by_id.size(), 4u);  // 3 transfers in step 0, 1 in step 1; the unreceived send has none
  for (const auto& [id, ends] : by_id) {
    ASSERT_EQ(ends.size(), 2u) << id;
    const json& out = ends[0].contains("flow_out") ? ends[0] : ends[1];
    const json& in = ends[0].contains("flow_out") ? ends[1] : ends[0];
    EXPECT_EQ(out.at("flow_out"), true);
    EXPECT_EQ(in.at("flow_in"), true);
    EXPECT_EQ(out.at("cat"), "send");
    EXPECT_EQ(in.at("cat"), "recv");
    EXPECT_EQ(out.at("args").at("peer"), in.at("pid"));
    EXPECT_EQ(in.at("args").at("peer"), out.at("pid"));
    EXPECT_EQ(out.at("args").at("mb"), in.at("args").at("mb"));
    EXPECT_EQ(out.at("args").at("step"), in.at("args").at("step"));
  }
  const auto bs = boxes(trace);
  EXPECT_FALSE(find_box(bs, 1, "send to 0", 1).contains("bind_id"));  // stage 1 mb 1: never received
}

TEST(TraceContent, NamesTimesAndArgsFollowTheRecords) {
  const json trace = chrome_trace(sample_run());
  std::map<int, std::string> process;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("name") == "process_name") process[e.at("pid").get<int>()] = e.at("args").at("name").get<std::string>();
  EXPECT_EQ(process.at(0), "rank 0 (pp 0, tp 0, dp 0)");
  EXPECT_EQ(process.at(1), "rank 1 (pp 1, tp 0, dp 0)");

  const auto bs = boxes(trace);
  const json& f0 = find_box(bs, 0, "0F0");
  EXPECT_EQ(f0.at("cat"), "F");
  EXPECT_EQ(f0.at("ts"), 0.0);
  EXPECT_EQ(f0.at("dur"), 1000.0);
  EXPECT_EQ(f0.at("tid"), 0);
  EXPECT_EQ(f0.at("args"), (json{{"step", 0}, {"stage", 0}, {"chunk", 0}, {"mb", 0}, {"activation_bytes", 1000}}));

  const json& fb = find_box(bs, 1, "(1F1;1B0)");
  EXPECT_EQ(fb.at("cat"), "F&B");
  EXPECT_EQ(fb.at("ts"), 2100.0);
  EXPECT_EQ(fb.at("dur"), 3000.0);
  EXPECT_EQ(fb.at("args").at("b_stage"), 1);
  EXPECT_EQ(fb.at("args").at("b_mb"), 0);
  EXPECT_NEAR(fb.at("args").at("flops").get<double>(), 1.0 / 3.0, 1e-15);

  const json& ar = find_box(bs, 0, "allreduce dp");
  EXPECT_EQ(ar.at("cat"), "collective");
  EXPECT_EQ(ar.at("args").at("bytes"), 4096);
  EXPECT_FALSE(ar.at("args").contains("peer"));

  // Step 1 starts where step 0's last record (the all-reduces, ending at 12 ms) ends.
  const json& f0_step1 = find_box(bs, 0, "0F0", 1);
  EXPECT_EQ(f0_step1.at("args").at("step"), 1);
  EXPECT_EQ(f0_step1.at("ts"), 12000.0);
  EXPECT_EQ(find_box(bs, 1, "1F0", 1).at("ts"), 13200.0);
}

TEST(TraceContent, OverlappingComputeAlsoGetsSeparateLanes) {
  RunResult run = sample_run();
  run.comms.clear();
  run.actions[1].t_start = 0.0005;  // 0F1 now overlaps 0F0: bad data, but the trace stays valid
  const auto names = thread_names(chrome_trace(run));
  EXPECT_EQ(names.at({0, 0}), "compute 1");
  EXPECT_EQ(names.at({0, 1}), "compute 2");
}

// Issue 8 item 11: an existing file is replaced only when asked (--force), never silently.
TEST_F(Trace, ExistingFileIsReplacedOnlyWhenAsked) {
  const std::string out = path("t.json");
  std::ofstream(out) << "mine\n";
  EXPECT_THROW(write_chrome_trace(sample_run(), out, false), UsageError);
  std::ifstream before(out);
  std::string text;
  std::getline(before, text);
  EXPECT_EQ(text, "mine");
  EXPECT_EQ(write_chrome_trace(sample_run(), out, true), 44u);
  std::ifstream after(out);
  EXPECT_EQ(json::parse(after).at("traceEvents").size(), 44u);
}

TEST_F(Trace, UnwritablePathIsAUsageError) {
  EXPECT_THROW(write_chrome_trace(sample_run(), path("no/such/dir/t.json"), false), UsageError);
  EXPECT_THROW(write_chrome_trace(sample_run(), dir_.string(), true), UsageError);
}

}  // namespace
}  // namespace pipebench::bench
