# Script mode (-DSOURCE_DIR=...): the folder rules of docs/design.md "Folder rules", checked on the
# sources so that a change that breaks them fails the tests:
#   - dependencies go one way: a folder includes only from the folders below it;
#   - analysis/ is free of MPI, HDF5 and Kokkos;
#   - no source file is over 450 lines, no folder (its own files) holds over 30 % of the non-test C++;
#   - kernels/ never synchronises the whole device: no Kokkos::fence() and no deep_copy without an
#     execution space (docs/gpu.md "run --backend nccl": it would wait for NCCL receives posted ahead);
#   - the transformer's FLOP and parameter formulas have one definition, the cost model's
#     (analysis/transformer/): no other source line multiplies the hidden size by itself, by the
#     vocabulary, the MLP or key/value width (h * h, h * ht, hidden * vocab, f * h, mul(h, ht)), a
#     constant by s and h (4.0 * s * h), or writes 72 * or 96 * (the model-FLOP constants); the
#     micro-benchmarks take their products' FLOPs from the model too. -DEXTRA=<file;...> adds files
#     (relative to SOURCE_DIR) to the scan: the layout.formula_copy_is_caught test plants a copy that
#     must be found.
cmake_policy(SET CMP0007 NEW)
set(allowed_analysis "analysis/")
set(allowed_analysis_plan "analysis/")
set(allowed_analysis_schedules "analysis/")
set(allowed_analysis_transformer "analysis/")
set(allowed_topology "analysis/|topology/")
set(allowed_comm "analysis/|topology/|comm/")
set(allowed_kernels "analysis/|topology/|comm/|kernels/")
set(allowed_bench_results "analysis/|topology/|comm/|kernels/|bench/results/|bench/version.hpp")
set(allowed_bench_render "analysis/|topology/|comm/|kernels/|bench/results/|bench/render/|bench/version.hpp")
set(allowed_bench_run "analysis/|topology/|comm/|kernels/|bench/results/|bench/render/|bench/run/|bench/parse.hpp|bench/version.hpp|bench/exit_code.hpp")
# bench/ itself is the command line every front end shares: it includes only its own headers.
set(allowed_bench "analysis/|topology/|comm/|kernels/|bench/[a-z_]+\\.hpp")
set(allowed_bench_cmd "analysis/|topology/|comm/|kernels/|bench/")
set(allowed_bench_micro "analysis/|topology/|comm/|kernels/|bench/")
set(forbidden_analysis "<mpi.h>|<hdf5.h>|<Kokkos|<KokkosBlas|<nccl.h>|<cuda")
set(forbidden_analysis_plan "${forbidden_analysis}")
set(forbidden_analysis_schedules "${forbidden_analysis}")
set(forbidden_analysis_transformer "${forbidden_analysis}")
# CMake's regular expressions have no \b and at most 9 groups each: a name is delimited by what cannot
# be part of one, and each form of a formula has its own expression.
set(_pre "(^|[^A-Za-z0-9_.])([a-z_]+\\.)?")
set(_post "([^A-Za-z0-9_(]|$)")
set(_member "([a-z_]+\\.)?")
set(formula_regexes
    "${_pre}(h|hidden|ht) *\\)? *\\* *\\(? *${_member}(h|hidden|ht|V|vocab|f|ffn|kv)${_post}"
    "${_pre}(V|vocab|f|ffn) *\\* *${_member}(h|hidden)${_post}"
    "mul\\((h|hidden), *(h|ht|hidden|V|vocab)\\)"
    "[0-9.]+ *\\* *${_member}(s|seq) *\\* *${_member}(h|hidden|ht)${_post}"
    "(^|[^A-Za-z0-9_.])(72|96)(\\.0)? *\\* *[A-Za-z_]")

file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/analysis/*.[ch]pp ${SOURCE_DIR}/topology/*.[ch]pp
     ${SOURCE_DIR}/comm/*.[ch]pp ${SOURCE_DIR}/kernels/*.[ch]pp ${SOURCE_DIR}/bench/*.[ch]pp)
list(APPEND sources ${EXTRA})
set(problems "")
set(total 0)
foreach(src IN LISTS sources)
  get_filename_component(dir ${src} DIRECTORY)
  string(REPLACE "/" "_" key "${dir}")
  file(READ ${SOURCE_DIR}/${src} content)
  string(REGEX MATCHALL "\n" newlines "${content}")
  list(LENGTH newlines n)
  file(STRINGS ${SOURCE_DIR}/${src} lines REGEX "^#include ")
  math(EXPR total "${total} + ${n}")
  math(EXPR lines_${key} "0${lines_${key}} + ${n}")
  list(APPEND dirs ${key})
  if(n GREATER 450)
    string(APPEND problems "${src}: ${n} lines (at most 450)\n")
  endif()
  if(key STREQUAL "kernels")
    file(STRINGS ${SOURCE_DIR}/${src} syncs REGEX "Kokkos::fence\\(|deep_copy\\(")
    foreach(line IN LISTS syncs)
      if(line MATCHES "^ *//")
        continue()
      endif()
      if(line MATCHES "Kokkos::fence\\(" OR NOT line MATCHES "deep_copy\\((E\\(\\)|Exec\\(\\)|exec,|Kokkos::DefaultExecutionSpace\\(\\)|typename D::execution_space\\(\\))")
        string(STRIP "${line}" line)
        string(APPEND problems "${src}: \"${line}\" synchronises the whole device: fence or copy on an execution space instance\n")
      endif()
    endforeach()
  endif()
  if(NOT src MATCHES "^analysis/transformer/")
    foreach(regex IN LISTS formula_regexes)
      file(STRINGS ${SOURCE_DIR}/${src} formulas REGEX "${regex}")
      foreach(line IN LISTS formulas)
        string(REGEX REPLACE "//.*$" "" code "${line}")
        if(code MATCHES "${regex}")
          string(STRIP "${line}" line)
          string(APPEND problems "${src}: \"${line}\" is a second definition of the transformer's formulas: "
                 "take it from the cost model (analysis/transformer/)\n")
        endif()
      endforeach()
    endforeach()
  endif()
  foreach(line IN LISTS lines)
    if(line MATCHES "^#include \"([^\"]+)\"")
      set(inc "${CMAKE_MATCH_1}")
      if(NOT inc MATCHES "^(${allowed_${key}})")
        string(APPEND problems "${src} includes \"${inc}\": ${dir}/ may include only ${allowed_${key}}\n")
      endif()
    elseif(line MATCHES "^#include (<[^>]+>)" AND DEFINED forbidden_${key})
      if(CMAKE_MATCH_1 MATCHES "^(${forbidden_${key}})")
        string(APPEND problems "${src} includes ${CMAKE_MATCH_1}: ${dir}/ stays free of MPI, HDF5, Kokkos and CUDA\n")
      endif()
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES dirs)
set(report "")
foreach(key IN LISTS dirs)
  math(EXPR percent "100 * ${lines_${key}} / ${total}")
  string(APPEND report "  ${key}: ${lines_${key}} lines (${percent} %)\n")
  if(lines_${key} GREATER 0 AND percent GREATER_EQUAL 30)
    string(APPEND problems "${key}: ${percent} % of the ${total} non-test C++ lines (at most 30 %)\n")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "folder rules broken:\n${problems}")
endif()
message(STATUS "ok: ${total} lines\n${report}")
