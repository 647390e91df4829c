# tests/tuples.cmake: tuple/shard tests that need more than a C file (included by
# tests/CMakeLists.txt).
#
# Shards read by h5py with no code of ours (tests/ref/read_shard.py): builds shards with
# `sentinel build`, compares what h5py reads with `sentinel inspect --json --all`, checks the
# layout invariants, the manifest's SHA-256s and the content hashes, and decodes every token
# sequence with a byte-level BPE decoder written in the script. Debian's python3 (/usr/bin/python3,
# which has python3-h5py); skipped (77) when h5py is missing.
add_test(NAME data_shard_h5py
         COMMAND ${SENTINEL_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/ref/read_shard.py
                 $<TARGET_FILE:sentinel> ${CMAKE_BINARY_DIR}/test-tmp/data_shard_h5py)
set_tests_properties(data_shard_h5py PROPERTIES
                     ENVIRONMENT "${SN_TEST_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 300
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
