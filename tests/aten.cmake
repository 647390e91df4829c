# tests/aten.cmake: extra settings for the aten/ tests (registered by tests/CMakeLists.txt).
# The two-process c10d test has its own 60 s watchdog; ctest's limit is a second fence.
if(TEST test_aten_dist)
  set_tests_properties(test_aten_dist PROPERTIES TIMEOUT 120)
endif()
