# `sentinel eval --defended` end to end simulates three arms and replays one with a detector:
# slow and multi-process, so out of the ASan suite (label noasan).
if(TEST test_eval_defended_cli)
  set_tests_properties(test_eval_defended_cli PROPERTIES LABELS "noasan")
endif()
# The same against an OpenAI-compatible endpoint (tests/servers/fake_openai.py): the four arms
# through the `llm` backend and the measured overhead; needs the tiny detector fixture
# (tests/export_fixture.cmake) and Debian's /usr/bin/python3.
if(TEST test_eval_defended_endpoint)
  set_tests_properties(test_eval_defended_endpoint PROPERTIES LABELS "noasan;openai" TIMEOUT 300
                       FIXTURES_REQUIRED tiny_detector)
endif()
