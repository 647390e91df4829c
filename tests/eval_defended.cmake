# `sentinel eval --defended` end to end simulates three arms and replays one with a detector:
# slow and multi-process, so out of the ASan suite (label noasan).
if(TEST test_eval_defended_cli)
  set_tests_properties(test_eval_defended_cli PROPERTIES LABELS "noasan")
endif()
