# tests/serve.cmake: the detector inside agents (docs/agents.md): `sentinel score` as a
# coprocess, the library's sentinel (Algorithm 1) and `sentinel serve`. They score with the
# suite's random tiny detector (tests/export_fixture.cmake).
foreach(t test_serve_coprocess test_serve_http test_defense_sentinel)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED tiny_detector)
  endif()
endforeach()
