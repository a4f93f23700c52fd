# Compiles not_a_message.cpp, which must fail with exactly one error line
# naming what a message type needs (not pages of template errors).
# -D CXX=... -D SOURCE=... -D INCLUDES="a;b;c"
set(args -std=c++17 -fsyntax-only)
foreach(dir ${INCLUDES})
  list(APPEND args -I${dir})
endforeach()
execute_process(COMMAND ${CXX} ${args} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "not_a_message.cpp compiled: a struct without type_name/GECKO_MSG_FIELDS was accepted as a message")
endif()
string(REGEX MATCHALL "error:" errors "${err}")  # the marks only: the message itself holds a ';'
list(LENGTH errors n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one error line, got ${n}:\n${err}")
endif()
if(NOT err MATCHES "a message type needs")
  message(FATAL_ERROR "the error does not say what a message type needs:\n${err}")
endif()
message(STATUS "one error line, saying what a message type needs")
