/* shard/shard_set.c: the resumable shard set `sentinel build` writes: one writer per split,
** a shard committed every shard_size tuples, the manifest rewritten after each commit
** (shard/shard.h). */
#include "shard/shard_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
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

/* The settings that differ, each as one entry "'key' was OLD, now NEW" with both values in
** full: a 64-hex tokenizer hash cut short could hide the very change that matters. */
struct diffs {
    char **v;
    size_t n, cap;
};

static void diffs_free(struct diffs *d)
{
    for (size_t i = 0; i < d->n; i++)
        sn_free(d->v[i]);
    sn_free(d->v);
}

static int diffs_add(struct diffs *d, struct sn_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int diffs_add(struct diffs *d, struct sn_err *err, const char *fmt, ...)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        char **v = sn_realloc(d->v, cap * sizeof *v);
        if (!v)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        d->v = v;
        d->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *e = k >= 0 ? sn_malloc((size_t)k + 1) : NULL;
    if (!e)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    va_start(ap, fmt);
    vsnprintf(e, (size_t)k + 1, fmt, ap);
    va_end(ap);
    d->v[d->n++] = e;
    return SN_OK;
}

/* Every key whose value differs between old (the manifest's) and now (this run's), in now's
** order, then the keys only old has. */
static int settings_diff(const cJSON *old, const cJSON *now, struct diffs *d, struct sn_err *err)
{
    const cJSON *e;
    int rc = SN_OK;
    cJSON_ArrayForEach(e, now) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(old, e->string);
        if (o && cJSON_Compare(e, o, 1))
            continue;
        char *x = cJSON_PrintUnformatted(e), *y = o ? cJSON_PrintUnformatted(o) : NULL;
        if (!x || (o && !y))
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        else if (o)
            rc = diffs_add(d, err, "'%s' was %s, now %s", e->string ? e->string : "?", y, x);
        else
            rc = diffs_add(d, err, "'%s' was not set, now %s", e->string ? e->string : "?", x);
        cJSON_free(x);
        cJSON_free(y);
        if (rc)
            return rc;
    }
    cJSON_ArrayForEach(e, old) {
        if (cJSON_GetObjectItemCaseSensitive(now, e->string))
            continue;
        char *y = cJSON_PrintUnformatted(e);
        rc = y ? diffs_add(d, err, "'%s' is no longer set (was %s)", e->string ? e->string : "?",
                           y)
               : sn_err_set(err, SN_E_NOMEM, "out of memory");
        cJSON_free(y);
        if (rc)
            return rc;
    }
    return SN_OK;
}

/* Writes every entry to the log, in full: sn_log has a fixed line, so a longer entry (a long
** list of inputs) goes on in further lines. */
static void log_diffs(const char *dir, const struct diffs *d)
{
    enum { PIECE = 1500 };
    sn_log(SN_LOG_ERROR, "%s holds a build with different settings; all %zu difference%s:", dir,
           d->n, d->n == 1 ? "" : "s");
    for (size_t i = 0; i < d->n; i++) {
        const char *e = d->v[i];
        size_t len = strlen(e), at = 0;
        do {
            size_t k = len - at > PIECE ? PIECE : len - at;
            while (at + k < len && k > 1 && ((unsigned char)e[at + k] & 0xC0) == 0x80)
                k--; /* end the piece on a UTF-8 character boundary */
            sn_log(SN_LOG_ERROR, "  %s%.*s", at ? "(continued) " : "", (int)k, e + at);
            at += k;
        } while (at < len);
    }
}

/* The refusal: "<dir> holds a build with different settings (A; B); use ...". struct sn_err
** holds one line of a fixed size, and no value is ever cut: entries that fit go in whole, in
** order; the others are counted ("and N more settings differ") and every entry goes to the
** log in full. */
static int refuse_settings(const char *dir, const struct diffs *d, struct sn_err *err)
{
    const char *pre = " holds a build with different settings (";
    const char *post = "); use another output directory or delete it";
    size_t cap = sizeof err->msg - 1, fixed = strlen(dir) + strlen(pre) + strlen(post);
    size_t all = 0;
    for (size_t i = 0; i < d->n; i++)
        all += strlen(d->v[i]) + (i ? 2 : 0);
    char list[sizeof err->msg];
    size_t used = 0, left_out = 0;
    list[0] = 0;
    if (fixed + all <= cap) {
        for (size_t i = 0; i < d->n; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? "; " : "",
                                     d->v[i]);
        return sn_err_set(err, SN_E_ARG, "%s%s%s%s", dir, pre, list, post);
    }
    /* the longest tail: "; and 999 more settings differ (each is in the log in full)" */
    size_t room = fixed + 80 < cap ? cap - fixed - 80 : 0;
    for (size_t i = 0; i < d->n; i++) {
        size_t k = strlen(d->v[i]) + (used ? 2 : 0);
        if (k > room - used) {
            left_out++;
            continue;
        }
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? "; " : "",
                                 d->v[i]);
    }
    snprintf(list + used, sizeof list - used, "%s%zu %ssetting%s differ%s%s (each is in the "
             "log in full)", used ? "; and " : "", left_out, used ? "more " : "",
             left_out == 1 ? "" : "s", left_out == 1 ? "s" : "", used ? "" : ", too long to "
             "show here");
    log_diffs(dir, d);
    return sn_err_set(err, SN_E_ARG, "%s%s%s%s", dir, pre, list, post);
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
        struct diffs d = {0};
        if (!cJSON_IsNumber(ss))
            rc = diffs_add(&d, err, "'shard_size' was not recorded, now %zu", s->p.shard_size);
        else if ((size_t)ss->valuedouble != s->p.shard_size)
            rc = diffs_add(&d, err, "'shard_size' was %.0f, now %zu", ss->valuedouble,
                           s->p.shard_size);
        if (!rc && old && s->settings)
            rc = settings_diff(old, s->settings, &d, err);
        else if (!rc)
            rc = diffs_add(&d, err, "no settings recorded");
        if (!rc && !d.n) /* cJSON_Compare saw a difference no key shows: a repeated key */
            rc = diffs_add(&d, err, "the recorded settings object differs from this run's");
        if (!rc)
            rc = refuse_settings(s->dir, &d, err);
        diffs_free(&d);
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
