#pragma once
// A thin RAII layer over the HDF5 C API, with only what the results file needs. HDF5's own error
// printing is switched off; every failure becomes a pipebench::Error that names the operation, the
// object's path and HDF5's most specific reason.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/error.hpp"

namespace pipebench::bench::h5 {

// One HDF5 identifier, closed with the function that matches its kind (H5Fclose, H5Gclose, ...).
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer close) : id_(id), close_(close) {}
  Id(Id&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Id& operator=(Id&& o) noexcept;
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() { reset(); }
  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  void reset();
  hid_t release() {  // gives up ownership without closing
    const hid_t id = id_;
    id_ = H5I_INVALID_HID;
    return id;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// The most specific message on HDF5's error stack (then cleared), e.g. "unable to open file: ...".
std::string last_error();
// Throws Error("HDF5: cannot <what> '<where>': <last_error()>").
[[noreturn]] void fail(const std::string& what, const std::string& where);
// "<file>:<object path>", for messages ("(unlinked)" for an object no path reaches).
std::string where(hid_t obj);

bool is_hdf5(const std::string& path);  // false for a missing or unreadable file too
// "HDF5 1.10.8 (parallel, MPI-IO)".
std::string library_description();

// Objects: files and groups. Paths in messages are file:/object.
Id create_file(const std::string& path);  // fails if the file exists
Id open_file(const std::string& path, bool write);
void close_file(Id& file);  // closes now and reports a failed final write, which ~Id cannot
void flush(hid_t file);
Id create_group(hid_t loc, const std::string& name);
Id open_group(hid_t loc, const std::string& name);
// A group that no path reaches yet, and the link that makes it reachable: objects can be written in
// full before anything existing refers to them.
Id create_unlinked_group(hid_t file);
void link(hid_t obj, hid_t loc, const std::string& name);
bool has_link(hid_t loc, const std::string& name);
// What the link `name` under `loc` leads to. Only hard links count: a soft or external link is not
// something pipebench writes, and an external one would lead out of the file.
enum class ObjectKind { missing, group, dataset, other };
ObjectKind object_kind(hid_t loc, const std::string& name);
std::uint64_t file_size(hid_t obj);  // of the file holding obj, in bytes
std::vector<std::string> link_names(hid_t group);

// Scalar attributes; strings are variable-length UTF-8 (h5py reads them as str). The readers check the
// attribute's class and that it holds one element before reading it.
void write_attr(hid_t obj, const std::string& name, std::int64_t value);
void write_attr(hid_t obj, const std::string& name, double value);
void write_attr(hid_t obj, const std::string& name, const std::string& value);
bool has_attr(hid_t obj, const std::string& name);
std::int64_t read_int_attr(hid_t obj, const std::string& name);
double read_double_attr(hid_t obj, const std::string& name);
// Variable or fixed length; text longer than kMaxText (no results file has such) is an Error.
inline constexpr std::size_t kMaxText = std::size_t{1} << 20;
std::string read_string_attr(hid_t obj, const std::string& name);
std::vector<std::string> attr_names(hid_t obj);

// Datatypes for compound tables.
Id string_type();  // variable-length UTF-8
Id compound_type(std::size_t size);
void insert_member(hid_t compound, const char* name, std::size_t offset, hid_t member_type);
// An enumeration over `base` (an integer type) with values 0, 1, 2, ... named by `names`.
Id enum_type(hid_t base, const std::vector<const char*>& names);

// One-dimensional datasets of `count` elements of `type`, stored in the memory layout (no conversion
// on write: see docs/results-schema.md), written and read whole. Contiguous: a table is written once,
// so chunking would only add an index.
void write_table(hid_t loc, const std::string& name, hid_t type, const void* data, std::size_t count);
std::size_t table_size(hid_t loc, const std::string& name);
// table_size after checking what is stored against `mem_type` before anything is read: one dimension,
// the same type class (for a compound: each of mem_type's members present, of the same class), and no
// more elements than the file has bytes for. Error naming the dataset and what is wrong otherwise.
std::size_t checked_table_size(hid_t loc, const std::string& name, hid_t mem_type);
// Reads into `data` (table_size elements of mem_type); the caller frees variable-length members
// with reclaim_table.
void read_table(hid_t loc, const std::string& name, hid_t mem_type, void* data);
void reclaim_table(hid_t mem_type, std::size_t count, void* data);

}  // namespace pipebench::bench::h5
