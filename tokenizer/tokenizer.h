/* tokenizer/tokenizer.h: byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json
** (model type BPE with merges, ByteLevel pre-tokenizer with the Qwen2 split pattern, added
** tokens matched before BPE), and the prompt template that renders R(response ⊕ context)
** (tokenizer/template.h). Format notes: docs/formats.md#tokenizerjson.
**
** A loaded tokenizer is immutable: encode/decode may be called from many threads at once.
** Ids are int32. Text is UTF-8; invalid UTF-8 input is an error naming the byte offset. */
#ifndef SN_TOKENIZER_H
#define SN_TOKENIZER_H
#include "common/common.h"

struct sn_tokenizer;

/* A growing id array the caller owns (free with sn_ids_free). encode appends to it. */
struct sn_ids {
    int32_t *v;
    size_t   n, cap;
};
int  sn_ids_push(struct sn_ids *ids, int32_t id, struct sn_err *err);
void sn_ids_free(struct sn_ids *ids);

int  sn_tokenizer_open(const char *path, struct sn_tokenizer **out, struct sn_err *err);
void sn_tokenizer_free(struct sn_tokenizer *tok);                 /* NULL is fine */
/* Appends the ids of text[0..len) to out. Special/added tokens in the text are matched; no
** special tokens are added (HF add_special_tokens = false). On failure out->n is unchanged.
** Thread-safe: each calling thread gets its own scratch (kept until sn_tokenizer_free). */
int  sn_tokenizer_encode(const struct sn_tokenizer *tok, const char *text, size_t len,
                         struct sn_ids *out, struct sn_err *err);
/* Decodes ids into a new NUL-terminated string (*text, caller frees with sn_free). An id out
** of range is an error naming its position. The result is the tokens' raw bytes (added tokens
** give their text): decode(encode(x)) == NFC(x) for valid UTF-8 x, and == x when x is in NFC
** (when the tokenizer.json has no normalizer, always x). An arbitrary id sequence may cut a
** UTF-8 character in two; its bytes are returned as they are (HF would show U+FFFD). */
int  sn_tokenizer_decode(const struct sn_tokenizer *tok, const int32_t *ids, size_t n,
                         char **text, size_t *len, struct sn_err *err);
size_t sn_tokenizer_vocab_size(const struct sn_tokenizer *tok);  /* incl. added tokens */
/* Id of an exact token string (added tokens included), or -1. The token is given as its raw
** text ("<|im_end|>", " the"), not in ByteLevel's alphabet ("Ġthe"). */
int32_t sn_tokenizer_token_id(const struct sn_tokenizer *tok, const char *token);
/* True when id is an added token marked "special" in the tokenizer.json. */
bool sn_tokenizer_is_special(const struct sn_tokenizer *tok, int32_t id);
/* SHA-256 (hex) of the tokenizer.json bytes: the identity recorded in shards. Borrowed. */
const char *sn_tokenizer_hash(const struct sn_tokenizer *tok);
/* ---- folded text, for content keys (tokenizer/fold.c) ------------------------------------ */

/* Appends the folded form of valid UTF-8 s[0..n) to out (NUL-terminated): Unicode NFC, then
** every code point lower-cased (utf8proc_tolower), every run of white space (ASCII \t \n \v
** \f \r, U+0085 and the categories Zs, Zl, Zp) made one space, none at either end. The result
** holds no line break. Invalid UTF-8 is SN_E_FORMAT. `sentinel build` keys training questions by
** it and `sentinel eval` looks evaluated ones up the same way (docs/eval.md "Leakage"). */
int  sn_text_fold(const char *s, size_t n, struct sn_buf *out, struct sn_err *err);

/* ---- a tokenizer from in-memory arrays (GGUF metadata, docs/formats.md#gguf) ------------- */

/* Token types as llama.cpp's tokenizer.ggml.token_type stores them (append-only values). */
enum sn_token_type {
    SN_TOKEN_NORMAL       = 1,  /* a BPE token, written in the ByteLevel alphabet ("Ġthe") */
    SN_TOKEN_UNKNOWN      = 2,  /* refused: byte-level BPE has no unknown token */
    SN_TOKEN_CONTROL      = 3,  /* a special added token, raw text ("<|im_end|>") */
    SN_TOKEN_USER_DEFINED = 4,  /* a non-special added token, raw text */
    SN_TOKEN_UNUSED       = 5,  /* a hole in the id range ("[PAD123]"): no token has this id */
    SN_TOKEN_BYTE         = 6   /* refused: SentencePiece byte fallback */
};

/* What sn_tokenizer_create needs; every pointer is borrowed for the call only. */
struct sn_tokenizer_vocab {
    const char *const *tokens;     /* n_tokens strings; token i has id i */
    const size_t      *token_lens; /* their byte lengths; NULL = strlen */
    const int32_t     *types;      /* n_tokens enum sn_token_type values; NULL = all NORMAL */
    size_t             n_tokens;
    const char *const *merges;     /* "a b" in the ByteLevel alphabet, rank = position */
    size_t             n_merges;
    const char        *pre;        /* pre-tokenizer: "qwen2" (Qwen2's split regex) or
                                   ** "gpt2"/"default" (GPT-2's); NULL = "qwen2" */
    bool               nfc;        /* NFC-normalize text before BPE (Qwen's tokenizer.json) */
    const char        *hash;       /* identity reported by sn_tokenizer_hash (the SHA-256 of
                                   ** the tokenizer.json it came from); NULL = SHA-256 of the
                                   ** arrays themselves */
};
/* Builds a tokenizer from arrays (the GGUF route; tokenizer/ knows nothing of GGUF). Every
** string, type, merge and id is checked: an error names the token or merge index. The result
** encodes exactly as the tokenizer.json it was converted from (tests/test_tokenizer_vocab.c). */
int  sn_tokenizer_create(const struct sn_tokenizer_vocab *v, struct sn_tokenizer **out,
                         struct sn_err *err);

/* The arrays of a loaded tokenizer over n_ids ids (>= sn_tokenizer_vocab_size), the way
** llama.cpp's tokenizer.ggml keys hold them: BPE tokens in the ByteLevel alphabet (NORMAL),
** added tokens as their raw text (CONTROL when special, else USER_DEFINED), ids no token has as
** "[PAD<id>]" (UNUSED); merges "a b" in rank order as the file listed them; pre the
** pre-tokenizer's llama.cpp name ("qwen2" for Qwen2's split regex, "gpt2" for GPT-2's) or NULL
** for any other split. sn_tokenizer_create of these arrays encodes as tok does. */
struct sn_tokenizer_arrays {
    char      **tokens;
    int32_t    *types;
    size_t      n_tokens;
    char      **merges;
    size_t      n_merges;
    const char *pre;          /* static */
    bool        nfc;
};
int  sn_tokenizer_to_arrays(const struct sn_tokenizer *tok, size_t n_ids,
                            struct sn_tokenizer_arrays *out, struct sn_err *err);
void sn_tokenizer_arrays_free(struct sn_tokenizer_arrays *a);   /* NULL is fine */

/* ---- training a byte-level BPE tokenizer (tokenizer/bpe_train.c) ------------------------- */

/* Plain BPE training (Sennrich et al. 2016, §3.1) over the pre-tokens of the added text, as
** Hugging Face's BpeTrainer does it: text is NFC-normalized, cut at the special tokens, split
** by the Qwen2 regex; every distinct pre-token starts as its bytes (ids 0-255, byte b = id b);
** the most frequent adjacent pair of tokens (ties: smallest left id, then smallest right id) is
** merged into a new token, until the vocabulary has vocab_size - n_specials tokens, no pair is
** left, or the best pair occurs fewer than min_frequency times. Pair counts are updated
** incrementally (only the pre-tokens holding the merged pair are revisited), so a few MB of
** text train a 16k vocabulary in seconds. Deterministic: the result depends only on the
** multiset of pre-tokens and the params. The tokenizer.json written has the demo's (and
** Qwen2's) layout: NFC, Qwen2 split + ByteLevel, BPE, ByteLevel decoder; the special tokens
** take the ids after the learned ones. docs/formats.md#tokenizerjson, README "sentinel
** tokenize train". One trainer, one thread at a time. */
struct sn_bpe_trainer;
struct sn_bpe_train_params {
    size_t             vocab_size;    /* ids in all (bytes + learned + specials); default 8192 */
    uint64_t           min_frequency; /* rarer best pair ends training; 0 or 1 = any; default 2 */
    const char *const *specials;      /* n_specials added special tokens, raw text, in id order;
                                      ** NULL = the ChatML three: <|endoftext|>, <|im_start|>,
                                      ** <|im_end|> */
    size_t             n_specials;
    /* Called after each merge with the vocabulary size so far (specials not counted) and the
    ** size training aims at; nonzero stops training with SN_E_CANCELLED. NULL = none. */
    int              (*progress)(void *user, size_t n_tokens, size_t target);
    void              *user;
};
struct sn_bpe_train_params sn_bpe_train_default_params(void);
/* What training saw and reached (sn_bpe_trainer_train). */
struct sn_bpe_train_report {
    uint64_t bytes;        /* text added (after NFC, specials cut out) */
    uint64_t n_pretokens;  /* pre-tokens counted */
    size_t   n_words;      /* distinct pre-tokens */
    size_t   n_merges;     /* merges learned */
    size_t   vocab_size;   /* ids in the tokenizer.json, specials included */
    bool     ran_out;      /* stopped before vocab_size: no pair left, or min_frequency */
};
/* The params are checked here: vocab_size below 256 + n_specials (the byte alphabet and the
** specials) or above 2^24, an empty, duplicate or invalid UTF-8 special token is SN_E_ARG. */
int  sn_bpe_trainer_create(const struct sn_bpe_train_params *p, struct sn_bpe_trainer **out,
                           struct sn_err *err);
/* Counts the pre-tokens of text[0..len) (one document: pre-tokens never span two calls).
** Invalid UTF-8 is SN_E_FORMAT naming the byte offset within text (the caller adds file:line). */
int  sn_bpe_trainer_add(struct sn_bpe_trainer *t, const char *text, size_t len,
                        struct sn_err *err);
/* Learns the merges (once; then no more text can be added). No text at all (no pre-token) is
** SN_E_ARG "empty corpus". rep may be NULL. */
int  sn_bpe_trainer_train(struct sn_bpe_trainer *t, struct sn_bpe_train_report *rep,
                          struct sn_err *err);
/* Writes the trained tokenizer as tokenizer.json, atomically. */
int  sn_bpe_trainer_write(const struct sn_bpe_trainer *t, const char *path, struct sn_err *err);
void sn_bpe_trainer_free(struct sn_bpe_trainer *t);                 /* NULL is fine */

/* Writes the byte-level tokenizer of the tiny demo model in tokenizer.json format, atomically:
** SN_TOKENIZER_DEMO_VOCAB = 512 ids = 256 byte tokens (ids 0-255, byte b has id b) + 253
** merges learned deterministically from a built-in English text (ids 256-508, by
** sn_bpe_trainer_train with min_frequency 1) + the ChatML
** special tokens <|endoftext|> 509, <|im_start|> 510, <|im_end|> 511. Same layout as Qwen2's
** (NFC, Qwen2 split regex, ByteLevel), loaded by sn_tokenizer_open like any other. */
#define SN_TOKENIZER_DEMO_VOCAB 512
int  sn_tokenizer_write_demo(const char *path, struct sn_err *err);

#endif
