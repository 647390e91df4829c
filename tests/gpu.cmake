# The GPU checks (docs/train.md "GPUs"). tests/test_train_cuda.c skips (exit 77) without a CUDA
# device, as on every CPU machine; scripts/gpu-check.sh runs it on a GPU machine. Here the
# script's dry mode reuses this build: the same test with every comparison on the CPU
# (SN_TEST_GPU_DEVICE=cpu), the ecosystem and figure scripts as far as this machine allows, so
# the script and its test cannot rot between GPU runs.
if(TEST test_train_cuda)
  set_tests_properties(test_train_cuda PROPERTIES SKIP_RETURN_CODE 77 LABELS cuda)
  add_test(NAME gpu_check_dry
           COMMAND ${CMAKE_SOURCE_DIR}/scripts/gpu-check.sh --dry ${CMAKE_BINARY_DIR}
                   --out ${CMAKE_BINARY_DIR}/test-tmp/gpu-check)
  set_tests_properties(gpu_check_dry PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 900
                       LABELS "cuda;noasan" PROCESSORS 2)
endif()
