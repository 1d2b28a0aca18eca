#pragma once
// `--config FILE` (docs/run.md "Config file"): flags of `pipebench run` read from a small TOML file that
// holds one [run] table whose keys are the long flag names of `run` without dashes. Strict: anything
// else (an empty file, another table, an unknown key, a line without `=`, bytes that are not UTF-8 text)
// is a UsageError naming the file, the line and the key, never silently ignored. Values on the command
// line win over the file.
#include <cstddef>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pipebench::bench {

// The largest config file read; a larger one (or /dev/zero) is refused before it is read whole.
inline constexpr std::size_t kMaxConfigBytes = 1 << 20;

struct ConfigEntry {
  int line = 0;       // 1-based line of the key
  std::string key;    // as written: a long flag name of `run` without dashes ("microbatches")
  std::string value;  // as the flag takes it on the command line: "4,8" for [4, 8], "true" for true
};

// The pure core (tests and the fuzz target call it): the text of a config file to its entries in file
// order. The grammar is a subset of TOML: comments (#), one [run] table, `key = value` lines where a
// value is a "basic" or 'literal' string, a bare number, true or false, or a one-line array of strings
// and numbers (joined with commas, as a flag's list). `name` is the file as messages show it. Throws
// UsageError ("--config 'FILE' line N: ...") for text over kMaxConfigBytes, a byte order mark, control
// bytes or invalid UTF-8, no [run] table, any other table or [[run]], a key outside [run], a key given
// twice, a line without `=`, an empty or malformed value.
std::vector<ConfigEntry> parse_config(const std::string& text, const std::string& name);

// The same grammar for another file with one table (`pipebench plan --machine FILE`'s [machine]): messages
// name `flag` and the file ("--machine 'a.toml' line 3: ..."), and the table is `table`.
std::vector<ConfigEntry> parse_toml_table(const std::string& text, const std::string& file, const std::string& flag,
                                          const std::string& table);

// The bytes of the config file at `path`: a regular file of at most kMaxConfigBytes, else UsageError.
// Never blocks on a FIFO and never reads more than kMaxConfigBytes + 1 bytes.
std::string read_config_file(const std::string& path);
// The same for another flag's TOML file with one `table`.
std::string read_toml_file(const std::string& path, const std::string& flag, const std::string& table);

// Gives each entry to the option of `run` with that long name, as if typed on the command line; where the
// command line gives the option too, its value wins (the file's is still checked). A key that is no flag
// of `run`, or a value its flag refuses: UsageError naming the file, the line and the key.
void apply_config(CLI::App& run, const std::vector<ConfigEntry>& entries, const std::string& name);

// Registers `--config FILE` on the top-level app (before or after `run` on the command line) after the
// `run` subcommand was added: the file is read, parsed and applied once the command line is parsed,
// before any flag's value is used. Given twice, empty, or with a subcommand other than run: UsageError.
void add_config_option(CLI::App& app);

}  // namespace pipebench::bench
