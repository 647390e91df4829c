# tests/export_fixture.cmake: one random tiny detector exported once (tests/test_export_fixture.c,
# $SENTINEL_TMP/tiny_detector/d.gguf) for the CLI tests that need a detector file but not a
# trained one; they read it through sn_test_tiny_detector(). Tests that need a trained detector
# use the trained_run fixture (tests/run.cmake).
if(TEST test_export_fixture)
  set_tests_properties(test_export_fixture PROPERTIES FIXTURES_SETUP tiny_detector)
  foreach(t test_data_sim_defense_cli test_eval_defended_cli test_eval_detect_cli)
    if(TEST ${t})
      set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED tiny_detector)
    endif()
  endforeach()
endif()
