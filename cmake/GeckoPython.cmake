# gecko_find_python(OUT PREFERRED MODULES): OUT is the first python3 that
# imports MODULES ("zmq, msgpack"), tried in order: PREFERRED (a -D option;
# may be empty), Debian's /usr/bin/python3, then the python3 on PATH (which
# may be a pyenv or venv without Debian's python3-* packages). OUT is empty
# if none does; OUT_CANDIDATES lists the existing interpreters tried.
function(gecko_find_python out preferred modules)
  find_program(gecko_path_python3 NAMES python3 NO_CACHE)
  set(tried "")
  foreach(candidate IN ITEMS ${preferred} /usr/bin/python3 ${gecko_path_python3})
    if(EXISTS "${candidate}" AND NOT candidate IN_LIST tried)
      list(APPEND tried "${candidate}")
      execute_process(COMMAND "${candidate}" -c "import ${modules}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        set(${out} "${candidate}" PARENT_SCOPE)
        set(${out}_CANDIDATES "${tried}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
  set(${out}_CANDIDATES "${tried}" PARENT_SCOPE)
endfunction()
