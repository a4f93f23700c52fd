# Fails if a Catch2 test name would not run as itself under ctest:
# catch_discover_tests splits names at ';' (two tests, neither found), and
# Catch reads a name that starts with '-' as an option (--help: it prints its
# usage and passes without running anything). Catch's console reporter
# indents a name's wrapped lines to just after its first ": "; past its
# 79 columns it aborts on an assertion while reporting a failure, and the
# test's children keep ctest waiting until the timeout: the first ": "
# stays within the first 70 characters.
#
#   cmake -DROOT=<source tree> -P check_test_names.cmake
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_test_names.cmake")
endif()
file(GLOB_RECURSE sources "${ROOT}/tests/*.cpp")
set(bad "")
foreach(source IN LISTS sources)
  file(READ "${source}" text)
  string(REGEX MATCH "TEST_CASE\\(\"-[^\"\n]*" dash "${text}")
  string(REGEX MATCH "TEST_CASE\\(\"[^\"\n]*;" semicolon "${text}")
  set(late_colon "")
  string(REGEX MATCHALL "(TEST_CASE|SECTION)\\(\"[^\"\n]*\"" names "${text}")
  foreach(name IN LISTS names)
    string(REGEX REPLACE "^[A-Z_]+\\(\"" "" name "${name}")
    string(FIND "${name}" ": " at)
    if(at GREATER 70)
      set(late_colon "${name}")
    endif()
  endforeach()
  if(dash OR semicolon OR late_colon)
    file(RELATIVE_PATH rel "${ROOT}" "${source}")
    string(APPEND bad "  ${rel}\n")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "test names that start with '-', hold ';' (ctest would not run them as written) or have their first ': ' past 70 characters (Catch aborts reporting them):\n${bad}")
endif()
