// The output sink (bench/render/sink.hpp): the three forms of one command's records. The JSON form is
// streamed, so it is held here against what nlohmann's dump(2) prints for the whole document.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "analysis/error.hpp"
#include "bench/render/sink.hpp"

using namespace pipebench;
using namespace pipebench::bench;
using json = nlohmann::ordered_json;

namespace {

Table two_columns() { return Table({{"name", "", false}, {"time", "ms"}}); }

Record rec(const std::string& name, double ms) {
  Record r;
  r.cells = {name, fixed(ms, 1)};
  r.objects.push_back({{"name", name}, {"time", ms / 1e3}, {"nested", {{"a", {1, 2}}}}});
  return r;
}

struct Out {
  std::ostringstream out, err;
};

// Writes two records (and a note and a legend) through the sink of `format`.
Out write(Format format, JsonDocument doc = {}, bool fit = false) {
  Out o;
  const auto sink = make_sink(format, o.out, o.err, std::move(doc));
  sink->legend("# title\n");
  sink->note("# results: x.h5\n");
  sink->begin_table(two_columns(), fit);
  sink->record(rec("1f1b", 12.5));
  Record second = rec("a, \"b\"", 7);
  second.lines = "#   under the row\n";
  sink->record(second);
  sink->end_table();
  sink->legend("# what the cells mean\n");
  sink->finish();
  return o;
}

}  // namespace

TEST(Sink, JsonListIsWhatDumpPrintsForTheWholeList) {
  const Out o = write(Format::json);
  const json whole = json::array({rec("1f1b", 12.5).objects[0], rec("a, \"b\"", 7).objects[0]});
  EXPECT_EQ(o.out.str(), whole.dump(2) + "\n");
  EXPECT_EQ(o.err.str(), "# results: x.h5\n");  // notes only: legends and row lines are the text's
}

TEST(Sink, JsonListInsideAnObjectBetweenItsHeadAndTail) {
  const json head = {{"evaluated", 8}, {"seconds", 0.25}}, tail = {{"comm", json::array({{{"id", 1}}})}, {"n", 2}};
  const Out o = write(Format::json, {head, "configurations", tail});
  json whole = head;
  whole["configurations"] = json::array({rec("1f1b", 12.5).objects[0], rec("a, \"b\"", 7).objects[0]});
  whole["comm"] = tail["comm"];
  whole["n"] = 2;
  EXPECT_EQ(o.out.str(), whole.dump(2) + "\n");

  std::ostringstream out, err;
  const auto empty = make_sink(Format::json, out, err, {head, "configurations", json::object()});
  empty->finish();
  json none = head;
  none["configurations"] = json::array();
  EXPECT_EQ(out.str(), none.dump(2) + "\n");
  std::ostringstream out2;
  JsonDocument runs;
  runs.list_key = "runs";
  const auto bare = make_sink(Format::json, out2, err, runs);
  bare->finish();
  EXPECT_EQ(out2.str(), json({{"runs", json::array()}}).dump(2) + "\n");
  std::ostringstream out3;
  make_sink(Format::json, out3, err)->finish();
  EXPECT_EQ(out3.str(), "[]\n");
}

TEST(Sink, JsonStreamedLastKeyIsWhereDumpWouldPutIt) {
  std::ostringstream out, err;
  const auto sink = make_sink(Format::json, out, err);
  Record r = rec("zbv", 3);
  r.stream_key = "timeline";
  r.stream = [](std::ostream& os, int indent) { os << json::array({1, 2}).dump(2).insert(4, std::string(indent, ' ')); };
  sink->record(r);
  sink->record(rec("1f1b", 1));
  sink->finish();
  json first = rec("zbv", 3).objects[0];
  first["timeline"] = json::array({1, 2});
  const std::string expected = json::array({first, rec("1f1b", 1).objects[0]}).dump(2) + "\n";
  // The test's stream writes "[\n  1,..." with the first inner line indented: compare everything but
  // the streamed value's own layout, which is the caller's.
  EXPECT_EQ(out.str().substr(0, out.str().find("\"timeline\": ") + 12),
            expected.substr(0, expected.find("\"timeline\": ") + 12));
  EXPECT_EQ(json::parse(out.str()), json::parse(expected));
}

TEST(Sink, CsvHasTheColumnsAndQuotesCells) {
  const Out o = write(Format::csv);
  EXPECT_EQ(o.out.str(), "name,time (ms)\n1f1b,12.5\n\"a, \"\"b\"\"\",7.0\n");
  EXPECT_EQ(o.err.str(), "# results: x.h5\n");
}

// A record of several rows (a `comm` size out of place and in place) is that many CSV lines, and one
// text row.
TEST(Sink, CsvWritesEveryRowOfARecord) {
  for (const Format format : {Format::csv, Format::text}) {
    std::ostringstream out, err;
    const auto sink = make_sink(format, out, err);
    sink->begin_table(two_columns(), false);
    Record r = rec("1f1b", 12.5);
    r.more_cells = {{"1f1b", "13.0"}, {"zbv", "1.5"}};
    sink->record(r);
    sink->record(rec("gpipe", 2));
    sink->finish();
    EXPECT_EQ(out.str(), format == Format::csv ? "name,time (ms)\n1f1b,12.5\n1f1b,13.0\nzbv,1.5\ngpipe,2.0\n"
                                               : "#  name  time\n#        (ms)\n   1f1b  12.5\n   gpipe   2.0\n");
  }
}

TEST(Sink, TextStreamsOrFitsTheTable) {
  const Out streamed = write(Format::text);
  EXPECT_EQ(streamed.out.str(),
            "# title\n# results: x.h5\n#  name  time\n#        (ms)\n   1f1b  12.5\n   a, \"b\"   7.0\n"
            "#   under the row\n# what the cells mean\n");
  EXPECT_EQ(streamed.err.str(), "");
  const Out fitted = write(Format::text, {}, true);
  EXPECT_EQ(fitted.out.str(),
            "# title\n# results: x.h5\n#  name    time\n#          (ms)\n   1f1b    12.5\n   a, \"b\"   7.0\n"
            "#   under the row\n# what the cells mean\n");
}

TEST(Sink, FormatFromFlags) {
  EXPECT_EQ(output_format(false, false), Format::text);
  EXPECT_EQ(output_format(true, false), Format::json);
  EXPECT_EQ(output_format(false, true), Format::csv);
  EXPECT_THROW(output_format(true, true), UsageError);
}
