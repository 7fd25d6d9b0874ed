# re2 for gRPC's Findre2.cmake, which tries find_package(re2 CONFIG) before
# pkg-config: Debian 12's libre2-dev ships only re2.pc. Copied by run_gpu.sh
# to PREFIX/usr/lib/x86_64-linux-gnu/cmake/re2/, so paths are relative to it.
get_filename_component(_re2_usr "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(NOT TARGET re2::re2)
  add_library(re2::re2 SHARED IMPORTED)
  set_target_properties(re2::re2 PROPERTIES
    IMPORTED_LOCATION "${_re2_usr}/lib/x86_64-linux-gnu/libre2.so.9"
    IMPORTED_SONAME "libre2.so.9"
    INTERFACE_INCLUDE_DIRECTORIES "${_re2_usr}/include")
endif()
set(re2_FOUND TRUE)
set(re2_VERSION "20220601")
unset(_re2_usr)
