# tests/aten.cmake: extra settings for the aten/ tests (registered by tests/CMakeLists.txt).
# The two-process c10d test has its own 180 s watchdog (WATCHDOG_S; only a hang meets it, not a
# loaded machine); ctest's limit is a second fence above it.
if(TEST test_aten_dist)
  set_tests_properties(test_aten_dist PROPERTIES TIMEOUT 300)
endif()
