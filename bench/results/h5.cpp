#include "bench/results/h5.hpp"

#include <algorithm>
#include <cstring>

namespace pipebench::bench::h5 {

namespace {

// HDF5 prints its error stack to stderr by default; pipebench reports errors itself, once.
void quiet() {
  static const bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

std::string child(hid_t loc, const std::string& name) {
  const std::string w = where(loc);
  return name.empty() ? w : w + (w.back() == '/' ? "" : "/") + name;
}

// Failures are named by `at`, or by the object `name` under `loc`, which is looked up only on failure
// (after the reason is taken from HDF5's error stack, which the lookup would clear).
template <class T>
T check(T rc, const std::string& what, const std::string& at) {
  if (rc < 0) fail(what, at);
  return rc;
}

template <class T>
T check(T rc, const std::string& what, hid_t loc, const std::string& name = "") {
  if (rc < 0) {
    const std::string reason = last_error();
    throw Error("HDF5: cannot " + what + " '" + child(loc, name) + "': " + reason);
  }
  return rc;
}

// Locking stays on (two writers must not interleave), but where the file system has no locks (Lustre
// mounted without flock) HDF5 1.10.7+ can go on without them instead of refusing the file.
Id file_access() {
  Id fapl(check(H5Pcreate(H5P_FILE_ACCESS), "create a file access property list", ""), H5Pclose);
#if H5_VERSION_GE(1, 10, 7)
  check(H5Pset_file_locking(fapl.get(), true, true), "set file locking", "");
#endif
  return fapl;
}

herr_t collect_attr(hid_t, const char* name, const H5A_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

#if H5_VERSION_GE(1, 12, 0)
using LinkInfo = H5L_info2_t;
#else
using LinkInfo = H5L_info_t;
#endif
herr_t collect_link(hid_t, const char* name, const LinkInfo*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

herr_t innermost(unsigned n, const H5E_error2_t* err, void* out) {
  if (n == 0 && err->desc) *static_cast<std::string*>(out) = err->desc;
  return 0;
}

Id open_attr(hid_t obj, const std::string& name) {
  return Id(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "open attribute", obj, name), H5Aclose);
}

// An attribute holds one value: a scalar, or a simple dataspace of one element.
void check_one_element(hid_t attr, hid_t obj, const std::string& name) {
  Id space(check(H5Aget_space(attr), "get the dataspace of attribute", obj, name), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1)
    throw Error("HDF5: attribute '" + child(obj, name) + "' does not hold exactly one value");
}

// Reads a scalar attribute of the given class through `mem_type`.
void read_scalar(hid_t obj, const std::string& name, H5T_class_t cls, const char* cls_name, hid_t mem_type,
                 void* out) {
  Id attr = open_attr(obj, name);
  Id type(check(H5Aget_type(attr.get()), "get the type of attribute", obj, name), H5Tclose);
  if (H5Tget_class(type.get()) != cls || H5Tget_size(type.get()) > 16)
    throw Error("HDF5: attribute '" + child(obj, name) + "' is not " + cls_name);
  check_one_element(attr.get(), obj, name);
  check(H5Aread(attr.get(), mem_type, out), "read attribute", obj, name);
}

void write_scalar(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type, const void* value) {
  Id space(check(H5Screate(H5S_SCALAR), "create a scalar dataspace", obj, name), H5Sclose);
  Id attr(check(H5Acreate2(obj, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), "create attribute",
                obj, name),
          H5Aclose);
  check(H5Awrite(attr.get(), mem_type, value), "write attribute", obj, name);
}

Id open_dataset(hid_t loc, const std::string& name) {
  return Id(check(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), "open dataset", loc, name), H5Dclose);
}

}  // namespace

Id& Id::operator=(Id&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void Id::reset() {
  if (id_ >= 0 && close_) close_(id_);
  id_ = H5I_INVALID_HID;
}

std::string last_error() {
  std::string msg;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &msg);
  H5Eclear2(H5E_DEFAULT);
  return msg.empty() ? "unknown HDF5 error" : msg;
}

void fail(const std::string& what, const std::string& at) {
  throw Error("HDF5: cannot " + what + (at.empty() ? "" : " '" + at + "'") + ": " + last_error());
}

std::string where(hid_t obj) {
  std::string file(static_cast<std::size_t>(std::max<ssize_t>(H5Fget_name(obj, nullptr, 0), 0)), '\0');
  if (!file.empty()) H5Fget_name(obj, file.data(), file.size() + 1);
  std::string path(static_cast<std::size_t>(std::max<ssize_t>(H5Iget_name(obj, nullptr, 0), 0)), '\0');
  if (!path.empty()) H5Iget_name(obj, path.data(), path.size() + 1);
  H5Eclear2(H5E_DEFAULT);
  return file + ":" + (path.empty() ? "(unlinked)" : path);
}

bool is_hdf5(const std::string& path) {
  quiet();
#if H5_VERSION_GE(1, 12, 0)
  const htri_t r = H5Fis_accessible(path.c_str(), H5P_DEFAULT);
#else
  const htri_t r = H5Fis_hdf5(path.c_str());
#endif
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

std::string library_description() {
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  std::string s = "HDF5 " + std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel);
#ifdef H5_HAVE_PARALLEL
  return s + " (parallel, MPI-IO)";
#else
  return s + " (serial)";
#endif
}

Id create_file(const std::string& path) {
  quiet();
  Id fapl = file_access();
  return Id(check(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), "create file", path), H5Fclose);
}

Id open_file(const std::string& path, bool write) {
  quiet();
  Id fapl = file_access();
  return Id(check(H5Fopen(path.c_str(), write ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get()),
                  write ? "open for writing" : "open", path),
            H5Fclose);
}

void close_file(Id& file) {
  const std::string at = where(file.get());
  check(H5Fclose(file.release()), "close", at);
}

void flush(hid_t file) { check(H5Fflush(file, H5F_SCOPE_LOCAL), "flush", file); }

Id create_group(hid_t loc, const std::string& name) {
  return Id(check(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create group", loc, name),
            H5Gclose);
}

Id open_group(hid_t loc, const std::string& name) {
  return Id(check(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), "open group", loc, name), H5Gclose);
}

Id create_unlinked_group(hid_t file) {
  return Id(check(H5Gcreate_anon(file, H5P_DEFAULT, H5P_DEFAULT), "create an unlinked group in", file), H5Gclose);
}

void link(hid_t obj, hid_t loc, const std::string& name) {
  check(H5Olink(obj, loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT), "link", loc, name);
}

bool has_link(hid_t loc, const std::string& name) {
  const htri_t r = H5Lexists(loc, name.c_str(), H5P_DEFAULT);
  check(r, "look up", loc, name);
  return r > 0;
}

ObjectKind object_kind(hid_t loc, const std::string& name) {
  if (!has_link(loc, name)) return ObjectKind::missing;
  LinkInfo info{};
#if H5_VERSION_GE(1, 12, 0)
  check(H5Lget_info2(loc, name.c_str(), &info, H5P_DEFAULT), "look up", loc, name);
#else
  check(H5Lget_info(loc, name.c_str(), &info, H5P_DEFAULT), "look up", loc, name);
#endif
  if (info.type != H5L_TYPE_HARD) return ObjectKind::other;
  Id obj(check(H5Oopen(loc, name.c_str(), H5P_DEFAULT), "open", loc, name), H5Oclose);
  switch (H5Iget_type(obj.get())) {
    case H5I_GROUP: return ObjectKind::group;
    case H5I_DATASET: return ObjectKind::dataset;
    default: return ObjectKind::other;
  }
}

std::uint64_t file_size(hid_t obj) {
  Id file(check(H5Iget_file_id(obj), "find the file of", obj), H5Fclose);
  hsize_t size = 0;
  check(H5Fget_filesize(file.get(), &size), "get the size of", obj);
  return size;
}

std::vector<std::string> link_names(hid_t group) {
  std::vector<std::string> names;
  check(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_link, &names), "list the links of", group);
  return names;
}

void write_attr(hid_t obj, const std::string& name, std::int64_t value) {
  write_scalar(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void write_attr(hid_t obj, const std::string& name, double value) {
  write_scalar(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

void write_attr(hid_t obj, const std::string& name, const std::string& value) {
  Id type = string_type();
  const char* p = value.c_str();
  write_scalar(obj, name, type.get(), type.get(), &p);
}

bool has_attr(hid_t obj, const std::string& name) {
  const htri_t r = H5Aexists(obj, name.c_str());
  check(r, "look up attribute", obj, name);
  return r > 0;
}

std::int64_t read_int_attr(hid_t obj, const std::string& name) {
  std::int64_t v = 0;
  read_scalar(obj, name, H5T_INTEGER, "an integer", H5T_NATIVE_INT64, &v);
  return v;
}

double read_double_attr(hid_t obj, const std::string& name) {
  double v = 0;
  read_scalar(obj, name, H5T_FLOAT, "a floating-point number", H5T_NATIVE_DOUBLE, &v);
  return v;
}

std::string read_string_attr(hid_t obj, const std::string& name) {
  Id attr = open_attr(obj, name);
  // The file's own type serves as the memory type: HDF5 does not convert between character sets.
  Id type(check(H5Aget_type(attr.get()), "get the type of attribute", obj, name), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING) throw Error("HDF5: attribute '" + child(obj, name) + "' is not a string");
  check_one_element(attr.get(), obj, name);
  if (H5Tis_variable_str(type.get()) > 0) {
    char* s = nullptr;
    check(H5Aread(attr.get(), type.get(), &s), "read attribute", obj, name);
    const std::size_t n = s ? std::strlen(s) : 0;
    std::string out = n <= kMaxText ? std::string(s ? s : "", n) : std::string();
    H5free_memory(s);
    if (n > kMaxText) throw Error("HDF5: attribute '" + child(obj, name) + "' holds " + std::to_string(n) + " bytes of text, more than a results file has");
    return out;
  }
  // A fixed-length attribute lives in the object header, whose messages are at most 64 KiB.
  const std::size_t size = H5Tget_size(type.get());
  if (size == 0 || size > 65536)
    throw Error("HDF5: attribute '" + child(obj, name) + "' claims a fixed length of " + std::to_string(size) + " bytes");
  std::string out(size, '\0');
  check(H5Aread(attr.get(), type.get(), out.data()), "read attribute", obj, name);
  out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  return out;
}

std::vector<std::string> attr_names(hid_t obj) {
  std::vector<std::string> names;
  check(H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_attr, &names), "list the attributes of", obj);
  return names;
}

Id string_type() {
  Id t(check(H5Tcopy(H5T_C_S1), "copy the string type", ""), H5Tclose);
  check(H5Tset_size(t.get(), H5T_VARIABLE), "make a variable-length string type", "");
  check(H5Tset_cset(t.get(), H5T_CSET_UTF8), "make a UTF-8 string type", "");
  return t;
}

Id compound_type(std::size_t size) {
  return Id(check(H5Tcreate(H5T_COMPOUND, size), "create a compound type", ""), H5Tclose);
}

void insert_member(hid_t compound, const char* name, std::size_t offset, hid_t member_type) {
  check(H5Tinsert(compound, name, offset, member_type), std::string("insert compound member ") + name, "");
}

Id enum_type(hid_t base, const std::vector<const char*>& names) {
  Id t(check(H5Tenum_create(base), "create an enumeration type", ""), H5Tclose);
  // Values go in as the base type's bytes: convert 0, 1, 2, ... from long long.
  const std::size_t size = H5Tget_size(base);
  for (std::size_t i = 0; i < names.size(); ++i) {
    long long v = static_cast<long long>(i);
    std::vector<unsigned char> buf(std::max(size, sizeof v));
    std::memcpy(buf.data(), &v, sizeof v);
    check(H5Tconvert(H5T_NATIVE_LLONG, base, 1, buf.data(), nullptr, H5P_DEFAULT), "convert an enumeration value", "");
    check(H5Tenum_insert(t.get(), names[i], buf.data()), std::string("insert enumeration value ") + names[i], "");
  }
  return t;
}

void write_table(hid_t loc, const std::string& name, hid_t type, const void* data, std::size_t count) {
  const hsize_t dims[1] = {static_cast<hsize_t>(count)};
  Id space(check(H5Screate_simple(1, dims, nullptr), "create a dataspace for", loc, name), H5Sclose);
  Id dset(check(H5Dcreate2(loc, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                "create dataset", loc, name),
          H5Dclose);
  if (count > 0) check(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write dataset", loc, name);
}

std::size_t table_size(hid_t loc, const std::string& name) {
  Id dset = open_dataset(loc, name);
  Id space(check(H5Dget_space(dset.get()), "get the dataspace of", loc, name), H5Sclose);
  if (H5Sget_simple_extent_ndims(space.get()) != 1) throw Error("HDF5: dataset '" + child(loc, name) + "' is not one-dimensional");
  hsize_t dims[1] = {0};
  check(H5Sget_simple_extent_dims(space.get(), dims, nullptr), "get the size of", loc, name);
  return static_cast<std::size_t>(dims[0]);
}

std::size_t checked_table_size(hid_t loc, const std::string& name, hid_t mem_type) {
  const auto bad = [&](const std::string& why) { return Error("HDF5: dataset '" + child(loc, name) + "' " + why); };
  if (object_kind(loc, name) != ObjectKind::dataset) throw bad("is not a dataset");
  Id dset = open_dataset(loc, name);
  Id type(check(H5Dget_type(dset.get()), "get the type of", loc, name), H5Tclose);
  const H5T_class_t cls = H5Tget_class(mem_type);
  if (H5Tget_class(type.get()) != cls) throw bad("has another type than pipebench writes there");
  if (cls == H5T_COMPOUND) {
    const int members = H5Tget_nmembers(mem_type);
    for (int i = 0; i < members; ++i) {
      char* member = H5Tget_member_name(mem_type, static_cast<unsigned>(i));
      const std::string field = member ? member : "";
      H5free_memory(member);
      const int at = H5Tget_member_index(type.get(), field.c_str());
      if (at < 0 || H5Tget_member_class(type.get(), static_cast<unsigned>(at)) !=
                        H5Tget_member_class(mem_type, static_cast<unsigned>(i))) {
        H5Eclear2(H5E_DEFAULT);
        throw bad("lacks the field '" + field + "' or holds it with another type");
      }
    }
  }
  const std::size_t count = table_size(loc, name);
  const std::size_t element = std::max<std::size_t>(H5Tget_size(type.get()), 1);
  if (count > file_size(loc) / element)
    throw bad("claims " + std::to_string(count) + " elements of " + std::to_string(element) +
              " bytes, more than the file holds");
  return count;
}

void read_table(hid_t loc, const std::string& name, hid_t mem_type, void* data) {
  Id dset = open_dataset(loc, name);
  check(H5Dread(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "read dataset", loc, name);
}

void reclaim_table(hid_t mem_type, std::size_t count, void* data) {
  if (count == 0) return;
  const hsize_t dims[1] = {static_cast<hsize_t>(count)};
  Id space(check(H5Screate_simple(1, dims, nullptr), "create a dataspace", ""), H5Sclose);
#if H5_VERSION_GE(1, 12, 0)
  check(H5Treclaim(mem_type, space.get(), H5P_DEFAULT, data), "free variable-length data", "");
#else
  check(H5Dvlen_reclaim(mem_type, space.get(), H5P_DEFAULT, data), "free variable-length data", "");
#endif
}

}  // namespace pipebench::bench::h5
