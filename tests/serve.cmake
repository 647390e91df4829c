# tests/serve.cmake: the detector inside agents (docs/agents.md): `sentinel score` as a
# coprocess, the library's sentinel (Algorithm 1) and `sentinel serve`. They score with the
# suite's random tiny detector (tests/export_fixture.cmake).
foreach(t test_serve_coprocess test_serve_http test_defense_sentinel)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED tiny_detector)
  endif()
endforeach()
# The Python package (python/) under Debian's /usr/bin/python3, installed offline into a
# temporary prefix with the C library, checked against it to the bit (tests/python_package.py),
# and the debate example of docs/agents.md (python/examples/debate.py) against the loopback fake
# OpenAI server, checked against `sentinel eval`'s replay of the debate it wrote
# (tests/python_debate.py).
# Not under the sanitizers: an instrumented libsentinel_detector.so cannot be loaded by an
# uninstrumented python3 (the ASan runtime must come first); the library's code runs under ASan
# in the C tests of the same functions (test_defense_sentinel, test_serve_http).
if(EXISTS ${SENTINEL_PYTHON})
  foreach(t python_package python_debate)
    add_test(NAME ${t} COMMAND ${SENTINEL_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/${t}.py)
    set_tests_properties(${t} PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 900
                         FIXTURES_REQUIRED tiny_detector LABELS noasan)
  endforeach()
endif()
