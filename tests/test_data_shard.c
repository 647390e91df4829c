/* tests/test_data_shard.c: HDF5 shard writer/reader, iterator, manifest and the resumable
** shard set (shard/shard.h, docs/formats.md). Independent checks: every value read back is
** compared with the tuple generator below (not with what the writer kept); byte identity of
** two commits is checked with cmp; spoiled files are made with the raw HDF5 API. */
#include "shard/shard.h"
#include "tests/testutil.h"

#include <hdf5.h>
#include <inttypes.h>
#include <unistd.h>

#define VOCAB 1000
#define MAXLEN 40
#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Deterministic tuple i: lengths and ids are functions of (i, field). */
static size_t gen_len(size_t i, int f)
{
    return (i * 7 + (size_t)f * 3) % MAXLEN + (f == SN_FIELD_REFERENCE ? 0 : 1);
}
static int32_t gen_id(size_t i, int f, size_t j)
{
    return (int32_t)((i * 131 + (size_t)f * 17 + j * 7) % VOCAB);
}

struct gen {
    char text[SN_FIELD_COUNT][128];
    char traj[32], sha[65];
    int32_t ids[SN_FIELD_COUNT][MAXLEN];
    struct sn_shard_tuple t;
};

static void gen_tuple(struct gen *g, size_t i, enum sn_split split)
{
    memset(g, 0, sizeof *g);
    for (int f = 0; f < SN_FIELD_COUNT; f++) {
        snprintf(g->text[f], sizeof g->text[f], "%s of tuple %zu: caf\xc3\xa9 \xe2\x88\x91", 
                 sn_field_name((enum sn_field)f), i);
        g->t.text[f] = g->text[f];
        if (f == SN_FIELD_CONTEXT)
            continue;
        g->t.n_ids[f] = gen_len(i, f);
        for (size_t j = 0; j < g->t.n_ids[f]; j++)
            g->ids[f][j] = gen_id(i, f, j);
        g->t.ids[f] = g->ids[f];
    }
    snprintf(g->traj, sizeof g->traj, "traj-%zu", i / 3);
    sn_sha256_hex(g->text[0], strlen(g->text[0]), g->sha);
    struct sn_tuple_meta *m = &g->t.meta;
    m->scenario = i % 2 ? "aitm" : "collaboration";
    m->dataset = "synthetic";
    m->trajectory_id = g->traj;
    m->item_id = NULL; /* stored as "" */
    m->round = (int32_t)(i % 5);
    m->chosen_agent = (int32_t)(i % 4);
    m->rejected_agent = 4;
    m->chosen_role = "honest";
    m->rejected_role = "adversary";
    m->rejected_kind = "adversary";
    m->split = split;
    m->cut_history[SN_FIELD_CHOSEN] = (int32_t)i;
    m->cut_history[SN_FIELD_REJECTED] = (int32_t)i + 1;
    m->cut_history[SN_FIELD_REFERENCE] = (int32_t)i + 2;
    m->cut_response[SN_FIELD_CHOSEN] = 0;
    m->cut_response[SN_FIELD_REJECTED] = (int32_t)(i % 3);
    m->cut_response[SN_FIELD_REFERENCE] = 7;
    m->sha256 = g->sha;
}

static struct sn_shard_writer_params wparams(void)
{
    struct sn_shard_writer_params p = sn_shard_writer_default_params();
    p.info.tokenizer_hash = HASH;
    p.info.template_id = "sentinel-chatml/1";
    p.info.max_len = MAXLEN + 1;
    p.info.vocab_size = VOCAB;
    p.info.split = SN_SPLIT_TRAIN;
    p.chunk_tuples = 16; /* several chunks even in a small shard */
    p.chunk_ids = 64;
    return p;
}

static int write_shard(const char *path, size_t n, struct sn_err *err)
{
    struct sn_shard_writer_params p = wparams();
    struct sn_shard_writer *w;
    int rc = sn_shard_writer_create(path, &p, &w, err);
    for (size_t i = 0; i < n && !rc; i++) {
        struct gen g;
        gen_tuple(&g, i, SN_SPLIT_TRAIN);
        rc = sn_shard_writer_add(w, &g.t, err);
    }
    if (rc) {
        sn_shard_writer_abort(w);
        return rc;
    }
    return sn_shard_writer_commit(w, NULL, err);
}

/* path <- dir/name, holding a shard of n tuples written by write_shard. */
static void make_shard(char *path, size_t cap, const char *dir, const char *name, size_t n)
{
    struct sn_err err = {0};
    snprintf(path, cap, "%s/%s", dir, name);
    CHECK_MSG(write_shard(path, n, &err) == SN_OK, "%s: %s", path, err.msg);
}

static void check_tuple_ids(const struct sn_tuple_view *v, size_t i)
{
    int bad = 0;
    CHECK(v->ids[SN_FIELD_CONTEXT] == NULL && v->n_ids[SN_FIELD_CONTEXT] == 0);
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        if (v->n_ids[f] != gen_len(i, f)) {
            bad++;
            continue;
        }
        for (size_t j = 0; j < v->n_ids[f]; j++)
            bad += v->ids[f][j] != gen_id(i, f, j);
    }
    CHECK_MSG(bad == 0, "tuple %zu ids differ", i);
}

/* Objects of the HDF5 file at path that store an access, modification, change or birth time
** (HDF5 reports 0 for each time it does not track); *n_objects gets how many were visited.
** Returns -1 when the file cannot be read. */
#if H5_VERSION_GE(1, 12, 0)
typedef H5O_info2_t obj_info;
#else
typedef H5O_info_t obj_info;
#endif
static herr_t note_times(hid_t obj, const char *name, const obj_info *info, void *data)
{
    int *n = data; /* n[0]: objects, n[1]: objects with a time */
    (void)obj;
    n[0]++;
    if (info->atime || info->mtime || info->ctime || info->btime) {
        fprintf(stderr, "object '%s' stores a time\n", name);
        n[1]++;
    }
    return 0;
}
static int count_timed_objects(const char *path, int *n_objects)
{
    int n[2] = {0, 0};
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return -1;
#if H5_VERSION_GE(1, 12, 0)
    herr_t st = H5Ovisit3(f, H5_INDEX_NAME, H5_ITER_NATIVE, note_times, n, H5O_INFO_TIME);
#else
    herr_t st = H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_NATIVE, note_times, n, H5O_INFO_TIME);
#endif
    H5Fclose(f);
    *n_objects = n[0];
    return st < 0 ? -1 : n[1];
}

static void test_roundtrip(const char *dir)
{
    char path[1024];
    struct sn_err err = {0};
    make_shard(path, sizeof path, dir, "a.h5", 50);
    CHECK(access(path, F_OK) == 0);
    struct sn_shard_reader *r = NULL;
    struct sn_shard_reader_params rp = sn_shard_reader_default_params();
    rp.tokenizer_hash = HASH;
    rp.template_id = "sentinel-chatml/1";
    CHECK(sn_shard_reader_open(path, &rp, &r, &err) == SN_OK);
    if (!r) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    CHECK(sn_shard_reader_count(r) == 50);
    const struct sn_shard_info *in = sn_shard_reader_info(r);
    CHECK_STR(in->schema, "sentinel.tuples/1");
    CHECK_STR(in->tokenizer_hash, HASH);
    CHECK(in->max_len == MAXLEN + 1 && in->vocab_size == VOCAB && in->split == SN_SPLIT_TRAIN);
    for (size_t i = 0; i < 50; i++) {
        struct sn_tuple_view v;
        CHECK(sn_shard_reader_get(r, i, &v, &err) == SN_OK);
        check_tuple_ids(&v, i);
    }
    /* texts and metadata at a few indices, including the last chunk */
    size_t probe[] = {0, 17, 49};
    for (size_t k = 0; k < 3; k++) {
        struct gen g;
        gen_tuple(&g, probe[k], SN_SPLIT_TRAIN);
        for (int f = 0; f < SN_FIELD_COUNT; f++) {
            char *t = NULL;
            CHECK(sn_shard_reader_text(r, probe[k], (enum sn_field)f, &t, &err) == SN_OK);
            CHECK_STR(t, g.text[f]);
            sn_free(t);
        }
        struct sn_tuple_meta m;
        CHECK(sn_shard_reader_meta(r, probe[k], &m, &err) == SN_OK);
        CHECK_STR(m.scenario, g.t.meta.scenario);
        CHECK_STR(m.trajectory_id, g.traj);
        CHECK_STR(m.item_id, "");
        CHECK_STR(m.rejected_kind, "adversary");
        CHECK_STR(m.sha256, g.sha);
        CHECK(m.round == g.t.meta.round && m.chosen_agent == g.t.meta.chosen_agent);
        CHECK(m.split == SN_SPLIT_TRAIN);
        for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
            CHECK(m.cut_history[f] == g.t.meta.cut_history[f]);
            CHECK(m.cut_response[f] == g.t.meta.cut_response[f]);
        }
    }
    struct sn_tuple_view v;
    CHECK(sn_shard_reader_get(r, 50, &v, &err) == SN_E_ARG);
    sn_shard_reader_close(r);

    /* identical content, identical bytes; and no object stores a time (docs/formats.md
    ** "Shard"). The times are read, not waited for: a second commit would show a stored clock
    ** only if it crossed a second boundary after the first. */
    char path2[1024];
    snprintf(path2, sizeof path2, "%s/b.h5", dir);
    CHECK(write_shard(path2, 50, &err) == SN_OK);
    CHECK(sn_test_sh("cmp -s '%s' '%s'", path, path2) == 0);
    int n_objects = 0;
    CHECK_MSG(count_timed_objects(path, &n_objects) == 0 && n_objects > 1, "%d objects",
              n_objects);
    /* the check sees a time where HDF5's defaults keep one (a dataset's header) */
    snprintf(path2, sizeof path2, "%s/timed.h5", dir);
    hsize_t one = 1;
    int64_t zero = 0;
    hid_t tf = H5Fcreate(path2, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t ts = H5Screate_simple(1, &one, NULL);
    hid_t td = H5Dcreate2(tf, "d", H5T_NATIVE_INT64, ts, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(td, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &zero);
    H5Dclose(td);
    H5Sclose(ts);
    H5Fclose(tf);
    fprintf(stderr, "(a stored time is expected next, in timed.h5)\n");
    CHECK(count_timed_objects(path2, &n_objects) == 1);
    /* an empty shard is valid */
    snprintf(path2, sizeof path2, "%s/empty.h5", dir);
    CHECK(write_shard(path2, 0, &err) == SN_OK);
    CHECK(sn_shard_reader_open(path2, NULL, &r, &err) == SN_OK);
    CHECK(r && sn_shard_reader_count(r) == 0);
    sn_shard_reader_close(r);
}

static void expect_refused(const char *path, const struct sn_shard_reader_params *rp,
                           const char *needle)
{
    struct sn_shard_reader *r = (void *)1;
    struct sn_err err = {0};
    int rc = sn_shard_reader_open(path, rp, &r, &err);
    CHECK_MSG(rc != SN_OK && r == NULL, "%s: opened", needle);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
}

/* Spoils one thing in a copy of a good shard with the raw HDF5 API. */
static void spoil_attr(const char *path, const char *name, const char *value)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, name);
    if (value) { /* NULL: the attribute is only removed */
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, t, &value);
        H5Aclose(a);
        H5Sclose(sp);
        H5Tclose(t);
    }
    H5Fclose(f);
}

static void spoil_i64(const char *path, const char *dset, size_t at, int64_t value)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    hid_t fs = H5Dget_space(d);
    hsize_t start[1] = {at}, cnt[1] = {1};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL);
    hid_t ms = H5Screate_simple(1, cnt, NULL);
    H5Dwrite(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &value);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
}

static void test_refusals(const char *dir)
{
    char good[1024], bad[1024];
    struct sn_err err = {0};
    make_shard(good, sizeof good, dir, "good.h5", 20);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);

    struct sn_shard_reader_params rp = sn_shard_reader_default_params();
    rp.tokenizer_hash = "ffff56789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    expect_refused(good, &rp, "built with another tokenizer");
    rp = sn_shard_reader_default_params();
    rp.template_id = "sentinel-chatml/2";
    expect_refused(good, &rp, "rendered with template 'sentinel-chatml/1'");
    rp = sn_shard_reader_default_params();
    rp.max_len = 8;
    expect_refused(good, &rp, "max_len 41 exceeds");

    snprintf(bad, sizeof bad, "%s/bad.h5", dir);
    /* root attributes spoiled (value NULL: removed) */
    static const struct {
        const char *attr, *value, *expect;
    } attrs[] = {
        {"schema", "sentinel.tuples/99", "foreign schema 'sentinel.tuples/99'"},
        {"schema", NULL, "attribute 'schema' is missing; not a sentinel shard?"},
        {"max_len", "41", "attribute 'max_len': expected one integer"},
        {"max_len", NULL, "attribute 'max_len' is missing"},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        CHECK(sn_test_sh("cp '%s' '%s'", good, bad) == 0);
        spoil_attr(bad, attrs[i].attr, attrs[i].value);
        expect_refused(bad, NULL, attrs[i].expect);
    }

    CHECK(sn_test_sh("cp '%s' '%s'", good, bad) == 0);
    spoil_i64(bad, "offsets/rejected", 5, 1000000);
    expect_refused(bad, NULL, "offsets/rejected");

    CHECK(sn_test_sh("cp '%s' '%s'", good, bad) == 0);
    spoil_i64(bad, "offsets/chosen", 0, 3);
    expect_refused(bad, NULL, "expected 0");

    CHECK(sn_test_sh("printf 'not hdf5' > '%s'", bad) == 0);
    expect_refused(bad, NULL, "not an HDF5 file");
    snprintf(bad, sizeof bad, "%s/missing.h5", dir);
    expect_refused(bad, NULL, "no such file");

    /* writer refuses what would make a bad shard */
    struct sn_shard_writer_params p = wparams();
    struct sn_shard_writer *w;
    CHECK(sn_shard_writer_create(bad, &p, &w, &err) == SN_OK);
    struct gen g;
    gen_tuple(&g, 3, SN_SPLIT_TRAIN);
    g.ids[SN_FIELD_REJECTED][0] = VOCAB;
    err = (struct sn_err){0};
    CHECK(sn_shard_writer_add(w, &g.t, &err) == SN_E_ARG && strstr(err.msg, "outside"));
    CHECK(sn_shard_writer_count(w) == 0);
    sn_shard_writer_abort(w);
    CHECK(access(bad, F_OK) != 0);
}

static void test_iter(const char *dir)
{
    char a[1024], b[1024];
    struct sn_err err = {0};
    make_shard(a, sizeof a, dir, "it-a.h5", 23);
    make_shard(b, sizeof b, dir, "it-b.h5", 23);
    const char *paths[] = {a, b};
    for (int mode = 0; mode < 3; mode++) {
        struct sn_shard_iter_params ip = sn_shard_iter_default_params();
        ip.batch_size = 5;
        ip.prefetch = 2;
        ip.shuffle = mode == 1;
        ip.drop_last = mode == 2;
        ip.seed = 42;
        struct sn_shard_iter *it = NULL;
        CHECK(sn_shard_iter_open(paths, 2, &ip, &it, &err) == SN_OK);
        if (!it)
            return;
        CHECK(sn_shard_iter_total(it) == 46);
        int seen[46] = {0};
        size_t n = 0, batches = 0, bad = 0;
        const struct sn_shard_batch *bt;
        while (sn_shard_iter_next(it, &bt, &err) == SN_OK && bt) {
            batches++;
            for (size_t j = 0; j < bt->n; j++) {
                uint64_t gi = bt->index[j];
                size_t i = gi % 23; /* both shards hold tuples 0..22 */
                if (gi >= 46) {
                    bad++;
                    continue;
                }
                seen[gi]++;
                if (mode == 0 && gi != n + j)
                    bad++;
                for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
                    const int32_t *ids = bt->ids[f] + bt->offsets[f][j];
                    size_t len = (size_t)(bt->offsets[f][j + 1] - bt->offsets[f][j]);
                    if (len != gen_len(i, f)) {
                        bad++;
                        continue;
                    }
                    for (size_t q = 0; q < len; q++)
                        bad += ids[q] != gen_id(i, f, q);
                }
            }
            n += bt->n;
        }
        CHECK_MSG(bad == 0, "mode %d: %zu mismatches", mode, bad);
        CHECK(n == (mode == 2 ? 45u : 46u));
        CHECK(batches == (mode == 2 ? 9u : 10u));
        size_t once = 0;
        for (int i = 0; i < 46; i++)
            once += seen[i] == 1;
        CHECK(once == n);
        sn_shard_iter_close(it);
    }
    /* close before the end: the thread must stop cleanly */
    struct sn_shard_iter *it = NULL;
    struct sn_shard_iter_params ip = sn_shard_iter_default_params();
    ip.batch_size = 1;
    CHECK(sn_shard_iter_open(paths, 2, &ip, &it, &err) == SN_OK);
    const struct sn_shard_batch *bt;
    CHECK(sn_shard_iter_next(it, &bt, &err) == SN_OK && bt && bt->n == 1);
    sn_shard_iter_close(it);
    /* a foreign shard in the list is refused at open, by name */
    ip.expect.tokenizer_hash = "00";
    err = (struct sn_err){0};
    CHECK(sn_shard_iter_open(paths, 2, &ip, &it, &err) == SN_E_FORMAT && it == NULL);
    CHECK(strstr(err.msg, "it-a.h5") && strstr(err.msg, "another tokenizer"));
}

/* The shard set of these tests: in dir, 4 tuples a shard, the writer of wparams(), the build
** settings given (borrowed). */
static struct sn_shard_set_params set_params(const char *dir, const cJSON *settings)
{
    struct sn_shard_set_params sp = sn_shard_set_default_params();
    sp.dir = dir;
    sp.shard_size = 4;
    sp.writer = wparams();
    sp.settings = settings;
    return sp;
}

/* A shard set fed tuples 0..n-1 (split by i % 4: 0,1 -> train, 2 -> validation, 3 -> test),
** stopping (as if killed) after `stop_after` tuples when that is < n. */
static int run_set(const char *dir, size_t n, size_t stop_after, int *skipped_out)
{
    struct sn_err err = {0};
    cJSON *settings = cJSON_Parse("{\"inputs\": [\"x\"], \"seed\": 1}");
    struct sn_shard_set_params sp = set_params(dir, settings);
    struct sn_shard_set *s = NULL;
    int rc = sn_shard_set_open(&sp, &s, &err);
    cJSON_Delete(settings);
    if (rc) {
        fprintf(stderr, "open: %s\n", err.msg);
        return rc;
    }
    int skipped = 0;
    for (size_t i = 0; i < n && i < stop_after && !rc; i++) {
        struct gen g;
        enum sn_split k = i % 4 == 2 ? SN_SPLIT_VALIDATION : i % 4 == 3 ? SN_SPLIT_TEST
                                                                        : SN_SPLIT_TRAIN;
        skipped += sn_shard_set_skips_next(s, k);
        gen_tuple(&g, i, k);
        rc = sn_shard_set_add(s, &g.t, &err);
    }
    if (!rc && stop_after >= n)
        rc = sn_shard_set_finish(s, &err);
    if (rc)
        fprintf(stderr, "set: %s\n", err.msg);
    sn_shard_set_close(s);
    if (skipped_out)
        *skipped_out = skipped;
    return rc;
}

static void test_set_resume(void)
{
    char full[1024], part[1024];
    snprintf(full, sizeof full, "%s", sn_test_dir("shard_set_full"));
    CHECK(run_set(full, 37, 37, NULL) == SN_OK);
    struct sn_manifest *m = NULL;
    struct sn_err err = {0};
    CHECK(sn_manifest_load(full, &m, &err) == SN_OK);
    if (!m)
        return;
    /* 37 tuples: train gets i%4 in {0,1}: 19; validation 9; test 9. Shards of 4. */
    CHECK(m->complete);
    CHECK(m->counts[SN_SPLIT_TRAIN] == 19 && m->counts[SN_SPLIT_VALIDATION] == 9 &&
          m->counts[SN_SPLIT_TEST] == 9);
    CHECK(m->n_shards == 5 + 3 + 3);
    CHECK(sn_manifest_verify(m, &err) == SN_OK);
    char **paths;
    size_t np;
    CHECK(sn_manifest_paths(m, SN_SPLIT_VALIDATION, &paths, &np, &err) == SN_OK);
    CHECK(np == 3 && strstr(paths[0], "validation-00000.h5") &&
          strstr(paths[2], "validation-00002.h5"));
    sn_paths_free(paths, np);
    sn_manifest_free(m);

    snprintf(part, sizeof part, "%s", sn_test_dir("shard_set_part"));
    CHECK(run_set(part, 37, 21, NULL) == SN_OK); /* "killed" after 21 tuples */
    CHECK(sn_manifest_load(part, &m, &err) == SN_OK);
    if (m) {
        CHECK(!m->complete);
        /* after 21 tuples: train 11 -> 2 full shards, validation 5 -> 1, test 5 -> 1 */
        CHECK(m->n_shards == 4);
        CHECK(m->counts[SN_SPLIT_TRAIN] == 8);
        sn_manifest_free(m);
    }
    /* a stale temp from the killed writer is removed on resume */
    CHECK(sn_test_sh("touch '%s/train-00002.h5.tmp.99999'", part) == 0);
    int skipped = -1;
    CHECK(run_set(part, 37, 37, &skipped) == SN_OK);
    CHECK(skipped == 16); /* the 4 committed shards' tuples were not redone */
    CHECK(sn_test_sh("test ! -e '%s/train-00002.h5.tmp.99999'", part) == 0);
    CHECK(sn_test_sh("diff -r '%s' '%s' >/dev/null", full, part) == 0);

    /* a completed build re-run is a no-op; different settings are refused */
    CHECK(run_set(part, 37, 37, NULL) != SN_OK); /* adding to a complete set is refused */
    cJSON *other = cJSON_Parse("{\"inputs\": [\"x\"], \"seed\": 2}");
    struct sn_shard_set_params sp = set_params(part, other);
    struct sn_shard_set *s = (void *)1;
    err = (struct sn_err){0};
    CHECK(sn_shard_set_open(&sp, &s, &err) == SN_E_ARG && s == NULL);
    CHECK(strstr(err.msg, "'seed' was 1, now 2") != NULL);
    cJSON_Delete(other);
    /* a shard changed after the manifest was written is detected */
    CHECK(sn_test_sh("printf x >> '%s/test-00001.h5'", part) == 0);
    CHECK(sn_manifest_load(part, &m, &err) == SN_OK);
    err = (struct sn_err){0};
    CHECK(sn_manifest_verify(m, &err) == SN_E_FORMAT && strstr(err.msg, "test-00001.h5"));
    sn_manifest_free(m);
}

/* A directory built with settings A, opened with settings B: the refusal names every key that
** differs with both values in full (a 64-hex tokenizer hash included), and when all of them
** cannot fit in struct sn_err it lists those that fit whole and counts the rest. */
static void test_set_settings_diff(void)
{
    static const char hash_a[] = HASH;
    static const char hash_b[] =
        "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
    char dir[1024], text[2048], want[2048];
    snprintf(dir, sizeof dir, "%s", sn_test_dir("shard_set_settings"));
    struct sn_err err = {0};
    snprintf(text, sizeof text, "{\"inputs\": [\"x\"], \"tokenizer_hash\": \"%s\", "
             "\"max_len\": 512, \"seed\": \"1\", \"dedup\": true}", hash_a);
    cJSON *a = cJSON_Parse(text);
    struct sn_shard_set_params sp = set_params(dir, a);
    struct sn_shard_set *s = NULL;
    CHECK_MSG(sn_shard_set_open(&sp, &s, &err) == SN_OK, "%s", err.msg);
    CHECK_MSG(s && sn_shard_set_finish(s, &err) == SN_OK, "%s", err.msg);
    sn_shard_set_close(s);
    cJSON_Delete(a);

    /* three keys differ, one of them is new and one is gone */
    snprintf(text, sizeof text, "{\"inputs\": [\"x\"], \"tokenizer_hash\": \"%s\", "
             "\"max_len\": 1024, \"seed\": \"1\", \"summary\": \"extractive\"}", hash_b);
    cJSON *b = cJSON_Parse(text);
    sp = set_params(dir, b);
    s = (void *)1;
    err = (struct sn_err){0};
    CHECK(sn_shard_set_open(&sp, &s, &err) == SN_E_ARG && s == NULL);
    snprintf(want, sizeof want, "%s holds a build with different settings ('tokenizer_hash' was "
             "\"%s\", now \"%s\"; 'max_len' was 512, now 1024; 'summary' was not set, now "
             "\"extractive\"; 'dedup' is no longer set (was true)); use another output directory "
             "or delete it", dir, hash_a, hash_b);
    CHECK_STR(err.msg, want);
    cJSON_Delete(b);

    /* a value too long for the message is left out whole, counted, and the rest still fit */
    char big[700];
    memset(big, 'p', sizeof big - 1);
    big[sizeof big - 1] = 0;
    snprintf(text, sizeof text, "{\"inputs\": [\"%s\"], \"tokenizer_hash\": \"%s\", "
             "\"max_len\": 512, \"seed\": \"2\", \"dedup\": true}", big, hash_b);
    b = cJSON_Parse(text);
    sp = set_params(dir, b);
    err = (struct sn_err){0};
    CHECK(sn_shard_set_open(&sp, &s, &err) == SN_E_ARG);
    snprintf(want, sizeof want, "'tokenizer_hash' was \"%s\", now \"%s\"; 'seed' was \"1\", "
             "now \"2\"; and 1 more setting differs (each is in the log in full)); use another "
             "output directory or delete it", hash_a, hash_b);
    CHECK_MSG(strstr(err.msg, want) && !strstr(err.msg, "ppp") && strlen(err.msg) < 511,
              "%s", err.msg);
    cJSON_Delete(b);

    /* a different shard size is one more difference, named with the others */
    snprintf(text, sizeof text, "{\"inputs\": [\"x\"], \"tokenizer_hash\": \"%s\", "
             "\"max_len\": 512, \"seed\": \"1\", \"dedup\": true}", hash_b);
    b = cJSON_Parse(text);
    sp = set_params(dir, b);
    sp.shard_size = 5;
    err = (struct sn_err){0};
    CHECK(sn_shard_set_open(&sp, &s, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "('shard_size' was 4, now 5; 'tokenizer_hash' was \"") &&
              strstr(err.msg, hash_a) && strstr(err.msg, hash_b), "%s", err.msg);
    cJSON_Delete(b);
}

/* Allocation failures on every call of a reader open and a writer commit: a clean error and
** no leak (ASan checks the leak part). */
static void test_alloc_failures(const char *dir)
{
    char path[1024], out[1024];
    struct sn_err err = {0};
    make_shard(path, sizeof path, dir, "alloc.h5", 10);
    int ok = 0;
    for (uint64_t n = 1; n < 400 && !ok; n++) {
        struct sn_shard_reader *r = NULL;
        err = (struct sn_err){0};
        sn_alloc_fail_after(n);
        int rc = sn_shard_reader_open(path, NULL, &r, &err);
        sn_alloc_fail_after(0);
        if (rc == SN_OK) {
            ok = 1;
            sn_shard_reader_close(r);
        } else {
            CHECK(r == NULL && err.code == SN_E_NOMEM);
        }
    }
    CHECK(ok);
    ok = 0;
    snprintf(out, sizeof out, "%s/alloc-out.h5", dir);
    for (uint64_t n = 1; n < 2000 && !ok; n++) {
        err = (struct sn_err){0};
        sn_alloc_fail_after(n);
        int rc = write_shard(out, 10, &err);
        sn_alloc_fail_after(0);
        if (rc == SN_OK)
            ok = 1;
        else
            CHECK(err.code == SN_E_NOMEM && access(out, F_OK) != 0);
    }
    CHECK(ok);
}

int main(void)
{
    const char *dir = sn_test_dir("data_shard");
    char d[512];
    snprintf(d, sizeof d, "%s", dir);
    test_roundtrip(d);
    test_refusals(d);
    test_iter(d);
    test_set_resume();
    test_set_settings_diff();
    test_alloc_failures(d);
    return sn_test_done();
}
