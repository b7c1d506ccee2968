# Runs Doxygen over the public headers and fails on any warning (an undocumented public name, a
# broken doc comment).
#   cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<Doxyfile> -DLOG=<warnings.log> -DSOURCE_DIR=<repo>
#         -P CairnDocs.cmake
# The Doxyfile writes its warnings to LOG (WARN_LOGFILE) as "<file>:<line>: warning: <text>".

file(REMOVE ${LOG})
execute_process(COMMAND ${DOXYGEN} ${DOXYFILE} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen failed (${rc})")
endif()
set(lines "")
if(EXISTS ${LOG})
  file(STRINGS ${LOG} lines)
endif()
set(failing 0)
foreach(line IN LISTS lines)
  if(NOT line STREQUAL "")
    math(EXPR failing "${failing} + 1")
    message("${line}")
  endif()
endforeach()
if(failing GREATER 0)
  message(FATAL_ERROR "API reference: ${failing} doxygen warning(s) (full log: ${LOG})")
endif()
message(STATUS "API reference: no warnings; see the html/ directory next to ${LOG}")
