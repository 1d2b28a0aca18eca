#pragma once
// A record as a JSON object, derived from its field table (bench/results/fields.hpp): one key per
// field, in declaration order, with the raw value (seconds, bytes, FLOP/s). A value that is absent (an
// optional without a value, an empty list or text) is null; enumerations are their names.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/results/fields.hpp"
#include "bench/results/records.hpp"

namespace pipebench::bench {

namespace json_detail {
template <class T>
nlohmann::ordered_json value(const T& v) {
  return nlohmann::ordered_json(v);
}
inline nlohmann::ordered_json value(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
}
inline nlohmann::ordered_json value(analysis::Kind k) { return analysis::kind_name(k); }
inline nlohmann::ordered_json value(CommKind k) { return comm_kind_name(k); }
inline nlohmann::ordered_json value(CommGroup g) { return comm_group_name(g); }
template <class T>
nlohmann::ordered_json value(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}
template <class T>
nlohmann::ordered_json value(const std::vector<T>& v) {
  return v.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}
template <class V>
nlohmann::ordered_json value(const std::map<std::string, V>& m) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j;
}
}  // namespace json_detail

template <class Record>
nlohmann::ordered_json record_json(const Record& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for_each_field<Record>([&](const auto& fd) { j[fd.name] = json_detail::value(r.*fd.member); });
  return j;
}

template <class Record>
nlohmann::ordered_json records_json(const std::vector<Record>& rs) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& r : rs) j.push_back(record_json(r));
  return j;
}

}  // namespace pipebench::bench
