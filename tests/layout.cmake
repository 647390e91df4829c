# tests/layout.cmake: each library links only its real dependencies (docs/design.md §3,
# docs/modules.txt; the libraries are declared in CMakeLists.txt by sn_module). A program linked
# against one library alone must not load or name the libraries that library may not need.

# sn_link_check(TEST PROGRAM SOURCE LIBRARY FORBIDDEN [link-only]): SOURCE linked against LIBRARY
# alone (as PROGRAM) must not load or name a library matching the regular expression FORBIDDEN
# (with link-only: must not name one on its link command; see check_links.sh).
function(sn_link_check test program source library forbidden)
  add_executable(${program} ${CMAKE_CURRENT_SOURCE_DIR}/link/${source})
  target_link_libraries(${program} PRIVATE ${library})
  add_test(NAME ${test}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_links.sh
                   $<TARGET_FILE:${program}> "${forbidden}"
                   ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${program}.dir/link.txt ${ARGN})
endfunction()
# The group metrics (eval/): trajectories through data/, no libcurl, HDF5 or libtorch.
sn_link_check(layout_eval_links_without_curl_hdf5_torch link_eval_groups eval_groups.c sn_eval
              "(lib|-l)(curl|hdf5|torch|c10|gloo)")
# The OpenAI client (llm/): common and libcurl, no HDF5, tokenizer or libtorch.
sn_link_check(layout_llm_links_without_hdf5_torch link_llm llm_open.c sn_llm
              "(lib|-l)(hdf5|torch|c10|gloo|pcre2|utf8proc)")
# Every other library, each against what its row of docs/modules.txt does not list (the
# libraries of the modules it may use included).
set(SN_TORCH_RE "torch|c10|gloo")
sn_link_check(layout_common_links link_common common.c sn_common
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|pcre2|utf8proc|openblas)")
sn_link_check(layout_tokenizer_links link_tokenizer tokenizer.c sn_tokenizer
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|openblas)")
# The context a detector sees (context/): common and the tokenizer's template only.
sn_link_check(layout_context_links link_context context.c sn_context
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|openblas)")
# data/ reaches PCRE2 and utf8proc only through context/'s use of the tokenizer.
sn_link_check(layout_data_links link_data data.c sn_data
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|openblas)")
# (HDF5 itself links libcurl, for its S3 driver: not forbidden here.)
sn_link_check(layout_shard_links link_shard shard.c sn_shard
              "(lib|-l)(${SN_TORCH_RE}|pcre2|utf8proc|openblas)")
sn_link_check(layout_import_links link_import import.c sn_import
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|openblas)")
sn_link_check(layout_tuples_links link_tuples tuples.c sn_tuples
              "(lib|-l)(${SN_TORCH_RE}|openblas)")
# The simulator needs neither the tuple builder nor shards: no HDF5 (docs/design.md §3).
sn_link_check(layout_sim_links_without_hdf5 link_sim sim.c sn_sim
              "(lib|-l)(hdf5|${SN_TORCH_RE}|openblas)")
sn_link_check(layout_defense_links link_defense defense.c sn_defense
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|openblas|microhttpd)")
sn_link_check(layout_serve_links link_serve serve.c sn_serve
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|sn_hf)")
sn_link_check(layout_hf_links link_hf hf.c sn_hf
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|openblas)")
sn_link_check(layout_export_runtime_links link_export_runtime export_runtime.c sn_export_runtime
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|sn_hf)")
sn_link_check(layout_export_write_links link_export_write export_write.c sn_export_write
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE})")
sn_link_check(layout_eval_detect_links link_eval_detect eval_detect.c sn_eval_detect
              "(lib|-l)(${SN_TORCH_RE}|openblas)")
# On libtorch: only the link command is ours (libtorch's own dependencies include libcurl, HDF5
# and PCRE2 in Debian's build); train reaches HDF5 through shard/ and PCRE2 through tokenizer.
if(SENTINEL_WITH_TORCH)
  set(SN_NOT_ON_TORCH "(lib|-l)(curl|hdf5|pcre2|utf8proc|openblas)")
  sn_link_check(layout_aten_links link_aten aten.c sn_aten "${SN_NOT_ON_TORCH}" link-only)
  sn_link_check(layout_lora_links link_lora lora.c sn_lora "${SN_NOT_ON_TORCH}" link-only)
  sn_link_check(layout_loss_links link_loss loss.c sn_loss "${SN_NOT_ON_TORCH}" link-only)
  sn_link_check(layout_train_links link_train train.c sn_train "(lib|-l)(openblas)" link-only)
endif()
# The recipe's train section, decoded without libtorch so that `sentinel` checks a whole recipe
# (docs/run.md "Checking a recipe"): common, cJSON and libm only.
sn_link_check(layout_train_recipe_links link_train_recipe train_recipe.c sn_train_recipe
              "(lib|-l)(curl|hdf5|${SN_TORCH_RE}|pcre2|utf8proc|openblas)")
# The runtime detector library agents embed (docs/export.md): GGUF, OpenBLAS and the tokenizer,
# never HDF5, libcurl, libtorch or the HTTP server's libmicrohttpd (docs/agents.md).
# The checks have teeth: a program that does link libcurl (the llm one), and the detector library,
# which does link OpenBLAS, must each fail when that is what is forbidden.
add_test(NAME layout_links_self_test_program
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_links.sh $<TARGET_FILE:link_llm>
                 "(lib|-l)curl" ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/link_llm.dir/link.txt)
add_test(NAME layout_links_self_test_library
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_links.sh
                 $<TARGET_FILE:sentinel_detector> "(lib|-l)openblas")
set_tests_properties(layout_links_self_test_program layout_links_self_test_library
                     PROPERTIES PASS_REGULAR_EXPRESSION "links what it must not")
add_test(NAME layout_detector_library_links
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_links.sh
                 $<TARGET_FILE:sentinel_detector> "(lib|-l)(curl|hdf5|microhttpd|${SN_TORCH_RE}|sn_hf)"
                 ${CMAKE_BINARY_DIR}/CMakeFiles/sentinel_detector.dir/link.txt)
# ... and it is compiled from sources, not linked from sn_hf, so also: no hf/ code inside it (the
# Hugging Face formats: sn_hf_*, the safetensors sn_st_*, config.json's sn_model_config_*). Read
# from the full symbol table: the dynamic one holds the public API alone (docs/api.md).
add_test(NAME layout_detector_library_without_hf
         COMMAND bash -c "nm --defined-only $1 | grep -q ' sn_detector_open' && ! nm --defined-only $1 | grep -E ' (sn_hf_|sn_st_|sn_model_config_)'"
                 check $<TARGET_FILE:sentinel_detector>)

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
add_test(NAME layout_self_test
         COMMAND ${SN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/check_layout.py --self-test)
# No circle between the source files of one target, read from the built objects (nm); the
# self-test plants one in symbol tables and in two objects it compiles.
add_test(NAME layout_no_circles
         COMMAND ${CMAKE_COMMAND} -E env SENTINEL_BUILD=${CMAKE_BINARY_DIR}
                 ${SN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/check_cycles.py)
add_test(NAME layout_no_circles_self_test
         COMMAND ${SN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/check_cycles.py --self-test
                 ${CMAKE_C_COMPILER})
set_tests_properties(layout_includes layout_docs layout_self_test layout_no_circles
                     layout_no_circles_self_test layout_detector_library_without_hf
                     PROPERTIES LABELS "noasan")
