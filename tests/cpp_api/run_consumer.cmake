# Builds and runs code against an installed normnet, as a user elsewhere would (cmake -P script,
# run by the cpp_api.* tests). STEP says what:
#   install    cmake --install BUILD_DIR --prefix PREFIX (PREFIX is emptied first)
#   cmake      configure, build and run the project SOURCE (tests/consumer) with
#              CMAKE_PREFIX_PATH=PREFIX, i.e. through find_package(normnet)
#   pkgconfig  compile SOURCE/main.cpp with the flags of `pkg-config normnet` and run it
#   readme     extract the code blocks of README, build them against PREFIX and run the programs
#   docs       the same for every Markdown file under DOCS (docs/), in one project
# Other inputs: WORK (a scratch folder, emptied first), CONFIG, GENERATOR, MAKE_PROGRAM, CXX,
# PKG_CONFIG, README, DOCS, EXTRA_FLAGS (compile and link flags for everything built, e.g. sanitizers).
cmake_minimum_required(VERSION 3.25)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out
                  ${RUN_OPTIONS})
  message("${out}")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} failed (${result}): ${ARGN}")
  endif()
endfunction()

if(NOT CONFIG)
  set(CONFIG Release)
endif()
set(configure_args -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=${CONFIG}
                   "-DCMAKE_PREFIX_PATH=${PREFIX}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(MAKE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
separate_arguments(extra_flags UNIX_COMMAND "${EXTRA_FLAGS}")
if(EXTRA_FLAGS)
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=${EXTRA_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}")
endif()

# Configures and builds the project in `source` into `build`, through find_package(normnet).
function(build_project source build)
  run("configuring ${source}" ${CMAKE_COMMAND} -S ${source} -B ${build} ${configure_args})
  # The package must come from the temporary prefix, not from a normnet installed elsewhere.
  file(STRINGS ${build}/CMakeCache.txt found REGEX "^normnet_DIR:")
  string(FIND "${found}" "${PREFIX}/" at)
  if(NOT at GREATER -1)
    message(FATAL_ERROR "find_package(normnet) found another normnet: ${found}")
  endif()
  run("building ${source}" ${CMAKE_COMMAND} --build ${build} --config ${CONFIG} -j 2)
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} --config ${CONFIG})
  foreach(required include/normnet/normnet.hpp include/normnet/function.hpp share/normnet/fetch_mnist.sh)
    if(NOT EXISTS ${PREFIX}/${required})
      message(FATAL_ERROR "not installed: ${required}")
    endif()
  endforeach()
  # An installed normnet without MNIST points to the fetch script installed beside it.
  execute_process(COMMAND ${PREFIX}/bin/normnet train --data ${WORK}/no-mnist ERROR_VARIABLE hint OUTPUT_QUIET
                  RESULT_VARIABLE status)
  string(FIND "${hint}" "${PREFIX}/share/normnet/fetch_mnist.sh" at)
  if(NOT status EQUAL 1 OR at EQUAL -1)
    message(FATAL_ERROR "installed normnet without data: expected exit 1 naming ${PREFIX}/share/normnet/fetch_mnist.sh, got ${status}: ${hint}")
  endif()
  file(GLOB_RECURSE configs ${PREFIX}/*/normnetConfig.cmake ${PREFIX}/*/normnet.pc)
  list(LENGTH configs n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "expected normnetConfig.cmake and normnet.pc under ${PREFIX}, found: ${configs}")
  endif()
  return()
endif()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

if(STEP STREQUAL "cmake")
  build_project(${SOURCE} ${WORK}/build)
  run("running the consumer" ${WORK}/build/consumer ${WORK})

elseif(STEP STREQUAL "pkgconfig")
  if(NOT PKG_CONFIG)
    message("pkg-config not found: nothing to check")
    return()
  endif()
  file(GLOB_RECURSE pc ${PREFIX}/*/normnet.pc)
  get_filename_component(pc_dir "${pc}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs normnet OUTPUT_VARIABLE flags RESULT_VARIABLE result
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${PKG_CONFIG} --variable=libdir normnet OUTPUT_VARIABLE libdir
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs normnet failed")
  endif()
  message("pkg-config --cflags --libs normnet: ${flags}")
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run("compiling with pkg-config's flags" ${CXX} -O1 -Wall -Wextra -Werror ${extra_flags} ${SOURCE}/main.cpp ${flags}
      -Wl,-rpath,${libdir} -o ${WORK}/consumer)
  run("running the consumer" ${WORK}/consumer ${WORK})

elseif(STEP STREQUAL "readme")
  include(${CMAKE_CURRENT_LIST_DIR}/readme_blocks.cmake)
  extract_readme_blocks(${README} ${WORK}/src programs)
  build_project(${WORK}/src ${WORK}/build)
  set(RUN_OPTIONS WORKING_DIRECTORY ${WORK} TIMEOUT 60)
  foreach(program ${programs})
    run("running README program ${program}" ${WORK}/build/${program})
  endforeach()

elseif(STEP STREQUAL "docs")
  include(${CMAKE_CURRENT_LIST_DIR}/readme_blocks.cmake)
  docs_blocks(${DOCS} ${WORK}/src programs)
  build_project(${WORK}/src ${WORK}/build)
  set(RUN_OPTIONS WORKING_DIRECTORY ${WORK} TIMEOUT 60)
  foreach(program ${programs})
    run("running docs program ${program}" ${WORK}/build/${program})
  endforeach()

else()
  message(FATAL_ERROR "unknown STEP '${STEP}'")
endif()
