/* tests/test_eval_fixture.h: hand-written debates for the stats tests.
** A debate is written as an answer grid: one string per round, one character per agent slot:
** a letter = that parsed answer, '-' = the agent spoke but its answer did not parse, '.' = the
** agent did not speak. Roles: 'H' honest, 'A' adversary, 'I' interceptor. The helpers write
** complete sentinel.trajectory/1 lines, so the tests go through the real reader. */
#ifndef SN_TEST_EVAL_FIXTURE_H
#define SN_TEST_EVAL_FIXTURE_H
#include "data/data.h"
#include "eval/eval.h"
#include "testutil.h"

#include <zlib.h>

struct fx {
    const char *id, *item;       /* item defaults to id */
    const char *roles;           /* "HHHAA" */
    const char *gold, *target;   /* target NULL = null */
    const char *const *grid;     /* (T) strings of strlen(roles) */
    size_t      T;
    const char *strategy;        /* default "simultaneous" */
    const char *panel;           /* labels.panel, NULL = no labels */
    const char *judge;           /* final.judge_answer, NULL = null */
    int         replicate;
    bool        final_correct;
    const char *dataset;         /* default "synthetic" */
    const char *experiment;      /* default "test" */
    bool        stopped;         /* final.stopped_early */
};

/* One trajectory line (no newline), malloc'd. */
__attribute__((unused)) static char *fx_json(const struct fx *f)
{
    cJSON *j = cJSON_CreateObject();
    size_t N = strlen(f->roles);
    cJSON_AddStringToObject(j, "schema", "sentinel.trajectory/1");
    cJSON_AddStringToObject(j, "id", f->id);
    cJSON_AddStringToObject(j, "experiment", f->experiment ? f->experiment : "test");
    cJSON_AddStringToObject(j, "scenario", f->target ? "collaboration" : "none");
    cJSON_AddStringToObject(j, "dataset", f->dataset ? f->dataset : "synthetic");
    cJSON_AddStringToObject(j, "item_id", f->item ? f->item : f->id);
    cJSON_AddNullToObject(j, "subject");
    cJSON_AddStringToObject(j, "task", "mc");
    cJSON_AddStringToObject(j, "question", "Q?");
    cJSON *opts = cJSON_AddArrayToObject(j, "options");
    for (int i = 0; i < 4; i++)
        cJSON_AddItemToArray(opts, cJSON_CreateString("opt"));
    cJSON_AddStringToObject(j, "gold", f->gold);
    cJSON_AddNullToObject(j, "gold_explanation");
    if (f->target)
        cJSON_AddStringToObject(j, "adversarial_target", f->target);
    else
        cJSON_AddNullToObject(j, "adversarial_target");
    cJSON_AddStringToObject(j, "strategy", f->strategy ? f->strategy : "simultaneous");
    cJSON *topo = cJSON_AddObjectToObject(j, "topology");
    cJSON_AddStringToObject(topo, "name", "complete");
    cJSON_AddNumberToObject(topo, "n_agents", (double)N);
    cJSON *edges = cJSON_AddArrayToObject(topo, "edges");
    for (size_t a = 0; a < N; a++)
        for (size_t b = 0; b < N; b++)
            if (a != b) {
                int e[2] = {(int)a, (int)b};
                cJSON_AddItemToArray(edges, cJSON_CreateIntArray(e, 2));
            }
    cJSON *agents = cJSON_AddArrayToObject(j, "agents");
    for (size_t a = 0; a < N; a++) {
        cJSON *ag = cJSON_CreateObject();
        cJSON_AddNumberToObject(ag, "id", (double)a);
        cJSON_AddStringToObject(ag, "role", f->roles[a] == 'H'   ? "honest"
                                            : f->roles[a] == 'A' ? "adversary"
                                                                 : "interceptor");
        cJSON_AddStringToObject(ag, "model", a == 0 ? "m0" : "sim");
        cJSON_AddStringToObject(ag, "backend", "sim");
        cJSON_AddNullToObject(ag, "persona");
        cJSON_AddItemToArray(agents, ag);
    }
    cJSON *atk = cJSON_AddObjectToObject(j, "attack");
    cJSON_AddStringToObject(atk, "name", f->target ? "collaboration" : "none");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(j, "defense"), "name", "none");
    cJSON *rounds = cJSON_AddArrayToObject(j, "rounds");
    for (size_t r = 0; r < f->T; r++) {
        cJSON *rd = cJSON_CreateArray();
        for (size_t a = 0; a < N; a++) {
            char ch = f->grid[r][a];
            if (ch == '.')
                continue;
            cJSON *m = cJSON_CreateObject();
            cJSON_AddNumberToObject(m, "agent", (double)a);
            char ans[2] = {ch, 0};
            char text[64];
            snprintf(text, sizeof text, "I think so. FINAL ANSWER: %s", ch == '-' ? "?" : ans);
            cJSON_AddStringToObject(m, "text", text);
            if (ch == '-')
                cJSON_AddNullToObject(m, "answer");
            else
                cJSON_AddStringToObject(m, "answer", ans);
            cJSON_AddBoolToObject(m, "parsed", ch != '-');
            cJSON_AddItemToArray(rd, m);
        }
        cJSON_AddItemToArray(rounds, rd);
    }
    cJSON *fin = cJSON_AddObjectToObject(j, "final");
    cJSON_AddStringToObject(fin, "rule", f->judge ? "judge" : "majority");
    cJSON_AddNullToObject(fin, "answer");
    cJSON_AddBoolToObject(fin, "correct", f->final_correct);
    if (f->judge)
        cJSON_AddStringToObject(fin, "judge_answer", f->judge);
    else
        cJSON_AddNullToObject(fin, "judge_answer");
    cJSON_AddBoolToObject(fin, "stopped_early", f->stopped);
    cJSON_AddNumberToObject(fin, "n_rounds", (double)f->T);
    if (f->panel)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(j, "labels"), "panel", f->panel);
    else
        cJSON_AddObjectToObject(j, "labels");
    cJSON_AddNumberToObject(j, "seed", 7);
    cJSON_AddNumberToObject(j, "replicate", f->replicate);
    cJSON_AddStringToObject(j, "backend", "sim");
    cJSON_AddStringToObject(j, "prompt_version", "p/1");
    cJSON_AddStringToObject(j, "sentinel_version", "0.1.0");
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* AITM: agent `from`'s round-r message of the trajectory object j reaches sentinel `to`
** rewritten (answer B): "tampered" and one entry of "deliveries" (docs/formats.md
** "Trajectory"). */
__attribute__((unused)) static void fx_tamper(cJSON *j, int r, int from, int to)
{
    cJSON *m = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rounds"), r), from);
    cJSON_AddBoolToObject(m, "tampered", true);
    cJSON *dl = cJSON_AddArrayToObject(m, "deliveries");
    cJSON *one = cJSON_CreateObject();
    cJSON_AddNumberToObject(one, "to", to);
    cJSON_AddStringToObject(one, "text", "Surely not. FINAL ANSWER: B");
    cJSON_AddStringToObject(one, "answer", "B");
    cJSON_AddItemToArray(dl, one);
}

/* The trajectory object j (deleted here) parsed through the real reader (NULL, said on
** stderr, when it does not parse). */
__attribute__((unused)) static struct sn_traj *fx_parse_json(cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    struct sn_traj *t = NULL;
    struct sn_err err = {0};
    if (!s || sn_traj_parse(s, strlen(s), "fx", &t, &err))
        fprintf(stderr, "parse: %s\n", s ? err.msg : "out of memory");
    free(s);
    return t;
}

/* The fixture parsed as a trajectory (NULL, said on stderr, when it does not parse). */
__attribute__((unused)) static struct sn_traj *fx_traj(const struct fx *f)
{
    char *js = fx_json(f);
    struct sn_traj *t = NULL;
    struct sn_err err = {0};
    if (sn_traj_parse(js, strlen(js), "fx", &t, &err))
        fprintf(stderr, "parse: %s\n", err.msg);
    free(js);
    return t;
}

/* Writes debates to path: gzip (one member per line) when path ends in ".gz", else plain. */
__attribute__((unused)) static void fx_write(const char *path, const struct fx *v, size_t n)
{
    size_t L = strlen(path);
    bool gz = L > 3 && !strcmp(path + L - 3, ".gz");
    remove(path);
    FILE *f = gz ? NULL : fopen(path, "wb");
    for (size_t i = 0; i < n; i++) {
        char *s = fx_json(&v[i]);
        if (gz) {
            gzFile g = gzopen(path, "ab");
            gzputs(g, s);
            gzputs(g, "\n");
            gzclose(g);
        } else {
            fputs(s, f);
            fputc('\n', f);
        }
        free(s);
    }
    if (f)
        fclose(f);
}

/* Reads path through the real reader into a new sn_stats (caller frees). */
__attribute__((unused)) static struct sn_stats *fx_stats(const char *path,
                                                         const struct sn_stats_params *p)
{
    struct sn_stats *s = NULL;
    struct sn_err err = {0};
    if (sn_stats_create(p, &s, &err)) {
        fprintf(stderr, "sn_stats_create: %s\n", err.msg);
        return NULL;
    }
    for (int pass = p && p->adversary_effective ? 0 : 1; pass < 2; pass++) {
        struct sn_traj_reader *r;
        if (sn_traj_reader_open(path, NULL, &r, &err)) {
            fprintf(stderr, "open: %s\n", err.msg);
            sn_stats_free(s);
            return NULL;
        }
        for (;;) {
            struct sn_traj *t;
            if (sn_traj_reader_next(r, &t, &err)) {
                fprintf(stderr, "read: %s\n", err.msg);
                break;
            }
            if (!t)
                break;
            int rc = pass ? sn_stats_add(s, t, &err) : sn_stats_scan_effective(s, t, &err);
            if (rc)
                fprintf(stderr, "add: %s\n", err.msg);
            sn_traj_free(t);
        }
        sn_traj_reader_close(r);
    }
    return s;
}

/* The row for (group label, metric), or NULL. */
__attribute__((unused)) static const struct sn_stat_row *fx_row(struct sn_stats *s,
                                                                const char *group,
                                                                const char *metric)
{
    const struct sn_stat_row *rows;
    size_t n;
    struct sn_err err = {0};
    if (sn_stats_rows(s, &rows, &n, &err)) {
        fprintf(stderr, "rows: %s\n", err.msg);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].group, group) && !strcmp(rows[i].metric, metric))
            return &rows[i];
    fprintf(stderr, "no row %s / %s\n", group, metric);
    return NULL;
}

/* value of a row (NaN if absent) */
__attribute__((unused)) static double fx_val(struct sn_stats *s, const char *group,
                                             const char *metric)
{
    const struct sn_stat_row *r = fx_row(s, group, metric);
    return r ? r->value : NAN;
}

__attribute__((unused)) static uint64_t fx_n(struct sn_stats *s, const char *group,
                                                 const char *metric)
{
    const struct sn_stat_row *r = fx_row(s, group, metric);
    return r ? r->n : (uint64_t)-1;
}

#define CHECK_NAN(x) CHECK_MSG(isnan((double)(x)), "%s = %g, want undefined (NaN)", #x, (double)(x))

#endif
