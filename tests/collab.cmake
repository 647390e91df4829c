# tests/collab.cmake: the real-text pipeline on the vendored Collaboration-attack logs.
# collab_pipeline.sh: recipes/collab-attack.json reduced to a few hundred tuples, run end to end by
# `sentinel run` (import -> build -> train -> export -> eval) with the tiny model.
# collab_tokenize.sh: the recipe section `tokenize` and the LM stage read only the training
# debates (docs/run.md "Recipe section `tokenize`").
foreach(t collab_pipeline collab_tokenize)
  add_test(NAME ${t} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/${t}.sh)
  set_tests_properties(${t} PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                       LABELS "noasan" TIMEOUT 900
                       WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
  if(NOT SENTINEL_WITH_TORCH)
    set_tests_properties(${t} PROPERTIES DISABLED TRUE)
  endif()
endforeach()
