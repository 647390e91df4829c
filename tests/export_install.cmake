# tests/export_install.cmake: `cmake --install` of the runtime detector into a temporary prefix,
# then the C example of docs/export.md compiled against it with pkg-config and run
# (tests/test_export_install.c). It runs the compiler and an uninstrumented program: label
# noasan (an ASan build's library would need the ASan runtime in that program).
if(TEST test_export_install)
  set_tests_properties(test_export_install PROPERTIES LABELS noasan
    ENVIRONMENT "${SN_TEST_ENV};SENTINEL_CMAKE=${CMAKE_COMMAND};SENTINEL_CC=${CMAKE_C_COMPILER}")
endif()
