/* bench/bench_shards.c: shard write and read throughput (issue 7 "Benchmarks", shard/shard.h).
**
** usage: bench_shards [N_TUPLES] [DIR]     (default 16384 tuples, a temp dir)
**
** Synthetic tuples shaped like a real build at max_len 1024: three sequences per tuple of
** 300..1024 ids (mean ~660), texts of ~1.5 KB each. Reports:
**   write       tuples/s through sn_shard_writer_add + commit (HDF5, deflate 1, fsync, rename)
**   read seq    tuples/s and tokens/s through sn_shard_iter (batches of 8, prefetch thread),
**               consumer touching every id
**   read random tuples/s and tokens/s through sn_shard_reader_get at random indices (shards
**               opened first; opening = loading and validating every id, timed separately)
**   template    tuples/s of sn_template_encode (3 sequences per tuple) with the demo tokenizer,
**               the tokenization side of `sentinel build`
** The target is reading at >= 20x the trainer's consumption; the trainer benchmark does
** not exist yet, so the ratio is printed as pending with the absolute figures. */
#include "shard/shard.h"
#include "tokenizer/template.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXLEN 1024
#define SHARD 4096
#define VOCAB 151936

static double now(void)
{
    return sn_now();
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 16384;
    char dir[512];
    if (argc > 2)
        snprintf(dir, sizeof dir, "%s", argv[2]);
    else
        snprintf(dir, sizeof dir, "/tmp/bench_shards.%ld", (long)getpid());
    struct sn_err err = {0};
    if (sn_mkdirs(dir, &err)) {
        fprintf(stderr, "bench_shards: %s\n", err.msg);
        return 1;
    }
    struct sn_rng rng;
    sn_rng_seed(&rng, 1);
    int32_t *ids = malloc(sizeof(int32_t) * MAXLEN * 3);
    char *text = malloc(4096);
    for (int i = 0; i < 4095; i++)
        text[i] = (char)('a' + i % 26);
    text[4095] = 0;
    size_t n_shards = (n + SHARD - 1) / SHARD;
    char **paths = calloc(n_shards, sizeof *paths);
    uint64_t tokens_written = 0;

    /* ---- write ---- */
    double t0 = now();
    size_t done = 0;
    for (size_t s = 0; s < n_shards; s++) {
        struct sn_shard_writer_params wp = sn_shard_writer_default_params();
        wp.info.tokenizer_hash = "bench";
        wp.info.template_id = SN_TEMPLATE_ID;
        wp.info.max_len = MAXLEN;
        wp.info.vocab_size = VOCAB;
        wp.info.shard_index = (int64_t)s;
        if (getenv("DEFLATE"))
            wp.deflate_level = atoi(getenv("DEFLATE"));
        paths[s] = malloc(600);
        snprintf(paths[s], 600, "%s/train-%05zu.h5", dir, s);
        struct sn_shard_writer *w;
        if (sn_shard_writer_create(paths[s], &wp, &w, &err))
            goto fail;
        for (size_t i = 0; i < SHARD && done < n; i++, done++) {
            struct sn_shard_tuple t;
            memset(&t, 0, sizeof t);
            char sha[65];
            snprintf(sha, sizeof sha, "%064zu", done);
            for (int f = 0; f < SN_FIELD_COUNT; f++)
                t.text[f] = text + 4095 - (1200 + sn_rng_below(&rng, 600));
            for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
                size_t len = 300 + sn_rng_below(&rng, MAXLEN - 300 + 1);
                int32_t *v = ids + (f - 1) * MAXLEN;
                for (size_t j = 0; j < len; j++)
                    v[j] = (int32_t)sn_rng_below(&rng, 50000); /* text-like id range */
                t.ids[f] = v;
                t.n_ids[f] = len;
                tokens_written += len;
            }
            t.meta.scenario = "collaboration";
            t.meta.dataset = "synthetic";
            t.meta.trajectory_id = "collab-5a-3f2c9e1a7b6d4c10";
            t.meta.item_id = "synthetic-mc-00012";
            t.meta.chosen_role = "honest";
            t.meta.rejected_role = "adversary";
            t.meta.rejected_kind = "adversary";
            t.meta.sha256 = sha;
            if (sn_shard_writer_add(w, &t, &err)) {
                sn_shard_writer_abort(w);
                goto fail;
            }
        }
        if (sn_shard_writer_commit(w, NULL, &err))
            goto fail;
    }
    double tw = now() - t0;
    uint64_t bytes = 0;
    for (size_t s = 0; s < n_shards; s++) {
        FILE *f = fopen(paths[s], "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            bytes += (uint64_t)ftell(f);
            fclose(f);
        }
    }
    printf("bench_shards: %zu tuples, %" PRIu64 " tokens (%.0f per tuple), %zu shards of %d, "
           "%.1f MB on disk\n", n, tokens_written, (double)tokens_written / (double)n, n_shards,
           SHARD, (double)bytes / 1e6);
    printf("  write        %9.0f tuples/s  %6.1f M tokens/s  (%.2f s)\n", (double)n / tw,
           (double)tokens_written / tw / 1e6, tw);

    /* ---- read sequential (iterator) ---- */
    struct sn_shard_iter_params ip = sn_shard_iter_default_params();
    ip.batch_size = 8;
    struct sn_shard_iter *it;
    t0 = now();
    if (sn_shard_iter_open((const char *const *)paths, n_shards, &ip, &it, &err))
        goto fail;
    const struct sn_shard_batch *b;
    uint64_t seen = 0, toks = 0, sum = 0;
    while (!sn_shard_iter_next(it, &b, &err) && b) {
        seen += b->n;
        for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
            int64_t m = b->offsets[f][b->n];
            toks += (uint64_t)m;
            for (int64_t j = 0; j < m; j++)
                sum += (uint64_t)b->ids[f][j];
        }
    }
    sn_shard_iter_close(it);
    double ts = now() - t0;
    if (err.code)
        goto fail;
    printf("  read seq     %9.0f tuples/s  %6.1f M tokens/s  (%.2f s, batches of 8, prefetch "
           "thread; checksum %" PRIu64 ")\n", (double)seen / ts, (double)toks / ts / 1e6, ts,
           sum % 1000);

    /* ---- read random ---- */
    struct sn_shard_reader **rd = calloc(n_shards, sizeof *rd);
    t0 = now();
    for (size_t s = 0; s < n_shards; s++)
        if (sn_shard_reader_open(paths[s], NULL, &rd[s], &err))
            goto fail;
    double to = now() - t0;
    t0 = now();
    toks = 0;
    for (size_t k = 0; k < n; k++) {
        size_t s = sn_rng_below(&rng, n_shards);
        struct sn_tuple_view v;
        sn_shard_reader_get(rd[s], sn_rng_below(&rng, sn_shard_reader_count(rd[s])), &v, &err);
        for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
            toks += v.n_ids[f];
            for (size_t j = 0; j < v.n_ids[f]; j++)
                sum += (uint64_t)v.ids[f][j];
        }
    }
    double tr = now() - t0;
    printf("  read random  %9.0f tuples/s  %6.1f M tokens/s  (every id summed; after opening all "
           "shards: %.2f s = %.0f tuples/s loaded and validated; checksum %" PRIu64 ")\n",
           (double)n / tr, (double)toks / tr / 1e6, to, (double)n / to, sum % 1000);
    /* random access to texts (HDF5 hyperslab per string; for inspection, not training) */
    t0 = now();
    size_t nt = n < 2000 ? n : 2000;
    for (size_t k = 0; k < nt; k++) {
        size_t s = sn_rng_below(&rng, n_shards);
        char *tx = NULL;
        sn_shard_reader_text(rd[s], sn_rng_below(&rng, sn_shard_reader_count(rd[s])),
                             SN_FIELD_CHOSEN, &tx, &err);
        sn_free(tx);
    }
    printf("  text random  %9.0f texts/s\n", (double)nt / (now() - t0));
    for (size_t s = 0; s < n_shards; s++)
        sn_shard_reader_close(rd[s]);
    free(rd);

    /* ---- template encode (tokenization side of build) ---- */
    char tokpath[600];
    snprintf(tokpath, sizeof tokpath, "%s/demo-tokenizer.json", dir);
    struct sn_tokenizer *tok = NULL;
    if (sn_tokenizer_write_demo(tokpath, &err) || sn_tokenizer_open(tokpath, &tok, &err))
        goto fail;
    const char *hist[12];
    char hb[12][200];
    for (int i = 0; i < 12; i++) {
        snprintf(hb[i], sizeof hb[i], "Round %d, agent %d (answer %c): I think the answer is "
                 "%c because the evidence in the question points there.", i / 4 + 1, i % 4,
                 'A' + i % 3, 'A' + i % 3);
        hist[i] = hb[i];
    }
    struct sn_prompt pr = {NULL, "Question: Which river flows through Cairo?\nOptions:\nA. Nile"
                                 "\nB. Danube\nC. Volga\nD. Amazon", hist, 12};
    const char *resp = "The Nile flows through Cairo; the Danube is in Europe and the Volga in "
                       "Russia. I have checked this against what the others said.\n"
                       "FINAL ANSWER: A";
    struct sn_ids out = {0};
    size_t nenc = 600;
    uint64_t ttoks = 0;
    t0 = now();
    for (size_t k = 0; k < nenc; k++) {
        struct sn_template_cut cut;
        /* two fit, one truncated (the slow path), like a build at a tight max_len */
        size_t ml = k % 3 == 2 ? 300 : MAXLEN;
        if (sn_template_encode(tok, &pr, resp, ml, &out, &cut, NULL, &err))
            goto fail;
        ttoks += out.n;
    }
    double te = now() - t0;
    printf("  template     %9.0f sequences/s = %.0f tuples/s (3 sequences each; 1 in 3 "
           "truncated), %.2f M tokens/s, demo tokenizer\n", (double)nenc / te,
           (double)nenc / te / 3, (double)ttoks / te / 1e6);
    printf("  target: read >= 20x the trainer's consumption: PENDING (no trainer benchmark "
           "yet); read seq above is the figure to compare\n");
    sn_ids_free(&out);
    sn_tokenizer_free(tok);
    for (size_t s = 0; s < n_shards; s++) {
        unlink(paths[s]);
        free(paths[s]);
    }
    unlink(tokpath);
    if (argc <= 2)
        rmdir(dir);
    free(paths);
    free(ids);
    free(text);
    return 0;
fail:
    fprintf(stderr, "bench_shards: %s\n", err.msg);
    return 1;
}
