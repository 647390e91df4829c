# tests/interop.cmake: sentinel against a real llama.cpp `llama-server` (label `interop`,
# docs/interop.md). Two tests, both `interop;noasan` (they run once, not again under ASan):
#  * interop_llama_server_build: scripts/llama-server.sh builds llama-server from the llama.cpp
#    source that npm node-llama-cpp ships, once, into the cache outside the build tree
#    (${SENTINEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sentinel}/llama-server-<release>); a warm
#    cache makes it instant. A cold build is bounded by SENTINEL_INTEROP_BUILD_TIMEOUT seconds
#    and skips (77) past it, keeping the partial build to resume next time; it also skips without
#    git, cmake, a C++ compiler, node/npm or the npm registry. PROCESSORS 2: the compile takes
#    every core, so ctest -j2 runs nothing beside it (timing-sensitive tests stay unloaded).
#  * interop_llama_server: tests/interop_server.sh (export, serve, simulate, embeddings vs
#    `sentinel score --detector`); skips (77) when the build test left no binary.
# CI budget: .ci/run must stay under 30 min on a fresh 2-core machine; the rest of the suite
# (build, tests, ASan) takes about 15 min there, so the cold build gets 15 min by default.
set(SENTINEL_INTEROP_BUILD_TIMEOUT 900 CACHE STRING
    "seconds the interop test may spend building llama-server (0 = do not build, skip)")
if(SENTINEL_INTEROP_BUILD_TIMEOUT GREATER 0)
  set(_sn_interop_timeout ${SENTINEL_INTEROP_BUILD_TIMEOUT})
else()
  set(_sn_interop_timeout 1)
endif()
add_test(NAME interop_llama_server_build
         COMMAND ${CMAKE_SOURCE_DIR}/scripts/llama-server.sh build)
# npm installs of node-llama-cpp (test_export_llama) and the Qwen tokenizer
# (tokenizer_qwen_parity) go into the same build-tree folders: DEPENDS orders those tests first
# so two npm installs never run into one folder at once.
set_tests_properties(interop_llama_server_build PROPERTIES
  LABELS "interop;noasan" SKIP_RETURN_CODE 77 PROCESSORS 2
  DEPENDS "test_export_llama"
  ENVIRONMENT "${SN_TEST_ENV};SENTINEL_LLAMA_BUILD_TIMEOUT=${_sn_interop_timeout}"
  TIMEOUT 2400)
add_test(NAME interop_llama_server COMMAND bash ${CMAKE_SOURCE_DIR}/tests/interop_server.sh)
set_tests_properties(interop_llama_server PROPERTIES
  LABELS "interop;noasan" SKIP_RETURN_CODE 77
  DEPENDS "interop_llama_server_build;tokenizer_qwen_parity;test_export_llama"
  ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 600
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
