# cmake -P script of the test cpp_api.exports: the shared library exports its public API and none
# of its internals (hidden visibility; only NORMNET_API declarations are exported).
# Inputs: NM (the nm program), LIBRARY (libnormnet.so).
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND ${NM} -DC --defined-only ${LIBRARY} OUTPUT_VARIABLE symbols RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIBRARY}")
endif()
# The check is alive: a public function is there.
if(NOT symbols MATCHES "normnet::layer_norm\\(")
  message(FATAL_ERROR "${LIBRARY} does not export normnet::layer_norm: is this the library?")
endif()
string(REGEX MATCHALL "[^\n]*normnet::detail::[^\n]*" internal "${symbols}")
list(LENGTH internal n)
if(n GREATER 0)
  list(SUBLIST internal 0 5 first)
  string(REPLACE ";" "\n" first "${first}")
  message(FATAL_ERROR "${LIBRARY} exports ${n} internal symbols, e.g.\n${first}")
endif()
message("no normnet::detail symbol exported")
