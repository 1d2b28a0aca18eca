#include "bench/config_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include <CLI/CLI.hpp>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/flags.hpp"

namespace pipebench::bench {

namespace {

// `label` is the flag and the file as messages name them: "--config 'run.toml'".
[[noreturn]] void fail(const std::string& label, int line, const std::string& what) {
  throw UsageError(label + " line " + std::to_string(line) + ": " + what);
}

// The whole text is UTF-8 without control bytes other than tab and the line ends (TOML's rule).
void check_bytes(const std::string& text, const std::string& name) {
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    fail(name, 1, "starts with a byte order mark (EF BB BF): save the file as UTF-8 without one");
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') ++line;
    const bool line_end = c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n');
    if ((c < 0x20 && c != '\t' && !line_end) || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", c);
      fail(name, line, std::string("control byte ") + hex + " is not allowed: expected TOML text");
    }
    const std::size_t n = utf8_length(text, i);
    if (n == 0) fail(name, line, "bytes that are not UTF-8 text: expected a TOML file");
    i += n;
  }
}

bool bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

std::size_t skip_blanks(const std::string& s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

// One line's `key = value` or table header, with its position in the file.
class LineParser {
 public:
  LineParser(const std::string& line, int number, const std::string& name) : s_(line), line_(number), name_(name) {}

  [[noreturn]] void fail(const std::string& what) const { ::pipebench::bench::fail(name_, line_, what); }

  // The value starting at s_[i], as a flag takes it; i moves past it.
  std::string value(std::size_t& i, const std::string& key) {
    if (i >= s_.size() || s_[i] == '#') fail("key " + quoted(key) + ": no value after '='");
    if (s_[i] != '[') return scalar(i, key, true);
    std::string joined;
    int items = 0;
    if (const std::size_t first = skip_blanks(s_, i + 1); first < s_.size() && s_[first] == ']')
      fail("key " + quoted(key) + ": an empty array is not allowed");
    for (i = skip_blanks(s_, i + 1);; i = skip_blanks(s_, i + 1)) {
      if (i < s_.size() && s_[i] == ']' && items > 0) break;  // a trailing comma, as TOML allows
      joined += (items++ ? "," : "") + scalar(i, key, false);
      i = skip_blanks(s_, i);
      if (i < s_.size() && s_[i] == ']') break;
      if (i >= s_.size() || s_[i] != ',')
        fail("key " + quoted(key) + ": expected ',' or ']' in the array, as [4, 8] or [\"1f1b\", \"zbv\"] on one line");
    }
    ++i;
    return joined;
  }

 private:
  // A string, a bare number, or (outside arrays) true or false.
  std::string scalar(std::size_t& i, const std::string& key, bool boolean_ok) {
    if (i < s_.size() && (s_[i] == '"' || s_[i] == '\'')) return quoted_string(i, key);
    const std::size_t from = i;
    while (i < s_.size() && (bare_key_char(s_[i]) || s_[i] == '.' || s_[i] == '+')) ++i;
    const std::string token = s_.substr(from, i - from);
    if (boolean_ok && (token == "true" || token == "false")) return token;
    const bool number = !token.empty() && token.find_first_not_of("0123456789+-.eE") == std::string::npos &&
                        token.find_first_of("0123456789") != std::string::npos;
    if (!number)
      fail("key " + quoted(key) + ": value " + quoted(token.empty() ? s_.substr(from) : token) +
           " is not allowed: expected a \"string\", a number" + (boolean_ok ? ", true, false" : "") +
           " or an array [..] (times and lists as strings: tf = \"500us\")");
    return token;
  }

  // "basic" (escapes \" and \\) or 'literal', on one line.
  std::string quoted_string(std::size_t& i, const std::string& key) {
    const char quote = s_[i++];
    std::string out;
    for (; i < s_.size() && s_[i] != quote; ++i) {
      if (quote == '"' && s_[i] == '\\') {
        if (i + 1 >= s_.size() || (s_[i + 1] != '"' && s_[i + 1] != '\\'))
          fail("key " + quoted(key) + ": only the escapes \\\" and \\\\ are allowed in a string");
        ++i;
      }
      out += s_[i];
    }
    if (i >= s_.size()) fail("key " + quoted(key) + ": the string has no closing " + std::string(1, quote));
    ++i;
    return out;
  }

  const std::string& s_;
  int line_;
  const std::string& name_;
};

}  // namespace

std::vector<ConfigEntry> parse_config(const std::string& text, const std::string& name) {
  return parse_toml_table(text, name, "--config", "run");
}

std::vector<ConfigEntry> parse_toml_table(const std::string& text, const std::string& file, const std::string& flag,
                                          const std::string& tbl) {
  const std::string name = flag + " " + quoted(file);
  const bool is_run = tbl == "run";
  const std::string header = "[" + tbl + "]";
  if (text.size() > kMaxConfigBytes)
    fail(name, 1, "the file is " + std::to_string(text.size()) + " bytes: at most " + std::to_string(kMaxConfigBytes) +
                      " are read");
  check_bytes(text, name);
  std::vector<ConfigEntry> entries;
  std::map<std::string, int> seen;  // key -> its line
  int run_line = 0;                 // the line of [run]; 0 before it
  int number = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    ++number;
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    std::string s = text.substr(pos, end - pos);
    pos = end + 1;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    LineParser line(s, number, name);
    std::size_t i = skip_blanks(s, 0);
    if (i == s.size() || s[i] == '#') continue;
    if (s[i] == '[') {
      if (s.compare(i, 2, "[[") == 0)
        line.fail(quoted(trim(s)) + " (an array of tables) is not allowed: the file holds one " + header + " table");
      const std::size_t close = s.find(']', i);
      const std::size_t after = close == std::string::npos ? close : skip_blanks(s, close + 1);
      if (close == std::string::npos || (after < s.size() && s[after] != '#'))
        line.fail(quoted(trim(s)) + " is not a table header: expected " + header);
      const std::string table = trim(s.substr(i + 1, close - i - 1));
      if (table != tbl)
        line.fail("table " + quoted("[" + table + "]") + " is not allowed: the only table is " + header +
                  (is_run ? " (flags of `pipebench run`)" : ""));
      if (run_line) line.fail("table " + header + " given twice (first on line " + std::to_string(run_line) + ")");
      run_line = number;
      continue;
    }
    const std::size_t key_end = std::find_if_not(s.begin() + static_cast<std::ptrdiff_t>(i), s.end(), bare_key_char) - s.begin();
    const std::string key = s.substr(i, key_end - i);
    i = skip_blanks(s, key_end);
    if (key.empty() || i >= s.size() || s[i] != '=')
      line.fail(quoted(trim(s)) + " is not allowed: expected `key = value`" +
                (is_run ? " (a long flag name of `pipebench run` without dashes)" : "") + ", a " + header +
                " header or a # comment");
    if (!run_line) line.fail("key " + quoted(key) + " is outside the " + header + " table: put " + header + " above it");
    i = skip_blanks(s, i + 1);
    std::string value = line.value(i, key);
    i = skip_blanks(s, i);
    if (i < s.size() && s[i] != '#')
      line.fail("key " + quoted(key) + ": unexpected " + quoted(s.substr(i)) + " after the value");
    if (trim(value).empty()) line.fail("key " + quoted(key) + ": an empty value is not allowed");
    const auto [it, fresh] = seen.emplace(key, number);
    if (!fresh) line.fail("key " + quoted(key) + " given twice (first on line " + std::to_string(it->second) + ")");
    entries.push_back({number, key, std::move(value)});
  }
  if (!run_line)
    throw UsageError(name + " holds no " + header + " table: expected " + header + " followed by `key = value` lines " +
                     (is_run ? "(docs/run.md \"Config file\")" : "(docs/model.md)"));
  return entries;
}

std::string read_config_file(const std::string& path) { return read_toml_file(path, "--config", "run"); }

std::string read_toml_file(const std::string& path, const std::string& flag, const std::string& tbl) {
  const std::string what = flag + " " + quoted(path);
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below like any non-regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw UsageError(what + ": cannot open it: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw UsageError(what + " is not a regular file: expected a TOML file with a [" + tbl + "] table");
  const std::string too_large = what + " is larger than " + std::to_string(kMaxConfigBytes) + " bytes: not a config file";
  if (static_cast<unsigned long long>(st.st_size) > kMaxConfigBytes) throw UsageError(too_large);
  std::string text(kMaxConfigBytes + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UsageError(what + ": cannot read it: " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kMaxConfigBytes) throw UsageError(too_large);  // it grew while being read
  text.resize(got);
  return text;
}

void apply_config(CLI::App& run, const std::vector<ConfigEntry>& entries, const std::string& name) {
  for (const ConfigEntry& e : entries) {
    CLI::Option* o = e.key == "help" ? nullptr : run.get_option_no_throw("--" + e.key);
    if (o == nullptr)
      fail("--config " + quoted(name), e.line, "key " + quoted(e.key) + " is not a flag of `pipebench run`" + did_you_mean(run, e.key) +
                             ": the keys are its long flag names without dashes (`pipebench run --help`)");
    // A test hook makes a rank fail on purpose: given on the command line for one run, never kept in
    // a file that a later sweep reuses (a 1-rank job hung on it).
    if (e.key == "inject-failure")
      fail("--config " + quoted(name), e.line, "key 'inject-failure' is a test hook and only allowed on the command line");
    const bool is_switch = o->get_expected_min() == 0;
    if (is_switch && e.value != "true" && e.value != "false")
      fail("--config " + quoted(name), e.line, "key " + quoted(e.key) + ": value " + quoted(e.value) + " is not allowed: expected true or false");
    if (is_switch && e.value == "false") continue;  // a switch is off unless given
    // Every value of the file is checked, also one the command line overrides: set aside what the
    // command line gave, parse the file's value now (so its error names this line), then give the
    // command line's back; its callback runs after this one, so the command line wins.
    const CLI::results_t given = o->results();
    o->clear();
    try {
      o->add_result(e.value);
      o->run_callback();
    } catch (const UsageError& x) {
      fail("--config " + quoted(name), e.line, "key " + quoted(e.key) + ": " + x.what());
    } catch (const CLI::ParseError& x) {
      fail("--config " + quoted(name), e.line, "key " + quoted(e.key) + ": value " + quoted(e.value) + " is not allowed: " + x.what());
    }
    if (!given.empty()) {
      o->clear();
      for (const auto& r : given) o->add_result(r);
    }
  }
}

void add_config_option(CLI::App& app) {
  CLI::App* run = app.get_subcommand("run");
  auto* o = app.add_option_function<std::vector<std::string>>(
      "--config",
      [&app, run](const std::vector<std::string>& files) {
        if (files.size() != 1)
          throw UsageError("--config is given " + std::to_string(files.size()) + " times: give one file");
        const std::string& path = files.front();
        if (path.empty()) throw UsageError("--config '' is not allowed: expected a file name");
        if (!app.got_subcommand(run))
          throw UsageError("--config " + quoted(path) + ": a config file holds flags of `pipebench run` only");
        apply_config(*run, parse_config(read_config_file(path), path), path);
      },
      "Read flags of `run` from a TOML file: a [run] table, the long flag names as keys (docs/run.md); flags on "
      "the command line win");
  o->type_name("FILE");
  o->expected(1);
  o->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace pipebench::bench
