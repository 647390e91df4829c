# tests/layout.cmake: each library links only its real dependencies (docs/design.md §3,
# docs/modules.txt; the libraries are declared in CMakeLists.txt by sn_module). A program linked
# against one library alone must not load or name the libraries that library may not need.
# The group metrics (eval/): trajectories through data_core, no libcurl, HDF5 or libtorch.
add_executable(link_eval_groups ${CMAKE_CURRENT_SOURCE_DIR}/link/eval_groups.c)
target_link_libraries(link_eval_groups PRIVATE sn_eval)
add_test(NAME layout_eval_links_without_curl_hdf5_torch
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_links.sh
                 $<TARGET_FILE:link_eval_groups> "(lib|-l)(curl|hdf5|torch|c10|gloo)"
                 ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/link_eval_groups.dir/link.txt)
# The OpenAI client (llm/): common and libcurl, no HDF5, tokenizer or libtorch.
add_executable(link_llm ${CMAKE_CURRENT_SOURCE_DIR}/link/llm_open.c)
target_link_libraries(link_llm PRIVATE sn_llm)
add_test(NAME layout_llm_links_without_hdf5_torch
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_links.sh
                 $<TARGET_FILE:link_llm> "(lib|-l)(hdf5|torch|c10|gloo|pcre2|utf8proc)"
                 ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/link_llm.dir/link.txt)

# Every #include and every sn_module(... DEPS ...) follows the module table (docs/modules.txt);
# no C++ outside aten/. README.md, docs/ and source comments cite only files and sections that
# exist inside the repository (docs/design.md §7).
find_program(SN_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT SN_PYTHON3)
  find_program(SN_PYTHON3 NAMES python3 REQUIRED)
endif()
add_test(NAME layout_includes
         COMMAND ${SN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/check_layout.py ${CMAKE_SOURCE_DIR})
add_test(NAME layout_docs
         COMMAND ${SN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/check_docs.py ${CMAKE_SOURCE_DIR})
set_tests_properties(layout_includes layout_docs PROPERTIES LABELS "noasan")
