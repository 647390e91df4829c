/* data/build.h: `sentinel build` as a library call: trajectory files -> the tuple builder
** (data/tuples.h) -> tokenized HDF5 shards and manifest.json (data/shard.h; layout in
** docs/formats.md "Shard").
**
** Ownership: the caller owns params and report; the build owns its tokenizer, builder and shard
** set for the call. Errors: SN_E_ARG for bad params, SN_E_FORMAT/SN_E_IO naming the input file
** and line, SN_E_CANCELLED when progress asks to stop. */
#ifndef SN_DATA_BUILD_H
#define SN_DATA_BUILD_H
#include "common/common.h"
#include "data/shard.h"
#include "data/tuples.h"

struct sn_build_progress {
    uint64_t tuples;               /* emitted so far in this run (resumed ones included) */
    uint64_t tokenized;            /* of which tokenized in this run */
    uint64_t trajectories;
    const uint64_t *counts;        /* SN_TC_COUNT entries */
};

struct sn_build_params {
    const char *const *inputs;     /* files or directories (*.jsonl, *.jsonl.gz) */
    size_t      n_inputs;
    const char *out_dir;
    const char *tokenizer_path;
    size_t      max_len;           /* default 1024 */
    size_t      shard_size;        /* tuples per shard; default 4096 */
    int         deflate_level;     /* default 1 */
    bool        skip_bad;          /* count and skip malformed lines instead of failing */
    struct sn_tuples_params tuples;
    /* Called after every tuple; a non-zero return cancels the build (SN_E_CANCELLED). */
    int  (*progress)(void *user, const struct sn_build_progress *p);
    void *user;
};
struct sn_build_params sn_build_default_params(void);

struct sn_build_report {
    uint64_t counts[SN_TC_COUNT];
    int64_t  per_split[SN_SPLIT_COUNT];
    size_t   n_shards;
    size_t   n_inputs;
    bool     resumed;              /* an interrupted build in out_dir was continued */
    bool     was_complete;         /* out_dir already held this build, finished */
};

/* Trajectories -> tokenized shards + manifest.json in out_dir (resumable: re-running after a
** kill continues and gives byte-identical shards and manifest). The manifest also records the
** content keys (sn_question_keys) of every train-split trajectory's question under
** `train_questions` (docs/formats.md "Manifest"). */
int sn_tuples_build(const struct sn_build_params *p, struct sn_build_report *report,
                    struct sn_err *err);

/* ---- question keys (data/build_questions.c) ---------------------------------------------
** Content keys of a trajectory's question, so that a question is recognised whatever its
** dataset or item id is called (docs/eval.md "Leakage"). With fold = sn_text_fold (NFC,
** lower case, white space collapsed to one space, none at the ends; no line breaks):
**   question = SHA-256 hex of "sentinel-question/1\n" fold(question)
**   item     = SHA-256 hex of "sentinel-question/1\n" fold(question) "\n" <n_options in
**              decimal> "\n" then fold(option) "\n" per option, then fold(gold) "\n"
** (question + options + gold). SN_E_FORMAT for a text that is not valid UTF-8. The rule's
** name, SN_QUESTION_KEY_ID, is in data/shard.h beside the manifest that records the keys. */
struct sn_traj;
int sn_question_keys(const struct sn_traj *t, char question[65], char item[65],
                     struct sn_err *err);

#endif
