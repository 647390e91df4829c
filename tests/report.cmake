# tests/report.cmake: TensorBoard event files and trainer_state.json read by independent readers,
# `sentinel report`'s figures (tests/report_tb.sh), and the command line's papercuts
# (tests/cli_papercuts.sh). The first two read the `trained_run` fixture (tests/run.cmake).
foreach(mode tensorboard figures)
  add_test(NAME report_${mode} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_tb.sh ${mode})
  set_tests_properties(report_${mode} PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                       FIXTURES_REQUIRED trained_run SKIP_RETURN_CODE 77 TIMEOUT 600
                       WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
  if(NOT SENTINEL_WITH_TORCH)
    set_tests_properties(report_${mode} PROPERTIES DISABLED TRUE)
  endif()
endforeach()
add_test(NAME cli_papercuts COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_papercuts.sh)
set_tests_properties(cli_papercuts PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 120
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
if(SENTINEL_WITH_TORCH) # its score check reads the trained fixture's detector
  set_tests_properties(cli_papercuts PROPERTIES FIXTURES_REQUIRED trained_run)
endif()
