/* shard/manifest.c: loading and verifying the manifest of a shard directory (shard/shard.h;
** docs/formats.md). */
#include "shard/shard_internal.h"

#include <inttypes.h>
#include <string.h>

void sn_manifest_free(struct sn_manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_shards; i++)
        sn_free(m->shards[i].file);
    sn_free(m->shards);
    sn_free(m->dir);
    cJSON_Delete(m->json);
    sn_free(m);
}

static bool is_hex64(const char *s)
{
    if (!s || strlen(s) != 64)
        return false;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

int sn_manifest_load(const char *path, struct sn_manifest **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_manifest *m = sn_calloc(1, sizeof *m);
    char *file = NULL;
    if (!m)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    int rc = SN_OK;
    if (sn_path_is_dir(path)) {
        m->dir = sn_strdup(path);
        file = sn_path_join_new(path, SN_MANIFEST_NAME);
    } else {
        const char *slash = strrchr(path, '/');
        m->dir = slash ? sn_strndup(path, (size_t)(slash - path) ? (size_t)(slash - path) : 1)
                       : sn_strdup(".");
        file = sn_strdup(path);
    }
    if (!m->dir || !file) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto done;
    }
    rc = sn_json_load(file, &m->json, err);
    if (rc)
        goto done;
    const cJSON *j = m->json, *sch = cJSON_GetObjectItemCaseSensitive(j, "schema");
    if (!cJSON_IsObject(j) || !cJSON_IsString(sch) ||
        strcmp(sch->valuestring, SN_MANIFEST_SCHEMA) != 0) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: schema '%s' is not '%s'", file,
                        cJSON_IsString(sch) ? sch->valuestring : "(missing)", SN_MANIFEST_SCHEMA);
        goto done;
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "complete");
    m->complete = cJSON_IsTrue(c);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "shards");
    if (!cJSON_IsArray(arr)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: 'shards': expected an array", file);
        goto done;
    }
    size_t n = (size_t)cJSON_GetArraySize(arr);
    m->shards = sn_calloc(n ? n : 1, sizeof *m->shards);
    if (!m->shards) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto done;
    }
    size_t k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(e, "file");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "split");
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(e, "count");
        const cJSON *ix = cJSON_GetObjectItemCaseSensitive(e, "index");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "sha256");
        struct sn_manifest_shard *s = &m->shards[k];
        if (!cJSON_IsString(fn) || !fn->valuestring[0] || strchr(fn->valuestring, '/') ||
            !strcmp(fn->valuestring, "..") || !cJSON_IsString(sp) || !cJSON_IsNumber(ct) ||
            ct->valuedouble < 0 || ct->valuedouble > (double)MAX_COUNT_LIMIT ||
            !cJSON_IsNumber(ix) || ix->valuedouble < 0 || !cJSON_IsString(sh) ||
            !is_hex64(sh->valuestring)) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: shards[%zu]: expected {file (a name in the "
                            "manifest's directory), split, index, count >= 0, sha256 (64 hex)}",
                            file, k);
            goto done;
        }
        if ((rc = sn_split_parse(sp->valuestring, &s->split, err))) {
            sn_err_wrap(err, "%s: shards[%zu]", file, k);
            goto done;
        }
        s->file = sn_strdup(fn->valuestring);
        if (!s->file) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            goto done;
        }
        s->count = (int64_t)ct->valuedouble;
        s->index = (int64_t)ix->valuedouble;
        memcpy(s->sha256, sh->valuestring, 65);
        m->counts[s->split] += s->count;
        m->n_shards = ++k;
    }
    /* The totals must be the sum of the shard list: a manifest whose counts lie would make
    ** `train` size its epochs (and `inspect` report) from numbers no shard holds. */
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(j, "counts");
    int64_t total = 0;
    for (int sp = 0; sp < SN_SPLIT_COUNT; sp++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(counts, sn_shard_split_names[sp]);
        total += m->counts[sp];
        if (counts && (!cJSON_IsNumber(v) || v->valuedouble != (double)m->counts[sp])) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: counts.%s = %.0f but the shards listed hold "
                            "%" PRId64 " %s tuples", file, sn_shard_split_names[sp],
                            cJSON_IsNumber(v) ? v->valuedouble : -1.0, m->counts[sp],
                            sn_shard_split_names[sp]);
            goto done;
        }
    }
    const cJSON *tv = cJSON_GetObjectItemCaseSensitive(counts, "total");
    if (counts && tv && (!cJSON_IsNumber(tv) || tv->valuedouble != (double)total)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: counts.total = %.0f but the shards listed hold "
                        "%" PRId64 " tuples", file, cJSON_IsNumber(tv) ? tv->valuedouble : -1.0,
                        total);
        goto done;
    }
done:
    sn_free(file);
    if (rc) {
        sn_manifest_free(m);
        return rc;
    }
    *out = m;
    return SN_OK;
}

int sn_manifest_paths(const struct sn_manifest *m, enum sn_split split, char ***paths, size_t *n,
                      struct sn_err *err)
{
    *paths = NULL;
    *n = 0;
    char **v = sn_calloc(m->n_shards ? m->n_shards : 1, sizeof *v);
    if (!v)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < m->n_shards; i++) {
        if (split != SN_SPLIT_COUNT && m->shards[i].split != split)
            continue;
        v[k] = sn_path_join_new(m->dir, m->shards[i].file);
        if (!v[k]) {
            sn_paths_free(v, k);
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        k++;
    }
    *paths = v;
    *n = k;
    return SN_OK;
}

int sn_manifest_verify(const struct sn_manifest *m, struct sn_err *err)
{
    for (size_t i = 0; i < m->n_shards; i++) {
        char *p = sn_path_join_new(m->dir, m->shards[i].file), hex[65];
        if (!p)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        int rc = sn_sha256_file(p, hex, err);
        if (!rc && strcmp(hex, m->shards[i].sha256) != 0)
            rc = sn_err_set(err, SN_E_FORMAT, "%s: SHA-256 %.16s… does not match the manifest's "
                            "%.16s…; the file changed after it was written", p, hex,
                            m->shards[i].sha256);
        /* The bytes are the ones written; now the manifest's word about them: count, split,
        ** index and tokenizer must be what the shard's own attributes say. */
        const cJSON *th = cJSON_GetObjectItemCaseSensitive(m->json, "tokenizer_hash");
        struct sn_shard_reader_params rp = sn_shard_reader_default_params();
        struct sn_shard_reader *r = NULL;
        rp.tokenizer_hash = cJSON_IsString(th) ? th->valuestring : NULL;
        if (!rc)
            rc = sn_shard_reader_open(p, &rp, &r, err);
        if (!rc) {
            const struct sn_shard_info *in = sn_shard_reader_info(r);
            const struct sn_manifest_shard *ms = &m->shards[i];
            if ((int64_t)sn_shard_reader_count(r) != ms->count)
                rc = sn_err_set(err, SN_E_FORMAT, "%s: the manifest lists %" PRId64 " tuples, "
                                "the shard holds %zu", p, ms->count, sn_shard_reader_count(r));
            else if (in->split != ms->split || in->shard_index != ms->index)
                rc = sn_err_set(err, SN_E_FORMAT, "%s: the manifest lists it as %s shard %"
                                PRId64 ", the shard says %s shard %" PRId64, p,
                                sn_shard_split_names[ms->split], ms->index,
                                sn_shard_split_names[in->split], in->shard_index);
            else if (!cJSON_IsString(th))
                rc = sn_err_set(err, SN_E_FORMAT, "%s: the manifest has no tokenizer_hash "
                                "(the shards say %s)", p, in->tokenizer_hash);
        }
        sn_shard_reader_close(r);
        sn_free(p);
        if (rc)
            return rc;
    }
    return SN_OK;
}

/* one array of 64-hex keys of train_questions into out */
static int load_keys(const cJSON *tq, const char *name, const char *file,
                     struct sn_strmap *out, struct sn_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(tq, name), *e;
    if (!cJSON_IsArray(a))
        return sn_err_set(err, SN_E_FORMAT, "%s: train_questions.%s: expected an array of "
                          "SHA-256 hex strings", file, name);
    size_t i = 0;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsString(e) || !is_hex64(e->valuestring))
            return sn_err_set(err, SN_E_FORMAT, "%s: train_questions.%s[%zu]: expected 64 "
                              "lower-case hex digits", file, name, i);
        int rc = out ? sn_strmap_put(out, e->valuestring, 64, 0, NULL, err) : SN_OK;
        if (rc)
            return rc;
        i++;
    }
    return SN_OK;
}

int sn_manifest_train_questions(const struct sn_manifest *m, struct sn_strmap *questions,
                                struct sn_strmap *items, struct sn_err *err)
{
    const char *file = m->dir;
    const cJSON *tq = cJSON_GetObjectItemCaseSensitive(m->json, "train_questions");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(tq, "key");
    if (!m->complete)
        return sn_err_set(err, SN_E_FORMAT, "%s: the build is not complete, so its train "
                          "questions are not all recorded; finish it (run `sentinel build` "
                          "again)", file);
    if (!tq)
        return sn_err_set(err, SN_E_FORMAT, "%s: the manifest has no train_questions (a build "
                          "made before questions were recorded); rebuild the shards with this "
                          "sentinel into a new directory", file);
    if (!cJSON_IsObject(tq) || !cJSON_IsString(key) ||
        strcmp(key->valuestring, SN_QUESTION_KEY_ID) != 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: train_questions.key is '%s', this sentinel "
                          "keys questions by '%s'; rebuild the shards with it", file,
                          cJSON_IsString(key) ? key->valuestring : "(missing)",
                          SN_QUESTION_KEY_ID);
    int rc = load_keys(tq, "question_sha256", file, questions, err);
    if (!rc)
        rc = load_keys(tq, "question_options_gold_sha256", file, items, err);
    return rc;
}
