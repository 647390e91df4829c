# tests/stats.cmake: `sentinel stats` tests that need more than a C test binary.
# The group-dynamics notebook runs headless on trajectories from `sentinel simulate` (built-in
# sim agents) with Debian's python; the committed notebook must carry no outputs.
add_test(NAME notebook_group_dynamics
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/stats_notebook.sh run)
set_tests_properties(notebook_group_dynamics PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                     LABELS "notebook;noasan" TIMEOUT 600
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
add_test(NAME notebook_group_dynamics_clean
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/stats_notebook.sh clean)
set_tests_properties(notebook_group_dynamics_clean PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                     LABELS "notebook" TIMEOUT 600)
