# Finds every dependency of pipebench up front, with a message that names the Debian package when one
# is missing (docs/design.md, "Dependencies"). Results are summarised at the end of configuration.

macro(pipebench_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "pipebench: ${what} not found. On Debian 12 install it with:\n"
                        "  apt-get install ${package}\n"
                        "or run ./jobs/setup.sh, which installs everything the build needs.")
  endif()
endmacro()

# --- MPI (MPICH) ------------------------------------------------------------------------------
find_package(MPI COMPONENTS C CXX)
pipebench_require(MPI_CXX_FOUND "MPI (C++ bindings of an MPI library)" "mpich libmpich-dev")

# --- HDF5, parallel -------------------------------------------------------------------------------
# Debian keeps the MPICH flavour under a path that FindHDF5 only finds through its compiler wrapper.
if(NOT HDF5_C_COMPILER_EXECUTABLE AND EXISTS /usr/bin/h5pcc.mpich)
  set(HDF5_C_COMPILER_EXECUTABLE /usr/bin/h5pcc.mpich)
endif()
set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 COMPONENTS C)
pipebench_require(HDF5_FOUND "HDF5" "libhdf5-mpich-dev")
if(NOT HDF5_IS_PARALLEL)
  message(WARNING "pipebench: the HDF5 found (${HDF5_VERSION}) is serial; results are gathered to rank 0 anyway, "
                  "but install libhdf5-mpich-dev for the parallel build docs/design.md expects.")
endif()
add_library(pipebench_hdf5 INTERFACE)
target_include_directories(pipebench_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
target_link_libraries(pipebench_hdf5 INTERFACE ${HDF5_C_LIBRARIES} ${HDF5_LIBRARIES} MPI::MPI_C)
target_compile_definitions(pipebench_hdf5 INTERFACE ${HDF5_C_DEFINITIONS} ${HDF5_DEFINITIONS})
add_library(pipebench::hdf5 ALIAS pipebench_hdf5)

# --- Kokkos and KokkosKernels ---------------------------------------------------------------------
# The backend is whatever the Kokkos install was built with: checked and reported, never chosen here.
# Any Kokkos >= 3.4: -DKokkos_ROOT=<prefix> or CMAKE_PREFIX_PATH picks one (jobs/kokkos.sh builds 4.x),
# else Debian's 3.4 is found. KokkosKernels is then looked for in the same prefix first, since Debian's
# has no version file and would otherwise be taken next to a Kokkos 4.
set(PIPEBENCH_KOKKOS_MIN_VERSION 3.4 CACHE STRING "Oldest Kokkos accepted (the kokkos4-* presets ask for 4)")
find_package(Kokkos ${PIPEBENCH_KOKKOS_MIN_VERSION} CONFIG QUIET)
if(NOT Kokkos_FOUND AND PIPEBENCH_KOKKOS_MIN_VERSION VERSION_GREATER_EQUAL 4)
  message(FATAL_ERROR "pipebench: no Kokkos >= ${PIPEBENCH_KOKKOS_MIN_VERSION} at Kokkos_ROOT='${Kokkos_ROOT}': "
                      "build one with jobs/kokkos.sh openmp|cuda and pass -DKokkos_ROOT=<the prefix it prints>.")
endif()
pipebench_require(Kokkos_FOUND "Kokkos" "libtrilinos-kokkos-dev")
get_filename_component(_pb_kokkos_prefix "${Kokkos_DIR}/../../.." ABSOLUTE)
# Debian's Trilinos build points Kokkos::kokkos at <prefix>/include, but the headers live in
# <prefix>/include/trilinos: repair the target when its directory does not exist.
get_target_property(_pb_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
set(_pb_kokkos_inc_ok TRUE)
foreach(_dir IN LISTS _pb_kokkos_inc)
  if(NOT _dir MATCHES "^\\$<" AND NOT EXISTS "${_dir}/Kokkos_Core.hpp")
    set(_pb_kokkos_inc_ok FALSE)
  endif()
endforeach()
if(NOT _pb_kokkos_inc_ok AND Kokkos_INCLUDE_DIRS)
  get_filename_component(_pb_kokkos_real "${Kokkos_INCLUDE_DIRS}" REALPATH)
  set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_pb_kokkos_real}")
  message(STATUS "pipebench: repaired Kokkos::kokkos include directory -> ${_pb_kokkos_real}")
endif()
set(PIPEBENCH_KOKKOS_DEVICES "${Kokkos_DEVICES}")
message(STATUS "pipebench: Kokkos ${Kokkos_VERSION}, devices: ${Kokkos_DEVICES}")

find_package(KokkosKernels CONFIG QUIET HINTS "${_pb_kokkos_prefix}")
pipebench_require(KokkosKernels_FOUND "KokkosKernels" "libtrilinos-kokkos-kernels-dev")
string(REGEX MATCH "^[0-9]+" _pb_kk_major "${KokkosKernels_VERSION}")
string(REGEX MATCH "^[0-9]+" _pb_kokkos_major "${Kokkos_VERSION}")
if(Kokkos_VERSION VERSION_GREATER_EQUAL 4 AND NOT _pb_kk_major STREQUAL _pb_kokkos_major)
  message(FATAL_ERROR "pipebench: Kokkos ${Kokkos_VERSION} (${Kokkos_DIR}) needs the KokkosKernels of the same "
                      "release, but found KokkosKernels '${KokkosKernels_VERSION}' (${KokkosKernels_DIR}). "
                      "Install both into one prefix (jobs/kokkos.sh does) or set KokkosKernels_ROOT.")
endif()
message(STATUS "pipebench: KokkosKernels ${KokkosKernels_VERSION} (empty: no version file) from ${KokkosKernels_DIR}")
add_library(pipebench_kokkoskernels INTERFACE)
if(TARGET Kokkos::kokkoskernels)
  target_link_libraries(pipebench_kokkoskernels INTERFACE Kokkos::kokkoskernels)
else()
  # Trilinos' KokkosKernels config exports variables, not a target.
  get_filename_component(_pb_kk_inc "${KokkosKernels_INCLUDE_DIRS}" REALPATH)
  target_include_directories(pipebench_kokkoskernels SYSTEM INTERFACE "${_pb_kk_inc}")
  find_library(PIPEBENCH_KOKKOSKERNELS_LIB NAMES trilinos_kokkoskernels kokkoskernels
               HINTS ${KokkosKernels_LIBRARY_DIRS})
  pipebench_require(PIPEBENCH_KOKKOSKERNELS_LIB "the KokkosKernels library" "libtrilinos-kokkos-kernels-dev")
  target_link_libraries(pipebench_kokkoskernels INTERFACE ${PIPEBENCH_KOKKOSKERNELS_LIB} Kokkos::kokkos
                        ${KokkosKernels_TPL_LIBRARIES})
endif()
add_library(pipebench::kokkoskernels ALIAS pipebench_kokkoskernels)

# --- CLI11, JSON ----------------------------------------------------------------------------------
find_package(CLI11 CONFIG QUIET)
pipebench_require(CLI11_FOUND "CLI11" "libcli11-dev")
find_package(nlohmann_json CONFIG QUIET)
pipebench_require(nlohmann_json_FOUND "nlohmann-json" "nlohmann-json3-dev")

# --- GoogleTest, Google Benchmark -----------------------------------------------------------------
if(PIPEBENCH_ENABLE_TESTS)
  find_package(GTest QUIET)
  pipebench_require(GTest_FOUND "GoogleTest" "libgtest-dev")
endif()
if(PIPEBENCH_ENABLE_BENCHMARKS)
  find_package(benchmark QUIET)
  pipebench_require(benchmark_FOUND "Google Benchmark" "libbenchmark-dev")
endif()

# --- CUDA and NCCL (optional) ---------------------------------------------------------------------
# The NCCL backend is plain C++ against the CUDA runtime and NCCL headers, so it compiles and links
# on a machine without a GPU; it only needs a device when it runs.
set(PIPEBENCH_HAVE_NCCL OFF)
if(NOT PIPEBENCH_ENABLE_NCCL STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_path(PIPEBENCH_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
    find_library(PIPEBENCH_NCCL_LIB nccl
                 HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_TARGET_DIR}/lib
                       ENV NCCL_HOME PATH_SUFFIXES lib lib64)
  endif()
  if(CUDAToolkit_FOUND AND PIPEBENCH_NCCL_INCLUDE AND PIPEBENCH_NCCL_LIB)
    set(PIPEBENCH_HAVE_NCCL ON)
    add_library(pipebench_nccl INTERFACE)
    target_include_directories(pipebench_nccl SYSTEM INTERFACE ${PIPEBENCH_NCCL_INCLUDE})
    target_link_libraries(pipebench_nccl INTERFACE ${PIPEBENCH_NCCL_LIB} CUDA::cudart)
    add_library(pipebench::nccl ALIAS pipebench_nccl)
    message(STATUS "pipebench: NCCL backend ON (CUDA ${CUDAToolkit_VERSION}, ${PIPEBENCH_NCCL_LIB})")
  elseif(PIPEBENCH_ENABLE_NCCL STREQUAL "ON")
    message(FATAL_ERROR "pipebench: PIPEBENCH_ENABLE_NCCL=ON but CUDA (${CUDAToolkit_FOUND}) or NCCL "
                        "(header: ${PIPEBENCH_NCCL_INCLUDE}, library: ${PIPEBENCH_NCCL_LIB}) was not found. "
                        "Install the CUDA toolkit and NCCL, set NCCL_HOME, or configure with -DPIPEBENCH_ENABLE_NCCL=OFF.")
  else()
    message(STATUS "pipebench: NCCL backend OFF (CUDA or NCCL not found)")
  endif()
endif()
