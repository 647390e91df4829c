# The runtime detector's kernel sets forced one at a time (tests/test_export_kernels.c,
# docs/export.md "Weight formats and kernels"): each exits 77, which ctest counts as skipped,
# where this CPU lacks the set. test_export_kernels itself (no argument) runs the portable sets
# on every CPU.
foreach(spec avx2+tile avx512+tile avx512+dot avx2+int8 avx512+int8)
  string(REPLACE "+" "_" tname "test_export_kernels_${spec}")
  add_test(NAME ${tname} COMMAND test_export_kernels ${spec})
  set_tests_properties(${tname} PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 600
                       SKIP_RETURN_CODE 77 LABELS numerics
                       WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
endforeach()
