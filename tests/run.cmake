# tests/run.cmake: `sentinel run` end to end on a reduced quickstart recipe (tests/run_pipeline.sh):
# every stage runs and the summary names the detector; a second run does nothing and says so;
# a changed training setting re-runs train, export and eval only; a run killed during train
# resumes to the same final metrics as an uninterrupted one.
add_test(NAME run_pipeline COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_pipeline.sh)
set_tests_properties(run_pipeline PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                     LABELS "noasan" TIMEOUT 900
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
if(NOT SENTINEL_WITH_TORCH)
  set_tests_properties(run_pipeline PROPERTIES DISABLED TRUE)
endif()
