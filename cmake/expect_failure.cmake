# Runs COMMAND (a ;-list) and succeeds only if it exits non-zero and its output matches EXPECT.
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit status: ${rc}\n--- stdout\n${out}--- stderr\n${err}---")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit status")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "output does not match '${EXPECT}'")
endif()
