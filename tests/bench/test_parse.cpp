// Flag parsing shared by the subcommands: lists, numbers, durations, byte sizes and the time flags.
#include <gtest/gtest.h>

#include "analysis/error.hpp"
#include "bench/parse.hpp"
#include "errors.hpp"

using namespace pipebench::bench;
using pipebench::UsageError;
using pipebench::bench::testing::usage_error;

TEST(Parse, IntegerLists) {
  EXPECT_EQ(parse_int_list("2,4, 8", "-p"), (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(parse_int_list("16", "-m"), (std::vector<int>{16}));
  EXPECT_EQ(parse_int("0", "--x", 0), 0);
  const std::string e = usage_error([] { parse_int_list("4,0", "-p"); });
  EXPECT_EQ(e, "-p '0' is not allowed: expected a decimal integer from 1 to 16777216");
  for (const char* bad : {"", "2,,4", "4,", "x", "2.5", "-1", "1e3", "99999999999"})
    EXPECT_NE(usage_error([&] { parse_int_list(bad, "-m"); }), "") << bad;
}

// Issue 8 item 13: integers are decimal everywhere, without overflow, within one documented bound.
TEST(Parse, IntegersAreDecimalAndBounded) {
  EXPECT_EQ(parse_int("010", "-t"), 10);  // leading zeros: decimal, as everywhere
  EXPECT_EQ(parse_int("16777216", "-m"), kMaxInteger);
  EXPECT_EQ(parse_int("0007", "-m", 1, 7), 7);
  for (const char* bad : {"0x10", "0X1", "+4", "-0", "16777217", "4294967297", "18446744073709551617",
                          "99999999999999999999999999999", "1 2", "\n", "", " "})
    EXPECT_NE(usage_error([&] { parse_int(bad, "-m"); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_int("4294967297", "-m"); }),
            "-m '4294967297' is not allowed: expected a decimal integer from 1 to 16777216");
  EXPECT_EQ(usage_error([] { parse_int("8", "--x", 0, 7); }), "--x '8' is not allowed: expected a decimal integer from 0 to 7");
}

TEST(Parse, MappingsWithoutWrapAround) {
  const Mapping m = parse_mapping("2x010x3", "--mapping");
  EXPECT_EQ(to_string(m), "2x10x3");
  for (const char* bad : {"4294967297x1x1", "1x4294967297x1", "1x1x4294967297", "16777217x1x1", "0x1x1", "1x1",
                          "1x1x1x1", "1x1x", "x1x1", "-1x1x1", "1 x1x1", "2x2x1a", "0x10x1x1", ""})
    EXPECT_NE(usage_error([&] { parse_mapping(bad, "--mapping"); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_mapping("4294967297x1x1", "--mapping"); }),
            "--mapping '4294967297x1x1' is not allowed: expected TxPxD, three decimal integers from 1 to 16777216, "
            "e.g. 2x2x1");
}

// Numbers and times have an upper bound, so sums over a schedule never overflow to inf (and -nan).
TEST(Parse, NumbersAndTimesAreBounded) {
  EXPECT_DOUBLE_EQ(parse_number("1e9", "--stage-cost"), kMaxNumber);
  EXPECT_DOUBLE_EQ(parse_duration("1e9", "--tf").value, kMaxNumber);
  EXPECT_DOUBLE_EQ(parse_duration("1e17ns", "--tf").value, 1e8);
  for (const char* bad : {"1.0000001e9", "1e308", "1e309"})
    EXPECT_NE(usage_error([&] { parse_number(bad, "--stage-cost"); }), "") << bad;
  for (const char* bad : {"1e308", "2e9", "1e10s", "1e13ms", "1e308ns"})
    EXPECT_NE(usage_error([&] { parse_duration(bad, "--tf"); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_duration("1e308", "--tf"); }),
            "--tf '1e308' is not allowed: expected a time > 0 and <= 1e+09: a number of time units, or one with a unit "
            "ns, us, ms or s (e.g. 2ms, 1.5s)");
}

// Issue 8 item 14: a value is echoed escaped, so the message stays one line.
TEST(Parse, ValuesAreEscapedInMessages) {
  EXPECT_EQ(usage_error([] { parse_int("1\n2", "--steps"); }), "--steps '1\\n2' is not allowed: expected a decimal integer from 1 to 16777216");
  EXPECT_EQ(usage_error([] { parse_duration("\x1b[31m", "--tf"); }).find('\x1b'), std::string::npos);
  EXPECT_EQ(usage_error([] { parse_number_list("1,\t", "--stage-cost"); }).find('\t'), std::string::npos);
  EXPECT_NE(usage_error([] { parse_int_list("2,,4", "-m"); }).find("without empty items"), std::string::npos);
}

TEST(Parse, Numbers) {
  EXPECT_EQ(parse_number_list("1,1.5,2e-1", "--stage-cost"), (std::vector<double>{1, 1.5, 0.2}));
  EXPECT_DOUBLE_EQ(parse_number("0", "--x", true), 0);
  for (const char* bad : {"0", "-1", "nan", "inf", "0x10", "1.2.3", "1ms", "."})
    EXPECT_NE(usage_error([&] { parse_number(bad, "--stage-cost"); }), "") << bad;
}

TEST(Parse, DurationsWithAndWithoutUnits) {
  const Duration plain = parse_duration("3", "--tf");
  EXPECT_DOUBLE_EQ(plain.value, 3);
  EXPECT_FALSE(plain.has_unit);
  const Duration ms = parse_duration("2ms", "--tf");
  EXPECT_DOUBLE_EQ(ms.value, 2e-3);
  EXPECT_TRUE(ms.has_unit);
  EXPECT_DOUBLE_EQ(parse_duration("500us", "--tf").value, 5e-4);
  EXPECT_DOUBLE_EQ(parse_duration("500\xC2\xB5s", "--tf").value, 5e-4);
  EXPECT_DOUBLE_EQ(parse_duration("1.5s", "--tf").value, 1.5);
  EXPECT_DOUBLE_EQ(parse_duration("250ns", "--tf").value, 2.5e-7);
  EXPECT_DOUBLE_EQ(parse_duration("1e-3s", "--tf").value, 1e-3);
  EXPECT_DOUBLE_EQ(parse_duration("0", "--p2p-time", true).value, 0);
  const auto list = parse_duration_list("1ms,2ms", "--tf");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_DOUBLE_EQ(list[1].value, 2e-3);
  for (const char* bad : {"0", "-2ms", "2min", "ms", "2 m s", "1,5"})
    EXPECT_NE(usage_error([&] { parse_duration(bad, "--tf"); }), "") << bad;
  EXPECT_NE(usage_error([] { parse_duration("2min", "--tf"); }).find("--tf '2min' is not allowed"), std::string::npos);
}

TEST(Parse, ByteSizes) {
  EXPECT_EQ(parse_bytes("4096", "--size"), 4096u);
  EXPECT_EQ(parse_bytes("64KiB", "--size"), 65536u);
  EXPECT_EQ(parse_bytes("1MB", "--size"), 1000000u);
  EXPECT_EQ(parse_bytes("1.5KiB", "--size"), 1536u);
  EXPECT_EQ(parse_bytes("2GiB", "--size"), 2147483648u);
  EXPECT_EQ(parse_bytes("3k", "--size"), 3000u);
  EXPECT_EQ(parse_bytes("8B", "--size"), 8u);
  EXPECT_EQ(parse_bytes_list("1KiB,1MiB", "--size"), (std::vector<std::uint64_t>{1024, 1048576}));
  for (const char* bad : {"0", "1.5", "1.5B", "1XB", "-4", "KiB", "1e30"})
    EXPECT_NE(usage_error([&] { parse_bytes(bad, "--size"); }), "") << bad;
}

TEST(Parse, TimeSettings) {
  const Times d = parse_times({});
  EXPECT_DOUBLE_EQ(d.tf, 1);
  EXPECT_DOUBLE_EQ(d.tb, 2);
  EXPECT_DOUBLE_EQ(d.tw, 1);
  EXPECT_LT(d.t_overlap, 0);
  EXPECT_FALSE(d.seconds);

  // As the flags parse them (bench/flags.hpp): each time with parse_duration.
  auto t = [](const char* text) { return parse_duration(text, "--t", true); };
  TimeSettings f;
  f.tf = t("1ms");
  f.tb = t("2ms");
  f.tw = t("0.5ms");
  f.t_overlap = t("2.5ms");
  f.p2p = t("0");
  f.stage_cost = parse_number_list("1,1,1,2", "--stage-cost");
  const Times s = parse_times(f);
  EXPECT_TRUE(s.seconds);
  EXPECT_DOUBLE_EQ(s.tw, 5e-4);
  EXPECT_DOUBLE_EQ(s.t_overlap, 2.5e-3);
  EXPECT_EQ(s.stage_cost, (std::vector<double>{1, 1, 1, 2}));

  f.tb = t("2");  // a mix of seconds and time units
  EXPECT_NE(usage_error([&] { parse_times(f); }).find("--tb '2' has no unit but --tf '1ms' has one"), std::string::npos);
  TimeSettings g;
  g.tw = t("2");
  EXPECT_EQ(usage_error([&] { parse_times(g); }),
            "--tw '2' is not allowed: the weight part of the backward must be < --tb '2'");
  g.tw = t("0");
  EXPECT_DOUBLE_EQ(parse_times(g).tw, 0);
  EXPECT_NE(usage_error([&] { parse_duration("-1", "--p2p-time", true); }), "");
}
