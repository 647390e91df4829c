# tests/reliability.cmake: the failure-injection shim for full-disk tests (tests/shim/enospc.c,
# loaded with LD_PRELOAD by tests/reliability_cli.sh, which gets its path as its argument).
add_library(sn_enospc SHARED ${CMAKE_CURRENT_SOURCE_DIR}/shim/enospc.c)
target_link_libraries(sn_enospc PRIVATE ${CMAKE_DL_LIBS})
# The shim must not carry the sanitizer runtime: LD_PRELOAD'ed before it, ASan refuses to start.
set_target_properties(sn_enospc PROPERTIES C_VISIBILITY_PRESET default)
target_compile_options(sn_enospc PRIVATE -fno-sanitize=all)
target_link_options(sn_enospc PRIVATE -fno-sanitize=all)

add_test(NAME reliability_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/reliability_cli.sh $<TARGET_FILE:sn_enospc>)
set_tests_properties(reliability_cli PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" LABELS "noasan"
                     TIMEOUT 300 WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
