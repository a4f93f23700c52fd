# Runs check_borders.cmake on tests/borders/crossing, a tree with one of each
# kind of crossing, and fails unless the checker fails naming every one.
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${FIXTURE} -P ${CHECKER}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "check_borders passed a tree that crosses borders:\n${out}${err}")
endif()
foreach(expected
    "geckocore/src/core.cpp: #include \"node/session.hpp\" is private to gecko"
    "tools/gecko/main.cpp: #include \"../../gecko/src/node/session.hpp\" reaches gecko/src/node/session.hpp"
    "tools/gecko/raw.cpp: makes a ZeroMQ socket itself"
    "tools/CMakeLists.txt: reaches into gecko/src")
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "check_borders did not report: ${expected}\nit said:\n${err}")
  endif()
endforeach()
message(STATUS "check_borders found every crossing of the fixture")
