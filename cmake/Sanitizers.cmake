# Sanitizer and fuzzing builds.
#
#   -DIOS_SANITIZE=address,undefined   every C++ target built and linked with
#                                      these sanitizers; the first report aborts
#                                      (-fno-sanitize-recover), so a test fails
#   -DIOS_FUZZ=ON                      (clang only) coverage instrumentation for
#                                      libFuzzer and the fuzz targets in
#                                      test/fuzz/; implies address,undefined
#
# The CUDA sources are left alone (nvcc does not take these flags); build
# sanitizer and fuzz trees with -DIOS_ENABLE_CUDA=OFF.
set(IOS_SANITIZE "" CACHE STRING "Sanitizers for every C++ target, e.g. address,undefined")
option(IOS_FUZZ "Build the libFuzzer targets (clang; implies IOS_SANITIZE=address,undefined)" OFF)

if(IOS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "IOS_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  if(IOS_SANITIZE STREQUAL "")
    set(IOS_SANITIZE "address,undefined")
  endif()
  # Coverage feedback for every library; the fuzz targets add libFuzzer's main.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()

if(NOT IOS_SANITIZE STREQUAL "")
  # -g1 (line tables): reports name file and line, at a fraction of full
  # debug information's compile and link time.
  set(ios_sanitize_flags -fsanitize=${IOS_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer -g1)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${ios_sanitize_flags}>")
  add_link_options(-fsanitize=${IOS_SANITIZE} -fno-sanitize-recover=all)
  message(STATUS "ios: sanitizers ${IOS_SANITIZE}")
endif()
