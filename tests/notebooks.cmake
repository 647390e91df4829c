# tests/notebooks.cmake: the training and detection notebooks (notebooks/02_training.ipynb,
# notebooks/03_detection.ipynb) executed top to bottom, headless, on the suite's trained run
# (the trained_run fixture of tests/run.cmake: $SENTINEL_TMP/run_pipeline/a, the reduced
# quickstart), with Debian's python (tests/notebook_run.sh). Each notebook asserts its own
# sanity and cross-checks (schedule, detector vs trainer, Wilson intervals, best baseline,
# AUROC from the items CSV); the script also checks that every figure was written and that the
# cross-checks ran. The committed notebooks must carry no outputs (the _clean tests).
set(SN_TRAINED_RUN_DIR ${CMAKE_BINARY_DIR}/test-tmp/run_pipeline/a)
set(SN_NOTEBOOKS
    "training|02_training|training_curves|rewards|~validation split, checkpoint-|~test split, final weights: the detector agrees|~follow the cosine schedule"
    "detection|03_detection|accuracy_per_round|detection_per_attack|scores|~detector: in the report|~best baselines agree with the report|~agree with the report, every round included")
foreach(spec ${SN_NOTEBOOKS})
  string(REPLACE "|" ";" parts "${spec}")
  list(POP_FRONT parts short file)
  set(nb ${CMAKE_SOURCE_DIR}/notebooks/${file}.ipynb)
  add_test(NAME notebook_${short}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/notebook_run.sh run ${nb} ${parts})
  set_tests_properties(notebook_${short} PROPERTIES
                       ENVIRONMENT "${SN_TEST_ENV};SENTINEL_RUN_DIR=${SN_TRAINED_RUN_DIR}"
                       FIXTURES_REQUIRED trained_run
                       LABELS "notebook;noasan" TIMEOUT 600
                       WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
  if(NOT SENTINEL_WITH_TORCH)  # the fixture trains: it needs libtorch
    set_tests_properties(notebook_${short} PROPERTIES DISABLED TRUE)
  endif()
  add_test(NAME notebook_${short}_clean
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/notebook_run.sh clean ${nb})
  set_tests_properties(notebook_${short}_clean PROPERTIES ENVIRONMENT "${SN_TEST_ENV}"
                       LABELS "notebook" TIMEOUT 600)
endforeach()
