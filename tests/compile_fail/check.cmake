# Compiles one case of a compile-failure test (syntax only) and checks the outcome:
#   cmake -DCXX=<compiler> -DSOURCE=<file> -DINCLUDE=<dir> -DCASE=<n> -DEXPECT=<regex> -P check.cmake
# expects the compiler to fail with output matching EXPECT, or (POSITIVE=1, no EXPECT) to compile
# the positive twin cleanly with warnings as errors.
set(flags -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -I${INCLUDE} -DCAIRN_CF_CASE=${CASE})
if(POSITIVE)
  list(APPEND flags -Werror -DCAIRN_CF_POSITIVE=1)
endif()
execute_process(COMMAND ${CXX} ${flags} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
if(POSITIVE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the positive twin (case ${CASE}) does not compile:\n${out}")
  endif()
  message(STATUS "case ${CASE}: the positive twin compiles")
else()
  if(rc EQUAL 0)
    message(FATAL_ERROR "case ${CASE} compiled but must not")
  endif()
  if(NOT out MATCHES "${EXPECT}")
    message(FATAL_ERROR "case ${CASE} failed to compile, but not for the expected reason "
      "(no match for '${EXPECT}'):\n${out}")
  endif()
  message(STATUS "case ${CASE}: rejected as expected ('${EXPECT}')")
endif()
