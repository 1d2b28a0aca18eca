# One interface target that carries the project's warning flags; every pipebench target links it.
add_library(pipebench_warnings INTERFACE)
target_compile_options(pipebench_warnings INTERFACE
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU,Clang>>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion>)
add_library(pipebench::warnings ALIAS pipebench_warnings)

set(PIPEBENCH_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined")
if(PIPEBENCH_SANITIZE)
  add_compile_options(-fsanitize=${PIPEBENCH_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${PIPEBENCH_SANITIZE})
endif()

# nvcc's front end writes pointer-to-member declarations (`Member Record::*member;`) back out with
# parentheses, which g++ then flags with -Wparentheses: not in the sources, so not a finding. Only
# for builds through Kokkos' nvcc_wrapper (the kokkos4-cuda preset); host builds keep the warning.
if(CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper$")
  target_compile_options(pipebench_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-parentheses>)
endif()
