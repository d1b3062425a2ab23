# Checks that the static archive libkvshard.a defines no global symbol
# without the kvshard_ prefix, so that it links into any program: a program
# may define its own free_model() or kvs_free() next to it.
#
#   cmake -DNM=nm -DARCHIVE=libkvshard.a -P check_archive.cmake
#
# Internal functions are named kvshard_<module>__*; everything else is static.
cmake_minimum_required(VERSION 3.16)

if(NOT NM)
  set(NM nm)
endif()
if(NOT ARCHIVE OR NOT EXISTS "${ARCHIVE}")
  message(FATAL_ERROR "ARCHIVE is not set or does not exist: '${ARCHIVE}'")
endif()

execute_process(
  COMMAND "${NM}" -g --defined-only "${ARCHIVE}"
  OUTPUT_VARIABLE nm_out
  ERROR_VARIABLE nm_err
  RESULT_VARIABLE nm_rc)
if(NOT nm_rc EQUAL 0)
  message(FATAL_ERROR "${NM} -g --defined-only ${ARCHIVE} failed (${nm_rc}): ${nm_err}")
endif()

# For an archive nm prints "member.o:" before each member's lines, and the
# symbols as "ADDRESS TYPE NAME".
string(REPLACE "\n" ";" nm_lines "${nm_out}")
set(member "")
set(defined 0)
set(bad "")
foreach(line IN LISTS nm_lines)
  if(line MATCHES "^(.+):$")
    set(member "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) ([^ ]+)$")
    set(type "${CMAKE_MATCH_1}")
    set(name "${CMAKE_MATCH_2}")
    # AddressSanitizer adds an ODR indicator (__odr_asan.NAME) for each
    # global variable of an instrumented build; it is not kvshard's name.
    if(name MATCHES "^__odr_asan")
      continue()
    endif()
    math(EXPR defined "${defined} + 1")
    if(NOT name MATCHES "^kvshard_")
      list(APPEND bad "${name} (${type}, ${member})")
    endif()
  endif()
endforeach()

if(defined EQUAL 0)
  message(FATAL_ERROR "${ARCHIVE} defines no global symbols at all")
endif()
if(bad)
  list(JOIN bad "\n  " bad_text)
  message(FATAL_ERROR
    "${ARCHIVE} defines global symbols without the kvshard_ prefix:\n  ${bad_text}")
endif()

message(STATUS "${defined} global symbols defined in ${ARCHIVE}, all kvshard_")
