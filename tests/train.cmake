# tests/train.cmake: properties of the trainer tests (included by tests/CMakeLists.txt).
# test_train_cli runs `sentinel simulate`, `build` and several `train` processes (one of them
# SIGKILLed on purpose): multi-process and slow, so not part of the ASan suite.
if(TARGET test_train_cli)
  set_tests_properties(test_train_cli PROPERTIES LABELS noasan)
endif()
if(TARGET test_train_dist)
  set_tests_properties(test_train_dist PROPERTIES LABELS noasan)
endif()

# Shell tests on the trained_run fixture (read-only; noasan: several processes, and the fixture
# itself is not in the ASan suite):
#   train_cluster_scripts  recipes/cluster/train-torchrun.sh and train-srun.sbatch under
#                          stand-in launchers: 2 ranks train, DEVICE reaches the trainer
#   inspect_models         `sentinel inspect` of training runs, checkpoints (full and LoRA),
#                          model directories and safetensors files, against the files
#   score_pairs            `score --model` and `--detector` read (context, response) pairs
#                          alike and agree on the fixture's checkpoint and its export
#   train_pretrain_run     `sentinel run` with train.pretrain_steps on a copy of its
#                          trajectories: the lm stage, its inputs, the reward run's base
if(SENTINEL_WITH_TORCH)
  foreach(t train_cluster_scripts inspect_models score_pairs train_pretrain_run)
    add_test(NAME ${t} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/${t}.sh)
    set_tests_properties(${t} PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 300
                         LABELS noasan FIXTURES_REQUIRED trained_run
                         WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
  endforeach()
endif()
