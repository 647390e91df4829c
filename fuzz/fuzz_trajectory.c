/* fuzz/fuzz_trajectory.c: the trajectory reader (data/trajectory.c) and the stats of one debate
** (eval/) on arbitrary bytes taken as one JSONL line. Invariants (abort on violation): a
** rejected line gives SN_E_FORMAT (or SN_E_NOMEM) and a message that starts with its location;
** an accepted one goes through every metric, where every rate lies in [0, 1] inside its Wilson
** interval, SDI lies in [0, 1] and equals κ(1 − ASR̄), and --explain succeeds. */
#include "data/data.h"
#include "eval/eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct sn_stat_row *find(const struct sn_stat_row *rows, size_t n, const char *m)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].metric, m))
            return &rows[i];
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20)
        return 0;
    struct sn_traj *t = NULL;
    struct sn_err err = {0};
    int rc = sn_traj_parse((const char *)data, size, "fuzz:1", &t, &err);
    if (rc) {
        if ((rc != SN_E_FORMAT && rc != SN_E_NOMEM) || t || strncmp(err.msg, "fuzz:1: ", 8) != 0)
            abort();
        return 0;
    }
    for (int m = 0; m < SN_MAJORITY_COUNT; m++) {
        static const char *const by[] = {"strategy", "model[1]", "labels.panel"};
        struct sn_stats_params p = sn_stats_default_params();
        p.majority = (enum sn_majority)m;
        p.by = by;
        p.n_by = 3;
        struct sn_stats *s;
        if (sn_stats_create(&p, &s, &err))
            abort();
        if (sn_stats_add(s, t, &err) && err.code != SN_E_NOMEM)
            abort();
        const struct sn_stat_row *rows;
        size_t n;
        if (sn_stats_rows(s, &rows, &n, &err) == SN_OK) {
            for (size_t i = 0; i < n; i++) {
                const struct sn_stat_row *r = &rows[i];
                if (r->kind == SN_STAT_RATE && r->n) {
                    if (!(r->value >= 0 && r->value <= 1 && r->lo <= r->value + 1e-12 &&
                          r->hi >= r->value - 1e-12))
                        abort();
                }
            }
            const struct sn_stat_row *sdi = find(rows, n, "sdi"), *k = find(rows, n, "kappa"),
                                     *a = find(rows, n, "asr");
            if (sdi && sdi->n) {
                if (!(sdi->value >= 0 && sdi->value <= 1) || !k || !a ||
                    fabs(sdi->value - k->value * (1 - a->value)) > 1e-9)
                    abort();
            }
        }
        sn_stats_free(s);
        struct sn_buf b = {0};
        enum sn_vote_tie tie = (enum sn_vote_tie)(m % SN_VOTE_TIE_COUNT);
        if (sn_stats_explain(t, (enum sn_majority)m, tie, &b, &err) && err.code != SN_E_NOMEM)
            abort();
        sn_buf_free(&b);
    }
    sn_traj_free(t);
    return 0;
}
