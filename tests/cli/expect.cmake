# Script mode: run EXE with ARGS (a ;-list), require exit code RC and output matching MATCH.
file(MAKE_DIRECTORY ${WORKDIR})
execute_process(COMMAND ${EXE} ${ARGS} WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 50)
set(all "${out}${err}")
if(NOT "${rc}" STREQUAL "${RC}")
  message(FATAL_ERROR "expected exit code ${RC}, got ${rc}\n--- output ---\n${all}")
endif()
if(MATCH AND NOT all MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}'\n--- output ---\n${all}")
endif()
message(STATUS "ok: exit ${rc}")
