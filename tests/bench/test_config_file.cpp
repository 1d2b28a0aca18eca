// `--config FILE` (bench/config_file.hpp): strict parsing of the [run] table, bounded reading, and the
// command line winning over the file. Issue 8 item 7: each case here used to be ignored silently.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "analysis/error.hpp"
#include "bench/config_file.hpp"
#include "bench/flags.hpp"
#include "errors.hpp"
#include "scratch.hpp"

using namespace pipebench::bench;
using pipebench::UsageError;
using pipebench::bench::testing::usage_error;

namespace {

std::string parse_error(const std::string& text) { return usage_error([&] { parse_config(text, "c.toml"); }); }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(ConfigFile, ParsesTheRunTable) {
  const auto e = parse_config(
      "# a sweep\n"
      "[run]  # the only table\n"
      "schedule = \"1f1b,zb-h1\"\n"
      "microbatches = [4, 8, ]\n"
      "mapping = ['1x2x1', \"2x1x1\"]\n"
      "tf = '500us'   # a literal string\n"
      "\t steps=1\r\n"
      "json = true\n"
      "out = \"a \\\"b\\\" \\\\c.h5\"\n"
      "lr = 1e-3\n",
      "c.toml");
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(e[0].line, 3);
  EXPECT_EQ(e[0].key, "schedule");
  EXPECT_EQ(e[0].value, "1f1b,zb-h1");
  EXPECT_EQ(e[1].value, "4,8");
  EXPECT_EQ(e[2].value, "1x2x1,2x1x1");
  EXPECT_EQ(e[3].value, "500us");
  EXPECT_EQ(e[4].key, "steps");
  EXPECT_EQ(e[4].value, "1");
  EXPECT_EQ(e[5].value, "true");
  EXPECT_EQ(e[6].value, "a \"b\" \\c.h5");
  EXPECT_EQ(e[7].value, "1e-3");
  EXPECT_TRUE(parse_config("[run]\n", "c.toml").empty());  // an empty [run] table sets nothing
}

// Every case of the issue, each a one-line UsageError naming the file and, where there is one, the line.
TEST(ConfigFile, RefusesWhatIsNotARunTable) {
  EXPECT_TRUE(has(parse_error(""), "--config 'c.toml' holds no [run] table"));
  EXPECT_TRUE(has(parse_error("# only a comment\n\n"), "holds no [run] table"));
  EXPECT_EQ(parse_error("[rnu]\nsteps = 1\n"),
            "--config 'c.toml' line 1: table '[rnu]' is not allowed: the only table is [run] (flags of `pipebench run`)");
  EXPECT_TRUE(has(parse_error("\xEF\xBB\xBF[run]\nsteps = 1\n"), "line 1: starts with a byte order mark"));
  EXPECT_TRUE(has(parse_error("[[run]]\nsteps = 1\n"), "line 1: '[[run]]' (an array of tables) is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\nsteps 1\n"), "line 2: 'steps 1' is not allowed: expected `key = value`"));
  EXPECT_TRUE(has(parse_error("[run]\n\x01\x02\x03\n"), "line 2: control byte 0x01 is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\nout = \"\xFF\xFE\"\n"), "line 2: bytes that are not UTF-8 text"));
  EXPECT_TRUE(has(parse_error("[run]\nout = \"\xC0\xAF\"\n"), "not UTF-8"));        // overlong
  EXPECT_TRUE(has(parse_error("[run]\nout = \"\xED\xA0\x80\"\n"), "not UTF-8"));    // a surrogate
  EXPECT_TRUE(has(parse_error("[run]\nout = \"\xE2\x82\"\n"), "not UTF-8"));        // truncated
  EXPECT_EQ(parse_error("[run]\nout = \"r\xC2\xB5s.h5\"\n"), "");                    // UTF-8 is fine
  EXPECT_TRUE(has(parse_error("[run]\nsteps = 1\rwarmup = 0\n"), "control byte 0x0D"));  // a lone CR
  EXPECT_TRUE(has(parse_error("steps = 1\n[run]\n"), "line 1: key 'steps' is outside the [run] table"));
  EXPECT_TRUE(has(parse_error("[run]\nsteps = 1\n[run]\n"), "line 3: table [run] given twice (first on line 1)"));
  EXPECT_TRUE(has(parse_error("[run]\nsteps = 1\nsteps = 2\n"), "line 3: key 'steps' given twice (first on line 2)"));
  EXPECT_TRUE(has(parse_error("[run]\n[run.x]\n"), "table '[run.x]' is not allowed"));
  EXPECT_TRUE(has(parse_error("[run\n"), "is not a table header"));
  EXPECT_TRUE(has(parse_error("[run] x\n"), "is not a table header"));
  EXPECT_TRUE(has(parse_error("[run]\na.b = 1\n"), "expected `key = value`"));
  EXPECT_TRUE(has(parse_error("[run]\n\"steps\" = 1\n"), "expected `key = value`"));
  EXPECT_TRUE(has(parse_error("[run]\n= 1\n"), "expected `key = value`"));
}

TEST(ConfigFile, RefusesMalformedValues) {
  EXPECT_TRUE(has(parse_error("[run]\nsteps =\n"), "line 2: key 'steps': no value after '='"));
  EXPECT_TRUE(has(parse_error("[run]\nsteps = # none\n"), "no value after '='"));
  EXPECT_TRUE(has(parse_error("[run]\nout = \"\"\n"), "key 'out': an empty value is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\nout = '  '\n"), "an empty value is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\ntf = 500us\n"), "key 'tf': value '500us' is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\nschedule = 1f1b\n"), "value '1f1b' is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\nsteps = inf\n"), "value 'inf' is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\nout = \"a.h5\n"), "the string has no closing \""));
  EXPECT_TRUE(has(parse_error("[run]\nout = 'a.h5\n"), "the string has no closing '"));
  EXPECT_TRUE(has(parse_error("[run]\nout = \"a\\tb\"\n"), "only the escapes"));
  EXPECT_TRUE(has(parse_error("[run]\nsteps = 1 2\n"), "key 'steps': unexpected '2' after the value"));
  EXPECT_TRUE(has(parse_error("[run]\nmicrobatches = []\n"), "an empty array is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\nmicrobatches = [4, 8\n"), "expected ',' or ']' in the array"));
  EXPECT_TRUE(has(parse_error("[run]\nmicrobatches = [[4]]\n"), "is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\nmicrobatches = [true]\n"), "value 'true' is not allowed"));
  EXPECT_TRUE(has(parse_error("[run]\nmicrobatches = [4,,8]\n"), "is not allowed"));
}

TEST(ConfigFile, IsBoundedInSize) {
  std::string big = "[run]\n";
  big.resize(kMaxConfigBytes + 1, '#');
  EXPECT_TRUE(has(parse_error(big), "bytes: at most 1048576 are read"));
  big.resize(kMaxConfigBytes);
  EXPECT_EQ(parse_error(big), "");
}

class ConfigFileRead : public pipebench::bench::testing::ScratchDir {};

TEST_F(ConfigFileRead, OnlyBoundedRegularFiles) {
  auto read_error = [](const std::string& path) { return usage_error([&] { read_config_file(path); }); };
  EXPECT_TRUE(has(read_error("/dev/zero"), "--config '/dev/zero' is not a regular file"));
  EXPECT_TRUE(has(read_error(dir_.string()), "is not a regular file"));
  EXPECT_TRUE(has(read_error(path("missing.toml")), "cannot open it: No such file or directory"));
  const std::string fifo = path("fifo.toml");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(has(read_error(fifo), "is not a regular file"));  // and it did not wait for a writer
  const std::string large = path("large.toml");
  std::ofstream(large) << std::string(kMaxConfigBytes + 1, '#');
  EXPECT_TRUE(has(read_error(large), "is larger than 1048576 bytes"));
  const std::string good = path("good.toml");
  std::ofstream(good) << "[run]\nsteps = 2\n";
  EXPECT_EQ(read_config_file(good), "[run]\nsteps = 2\n");
}

namespace {

// A stand-in for `pipebench run`: a few flags bound with add(), as bench/cmd/run.cpp binds them.
struct FakeRun {
  CLI::App app{"test"};
  CLI::App* run = nullptr;
  int steps = 3;
  std::vector<int> microbatches{8, 16};
  bool json = false;
  std::string out;

  FakeRun() {
    run = app.add_subcommand("run");
    add(*run, {"--steps", "Timed steps"}, steps);
    add(*run, {"-m,--microbatches", "m"}, microbatches);
    add(*run, {"--json", "JSON"}, json);
    add(*run, {"-o,--out", "file"}, out);
    run->fallthrough();
  }
  // Parses `args` with the config text applied where main() applies it: after the command line was
  // read, before the flags' values are used.
  void parse(std::vector<std::string> args, const std::string& config) {
    app.add_option_function<std::string>("--c", [this, config](const std::string&) {
      apply_config(*run, parse_config(config, "c.toml"), "c.toml");
    });
    args.insert(args.begin(), {"run", "--c", "x"});
    std::reverse(args.begin(), args.end());
    app.parse(args);
  }
};

}  // namespace

TEST(ConfigFile, CommandLineWinsAndEveryValueIsChecked) {
  FakeRun r;
  r.parse({"--steps", "5"}, "[run]\nsteps = 2\nmicrobatches = [4, 8]\njson = true\n");
  EXPECT_EQ(r.steps, 5);  // the command line wins
  EXPECT_EQ(r.microbatches, (std::vector<int>{4, 8}));
  EXPECT_TRUE(r.json);

  FakeRun off;
  off.parse({}, "[run]\njson = false\n");
  EXPECT_FALSE(off.json);

  auto apply_error = [](std::vector<std::string> args, const std::string& text) {
    FakeRun fake;
    return usage_error([&] { fake.parse(args, text); });
  };
  EXPECT_EQ(apply_error({}, "[run]\nmicrobatchs = 4\n"),
            "--config 'c.toml' line 2: key 'microbatchs' is not a flag of `pipebench run` (did you mean 'microbatches'?): "
            "the keys are its long flag names without dashes (`pipebench run --help`)");
  EXPECT_TRUE(has(apply_error({}, "[run]\nm = 4\n"), "key 'm' is not a flag"));  // long names only
  EXPECT_TRUE(has(apply_error({}, "[run]\nhelp = true\n"), "key 'help' is not a flag"));
  EXPECT_EQ(apply_error({}, "[run]\nsteps = \"abc\"\n"),
            "--config 'c.toml' line 2: key 'steps': --steps 'abc' is not allowed: expected a decimal integer from 1 to "
            "16777216");
  // A bad value is refused even where the command line overrides it.
  EXPECT_TRUE(has(apply_error({"--steps", "5"}, "[run]\nsteps = 0\n"), "line 2: key 'steps': --steps '0'"));
  EXPECT_TRUE(has(apply_error({}, "[run]\njson = 1\n"), "key 'json': value '1' is not allowed: expected true or false"));
}
