# tests/eval_types.cmake: `sentinel eval`'s message-type AUROCs and AITM share against
# scripts/message_types.py, an independent Python reference, on a small sim run, and its
# below-chance sentence (tests/eval_types.sh); needs the tiny detector fixture.
add_test(NAME eval_types_reference COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/eval_types.sh)
set_tests_properties(eval_types_reference PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 300
                     LABELS "noasan" FIXTURES_REQUIRED tiny_detector
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
