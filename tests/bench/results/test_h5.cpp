// The HDF5 wrapper: errors name the operation, the object and HDF5's reason; ids are closed.
#include <gtest/gtest.h>

#include <functional>

#include "bench/results/h5.hpp"
#include "scratch.hpp"

namespace pipebench::bench {
namespace {

class H5 : public testing::ScratchDir {};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(H5, ErrorsNameOperationObjectAndReason) {
  const std::string file = path("f.h5");
  h5::Id f = h5::create_file(file);
  h5::Id g = h5::create_group(f.get(), "runs");
  const std::string msg = error_of([&] { h5::open_group(g.get(), "missing"); });
  EXPECT_EQ(msg.rfind("HDF5: cannot open group '" + file + ":/runs/missing': ", 0), 0u) << msg;
  EXPECT_EQ(msg.find("unknown HDF5 error"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { h5::create_group(f.get(), "runs"); }).find("cannot create group '" + file + ":/runs'"),
            std::string::npos);
  h5::write_attr(g.get(), "name", std::string("x"));
  EXPECT_EQ(error_of([&] { h5::read_int_attr(g.get(), "name"); }),
            "HDF5: attribute '" + file + ":/runs/name' is not an integer");
  EXPECT_EQ(error_of([&] { h5::create_file(file); }).rfind("HDF5: cannot create file '" + file + "': ", 0), 0u);
}

TEST_F(H5, ReadsFixedLengthStringsOtherToolsWrite) {
  h5::Id f = h5::create_file(path("f.h5"));
  h5::Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), 8);  // numpy's S8, null-padded
  h5::Id space(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Id attr(H5Acreate2(f.get(), "s", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char value[8] = {'g', 'p', 'i', 'p', 'e', 0, 0, 0};
  ASSERT_GE(H5Awrite(attr.get(), type.get(), value), 0);
  EXPECT_EQ(h5::read_string_attr(f.get(), "s"), "gpipe");
}

TEST_F(H5, IdsCloseTheirObject) {
  hid_t raw = H5I_INVALID_HID;
  {
    h5::Id f = h5::create_file(path("f.h5"));
    raw = f.get();
    EXPECT_GT(H5Iis_valid(raw), 0);
    h5::Id moved = std::move(f);
    EXPECT_FALSE(f);
    EXPECT_EQ(moved.get(), raw);
  }
  EXPECT_LE(H5Iis_valid(raw), 0);
}

TEST(H5Text, LibraryDescription) {
  EXPECT_EQ(h5::library_description().rfind("HDF5 1.", 0), 0u);
  EXPECT_FALSE(h5::is_hdf5("/nonexistent/file.h5"));
}

}  // namespace
}  // namespace pipebench::bench
