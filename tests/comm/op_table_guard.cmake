# Script mode (-DSOURCE_DIR=... -DCXX=... -DWORK=...): the table of pipebench comm's operations
# (comm/bench_ops.cpp) does not compile unless every enumerator of BenchOp has its row, in order. The
# real header compiles; copies of it with an operation added (at the end, in the middle) or two swapped
# must fail on the table's static_asserts.
cmake_policy(SET CMP0007 NEW)
set(header ${SOURCE_DIR}/comm/bench_ops.hpp)
file(READ ${header} text)
set(enum "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv, latency, bw, bibw, alltoallv, count")
string(FIND "${text}" "enum class BenchOp { ${enum} };" at)
if(at LESS 0)
  message(FATAL_ERROR "comm/bench_ops.hpp: the enum is not '${enum}' any more: update this test's edits")
endif()

# Compiles comm/bench_ops.cpp with the header `dir`/comm/bench_ops.hpp (empty: the real one).
function(compile dir result_var out_var)
  set(includes -I${SOURCE_DIR})
  if(dir)
    set(includes -I${dir} ${includes})
  endif()
  execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only ${includes} ${SOURCE_DIR}/comm/bench_ops.cpp
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  set(${result_var} ${rc} PARENT_SCOPE)
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

compile("" rc out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "comm/bench_ops.cpp does not compile alone:\n${out}")
endif()

set(cases
    "end|alltoallv, count|alltoallv, gather, count|every BenchOp needs its row"
    "middle|all_reduce, all_gather|all_reduce, gather, all_gather|every BenchOp needs its row"
    "swapped|latency, bw, bibw|latency, bibw, bw|rows in the enum's order")
foreach(case IN LISTS cases)
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 from)
  list(GET parts 2 to)
  list(GET parts 3 why)
  string(REPLACE "${from}" "${to}" changed "${enum}")
  string(REPLACE "enum class BenchOp { ${enum} };" "enum class BenchOp { ${changed} };" edited "${text}")
  file(WRITE ${WORK}/${name}/comm/bench_ops.hpp "${edited}")
  compile(${WORK}/${name} rc out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${name}: BenchOp { ${changed} } compiled against the table of ${enum}")
  endif()
  string(FIND "${out}" "${why}" found)
  if(found LESS 0)
    message(FATAL_ERROR "${name}: BenchOp { ${changed} } failed, but not on '${why}':\n${out}")
  endif()
  message(STATUS "${name}: refused (${why})")
endforeach()
