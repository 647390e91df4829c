/* eval/detect_chance.c: the groups where a ranker is worse than chance (docs/eval.md "Below
** chance"): every group and row of a replay whose AUROC interval (the cluster bootstrap's,
** docs/eval.md "Intervals") lies entirely below 0.5, said in one sentence for the report's
** summary and listed in its JSON. Reads the summaries of eval/detect.c; computes nothing anew. */
#include "eval/detect_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the rows of a group in the order the sentence names them: pooled first (every message), then
** the last round, then the rounds */
static size_t row_at(size_t i)
{
    return i == 0 ? SN_DETECT_POOLED : i == 1 ? SN_DETECT_LAST : i - 2;
}

static void row_name(size_t row, char *buf, size_t n)
{
    if (row == SN_DETECT_POOLED)
        snprintf(buf, n, "pooled");
    else if (row == SN_DETECT_LAST)
        snprintf(buf, n, "last round");
    else
        snprintf(buf, n, "round %zu", row);
}

/* A crossed group scenario=<s>,dataset=<d> holding every debate of scenario=<s> repeats it:
** true then (the crossed group is a subset, so equal debate counts mean equal sets). */
static int repeats_scenario(struct sn_detect *d, const char *group, bool *same, struct sn_err *err)
{
    *same = false;
    const char *comma = strchr(group, ',');
    if (strncmp(group, "scenario=", 9) != 0 || !comma)
        return SN_OK;
    char parent[256];
    snprintf(parent, sizeof parent, "%.*s", (int)(comma - group), group);
    struct sn_detect_summary a, b;
    int rc = sn_detect_summary(d, group, SN_DETECT_POOLED, &a, err);
    if (!rc)
        rc = sn_detect_summary(d, parent, SN_DETECT_POOLED, &b, err);
    if (!rc)
        *same = a.n_debates == b.n_debates;
    return rc;
}

int sn_detect_below_chance(struct sn_detect *d, const char *name, struct sn_buf *sentence,
                           cJSON **json, struct sn_err *err)
{
    if (json)
        *json = NULL;
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    cJSON *list = root ? cJSON_AddArrayToObject(root, "groups") : NULL;
    if (json && !list) {
        cJSON_Delete(root);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    size_t ng = 0;
    const char *const *groups = sn_detect_groups(d, &ng);
    struct sn_buf body = {0};
    size_t n_found = 0;
    bool intervals = false;
    int rc = SN_OK;
    for (size_t g = 0; !rc && g < ng; g++) {
        bool same = false;
        if ((rc = repeats_scenario(d, groups[g], &same, err)) || same)
            continue;
        size_t R = sn_detect_n_rounds(d, groups[g]);
        size_t n_below = 0;
        cJSON *rows = NULL;
        for (size_t i = 0; !rc && i < R + 2; i++) {
            size_t row = row_at(i);
            struct sn_detect_summary s;
            if ((rc = sn_detect_summary(d, groups[g], row, &s, err)))
                break;
            intervals = intervals || !isnan(s.auroc.hi);
            if (isnan(s.auroc.hi) || !(s.auroc.hi < 0.5))
                continue;
            char rn[32];
            row_name(row, rn, sizeof rn);
            /* the first row below chance with its figure, the others by name */
            if (n_below == 0)
                rc = sn_buf_printf(&body, err, "%s%s (%s %.3f [%.3f, %.3f]", n_found ? ", " : "",
                                   groups[g], rn, s.auroc.p, s.auroc.lo, s.auroc.hi);
            else
                rc = sn_buf_printf(&body, err, "%s%s", n_below == 1 ? "; also " : ", ", rn);
            if (!rc && root) {
                cJSON *o = cJSON_CreateObject(), *r = sn_detect_rate_json(&s.auroc);
                if (!rows) {
                    cJSON *go = cJSON_CreateObject();
                    if (go && cJSON_AddItemToArray(list, go)) {
                        cJSON_AddStringToObject(go, "group", groups[g]);
                        rows = cJSON_AddArrayToObject(go, "rows");
                    } else {
                        cJSON_Delete(go);
                    }
                }
                bool ok = o && r && rows &&
                          cJSON_AddStringToObject(o, "row",
                                                  row == SN_DETECT_POOLED ? "pooled"
                                                  : row == SN_DETECT_LAST ? "last_round"
                                                                          : "round");
                if (ok && row < R)
                    ok = cJSON_AddNumberToObject(o, "round", (double)row) != NULL;
                if (ok && cJSON_AddItemToObject(o, "auroc", r))
                    r = NULL;
                else
                    ok = false;
                if (ok && cJSON_AddItemToArray(rows, o))
                    o = NULL;
                else
                    ok = false;
                cJSON_Delete(o);
                cJSON_Delete(r);
                if (!ok)
                    rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            }
            n_below++;
        }
        if (!rc && n_below) {
            rc = sn_buf_puts(&body, ")", err);
            n_found++;
        }
    }
    if (!rc) {
        size_t at = sentence->len;
        if (n_found)
            rc = sn_buf_printf(sentence, err,
                               "%s worse than chance (AUROC interval entirely "
                               "below 0.5): %s",
                               name, body.data);
        else if (intervals)
            rc = sn_buf_printf(sentence, err,
                               "no group where the %s's AUROC interval lies "
                               "below 0.5",
                               name);
        else
            rc = sn_buf_printf(sentence, err,
                               "no AUROC interval of the %s to compare with 0.5 "
                               "(no bootstrap resamples, or no group with both honest and "
                               "adversarial messages)",
                               name);
        if (!rc && root &&
            (!cJSON_AddStringToObject(root, "sentence", sentence->data + at) ||
             !cJSON_AddBoolToObject(root, "intervals", intervals)))
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    sn_buf_free(&body);
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    if (json)
        *json = root;
    return SN_OK;
}
