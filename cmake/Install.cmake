# The library as a CMake package: `cmake --install build --prefix P` puts the
# modules' static libraries in P/lib, their headers in P/include/ios/<folder>/
# (include them as "sched/scheduler.h", with P/include/ios on the include
# path, which the imported targets carry), and P/lib/cmake/ios/ with
# iosConfig.cmake, iosConfigVersion.cmake and iosTargets.cmake, so that
#   find_package(ios 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE ios::sched)
# works in another project. Imported targets are ios::<module> (the same
# names as the aliases inside this build) and link each other as here;
# iosConfig.cmake finds the third-party packages they need. The programs,
# man pages and bash completion are installed by apps/CMakeLists.txt.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(IOS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ios)
get_property(ios_modules GLOBAL PROPERTY IOS_MODULES)
install(TARGETS ${ios_modules} EXPORT iosTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ios_development)
install(EXPORT iosTargets NAMESPACE ios:: DESTINATION ${IOS_INSTALL_CMAKEDIR}
        FILE iosTargets.cmake COMPONENT ios_development)

if(IOS_HAVE_CUDA)
  cmake_path(GET CUDAToolkit_BIN_DIR PARENT_PATH IOS_CUDA_TOOLKIT_ROOT)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/iosConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/iosConfig.cmake
                              INSTALL_DESTINATION ${IOS_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API, so only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/iosConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/iosConfig.cmake ${PROJECT_BINARY_DIR}/iosConfigVersion.cmake
        DESTINATION ${IOS_INSTALL_CMAKEDIR} COMPONENT ios_development)
