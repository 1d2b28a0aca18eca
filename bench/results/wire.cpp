#include "bench/results/wire.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "analysis/error.hpp"

namespace pipebench::bench {

namespace {

class Out {
 public:
  template <class T>
  void put(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      put(static_cast<std::uint64_t>(v.size()));
      s_ += v;
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      s_.append(reinterpret_cast<const char*>(&v), sizeof v);
    } else {
      put_other(v);
    }
  }
  std::string take() { return std::move(s_); }

 private:
  template <class T>
  void put_other(const std::optional<T>& v) {
    put(static_cast<std::uint8_t>(v ? 1 : 0));
    if (v) put(*v);
  }
  template <class T>
  void put_other(const std::vector<T>& v) {
    put(static_cast<std::uint64_t>(v.size()));
    for (const auto& x : v) put(x);
  }
  template <class V>
  void put_other(const std::map<std::string, V>& m) {
    put(static_cast<std::uint64_t>(m.size()));
    for (const auto& [k, v] : m) {
      put(k);
      put(v);
    }
  }
  // The comm tables' plain structs, byte for byte.
  void put_other(const CommBenchRow& r) { s_.append(reinterpret_cast<const char*>(&r), sizeof r); }
  void put_other(const CommFit& f) { s_.append(reinterpret_cast<const char*>(&f), sizeof f); }
  template <class Record>
  void put_other(const Record& r) {
    for_each_field<Record>([&](const auto& fd) { put(r.*fd.member); });
  }
  std::string s_;
};

class In {
 public:
  explicit In(std::string_view b) : b_(b) {}
  template <class T>
  void get(T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      const std::size_t n = count(1);
      v.assign(b_.substr(0, n));
      b_.remove_prefix(n);
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      need(sizeof v);
      std::memcpy(&v, b_.data(), sizeof v);
      b_.remove_prefix(sizeof v);
    } else {
      get_other(v);
    }
  }
  bool done() const { return b_.empty(); }

 private:
  void need(std::size_t n) const {
    if (b_.size() < n) throw Error("reader: a run from the reading process is cut short");
  }
  // A count of elements that each take at least `min_bytes`: never more than the bytes left allow.
  std::size_t count(std::size_t min_bytes) {
    std::uint64_t n = 0;
    get(n);
    if (n > b_.size() / min_bytes) throw Error("reader: a run from the reading process has a bad length");
    return static_cast<std::size_t>(n);
  }
  template <class T>
  void get_other(std::optional<T>& v) {
    std::uint8_t has = 0;
    get(has);
    if (has) get(v.emplace());
  }
  template <class T>
  void get_other(std::vector<T>& v) {
    v.resize(count(1));
    for (auto& x : v) get(x);
  }
  template <class V>
  void get_other(std::map<std::string, V>& m) {
    const std::size_t n = count(8);
    for (std::size_t i = 0; i < n; ++i) {
      std::string k;
      get(k);
      get(m[k]);
    }
  }
  template <class Plain>
  void get_plain(Plain& p) {
    static_assert(std::is_trivially_copyable_v<Plain>);
    need(sizeof p);
    std::memcpy(&p, b_.data(), sizeof p);
    b_.remove_prefix(sizeof p);
  }
  void get_other(CommBenchRow& r) { get_plain(r); }
  void get_other(CommFit& f) { get_plain(f); }
  template <class Record>
  void get_other(Record& r) {
    for_each_field<Record>([&](const auto& fd) { get(r.*fd.member); });
  }
  std::string_view b_;
};

}  // namespace

std::string encode_run(const RunResult& run) {
  Out o;
  o.put(run.key);
  o.put(run.config);
  o.put(run.metadata);
  o.put(run.summary);
  o.put(run.ranks);
  o.put(run.stages);
  o.put(run.actions);
  o.put(run.comms);
  o.put(run.steps);
  return o.take();
}

RunResult decode_run(std::string_view bytes) {
  In in(bytes);
  RunResult run;
  in.get(run.key);
  in.get(run.config);
  in.get(run.metadata);
  in.get(run.summary);
  in.get(run.ranks);
  in.get(run.stages);
  in.get(run.actions);
  in.get(run.comms);
  in.get(run.steps);
  if (!in.done()) throw Error("reader: a run from the reading process has bytes left over");
  return run;
}

std::string encode_comm(const CommResult& c) {
  Out o;
  for (const std::string* s : {&c.op, &c.group, &c.backend, &c.mapping}) o.put(*s);
  for (const std::int64_t* n : {&c.groups, &c.group_size, &c.one_group}) o.put(*n);
  o.put(c.config);
  o.put(c.metadata);
  o.put(c.rows);
  o.put(c.fit);
  o.put(c.iter_us);
  return o.take();
}

CommResult decode_comm(std::string_view bytes) {
  In in(bytes);
  CommResult c;
  for (std::string* s : {&c.op, &c.group, &c.backend, &c.mapping}) in.get(*s);
  for (std::int64_t* n : {&c.groups, &c.group_size, &c.one_group}) in.get(*n);
  in.get(c.config);
  in.get(c.metadata);
  in.get(c.rows);
  in.get(c.fit);
  in.get(c.iter_us);
  if (!in.done()) throw Error("reader: a /comm group from the reading process has bytes left over");
  return c;
}

}  // namespace pipebench::bench
