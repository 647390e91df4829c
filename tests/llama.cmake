# tests/llama.cmake: our GGUF in real llama.cpp (tests/test_export_llama.c with
# tests/ref/llama_ref.mjs): node-llama-cpp is npm-installed into the build tree once; skipped
# (77) without node/npm or registry access. Slow and multi-process: label noasan.
if(TEST test_export_llama)
  set_tests_properties(test_export_llama PROPERTIES LABELS noasan SKIP_RETURN_CODE 77
                       TIMEOUT 1200)
endif()

# Hugging Face's GGUF parser (npm @huggingface/gguf, installed into the build tree once) reads
# our exported detectors (f32, f16, q8_0, --head-as-logit) and sees the same metadata and tensor
# list as `sentinel inspect --json` (tests/export_hf_gguf.sh); it exports from the suite's
# trained fixture.
add_test(NAME export_hf_gguf COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/export_hf_gguf.sh)
set_tests_properties(export_hf_gguf PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" LABELS noasan
                     SKIP_RETURN_CODE 77 TIMEOUT 900 FIXTURES_REQUIRED trained_run
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
if(NOT SENTINEL_WITH_TORCH)
  set_tests_properties(export_hf_gguf PROPERTIES DISABLED TRUE)
endif()
