# tests/tokenizer.cmake: tokenizer tests that need more than a C file (included by
# tests/CMakeLists.txt).
#
# utf8proc (Debian libutf8proc-dev) gives tokenizer/ its NFC normalizer. Until the top-level
# CMakeLists.txt links it to sn_tokenizer itself, link it here (CMP0079 allows linking a target
# made in another directory); harmless once the top level does it too.
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
target_link_libraries(sn_tokenizer PUBLIC PkgConfig::UTF8PROC)
