# Fails if a component includes another component's private headers.
#
#   cmake -DROOT=<source tree> -P check_borders.cmake
#
# A component is a folder with a CMake target: its public headers live in
# <folder>/include/ (reachable by everyone as <gecko/...>), everything else in
# the folder is private to it. A file may include its own component's files
# and any component's public headers; an #include that only resolves inside
# another component's folder, or a CMakeLists.txt outside a component that
# adds another component's private folder to an include path, is a border
# violation. Tests (tests/) may look inside the component they test.

if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_borders.cmake")
endif()

# folder -> where its private headers are found (besides the including file's own folder)
set(components
  "gecko/wire|gecko/wire/src"
  "gecko/net|gecko/net/src"
  "gecko/shm|gecko/shm/src"
  "gecko|gecko/src"            # the runtime: gecko/include + gecko/src (its sub-components excluded below)
  "gecko/click|gecko/click/src"
  "gecko/spine|gecko/spine/src"
  "msgs|msgs/src"
  "geckocore|geckocore/src"
  "sim|sim"
  "tools|tools/gecko"
  "click_gateway|click_gateway/src"
  "examples|examples"
  "bench|bench"
  "bag|bag/src"
  "bag/cli|bag/cli")

set(public_dirs)
foreach(entry ${components})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 folder)
  if(IS_DIRECTORY "${ROOT}/${folder}/include")
    list(APPEND public_dirs "${ROOT}/${folder}/include")
  endif()
endforeach()

# The component a path belongs to: the longest folder that prefixes it.
function(component_of path out)
  set(best "")
  foreach(entry ${components})
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 folder)
    string(LENGTH "${folder}" n)
    string(LENGTH "${best}" b)
    if(path MATCHES "^${folder}/" AND n GREATER b)
      set(best "${folder}")
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

set(violations "")
set(checked 0)
foreach(entry ${components})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 folder)
  list(GET parts 1 private_root)
  file(GLOB_RECURSE sources RELATIVE "${ROOT}" "${ROOT}/${folder}/*.hpp" "${ROOT}/${folder}/*.cpp" "${ROOT}/${folder}/*.h")
  foreach(rel ${sources})
    component_of("${rel}" owner)
    if(NOT owner STREQUAL folder)
      continue()  # a nested component checks its own files
    endif()
    math(EXPR checked "${checked} + 1")
    get_filename_component(dir "${ROOT}/${rel}" DIRECTORY)
    file(STRINGS "${ROOT}/${rel}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" inc "${line}")
      set(found_inside FALSE)
      foreach(base "${dir}" "${ROOT}/${private_root}" ${public_dirs})
        if(EXISTS "${base}/${inc}" AND NOT IS_DIRECTORY "${base}/${inc}")
          get_filename_component(target "${base}/${inc}" REALPATH)
          file(RELATIVE_PATH target_rel "${ROOT}" "${target}")
          component_of("${target_rel}" target_owner)
          set(public FALSE)
          foreach(p ${public_dirs})
            string(FIND "${target}" "${p}/" at)
            if(at EQUAL 0)
              set(public TRUE)
            endif()
          endforeach()
          if(public OR target_owner STREQUAL folder OR target_owner STREQUAL "")
            set(found_inside TRUE)
          else()
            string(APPEND violations "  ${rel}: #include \"${inc}\" reaches ${target_rel}, private to ${target_owner}\n")
            set(found_inside TRUE)
          endif()
          break()
        endif()
      endforeach()
      if(NOT found_inside)
        # Only another component's private folder has it: reachable through an include path it should not have.
        foreach(other_entry ${components})
          string(REPLACE "|" ";" other_parts "${other_entry}")
          list(GET other_parts 0 other)
          list(GET other_parts 1 other_private)
          if(NOT other STREQUAL folder AND EXISTS "${ROOT}/${other_private}/${inc}"
             AND NOT IS_DIRECTORY "${ROOT}/${other_private}/${inc}")
            string(APPEND violations "  ${rel}: #include \"${inc}\" is private to ${other} (${other_private}/${inc})\n")
            break()
          endif()
        endforeach()
      endif()
      # Found nowhere in the tree: a system or package header; nothing to check.
    endforeach()
  endforeach()
endforeach()

# Build files outside a component that put another component's private folder on an include path.
file(GLOB_RECURSE cmake_files RELATIVE "${ROOT}" "${ROOT}/*CMakeLists.txt")
foreach(rel ${cmake_files})
  if(rel MATCHES "^(build|tests/)" OR rel MATCHES "/build")
    continue()
  endif()
  component_of("${rel}" owner)
  file(READ "${ROOT}/${rel}" text)
  string(REGEX MATCHALL "PROJECT_SOURCE_DIR}/[A-Za-z_/]+/src" reaches "${text}")
  foreach(r ${reaches})
    string(REGEX REPLACE "PROJECT_SOURCE_DIR}/(.*)/src$" "\\1" other "${r}")
    if(NOT other STREQUAL owner)
      string(APPEND violations "  ${rel}: reaches into ${other}/src\n")
    endif()
  endforeach()
endforeach()

# Every ZeroMQ socket of Gecko itself is made by gecko::net::make_socket (the
# one place for socket options, and for CurveZMQ later). Benchmarks and tests
# open raw sockets on purpose (the raw ZeroMQ baselines, hostile peers).
foreach(folder gecko geckocore tools click_gateway sim examples)
  file(GLOB_RECURSE sources RELATIVE "${ROOT}" "${ROOT}/${folder}/*.cpp" "${ROOT}/${folder}/*.hpp")
  foreach(rel ${sources})
    if(rel MATCHES "^gecko/net/src/")
      continue()
    endif()
    file(STRINGS "${ROOT}/${rel}" made REGEX "zmq::socket_t[ \t]+[A-Za-z_]+[ \t]*[({][^)}]*socket_type|emplace\\([^)]*socket_type")
    foreach(line ${made})
      if(line MATCHES "make_socket")
        continue()
      endif()
      string(STRIP "${line}" line)
      string(APPEND violations "  ${rel}: makes a ZeroMQ socket itself (use gecko::net::make_socket): ${line}\n")
    endforeach()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "check_borders: no source file found under ${ROOT}")
endif()
if(violations)
  message(FATAL_ERROR "component borders crossed:\n${violations}")
endif()
message(STATUS "component borders hold (${checked} files checked)")
