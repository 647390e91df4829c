# tests/train.cmake: properties of the trainer tests (included by tests/CMakeLists.txt).
# test_train_cli runs `sentinel simulate`, `build` and several `train` processes (one of them
# SIGKILLed on purpose): multi-process and slow, so not part of the ASan suite.
if(TARGET test_train_cli)
  set_tests_properties(test_train_cli PROPERTIES LABELS noasan)
endif()
if(TARGET test_train_dist)
  set_tests_properties(test_train_dist PROPERTIES LABELS noasan)
endif()

# recipes/cluster/train-torchrun.sh and train-srun.sbatch under stand-in launchers: 2 ranks
# train on the trained_run fixture's shards, and DEVICE reaches the trainer
# (tests/train_cluster_scripts.sh). Multi-process: noasan.
if(SENTINEL_WITH_TORCH)
  add_test(NAME train_cluster_scripts COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/train_cluster_scripts.sh)
  set_tests_properties(train_cluster_scripts PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 300
                       LABELS noasan FIXTURES_REQUIRED trained_run
                       WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
endif()

# `sentinel inspect` of training runs, checkpoints (full and LoRA), model directories and
# safetensors files, checked against the files themselves (tests/inspect_models.sh).
if(SENTINEL_WITH_TORCH)
  add_test(NAME inspect_models COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/inspect_models.sh)
  set_tests_properties(inspect_models PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 300
                       LABELS noasan FIXTURES_REQUIRED trained_run
                       WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
endif()

# `sentinel score --model` and `--detector` read (context, response) pairs alike and agree on
# the trained fixture and its export (tests/score_pairs.sh).
if(SENTINEL_WITH_TORCH)
  add_test(NAME score_pairs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/score_pairs.sh)
  set_tests_properties(score_pairs PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 300
                       LABELS noasan FIXTURES_REQUIRED trained_run
                       WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
endif()
