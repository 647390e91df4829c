/* data/shard_set.c: the resumable shard set `sentinel build` writes: one writer per split,
** a shard committed every shard_size tuples, the manifest rewritten after each commit
** (data/shard.h). */
#include "data/shard_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sn_shard_set {
    struct sn_shard_set_params p;
    char   *dir;
    cJSON  *settings;
    char   *tok_hash, *template_id;
    struct sn_manifest_shard *shards;   /* committed, in commit order */
    size_t  n_shards, cap_shards;
    int64_t committed[SN_SPLIT_COUNT];  /* tuples in committed shards */
    int64_t seen[SN_SPLIT_COUNT];       /* tuples offered so far */
    int64_t next_index[SN_SPLIT_COUNT];
    struct sn_shard_writer *cur[SN_SPLIT_COUNT];
    bool    was_complete;
};

struct sn_shard_set_params sn_shard_set_default_params(void)
{
    struct sn_shard_set_params p;
    memset(&p, 0, sizeof p);
    p.shard_size = 4096;
    p.writer = sn_shard_writer_default_params();
    return p;
}

void sn_shard_set_close(struct sn_shard_set *s)
{
    if (!s)
        return;
    for (int k = 0; k < SN_SPLIT_COUNT; k++)
        sn_shard_writer_abort(s->cur[k]);
    for (size_t i = 0; i < s->n_shards; i++)
        sn_free(s->shards[i].file);
    sn_free(s->shards);
    cJSON_Delete(s->settings);
    sn_free(s->tok_hash);
    sn_free(s->template_id);
    sn_free(s->dir);
    sn_free(s);
}

static int write_manifest(struct sn_shard_set *s, bool complete, struct sn_err *err)
{
    cJSON *j = cJSON_CreateObject(), *arr = NULL, *counts = NULL;
    int rc = SN_OK;
    if (!j)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    const struct sn_shard_info *in = &s->p.writer.info;
    int64_t total = 0;
    cJSON_AddStringToObject(j, "schema", SN_MANIFEST_SCHEMA);
    cJSON_AddStringToObject(j, "tuples_schema", SN_SHARD_SCHEMA);
    cJSON_AddBoolToObject(j, "complete", complete);
    cJSON_AddStringToObject(j, "tokenizer_hash", in->tokenizer_hash);
    cJSON_AddStringToObject(j, "template_id", in->template_id);
    cJSON_AddNumberToObject(j, "max_len", (double)in->max_len);
    cJSON_AddNumberToObject(j, "vocab_size", (double)in->vocab_size);
    cJSON_AddNumberToObject(j, "shard_size", (double)s->p.shard_size);
    counts = cJSON_AddObjectToObject(j, "counts");
    for (int k = 0; counts && k < SN_SPLIT_COUNT; k++) {
        cJSON_AddNumberToObject(counts, sn_shard_split_names[k], (double)s->committed[k]);
        total += s->committed[k];
    }
    if (counts)
        cJSON_AddNumberToObject(counts, "total", (double)total);
    arr = cJSON_AddArrayToObject(j, "shards");
    for (size_t i = 0; arr && i < s->n_shards; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e)
            break;
        cJSON_AddStringToObject(e, "file", s->shards[i].file);
        cJSON_AddStringToObject(e, "split", sn_shard_split_names[s->shards[i].split]);
        cJSON_AddNumberToObject(e, "index", (double)s->shards[i].index);
        cJSON_AddNumberToObject(e, "count", (double)s->shards[i].count);
        cJSON_AddStringToObject(e, "sha256", s->shards[i].sha256);
        cJSON_AddItemToArray(arr, e);
    }
    cJSON *set = s->settings ? cJSON_Duplicate(s->settings, 1) : cJSON_CreateObject();
    if (set)
        cJSON_AddItemToObject(j, "settings", set);
    if (s->p.annotate)
        s->p.annotate(s->p.user, j);
    char *mp = sn_path_join_new(s->dir, SN_MANIFEST_NAME);
    if (!mp || !counts || !arr || !set)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    else
        rc = sn_json_save(mp, j, err);
    sn_free(mp);
    cJSON_Delete(j);
    return rc;
}

/* First key of a that differs in b, for the "different settings" message. */
static void first_diff(const cJSON *a, const cJSON *b, char *buf, size_t n)
{
    const cJSON *e;
    snprintf(buf, n, "(settings)");
    cJSON_ArrayForEach(e, a) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, e->string);
        if (!o || !cJSON_Compare(e, o, 1)) {
            char *x = cJSON_PrintUnformatted(e), *y = o ? cJSON_PrintUnformatted(o) : NULL;
            snprintf(buf, n, "'%s' was %.60s, now %.60s", e->string ? e->string : "?",
                     y ? y : "(absent)", x ? x : "?");
            cJSON_free(x);
            cJSON_free(y);
            return;
        }
    }
    cJSON_ArrayForEach(e, b) {
        if (!cJSON_GetObjectItemCaseSensitive(a, e->string)) {
            snprintf(buf, n, "'%s' is no longer set", e->string ? e->string : "?");
            return;
        }
    }
}

/* Removes temp files an interrupted writer left: "<name>.h5.tmp.<pid>", "manifest.json.tmp.*". */
static void remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *t = strstr(e->d_name, ".tmp.");
        if (!t)
            continue;
        size_t stem = (size_t)(t - e->d_name);
        bool ours = (stem > 3 && !strncmp(t - 3, ".h5", 3)) ||
                    (stem == strlen(SN_MANIFEST_NAME) &&
                     !strncmp(e->d_name, SN_MANIFEST_NAME, stem));
        for (const char *q = t + 5; ours && *q; q++)
            ours = *q >= '0' && *q <= '9';
        if (ours) {
            char *p = sn_path_join_new(dir, e->d_name);
            if (p)
                unlink(p);
            sn_free(p);
        }
    }
    closedir(d);
}

static int resume(struct sn_shard_set *s, struct sn_err *err)
{
    struct sn_manifest *m = NULL;
    int rc = sn_manifest_load(s->dir, &m, err);
    if (rc)
        return sn_err_wrap(err, "cannot resume the build in %s (delete it to start over)", s->dir);
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(m->json, "settings");
    const cJSON *ss = cJSON_GetObjectItemCaseSensitive(m->json, "shard_size");
    if (!old || !s->settings || !cJSON_Compare(old, s->settings, 1) || !cJSON_IsNumber(ss) ||
        (size_t)ss->valuedouble != s->p.shard_size) {
        char d[200];
        if (cJSON_IsNumber(ss) && (size_t)ss->valuedouble != s->p.shard_size)
            snprintf(d, sizeof d, "'shard_size' was %.0f, now %zu", ss->valuedouble,
                     s->p.shard_size);
        else if (old && s->settings)
            first_diff(s->settings, old, d, sizeof d);
        else
            snprintf(d, sizeof d, "no settings recorded");
        rc = sn_err_set(err, SN_E_ARG, "%s holds a build with different settings (%s); use "
                        "another output directory or delete it", s->dir, d);
        goto done;
    }
    rc = sn_manifest_verify(m, err);
    if (rc) {
        sn_err_wrap(err, "cannot resume the build in %s (delete it to start over)", s->dir);
        goto done;
    }
    s->shards = m->shards;
    s->n_shards = s->cap_shards = m->n_shards;
    m->shards = NULL;
    m->n_shards = 0;
    for (size_t i = 0; i < s->n_shards; i++) {
        enum sn_split k = s->shards[i].split;
        if (s->shards[i].index != s->next_index[k] ||
            (s->committed[k] % (int64_t)s->p.shard_size) != 0) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: the manifest's shard list is inconsistent at "
                            "%s (delete the directory to start over)", s->dir,
                            s->shards[i].file);
            goto done;
        }
        s->committed[k] += s->shards[i].count;
        s->next_index[k]++;
    }
    s->was_complete = m->complete;
done:
    sn_manifest_free(m);
    return rc;
}

int sn_shard_set_open(const struct sn_shard_set_params *params, struct sn_shard_set **out,
                      struct sn_err *err)
{
    *out = NULL;
    struct sn_shard_set *s = sn_calloc(1, sizeof *s);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    s->p = *params;
    if (!s->p.shard_size)
        s->p.shard_size = 4096;
    s->dir = sn_strdup(params->dir ? params->dir : ".");
    s->settings = params->settings ? cJSON_Duplicate(params->settings, 1) : NULL;
    s->tok_hash = sn_strdup(params->writer.info.tokenizer_hash ? params->writer.info.tokenizer_hash
                                                               : "");
    s->template_id = sn_strdup(params->writer.info.template_id ? params->writer.info.template_id
                                                               : "");
    int rc = SN_OK;
    if (!s->dir || !s->tok_hash || !s->template_id || (params->settings && !s->settings))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    s->p.dir = s->dir;
    s->p.settings = s->settings;
    s->p.writer.info.tokenizer_hash = s->tok_hash;
    s->p.writer.info.template_id = s->template_id;
    if (!rc)
        rc = sn_mkdirs(s->dir, err);
    if (!rc) {
        remove_stale_temps(s->dir);
        char *mp = sn_path_join_new(s->dir, SN_MANIFEST_NAME);
        if (!mp)
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        else if (sn_path_exists(mp))
            rc = resume(s, err);
        sn_free(mp);
    }
    if (rc) {
        sn_shard_set_close(s);
        return rc;
    }
    *out = s;
    return SN_OK;
}

bool sn_shard_set_was_complete(const struct sn_shard_set *s)
{
    return s->was_complete;
}

bool sn_shard_set_skips_next(const struct sn_shard_set *s, enum sn_split split)
{
    return (unsigned)split < SN_SPLIT_COUNT && s->seen[split] < s->committed[split];
}

int64_t sn_shard_set_count(const struct sn_shard_set *s, enum sn_split split)
{
    return (unsigned)split < SN_SPLIT_COUNT ? s->seen[split] : 0;
}

size_t sn_shard_set_n_shards(const struct sn_shard_set *s)
{
    return s->n_shards;
}

static int commit_current(struct sn_shard_set *s, enum sn_split k, struct sn_err *err)
{
    struct sn_shard_writer *w = s->cur[k];
    s->cur[k] = NULL;
    int64_t count = (int64_t)w->count;
    const char *slash = strrchr(w->path, '/');
    char *file = sn_strdup(slash ? slash + 1 : w->path);
    char hex[65];
    int rc = file ? sn_shard_grow((void **)&s->shards, &s->cap_shards, s->n_shards + 1,
                         sizeof *s->shards, err)
                  : sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (rc) {
        sn_free(file);
        sn_shard_writer_abort(w);
        return rc;
    }
    rc = sn_shard_writer_commit(w, hex, err);
    if (rc) {
        sn_free(file);
        return rc;
    }
    struct sn_manifest_shard *e = &s->shards[s->n_shards++];
    e->file = file;
    e->split = k;
    e->count = count;
    e->index = s->next_index[k]++;
    memcpy(e->sha256, hex, 65);
    s->committed[k] += count;
    return write_manifest(s, false, err);
}

int sn_shard_set_add(struct sn_shard_set *s, const struct sn_shard_tuple *t, struct sn_err *err)
{
    enum sn_split k = t->meta.split;
    if ((unsigned)k >= SN_SPLIT_COUNT)
        return sn_err_set(err, SN_E_ARG, "shard set: bad split %d", (int)k);
    if (s->was_complete)
        return sn_err_set(err, SN_E_ARG, "%s: the build is already complete", s->dir);
    if (s->seen[k] < s->committed[k]) { /* belongs to a shard a previous run committed */
        s->seen[k]++;
        return SN_OK;
    }
    int rc;
    if (!s->cur[k]) {
        char name[64];
        snprintf(name, sizeof name, "%s-%05" PRId64 ".h5", sn_shard_split_names[k], s->next_index[k]);
        char *path = sn_path_join_new(s->dir, name);
        if (!path)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        struct sn_shard_writer_params wp = s->p.writer;
        wp.info.split = k;
        wp.info.shard_index = s->next_index[k];
        rc = sn_shard_writer_create(path, &wp, &s->cur[k], err);
        sn_free(path);
        if (rc)
            return rc;
    }
    rc = sn_shard_writer_add(s->cur[k], t, err);
    if (rc)
        return rc;
    s->seen[k]++;
    if (s->cur[k]->count >= s->p.shard_size)
        return commit_current(s, k, err);
    return SN_OK;
}

int sn_shard_set_finish(struct sn_shard_set *s, struct sn_err *err)
{
    if (s->was_complete)
        return SN_OK;
    for (int k = 0; k < SN_SPLIT_COUNT; k++)
        if (s->cur[k] && s->cur[k]->count > 0) {
            int rc = commit_current(s, (enum sn_split)k, err);
            if (rc)
                return rc;
        }
    int rc = write_manifest(s, true, err);
    if (!rc)
        s->was_complete = true;
    return rc;
}
