# bench/aten.cmake: extra targets for bench/aten.sh.
# The C++ baseline of bench_aten_overhead (C++ lives only under aten/) is linked into it, so
# both sides are timed in alternating batches within one process.
if(SENTINEL_WITH_TORCH AND TARGET bench_aten_overhead)
  add_library(sn_aten_bench_ref STATIC ${CMAKE_SOURCE_DIR}/aten/bench/overhead_ref.cpp)
  target_include_directories(sn_aten_bench_ref PRIVATE ${TORCH_INCLUDE_DIRS})
  target_link_libraries(sn_aten_bench_ref PUBLIC ${TORCH_LIBRARIES})
  target_link_libraries(bench_aten_overhead PRIVATE sn_aten_bench_ref)
endif()
if(TARGET bench_gemm_peak)
  target_link_libraries(bench_gemm_peak PRIVATE PkgConfig::OPENBLAS)
endif()
