# tests/train.cmake: properties of the trainer tests (included by tests/CMakeLists.txt).
# test_train_cli runs `sentinel simulate`, `build` and several `train` processes (one of them
# SIGKILLed on purpose): multi-process and slow, so not part of the ASan suite.
if(TARGET test_train_cli)
  set_tests_properties(test_train_cli PROPERTIES LABELS noasan)
endif()
if(TARGET test_train_dist)
  set_tests_properties(test_train_dist PROPERTIES LABELS noasan)
endif()
