# tests/export_install.cmake: `cmake --install` of the runtime detector into a temporary prefix,
# then the C example of docs/export.md compiled against it with pkg-config and run
# (tests/test_export_install.c). It runs the compiler and an uninstrumented program: label
# noasan (an ASan build's library would need the ASan runtime in that program).
if(TEST test_export_install)
  set_tests_properties(test_export_install PROPERTIES LABELS noasan
    ENVIRONMENT "${SN_TEST_ENV};SENTINEL_CMAKE=${CMAKE_COMMAND};SENTINEL_CC=${CMAKE_C_COMPILER}")
endif()
# The library's ABI as installed (docs/api.md): the public headers alone, each compiling by
# itself as C and C++, declare exactly the functions the library exports in its version node
# (export/sentinel_detector.map), and the Python package binds only those (tests/check_abi.py).
if(EXISTS ${SENTINEL_PYTHON})
  add_test(NAME export_abi COMMAND ${SENTINEL_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_abi.py
           ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/test-tmp
           ${CMAKE_C_COMPILER} ${CMAKE_CXX_COMPILER})
  set_tests_properties(export_abi PROPERTIES TIMEOUT 300)
endif()
