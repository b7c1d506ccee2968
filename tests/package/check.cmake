# Installs cairn, checks what was installed, and builds and runs tests/package against it with
# find_package(cairn CONFIG) and pkg-config (cairn.pc); with add_subdirectory it compiles.
#   cmake -DCAIRN_BUILD_DIR=... -DCAIRN_SOURCE_DIR=... -DWORK_DIR=... -DCXX=<c++ compiler>
#         -DLIBDIR=<lib dir under the prefix> -DPROGRAMS=<a,b,...: programs under the prefix>
#         -P check.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${CAIRN_BUILD_DIR} --prefix ${prefix})

# What must be installed besides the headers and the library: the CMake package, the
# pkg-config file and the programs (cairn-info, cairn-bench, the examples).
string(REPLACE "," ";" programs "${PROGRAMS}")
foreach(f include/cairn/cairn.hpp ${LIBDIR}/cmake/cairn/cairnConfig.cmake
          ${LIBDIR}/pkgconfig/cairn.pc ${programs})
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()
foreach(f IN LISTS programs)
  if(NOT IS_DIRECTORY ${prefix}/${f})
    execute_process(COMMAND test -x ${prefix}/${f} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "not executable: ${prefix}/${f}")
    endif()
  endif()
endforeach()
list(LENGTH programs n)
message(STATUS "installed: cairn.pc, the CMake package and ${n} programs")

set(src ${CAIRN_SOURCE_DIR}/tests/package)
run(${CMAKE_COMMAND} -S ${src} -B ${WORK_DIR}/installed -G Ninja -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/installed)
run(${WORK_DIR}/installed/consumer)
if(EXISTS ${WORK_DIR}/installed/fft_consumer)
  run(${WORK_DIR}/installed/fft_consumer)
endif()

# pkg-config, as a Makefile would use it: c++ -std=c++20 consumer.cpp $(pkg-config ...).
find_program(PKG_CONFIG pkg-config REQUIRED)
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig
    ${PKG_CONFIG} --cflags --libs cairn)
string(STRIP "${run_output}" flags)
message(STATUS "pkg-config --cflags --libs cairn: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
file(MAKE_DIRECTORY ${WORK_DIR}/pkg-config)
run(${CXX} -std=c++20 -O1 ${src}/consumer.cpp ${flags} -o ${WORK_DIR}/pkg-config/consumer)
run(${WORK_DIR}/pkg-config/consumer)
if(EXISTS ${prefix}/${LIBDIR}/pkgconfig/cairn-fft.pc)
  run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig
      ${PKG_CONFIG} --cflags --libs cairn-fft)
  string(STRIP "${run_output}" fft_flags)
  message(STATUS "pkg-config --cflags --libs cairn-fft: ${fft_flags}")
  separate_arguments(fft_flags UNIX_COMMAND "${fft_flags}")
  run(${CXX} -std=c++20 -O1 ${src}/fft_consumer.cpp ${fft_flags} -o ${WORK_DIR}/pkg-config/fft_consumer)
  run(${WORK_DIR}/pkg-config/fft_consumer)
endif()

run(${CMAKE_COMMAND} -S ${src} -B ${WORK_DIR}/subdir -G Ninja -DCAIRN_SOURCE_DIR=${CAIRN_SOURCE_DIR}
    -DCMAKE_BUILD_TYPE=Release)
# Compiles the consumer against the target's usage requirements but links nothing: linking
# would build the whole library a second time (200 of the test's 210 s here), from the same
# sources and flags as the build under test.
run(${CMAKE_COMMAND} --build ${WORK_DIR}/subdir --target CMakeFiles/consumer.dir/consumer.cpp.o)
message(STATUS "find_package(cairn CONFIG) and pkg-config build and run; add_subdirectory compiles")
