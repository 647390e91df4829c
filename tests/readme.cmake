# tests/readme.cmake: README.md's worked example cannot drift from what the code prints
# (tests/readme_quickstart.sh): the full quickstart (recipes/quickstart.json, fixed seeds) runs
# into a temp directory, its summary must be at most 25 lines, and scripts/readme_example.py
# --check compares every number of the README's block, timings excepted, with that run.
# Label `readme`: `ctest -L readme`. About ten minutes on 2 cores.
add_test(NAME readme_worked_example COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/readme_quickstart.sh)
set_tests_properties(readme_worked_example PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                     LABELS "readme;noasan" TIMEOUT 1800
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
if(NOT SENTINEL_WITH_TORCH)
  set_tests_properties(readme_worked_example PROPERTIES DISABLED TRUE)
endif()
