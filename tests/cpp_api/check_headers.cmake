# cmake -P script of the test cpp_api.headers_private_deps: the public headers bring none of
# normnet's private dependencies (cblas.h/OpenBLAS, CLI11, nlohmann/json, zlib, OpenMP) into
# users' code, and the umbrella <normnet/normnet.hpp> includes every public header.
# Inputs: COMPILER, INCLUDE_DIR (the include/ folder), WORK (a scratch folder).
cmake_minimum_required(VERSION 3.25)

file(GLOB headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/normnet/*.hpp ${INCLUDE_DIR}/normnet/nn/*.hpp)
file(READ ${INCLUDE_DIR}/normnet/layers.hpp layers)
file(READ ${INCLUDE_DIR}/normnet/normnet.hpp umbrella)
set(tu "")
foreach(header ${headers})
  string(APPEND tu "#include <${header}>\n")
  if(header MATCHES "^normnet/nn/")
    # The layer families come in through layers.hpp, as torch/nn.h gathers torch/nn/modules.
    string(FIND "${layers}" "#include \"${header}\"" at)
    if(at EQUAL -1)
      message(SEND_ERROR "normnet/layers.hpp does not include ${header}")
    endif()
  elseif(NOT header STREQUAL "normnet/normnet.hpp")
    string(FIND "${umbrella}" "#include \"${header}\"" at)
    if(at EQUAL -1)
      message(SEND_ERROR "normnet/normnet.hpp does not include ${header}")
    endif()
  endif()
endforeach()
file(WRITE ${WORK}/all_headers.cpp "${tu}")

# Every file the headers pull in, as the compiler sees it (-M: dependency list, no compilation).
execute_process(COMMAND ${COMPILER} -std=c++20 -M -I${INCLUDE_DIR} ${WORK}/all_headers.cpp
                OUTPUT_VARIABLE deps ERROR_VARIABLE err RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the public headers do not preprocess:\n${err}")
endif()
foreach(forbidden "cblas[^ ]*\\.h" "openblas" "/CLI/" "nlohmann" "/zlib\\.h" "/omp\\.h")
  if(deps MATCHES "[^ ]*${forbidden}[^ ]*")
    message(SEND_ERROR "a public header includes ${CMAKE_MATCH_0}, a private dependency of normnet")
  endif()
endforeach()
list(LENGTH headers n)
message("${n} public headers checked")
