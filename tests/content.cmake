# tests/content.cmake: a detector trained with content-contrastive pairs ranks a style-matched
# wrong answer below the matching right one more often than chance (tests/content_contrast.sh;
# docs/eval.md "Content, not wording"). Trains a tiny model: needs sentinel-torch, several
# processes, so not in the ASan suite.
add_test(NAME content_contrast COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/content_contrast.sh)
set_tests_properties(content_contrast PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 1200
                     LABELS "noasan" WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
if(NOT SENTINEL_WITH_TORCH)
  set_tests_properties(content_contrast PROPERTIES DISABLED TRUE)
endif()
