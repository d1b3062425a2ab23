# Checks that a shared libkvshard exports exactly the functions its public
# headers declare with KVSHARD_EXPORT, each in exactly one header, and
# nothing without the kvshard_ prefix.
#
#   cmake -DNM=nm -DLIBRARY=libkvshard.so \
#         -DHEADERS=kvshard.h,explore.h,output.h -P check_exports.cmake
#
# HEADERS (comma-separated) is optional; without it only the prefix is
# checked. A build without explore passes kvshard.h alone.
cmake_minimum_required(VERSION 3.16)

if(NOT NM)
  set(NM nm)
endif()
if(NOT LIBRARY OR NOT EXISTS "${LIBRARY}")
  message(FATAL_ERROR "LIBRARY is not set or does not exist: '${LIBRARY}'")
endif()

execute_process(
  COMMAND "${NM}" -D --defined-only "${LIBRARY}"
  OUTPUT_VARIABLE nm_out
  ERROR_VARIABLE nm_err
  RESULT_VARIABLE nm_rc)
if(NOT nm_rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed (${nm_rc}): ${nm_err}")
endif()

# Lines are "ADDRESS TYPE NAME"; keep NAME (without any @VERSION suffix).
string(REPLACE "\n" ";" nm_lines "${nm_out}")
set(exported "")
set(bad "")
foreach(line IN LISTS nm_lines)
  if(line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) ([^ @]+)")
    set(type "${CMAKE_MATCH_1}")
    set(name "${CMAKE_MATCH_2}")
    # Symbols some linkers define in every shared object, not kvshard's.
    if(name MATCHES "^(_init|_fini|_edata|_end|__bss_start)$")
      continue()
    endif()
    list(APPEND exported "${name}")
    if(NOT name MATCHES "^kvshard_")
      list(APPEND bad "${name} (${type})")
    endif()
  endif()
endforeach()

list(LENGTH exported n_exported)
if(n_exported EQUAL 0)
  message(FATAL_ERROR "${LIBRARY} exports no symbols at all")
endif()
if(bad)
  list(JOIN bad "\n  " bad_text)
  message(FATAL_ERROR "${LIBRARY} exports symbols without the kvshard_ prefix:\n  ${bad_text}")
endif()

if(HEADERS)
  string(REPLACE "," ";" header_list "${HEADERS}")
  set(declared "")
  set(twice "")
  foreach(header IN LISTS header_list)
    file(READ "${header}" header_text)
    # Drop comments so that examples inside them are not taken as declarations.
    string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" header_text "${header_text}")
    string(REGEX MATCHALL "KVSHARD_EXPORT[^;(]*kvshard_[a-z0-9_]+[ \t\r\n]*\\(" decls
           "${header_text}")
    set(in_header 0)
    foreach(decl IN LISTS decls)
      string(REGEX MATCH "kvshard_[a-z0-9_]+[ \t\r\n]*\\($" fn "${decl}")
      string(REGEX REPLACE "[ \t\r\n]*\\($" "" fn "${fn}")
      if(fn IN_LIST declared)
        list(APPEND twice "${fn} (again in ${header})")
      endif()
      list(APPEND declared "${fn}")
      math(EXPR in_header "${in_header} + 1")
    endforeach()
    if(in_header EQUAL 0)
      message(FATAL_ERROR "no KVSHARD_EXPORT declarations found in ${header}")
    endif()
  endforeach()
  if(twice)
    list(JOIN twice "\n  " twice_text)
    message(FATAL_ERROR "functions declared in more than one public header:\n  ${twice_text}")
  endif()

  set(missing "")
  foreach(fn IN LISTS declared)
    if(NOT fn IN_LIST exported)
      list(APPEND missing "${fn}")
    endif()
  endforeach()
  set(extra "")
  foreach(name IN LISTS exported)
    if(NOT name IN_LIST declared)
      list(APPEND extra "${name}")
    endif()
  endforeach()
  if(missing OR extra)
    list(JOIN missing "\n  " missing_text)
    list(JOIN extra "\n  " extra_text)
    message(FATAL_ERROR
      "exports of ${LIBRARY} and KVSHARD_EXPORT declarations of ${HEADERS} differ\n"
      "declared but not exported:\n  ${missing_text}\n"
      "exported but not declared:\n  ${extra_text}")
  endif()
endif()

message(STATUS "${n_exported} symbols exported, all kvshard_, each declared in one public header")
