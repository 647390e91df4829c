# tests/recipe.cmake: `sentinel run` checks a whole recipe before any stage runs, each section by
# its stage's own decoder (tests/run_recipe_check.sh; docs/run.md "Checking a recipe"). Needs no
# libtorch: nothing is trained.
add_test(NAME run_recipe_check COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_recipe_check.sh)
set_tests_properties(run_recipe_check PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 120
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
