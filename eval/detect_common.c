/* eval/detect_common.c: what detect.c, detect_defended.c, detect_baselines.c and
** detect_overlap.c share (eval/detect_internal.h): group names, rate intervals, the report
** layout, the walk over a shard set's train split. */
#include "eval/detect_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/data.h"
#include "shard/shard.h"
#include "eval/eval.h"

bool sn_detect_answer_eq(const char *a, const char *b, void *ctx)
{
    return sn_answer_equal(a, b, *(const enum sn_task *)ctx);
}

void sn_detect_vote_credit(const char *const *answers, size_t n, enum sn_task task,
                           const char *gold, double *strict, double *neutral)
{
    int w = sn_vote_plurality(answers, n, SN_VOTE_TIE_NONE, 0, sn_detect_answer_eq, &task, NULL);
    *strict = w >= 0 && gold && sn_answer_equal(answers[w], gold, task) ? 1.0 : 0.0;
    /* the distinct answers holding the top count (each counted at its first holder) */
    size_t top = 0, m = 0;
    bool gold_top = false;
    for (size_t i = 0; i < n; i++) {
        if (!answers[i])
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = answers[j] && sn_answer_equal(answers[j], answers[i], task);
        if (seen)
            continue;
        size_t c = 0;
        for (size_t j = i; j < n; j++)
            c += answers[j] && sn_answer_equal(answers[j], answers[i], task);
        bool g = gold && sn_answer_equal(answers[i], gold, task);
        if (c > top) {
            top = c;
            m = 1;
            gold_top = g;
        } else if (c == top) {
            m++;
            gold_top = gold_top || g;
        }
    }
    *neutral = m > 0 && gold_top ? 1.0 / (double)m : 0.0;
}

bool sn_detect_in_domain_scenario(const char *s)
{
    return s && (!strcmp(s, "collaboration") || !strcmp(s, "netsafe") || !strcmp(s, "aitm"));
}

int sn_detect_group_id(char ***gname, size_t *n, const char *kind, const char *value, int *id,
                       struct sn_err *err)
{
    char name[256];
    snprintf(name, sizeof name, "%s=%s", kind, value ? value : "unknown");
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*gname)[i], name) == 0) {
            *id = (int)i;
            return SN_OK;
        }
    char **g = sn_realloc(*gname, (*n + 2) * sizeof *g);
    if (!g)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    *gname = g;
    if (!(g[*n] = sn_strdup(name)))
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    g[*n + 1] = NULL;
    *id = (int)(*n)++;
    return SN_OK;
}

int sn_detect_group_ids(char ***gname, size_t *n, const struct sn_traj *t, const char *dom,
                        int g[3], struct sn_err *err)
{
    int rc = sn_detect_group_id(gname, n, "scenario", t->scenario, &g[0], err);
    if (!rc)
        rc = sn_detect_group_id(gname, n, "dataset", t->dataset, &g[1], err);
    if (!rc)
        rc = sn_detect_group_id(gname, n, "domain", dom, &g[2], err);
    return rc;
}

int sn_detect_find_group(char *const *gname, size_t n, const char *group)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(gname[i], group) == 0)
            return (int)i;
    return -1;
}

struct sn_detect_rate sn_detect_wilson(double k, double n)
{
    struct sn_detect_rate r = {k, n, n > 0 ? k / n : NAN, NAN, NAN};
    sn_wilson_mean(k, n, &r.lo, &r.hi);
    return r;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

void sn_detect_percentile(double *vals, size_t n, double *lo, double *hi)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(vals[i]))
            vals[m++] = vals[i];
    if (!m) {
        *lo = *hi = NAN;
        return;
    }
    qsort(vals, m, sizeof *vals, cmp_double);
    double q[2] = {0.025, 0.975}, out[2];
    for (int k = 0; k < 2; k++) {
        double x = q[k] * (double)(m - 1);
        size_t i = (size_t)x;
        double f = x - (double)i;
        out[k] = i + 1 < m ? vals[i] * (1 - f) + vals[i + 1] * f : vals[i];
    }
    *lo = out[0];
    *hi = out[1];
}

cJSON *sn_detect_rate_json(const struct sn_detect_rate *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    const char *keys[5] = {"k", "n", "p", "lo", "hi"};
    double v[5] = {r->k, r->n, r->p, r->lo, r->hi};
    for (int i = 0; i < 5; i++)
        if (!(isnan(v[i]) ? cJSON_AddNullToObject(o, keys[i])
                          : cJSON_AddNumberToObject(o, keys[i], v[i]))) {
            cJSON_Delete(o);
            return NULL;
        }
    return o;
}

int sn_detect_report_groups(cJSON *groups, char *const *gname, size_t n,
                            size_t (*n_rounds)(const void *ctx, const char *group),
                            sn_detect_round_json_fn round_json,
                            const struct sn_detect_row_key *rows, size_t n_rows, void *ctx,
                            struct sn_err *err)
{
    for (size_t g = 0; g < n; g++) {
        cJSON *go = cJSON_AddObjectToObject(groups, gname[g]);
        cJSON *rounds = go ? cJSON_AddArrayToObject(go, "rounds") : NULL;
        if (!rounds)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        size_t R = n_rounds(ctx, gname[g]);
        for (size_t r = 0; r < R + n_rows; r++) {
            cJSON *so = NULL;
            int rc = round_json(ctx, gname[g], r < R ? r : rows[r - R].row, &so, err);
            if (rc)
                return rc;
            if (r < R)
                cJSON_AddItemToArray(rounds, so);
            else
                cJSON_AddItemToObject(go, rows[r - R].key, so);
        }
    }
    return SN_OK;
}

int sn_detect_each_train_tuple(const char *dir, const char *what,
                               int (*each)(void *ctx, struct sn_shard_reader *r, size_t i,
                                           struct sn_err *err),
                               void *ctx, struct sn_err *err)
{
    struct sn_manifest *man = NULL;
    char **paths = NULL;
    size_t n_paths = 0;
    int rc = sn_manifest_load(dir, &man, err);
    if (!rc)
        rc = sn_manifest_paths(man, SN_SPLIT_TRAIN, &paths, &n_paths, err);
    for (size_t s = 0; !rc && s < n_paths; s++) {
        struct sn_shard_reader *r = NULL;
        if ((rc = sn_shard_reader_open(paths[s], NULL, &r, err)))
            break;
        size_t cnt = sn_shard_reader_count(r);
        for (size_t i = 0; !rc && i < cnt; i++)
            rc = each(ctx, r, i, err);
        sn_shard_reader_close(r);
        if (rc && what)
            sn_err_wrap(err, "%s: %s", what, paths[s]);
    }
    sn_paths_free(paths, n_paths);
    sn_manifest_free(man);
    return rc;
}
