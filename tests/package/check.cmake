# Builds tests/package against an installed cairn and as a subdirectory, and runs both.
#   cmake -DCAIRN_BUILD_DIR=... -DCAIRN_SOURCE_DIR=... -DWORK_DIR=... -P check.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${CAIRN_BUILD_DIR} --prefix ${prefix})
set(src ${CAIRN_SOURCE_DIR}/tests/package)
run(${CMAKE_COMMAND} -S ${src} -B ${WORK_DIR}/installed -G Ninja -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/installed)
run(${WORK_DIR}/installed/consumer)
run(${CMAKE_COMMAND} -S ${src} -B ${WORK_DIR}/subdir -G Ninja -DCAIRN_SOURCE_DIR=${CAIRN_SOURCE_DIR}
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/subdir --target consumer)
run(${WORK_DIR}/subdir/consumer)
message(STATUS "find_package(cairn CONFIG) and add_subdirectory both work")
