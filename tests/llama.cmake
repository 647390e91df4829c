# tests/llama.cmake: our GGUF in real llama.cpp (tests/test_export_llama.c with
# tests/ref/llama_ref.mjs): node-llama-cpp is npm-installed into the build tree once; skipped
# (77) without node/npm or registry access. Slow and multi-process: label noasan.
if(TEST test_export_llama)
  set_tests_properties(test_export_llama PROPERTIES LABELS noasan SKIP_RETURN_CODE 77
                       TIMEOUT 1200)
endif()
