# tests/preference.cmake: `sentinel build` from TRL preference data, then train and score
# (tests/preference_train.sh; the row formats and their errors are
# tests/test_data_tuples_preference.c). Needs libtorch for train and score.
add_test(NAME preference_train COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/preference_train.sh)
set_tests_properties(preference_train PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 300
                     LABELS "noasan" WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
if(NOT SENTINEL_WITH_TORCH)
  set_tests_properties(preference_train PROPERTIES DISABLED TRUE)
endif()
