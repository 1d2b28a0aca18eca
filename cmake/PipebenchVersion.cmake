# The commit is read at build time (not configure time) so `pipebench info` never reports a stale one.
set(PIPEBENCH_VERSION_IN "${CMAKE_CURRENT_LIST_DIR}/version.cpp.in")
set(PIPEBENCH_VERSION_CPP "${CMAKE_BINARY_DIR}/generated/version.cpp")
add_custom_target(pipebench_version_gen
  COMMAND ${CMAKE_COMMAND}
          -DSRC=${CMAKE_SOURCE_DIR} -DIN=${PIPEBENCH_VERSION_IN} -DOUT=${PIPEBENCH_VERSION_CPP}
          -DVERSION=${PROJECT_VERSION} -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
          "-DFLAGS=${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${CMAKE_BUILD_TYPE_UPPER}}"
          -DCOMPILER=${CMAKE_CXX_COMPILER_ID}-${CMAKE_CXX_COMPILER_VERSION}
          -P ${CMAKE_CURRENT_LIST_DIR}/WriteVersion.cmake
  BYPRODUCTS ${PIPEBENCH_VERSION_CPP}
  COMMENT "Recording the git commit")
string(TOUPPER "${CMAKE_BUILD_TYPE}" CMAKE_BUILD_TYPE_UPPER)
