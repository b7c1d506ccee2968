# Test registration: every test runs on both engines.
#
#   cairn_add_test(<name> SOURCES <files...> [THREADS_RANKS <n...>] [MPI_RANKS <n...>]
#                  [NO_MPI] [ONE_NODE] [TIMEOUT <s>] [LIBS <targets...>] [ENV <VAR=value...>])
# builds one GoogleTest executable and registers it as <name>.threads.<n> for each threads-engine
# rank count (default 1 2 3 4 7 16) and <name>.mpi.<n> under mpiexec (default 2 4); with 4
# processes also as <name>.mpi.2x2, two emulated nodes of two (CAIRN_NODES=2), unless ONE_NODE
# (a test of node-memory algorithms, which emulated nodes refuse).
#
#   cairn_add_variant(<name> <test executable> ENV <VAR=value...> [THREADS_RANKS <n...>]
#                     [MPI_RANKS <n...>] [ONE_NODE])
# registers more runs of an existing test executable with extra environment (e.g. another
# progress mode) as <name>.threads.<n> and <name>.mpi.<n>.
#
#   cairn_add_failure_test(<name> PROGRAM <target> EXPECT <regex> [ARGS <args...>]
#                          [THREADS_RANKS <n...>] [MPI_RANKS <n...>] [ENV <VAR=value...>])
# registers runs of a program that must end the run: non-zero exit and output matching EXPECT
# (default ranks: threads 4, MPI 2).
#
#   cairn_add_exit_test(<name> PROGRAM <target> [EXIT <code>] EXPECT <regex> [REJECT <regex>]
#                       [ARGS <args...>] [THREADS_RANKS <n...>] [MPI_RANKS <n...>] [ENV <VAR=v...>])
# the same with an exact exit code (any non-zero one without EXIT) and output that must not
# match REJECT; only the rank counts given. Both check with cmake/expect_exit.cmake.
#
# Every test runs with the watchdog on (CAIRN_WATCHDOG_S) and a ctest timeout. Sanitized builds
# (CAIRN_SANITIZE) register no threads-engine run above CAIRN_TEST_SANITIZED_MAX_RANKS ranks.

find_package(GTest REQUIRED)

set(CAIRN_TEST_WATCHDOG_S 60 CACHE STRING "CAIRN_WATCHDOG_S for tests")
set(CAIRN_TEST_DEFAULT_THREADS_RANKS 1 2 3 4 7 16)
set(CAIRN_TEST_DEFAULT_MPI_RANKS 2 4)
# Sanitized builds run the threads engine up to this many ranks: the runs at 31, 64 and 256
# ranks test scale (and took 300 of the 2600 test-seconds of a TSan run here). TSan stops at 7:
# its 27 runs at 16 ranks took 730 of 2540 test-seconds here (16 threads on 2 cores), its 8
# runs at 8 ranks 390 of 1926 (the variants among them run at 3 ranks too), and the runs at 3
# and 7 ranks interleave the same code.
if(CAIRN_SANITIZE STREQUAL "thread")
  set(CAIRN_TEST_SANITIZED_MAX_RANKS 7)
else()
  set(CAIRN_TEST_SANITIZED_MAX_RANKS 16)
endif()

# MPI tests only in unsanitized builds (MPI libraries are not sanitizer-clean).
set(CAIRN_TEST_MPI OFF)
if(CAIRN_HAVE_MPI AND CAIRN_SANITIZE STREQUAL "" AND MPIEXEC_EXECUTABLE)
  set(CAIRN_TEST_MPI ON)
  set(CAIRN_MPIEXEC_FLAGS ${MPIEXEC_PREFLAGS})
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _cairn_mpiexec_version
                  ERROR_QUIET)
  if(_cairn_mpiexec_version MATCHES "Open MPI|OpenRTE")
    # More ranks than cores is normal here; Open MPI refuses root unless told.
    list(APPEND CAIRN_MPIEXEC_FLAGS --oversubscribe --allow-run-as-root)
  endif()
endif()

add_library(cairn_test_main STATIC ${PROJECT_SOURCE_DIR}/tests/support/test_main.cpp)
target_link_libraries(cairn_test_main PUBLIC cairn::cairn GTest::gtest PRIVATE cairn_warnings)
target_include_directories(cairn_test_main PUBLIC ${PROJECT_SOURCE_DIR}/tests/support)
# One precompiled header for every test: parsing GoogleTest and cairn.hpp took 6 s of each test
# file's compile here, in each of the Release, ASan and TSan builds. CAIRN_TEST_PCH=OFF compiles
# each test from its own includes (which is how they are written: the header adds nothing a
# test does not include itself).
option(CAIRN_TEST_PCH "Compile the tests with one precompiled header" ON)
if(CAIRN_TEST_PCH)
  target_precompile_headers(cairn_test_main PRIVATE <gtest/gtest.h> <cairn/cairn.hpp> <algorithm>
    <atomic> <chrono> <cstdint> <cstring> <functional> <map> <numeric> <random> <string> <thread>
    <vector>)
endif()

function(cairn_mpi_command out n)
  set(${out} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n} ${CAIRN_MPIEXEC_FLAGS} PARENT_SCOPE)
endfunction()

function(cairn_add_test name)
  cmake_parse_arguments(T "NO_MPI;ONE_NODE" "TIMEOUT" "SOURCES;THREADS_RANKS;MPI_RANKS;LIBS;ENV"
    ${ARGN})
  if(NOT T_THREADS_RANKS)
    set(T_THREADS_RANKS ${CAIRN_TEST_DEFAULT_THREADS_RANKS})
  endif()
  if(NOT DEFINED T_MPI_RANKS)
    set(T_MPI_RANKS ${CAIRN_TEST_DEFAULT_MPI_RANKS})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE cairn_test_main cairn_warnings ${T_LIBS})
  if(CAIRN_TEST_PCH)
    target_precompile_headers(${name} REUSE_FROM cairn_test_main)
  endif()
  if(T_NO_MPI)
    set(T_MPI_RANKS "")
  endif()
  set(one_node)
  if(T_ONE_NODE)
    set(one_node ONE_NODE)
  endif()
  cairn_add_variant(${name} ${name} TIMEOUT ${T_TIMEOUT} ENV ${T_ENV}
    THREADS_RANKS ${T_THREADS_RANKS} MPI_RANKS ${T_MPI_RANKS} ${one_node})
endfunction()

function(cairn_add_variant name exe)
  cmake_parse_arguments(T "ONE_NODE" "TIMEOUT" "ENV;THREADS_RANKS;MPI_RANKS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  foreach(n IN LISTS T_THREADS_RANKS)
    if(NOT CAIRN_SANITIZE STREQUAL "" AND n GREATER CAIRN_TEST_SANITIZED_MAX_RANKS)
      continue()
    endif()
    add_test(NAME ${name}.threads.${n} COMMAND ${exe})
    set_tests_properties(${name}.threads.${n} PROPERTIES LABELS "threads" TIMEOUT ${T_TIMEOUT}
      ENVIRONMENT "CAIRN_ENGINE=threads;CAIRN_RANKS=${n};CAIRN_WATCHDOG_S=${CAIRN_TEST_WATCHDOG_S};${T_ENV}")
  endforeach()
  if(CAIRN_TEST_MPI)
    foreach(n IN LISTS T_MPI_RANKS)
      cairn_mpi_command(cmd ${n})
      add_test(NAME ${name}.mpi.${n} COMMAND ${cmd} $<TARGET_FILE:${exe}>)
      set_tests_properties(${name}.mpi.${n} PROPERTIES LABELS "mpi" TIMEOUT ${T_TIMEOUT} PROCESSORS ${n}
        ENVIRONMENT "CAIRN_WATCHDOG_S=${CAIRN_TEST_WATCHDOG_S};${T_ENV}")
      if(n EQUAL 4 AND NOT T_ONE_NODE)  # and as 2 emulated nodes of 2: only messages between
        add_test(NAME ${name}.mpi.2x2 COMMAND ${cmd} $<TARGET_FILE:${exe}>)
        set_tests_properties(${name}.mpi.2x2 PROPERTIES LABELS "mpi" TIMEOUT ${T_TIMEOUT}
          PROCESSORS 4 ENVIRONMENT "CAIRN_WATCHDOG_S=${CAIRN_TEST_WATCHDOG_S};CAIRN_NODES=2;${T_ENV}")
      endif()
    endforeach()
  endif()
endfunction()

function(cairn_add_exit_test name)
  cmake_parse_arguments(T "" "PROGRAM;EXIT;EXPECT;REJECT" "ARGS;THREADS_RANKS;MPI_RANKS;ENV" ${ARGN})
  set(check ${PROJECT_SOURCE_DIR}/cmake/expect_exit.cmake)
  foreach(n IN LISTS T_THREADS_RANKS)
    add_test(NAME ${name}.threads.${n}
      COMMAND ${CMAKE_COMMAND} -DEXIT_CODE=${T_EXIT} "-DEXPECT=${T_EXPECT}" "-DREJECT=${T_REJECT}"
              "-DCOMMAND=$<TARGET_FILE:${T_PROGRAM}>;${T_ARGS}" -P ${check})
    set_tests_properties(${name}.threads.${n} PROPERTIES LABELS "threads" TIMEOUT 120
      ENVIRONMENT "CAIRN_ENGINE=threads;CAIRN_RANKS=${n};CAIRN_WATCHDOG_S=${CAIRN_TEST_WATCHDOG_S};${T_ENV}")
  endforeach()
  if(CAIRN_TEST_MPI)
    foreach(n IN LISTS T_MPI_RANKS)
      cairn_mpi_command(cmd ${n})
      add_test(NAME ${name}.mpi.${n}
        COMMAND ${CMAKE_COMMAND} -DEXIT_CODE=${T_EXIT} "-DEXPECT=${T_EXPECT}" "-DREJECT=${T_REJECT}"
                "-DCOMMAND=${cmd};$<TARGET_FILE:${T_PROGRAM}>;${T_ARGS}" -P ${check})
      set_tests_properties(${name}.mpi.${n} PROPERTIES LABELS "mpi" TIMEOUT 120 PROCESSORS ${n}
        ENVIRONMENT "CAIRN_WATCHDOG_S=${CAIRN_TEST_WATCHDOG_S};${T_ENV}")
    endforeach()
  endif()
endfunction()

function(cairn_add_failure_test name)
  cmake_parse_arguments(T "" "PROGRAM;EXPECT" "ARGS;THREADS_RANKS;MPI_RANKS;ENV" ${ARGN})
  if(NOT T_THREADS_RANKS)
    set(T_THREADS_RANKS 4)
  endif()
  if(NOT DEFINED T_MPI_RANKS)
    set(T_MPI_RANKS 2)
  endif()
  cairn_add_exit_test(${name} PROGRAM ${T_PROGRAM} EXPECT "${T_EXPECT}" ARGS ${T_ARGS}
    THREADS_RANKS ${T_THREADS_RANKS} MPI_RANKS ${T_MPI_RANKS} ENV ${T_ENV})
endfunction()
