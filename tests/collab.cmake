# tests/collab.cmake: the real-text pipeline (tests/collab_pipeline.sh): recipes/collab-attack.json
# reduced to a few hundred tuples of the vendored Collaboration-attack logs, run end to end by
# `sentinel run` (import -> build -> train -> export -> eval) with the tiny model.
add_test(NAME collab_pipeline COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/collab_pipeline.sh)
set_tests_properties(collab_pipeline PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                     LABELS "noasan" TIMEOUT 900
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
if(NOT SENTINEL_WITH_TORCH)
  set_tests_properties(collab_pipeline PROPERTIES DISABLED TRUE)
endif()

# tests/collab_tokenize.sh: the recipe section `tokenize` and the LM stage read only the
# training debates (docs/run.md "Recipe section `tokenize`").
add_test(NAME collab_tokenize COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/collab_tokenize.sh)
set_tests_properties(collab_tokenize PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                     LABELS "noasan" TIMEOUT 900
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
if(NOT SENTINEL_WITH_TORCH)
  set_tests_properties(collab_tokenize PROPERTIES DISABLED TRUE)
endif()
