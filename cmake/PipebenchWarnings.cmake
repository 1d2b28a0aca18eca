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
