# Runs Doxygen over the public headers and fails on any warning (an undocumented public name, a
# broken doc comment), except in the files listed as pending below.
#   cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<Doxyfile> -DLOG=<warnings.log> -DSOURCE_DIR=<repo>
#         -P CairnDocs.cmake
# The Doxyfile writes its warnings to LOG (WARN_LOGFILE) as "<file>:<line>: warning: <text>".

# Pending: public headers whose doc comments are being rewritten in other branches (issue 21).
# Their warnings are printed but do not fail the build. Remove each entry once its header
# documents every public name; the list must end up empty.
set(pending
  include/cairn/runtime/launch.hpp
  include/cairn/runtime/group.hpp
  include/cairn/coll/barrier_bcast.hpp
  include/cairn/coll/reductions.hpp
  include/cairn/coll/gather_scatter.hpp
  include/cairn/coll/vector_collectives.hpp
  include/cairn/coll/op.hpp
  include/cairn/coll/collectives.hpp
)

# Pending: warnings about pages written in other branches (matched as regular expressions).
set(pending_patterns
  "README\\.md:[0-9]+: warning: unable to resolve reference to 'docs/environment\\.md'"
)

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
set(waived 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  set(is_pending FALSE)
  foreach(file IN LISTS pending)
    string(FIND "${line}" "${SOURCE_DIR}/${file}:" at)
    if(at EQUAL 0)
      set(is_pending TRUE)
    endif()
  endforeach()
  foreach(pattern IN LISTS pending_patterns)
    if(line MATCHES "${pattern}")
      set(is_pending TRUE)
    endif()
  endforeach()
  if(is_pending)
    math(EXPR waived "${waived} + 1")
    message("pending: ${line}")
  else()
    math(EXPR failing "${failing} + 1")
    message("${line}")
  endif()
endforeach()
if(failing GREATER 0)
  message(FATAL_ERROR "API reference: ${failing} doxygen warning(s) (full log: ${LOG})")
endif()
message(STATUS "API reference: no warnings (${waived} pending, listed above); see the html/ "
               "directory next to ${LOG}")
