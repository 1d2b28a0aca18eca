#pragma once
// One declaration per record field (docs/design.md "Records"). A record lists its fields once, in a
// static `fields()` function, as (name, member, table column, display unit); equality, the HDF5 layout
// (bench/results/store.cpp), JSON (bench/render/json.cpp) and text tables (bench/render/report.cpp)
// are all derived from that list, so a new field is one line.
#include <tuple>
#include <utility>

namespace pipebench::bench {

// How a text table shows a field. JSON and HDF5 always hold the raw value (seconds, bytes, FLOP/s).
enum class Show { plain, ms, us, mib, gflops };

template <class Record, class Member>
struct Field {
  const char* name;             // HDF5 member or attribute name, and JSON key
  Member Record::*member;
  const char* column = nullptr;  // header in text tables; nullptr: not shown there
  Show show = Show::plain;
  const char* unit = "";         // the unit row of text tables
};

template <class Record, class Member>
constexpr Field<Record, Member> field(const char* name, Member Record::*member, const char* column = nullptr,
                                      Show show = Show::plain, const char* unit = "") {
  return {name, member, column, show, unit};
}

// Calls f(field) for each field of Record, in declaration order.
template <class Record, class F>
void for_each_field(F&& f) {
  std::apply([&f](const auto&... fd) { (f(fd), ...); }, Record::fields());
}

// Field-by-field equality (doubles compared exactly: a run read back from a file must equal the one
// written).
template <class Record>
bool fields_equal(const Record& a, const Record& b) {
  bool eq = true;
  for_each_field<Record>([&](const auto& fd) { eq = eq && a.*fd.member == b.*fd.member; });
  return eq;
}

}  // namespace pipebench::bench
