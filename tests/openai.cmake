# tests/openai.cmake: extra registration for the `openai` backend tests (llm/openai.c).
# test_llm_openai_unit and test_llm_openai_http are picked up by the test_*.c glob; the HTTP
# test starts tests/servers/fake_openai.py (Debian's /usr/bin/python3, standard library only)
# and takes about 15 s, most of it waiting out Retry-After delays the server asks for. Its
# limit, and that of test_llm_openai_replies, is for a hang: each of their waits is bounded at
# 60 s, which a loaded machine never meets.
if(TEST test_llm_openai_http)
  set_tests_properties(test_llm_openai_http PROPERTIES TIMEOUT 240 LABELS "openai")
endif()
if(TEST test_data_openai_simulate) # runs $SENTINEL_BIN simulate against the fake server
  set_tests_properties(test_data_openai_simulate PROPERTIES TIMEOUT 90 LABELS "openai")
endif()
if(TEST test_llm_openai_unit)
  set_tests_properties(test_llm_openai_unit PROPERTIES LABELS "openai")
endif()
# The fake server itself must at least compile and answer --help.
add_test(NAME openai_fake_server_help
         COMMAND ${SENTINEL_PYTHON} ${CMAKE_SOURCE_DIR}/tests/servers/fake_openai.py --help)
set_tests_properties(openai_fake_server_help PROPERTIES LABELS "openai;noasan" TIMEOUT 300)
if(TEST test_llm_openai_replies) # fake server, including one that answers 503 while "loading"
  set_tests_properties(test_llm_openai_replies PROPERTIES TIMEOUT 240 LABELS "openai")
endif()
