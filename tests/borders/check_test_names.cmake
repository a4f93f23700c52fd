# Fails if a Catch2 test name would not run as itself under ctest:
# catch_discover_tests splits names at ';' (two tests, neither found), and
# Catch reads a name that starts with '-' as an option (--help: it prints its
# usage and passes without running anything).
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
  if(dash OR semicolon)
    file(RELATIVE_PATH rel "${ROOT}" "${source}")
    string(APPEND bad "  ${rel}\n")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "test names that start with '-' or hold ';' (ctest would not run them as written):\n${bad}")
endif()
