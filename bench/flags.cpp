#include "bench/flags.hpp"

#include <algorithm>
#include <sstream>

namespace pipebench::bench {

namespace {

template <class T>
std::string joined(const std::vector<T>& xs) {
  std::ostringstream os;
  for (std::size_t i = 0; i < xs.size(); ++i) os << (i ? "," : "") << xs[i];
  return os.str();
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string did_you_mean(const CLI::App& cmd, const std::string& name, const std::string& prefix) {
  if (name.empty() || name.size() > 64) return "";
  std::string best;
  std::size_t best_distance = 3;  // at most two edits away
  for (const CLI::Option* o : cmd.get_options())
    for (const std::string& long_name : o->get_lnames()) {
      const std::size_t d = edit_distance(name, long_name);
      if (d < best_distance && long_name != "help") {
        best_distance = d;
        best = long_name;
      }
    }
  return best.empty() ? "" : " (did you mean " + quoted(prefix + best) + "?)";
}

std::string flag_name(const Flag& f) {
  const std::string names = f.names;
  return names.substr(names.find_last_of(',') + 1);
}

CLI::Option* add_parsed(CLI::App& cmd, const Flag& f, std::function<void(const std::string&)> parse,
                        const std::string& shown, const std::string& type_name) {
  CLI::Option* o = cmd.add_option_function<std::string>(f.names, std::move(parse), f.help);
  o->type_name(type_name);
  o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  if (!shown.empty()) o->default_str(shown);
  return o;
}

CLI::Option* add(CLI::App& cmd, const Flag& f, bool& field) { return cmd.add_flag(f.names, field, f.help); }

CLI::Option* add(CLI::App& cmd, const Flag& f, std::string& field) {
  const std::string name = flag_name(f);
  return add_parsed(cmd, f, [&field, name](const std::string& text) {
    // An empty value would read as "not given" and fall back to the default.
    if (trim(text).empty()) throw UsageError(name + " " + quoted(text) + " is not allowed: expected a non-empty value");
    field = text;
  }, field);
}

CLI::Option* add(CLI::App& cmd, const Flag& f, std::vector<std::string>& field) {
  const std::string name = flag_name(f);
  return add_parsed(cmd, f, [&field, name](const std::string& text) { field = split_list(text, name); }, joined(field),
                    "LIST");
}

CLI::Option* add(CLI::App& cmd, const Flag& f, int& field) {
  const std::string name = flag_name(f);
  const int min = f.min, max = f.max;
  return add_parsed(cmd, f, [&field, name, min, max](const std::string& text) { field = parse_int(text, name, min, max); },
                    field >= min ? std::to_string(field) : "", "INT");
}

CLI::Option* add(CLI::App& cmd, const Flag& f, std::vector<int>& field) {
  const std::string name = flag_name(f);
  const int min = f.min, max = f.max;
  return add_parsed(cmd, f, [&field, name, min, max](const std::string& text) {
    field = parse_int_list(text, name, min, max);
  }, std::all_of(field.begin(), field.end(), [min](int x) { return x >= min; }) ? joined(field) : "", "LIST");
}

CLI::Option* add_each(CLI::App& cmd, const Flag& f, std::vector<int>& field) {
  const std::string name = flag_name(f);
  const int min = f.min, max = f.max;
  CLI::Option* o = cmd.add_option_function<std::vector<std::string>>(f.names, [&field, name, min, max](
                                                                                 const std::vector<std::string>& texts) {
    for (const auto& text : texts)
      for (int x : parse_int_list(text, name, min, max)) field.push_back(x);
  }, f.help);
  o->type_name("LIST");
  o->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return o;
}

CLI::Option* add(CLI::App& cmd, const Flag& f, std::uint64_t& field) {
  const std::string name = flag_name(f);
  const bool zero_ok = f.min == 0;
  return add_parsed(cmd, f, [&field, name, zero_ok](const std::string& text) {
    field = zero_ok && text == "0" ? 0 : parse_bytes(text, name);
  }, std::to_string(field), "BYTES");
}

CLI::Option* add(CLI::App& cmd, const Flag& f, double& field) {
  const std::string name = flag_name(f);
  const bool zero_ok = f.min == 0;
  return add_parsed(cmd, f, [&field, name, zero_ok](const std::string& text) { field = parse_number(text, name, zero_ok); },
                    list_text({field}), "NUM");
}

CLI::Option* add_large_count(CLI::App& cmd, const Flag& f, double& field) {
  const std::string name = flag_name(f);
  return add_parsed(cmd, f, [&field, name](const std::string& text) { field = parse_large_count(text, name); },
                    list_text({field}), "N");
}

CLI::Option* add(CLI::App& cmd, const Flag& f, std::vector<double>& field) {
  const std::string name = flag_name(f);
  return add_parsed(cmd, f, [&field, name](const std::string& text) { field = parse_number_list(text, name); },
                    list_text(field), "LIST");
}

CLI::Option* add(CLI::App& cmd, const Flag& f, Duration& field) {
  const std::string name = flag_name(f);
  const bool zero_ok = f.min == 0;
  return add_parsed(cmd, f, [&field, name, zero_ok](const std::string& text) { field = parse_duration(text, name, zero_ok); },
                    field.value >= 0 ? to_text(field) : "", "TIME");
}

CLI::Option* add(CLI::App& cmd, const Flag& f, std::vector<Mapping>& field) {
  const std::string name = flag_name(f);
  return add_parsed(cmd, f, [&field, name](const std::string& text) { field = parse_mapping_list(text, name); }, "",
                    "TxPxD,...");
}

LayoutOptions add_layout_flags(CLI::App& cmd, std::vector<Mapping>& mappings, std::string& order, int& cp, int& ep) {
  LayoutOptions o;
  o.mapping = add(cmd, flag::mapping, mappings);
  o.order = add(cmd, flag::order, order);
  add(cmd, flag::context_parallel, cp);
  add(cmd, flag::expert_parallel, ep);
  return o;
}

void add_time_flags(CLI::App& cmd, TimeSettings& times, bool with_p2p_time) {
  add(cmd, flag::tf, times.tf);
  add(cmd, flag::tb, times.tb);
  add(cmd, flag::tw, times.tw);
  add(cmd, flag::t_overlap, times.t_overlap);
  if (with_p2p_time) add(cmd, flag::p2p_time, times.p2p);
  add(cmd, flag::stage_cost, times.stage_cost);
}

}  // namespace pipebench::bench
