# Runs COMMAND (a ;-list) and succeeds only if it exits with EXIT_CODE (any non-zero status
# where EXIT_CODE is not given), its output matches EXPECT and, where REJECT is given, does not
# match REJECT.
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit status: ${rc}\n--- stdout\n${out}--- stderr\n${err}---")
if("${EXIT_CODE}" STREQUAL "")
  if(rc EQUAL 0)
    message(FATAL_ERROR "expected a non-zero exit status")
  endif()
elseif(NOT rc EQUAL EXIT_CODE)
  message(FATAL_ERROR "expected exit status ${EXIT_CODE}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "output does not match '${EXPECT}'")
endif()
if(NOT "${REJECT}" STREQUAL "" AND "${out}${err}" MATCHES "${REJECT}")
  message(FATAL_ERROR "output matches '${REJECT}'")
endif()
