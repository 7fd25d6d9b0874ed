# The CPU half of a PyTorch wheel's LibTorch, for a machine without CUDA.
#
# PyPI's Linux torch wheel is built with CUDA, and its TorchConfig.cmake
# stops when it finds no CUDA toolkit (nvcc) - even for a program that only
# wants the CPU. This module defines the same `torch` target from the wheel's
# CPU libraries alone (libtorch_cpu, libc10; the CUDA ones are not linked, so
# no GPU library is loaded beyond what libtorch_cpu itself needs: Kineto's
# CUPTI and cudart stubs, which the wheel's NVIDIA packages provide), with
# the compile settings TorchConfig.cmake would give: C++20 and the
# new-ABI standard library.
#
# Input: FASTNN_TORCH_WHEEL, the wheel's package folder (site-packages/torch).
# Output: the imported target torch, Torch_VERSION, Torch_DIR.
set(_tw ${FASTNN_TORCH_WHEEL})
foreach(_lib torch_cpu c10)
  if(NOT EXISTS ${_tw}/lib/lib${_lib}.so)
    message(FATAL_ERROR "FASTNN_TORCH_WHEEL=${_tw}: no lib/lib${_lib}.so there "
      "(it should be a PyTorch wheel's torch folder: python -c 'import torch; print(torch.__path__[0])')")
  endif()
endforeach()
file(STRINGS ${_tw}/share/cmake/Torch/TorchConfigVersion.cmake _tv
  REGEX "set\\(PACKAGE_VERSION \"")
string(REGEX REPLACE ".*\"(.*)\".*" "\\1" Torch_VERSION "${_tv}")
set(Torch_DIR ${_tw}/share/cmake/Torch)

# The wheel ships its own protobuf headers in include/google; ours are
# Debian's (gRPC's). The target's include folder is a folder of links to the
# wheel's entries, every one but google/.
set(_ti ${CMAKE_BINARY_DIR}/torch_wheel_include)
file(REMOVE_RECURSE ${_ti})
file(MAKE_DIRECTORY ${_ti})
file(GLOB _entries RELATIVE ${_tw}/include ${_tw}/include/*)
foreach(_e ${_entries})
  if(NOT _e STREQUAL "google")
    file(CREATE_LINK ${_tw}/include/${_e} ${_ti}/${_e} SYMBOLIC)
  endif()
endforeach()

add_library(torch INTERFACE IMPORTED)
set_target_properties(torch PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${_ti};${_ti}/torch/csrc/api/include"
  INTERFACE_LINK_LIBRARIES "${_tw}/lib/libtorch_cpu.so;${_tw}/lib/libc10.so"
  INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=1")
target_compile_features(torch INTERFACE cxx_std_20)
# libtorch_cpu's own dependencies (libgomp beside it, CUPTI and cudart in the
# wheel's nvidia/ packages) are found at run time through its RUNPATH; the
# linker needs their folders to resolve them when it links an executable.
file(GLOB _nv_libs LIST_DIRECTORIES true ${_tw}/../nvidia/*/lib)
string(REPLACE ";" ":" _rpl "${_tw}/lib;${_nv_libs}")
set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS "-Wl,-rpath-link,${_rpl}")
# c10d's Gloo headers include Gloo's, which the wheel does not ship: Debian's
# libgloo-dev provides them (scripts/setup.sh installs it).
find_path(FASTNN_GLOO_INCLUDE gloo/config.h)
if(NOT FASTNN_GLOO_INCLUDE)
  message(FATAL_ERROR "FASTNN_TORCH_WHEEL: Gloo's headers (gloo/config.h) not found: apt-get install libgloo-dev")
endif()
message(STATUS "LibTorch from a wheel, CPU libraries only: ${Torch_VERSION} (${_tw})")
