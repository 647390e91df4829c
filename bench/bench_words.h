/* bench/bench_words.h: the benchmarks' synthetic debate text (bench_detector, _formats, _serve):
** n words drawn by r from a small debate vocabulary, a few bytes per token of the demo
** tokenizer. The caller frees the text (sn_buf memory). */
#ifndef SN_BENCH_WORDS_H
#define SN_BENCH_WORDS_H
#include "common/common.h"

static inline char *bench_words(struct sn_rng *r, int n_words)
{
    static const char *const w[] = {"the", "answer", "is", "because", "we", "multiply", "seven",
                                    "twelve", "so", "(B)", "84", "agents", "debate", "round",
                                    "evidence", "claim", "I", "think", "correct", "wrong"};
    struct sn_buf b = {0};
    struct sn_err e = {0};
    for (int i = 0; i < n_words; i++)
        sn_buf_printf(&b, &e, "%s%s", i ? " " : "", w[sn_rng_below(r, 20)]);
    return b.data;
}
#endif
