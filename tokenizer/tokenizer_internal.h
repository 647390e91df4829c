/* tokenizer/tokenizer_internal.h: pieces shared by tokenizer.c and demo.c; not for callers.
**
** ByteLevel alphabet (GPT-2's bytes_to_unicode, used by HF tokenizers' ByteLevel
** pre-tokenizer and decoder): the 188 printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF map
** to the code point of the same value; the other 68 bytes map, in increasing byte order, to
** U+0100, U+0101, ... U+0143. Vocabulary strings in tokenizer.json are written in this
** alphabet (a space is "Ġ" = U+0120). */
#ifndef SN_TOKENIZER_INTERNAL_H
#define SN_TOKENIZER_INTERNAL_H
#include <stdint.h>

/* Code point that byte b is written as. */
uint32_t sn_bytelevel_cp(uint8_t b);
/* Byte that code point cp stands for, or -1 when cp is not in the alphabet. */
int sn_bytelevel_byte(uint32_t cp);

/* The Qwen2 pre-tokenizer split pattern (tokenizer.json pre_tokenizer Split.pattern.Regex),
** used by the demo tokenizer so that it goes through the same code path as Qwen's. */
#define SN_QWEN2_SPLIT_REGEX                                                                 \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+" \
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

#endif
