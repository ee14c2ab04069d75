# Compiles device_profiles/*.json into ios_cost (included from
# lib/CMakeLists.txt after ios_cost is defined). Each file becomes a raw string
# literal in a configured .cpp; editing a profile re-runs the configure step.
file(GLOB ios_profile_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/device_profiles/*.json)
list(SORT ios_profile_files)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ios_profile_files})
set(IOS_PROFILE_ENTRIES "")
foreach(profile_file IN LISTS ios_profile_files)
  get_filename_component(profile_stem ${profile_file} NAME_WE)
  file(READ ${profile_file} profile_text)
  string(FIND "${profile_text}" ")ios_profile\"" profile_clash)
  if(NOT profile_clash EQUAL -1)
    message(FATAL_ERROR "${profile_file}: contains the raw-string delimiter )ios_profile\"")
  endif()
  string(APPEND IOS_PROFILE_ENTRIES
         "      {\"${profile_stem}\", R\"ios_profile(${profile_text})ios_profile\"},\n")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/shipped_profiles.cpp.in
               ${CMAKE_CURRENT_BINARY_DIR}/cost/shipped_profiles.cpp @ONLY)
target_sources(ios_cost PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/cost/shipped_profiles.cpp)
