# tests/run.cmake: `sentinel run` end to end on a reduced quickstart recipe (tests/run_pipeline.sh):
# every stage runs and the summary names the detector; the detector beats random ranking and the
# shortest-message heuristic by stated margins; a second run does nothing and says so; a changed
# training setting re-runs train, export and eval only; a run killed during train resumes to the
# same final metrics as an uninterrupted one.
#
# The same test is the suite's trained fixture, `trained_run`: when it passes,
# ${CMAKE_BINARY_DIR}/test-tmp/run_pipeline/a is a finished run directory (detector.gguf,
# train/metrics.jsonl, train/final_metrics.json, shards/, eval/report.json, eval/items.csv).
# A test that needs a trained model sets FIXTURES_REQUIRED trained_run and reads that directory
# (never writes it); ctest then runs run_pipeline first, once, even under -R.
add_test(NAME run_pipeline COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_pipeline.sh)
set_tests_properties(run_pipeline PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                     FIXTURES_SETUP trained_run
                     LABELS "noasan" TIMEOUT 1800
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
if(NOT SENTINEL_WITH_TORCH)
  set_tests_properties(run_pipeline PROPERTIES DISABLED TRUE)
endif()

# recipes/cluster/simulate-array.sbatch as a Slurm array runs it: disjoint shards that together
# are one unsharded run (tests/run_cluster_array.sh).
add_test(NAME run_cluster_array COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_cluster_array.sh)
set_tests_properties(run_cluster_array PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 120
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
