/* eval/stats_output.c: `sentinel stats` output as JSON, CSV (both written atomically) and a
** terminal table. The layouts are specified in docs/formats.md ("Stats output"). */
#include "eval/stats_internal.h"

#include <math.h>
#include <string.h>

/* How a tie for the top count was settled, in words (every report prints it). */
static const char *tie_text(enum sn_majority maj, enum sn_vote_tie tie)
{
    if (maj == SN_MAJORITY_JUDGE)
        return "the recorded judge's answer decides";
    if (maj == SN_MAJORITY_STRICT || tie == SN_VOTE_TIE_NONE)
        return "a tie is no decision, counted wrong";
    if (tie == SN_VOTE_TIE_LOWEST_ID)
        return "a tie goes to the tied answer whose first holder has the lowest agent id";
    return "a tie goes to a tied answer drawn at random, seeded by debate id and round";
}

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* What every writer starts from: the rows (sn_stats_rows) and the run's settings. */
static int rows_and_meta(struct sn_stats *s, const struct sn_stat_row **rows, size_t *n_rows,
                         struct sn_stats_meta *mt, struct sn_err *err)
{
    int rc = sn_stats_rows(s, rows, n_rows, err);
    if (!rc)
        sn_stats_internal_meta(s, mt);
    return rc;
}

int sn_stats_write_json(struct sn_stats *s, const char *path, struct sn_err *err)
{
    const struct sn_stat_row *rows;
    size_t n_rows;
    struct sn_stats_meta mt;
    int rc = rows_and_meta(s, &rows, &n_rows, &mt, err);
    if (rc)
        return rc;
    size_t n_by = sn_stats_internal_n_by(s);

    cJSON *root = cJSON_CreateObject();
    if (!root)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    cJSON_AddStringToObject(root, "schema", "sentinel.stats/1");
    cJSON_AddStringToObject(root, "majority", sn_majority_name(mt.majority));
    cJSON_AddStringToObject(root, "tie", mt.majority == SN_MAJORITY_JUDGE ? "judge"
                                         : mt.majority == SN_MAJORITY_STRICT ? "none"
                                         : sn_vote_tie_name(mt.tie));
    cJSON_AddStringToObject(root, "tie_break", tie_text(mt.majority, mt.tie));
    cJSON_AddBoolToObject(root, "adversary_effective", mt.adv_eff);
    cJSON_AddNumberToObject(root, "n_trajectories", (double)sn_stats_n_added(s));
    cJSON_AddNumberToObject(root, "n_filtered", (double)sn_stats_n_filtered(s));
    cJSON_AddNumberToObject(root, "n_skipped_lines", (double)mt.n_skipped);
    if (mt.first_skip)
        cJSON_AddStringToObject(root, "first_skipped", mt.first_skip);
    else
        cJSON_AddNullToObject(root, "first_skipped");
    cJSON *in = cJSON_AddArrayToObject(root, "inputs");
    for (size_t i = 0; in && i < mt.n_inputs; i++)
        cJSON_AddItemToArray(in, cJSON_CreateString(mt.inputs[i]));
    cJSON *by = cJSON_AddArrayToObject(root, "by");
    for (size_t i = 0; by && i < n_by; i++)
        cJSON_AddItemToArray(by, cJSON_CreateString(sn_stats_internal_by(s, i)));
    cJSON *pan = cJSON_AddObjectToObject(root, "panels");
    if (pan) {
        cJSON_AddStringToObject(pan, "field", mt.panel_field);
        cJSON *pv = cJSON_AddArrayToObject(pan, "values");
        for (int i = 0; pv && i < 3; i++)
            cJSON_AddItemToArray(pv, cJSON_CreateString(mt.panel_names[i]));
        cJSON_AddStringToObject(pan, "metric", mt.panel_metric);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "rows");
    for (size_t i = 0; arr && i < n_rows; i++) {
        const struct sn_stat_row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToArray(arr, o);
        cJSON *g = cJSON_AddObjectToObject(o, "group");
        for (size_t j = 0; g && j < n_by; j++)
            cJSON_AddStringToObject(g, sn_stats_internal_by(s, j), r->group_values[j]);
        cJSON_AddStringToObject(o, "group_label", r->group);
        cJSON_AddStringToObject(o, "metric", r->metric);
        cJSON_AddStringToObject(o, "kind", sn_stat_kind_name(r->kind));
        cJSON_AddItemToObject(o, "value", num_or_null(r->value));
        cJSON_AddNumberToObject(o, "n", (double)r->n);
        cJSON_AddItemToObject(o, "k", num_or_null(r->k));
        cJSON_AddItemToObject(o, "lo", num_or_null(r->lo));
        cJSON_AddItemToObject(o, "hi", num_or_null(r->hi));
        cJSON_AddNumberToObject(o, "rep_n", (double)r->rep_n);
        cJSON_AddItemToObject(o, "rep_mean", num_or_null(r->rep_mean));
        cJSON_AddItemToObject(o, "rep_sd", num_or_null(r->rep_sd));
        if (r->note)
            cJSON_AddStringToObject(o, "note", r->note);
    }
    /* cJSON's Add* return NULL on allocation failure; check the result is complete */
    if (!arr || cJSON_GetArraySize(arr) != (int)n_rows) {
        cJSON_Delete(root);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory building JSON", path);
    }
    rc = sn_json_save(path, root, err);
    cJSON_Delete(root);
    return rc;
}

static int csv_num(struct sn_buf *b, double v, struct sn_err *err)
{
    if (sn_buf_puts(b, ",", err))
        return err->code;
    return isfinite(v) ? sn_buf_printf(b, err, "%.10g", v) : SN_OK;
}

int sn_stats_write_csv(struct sn_stats *s, const char *path, struct sn_err *err)
{
    const struct sn_stat_row *rows;
    size_t n_rows;
    struct sn_stats_meta mt;
    int rc = rows_and_meta(s, &rows, &n_rows, &mt, err);
    if (rc)
        return rc;
    size_t n_by = sn_stats_internal_n_by(s);
    struct sn_buf b = {0};
    rc = sn_buf_puts(&b, "group", err);
    for (size_t j = 0; !rc && j < n_by; j++)
        rc = sn_buf_puts(&b, ",", err) || sn_stats_csv_field(&b, sn_stats_internal_by(s, j), err);
    if (!rc)
        rc = sn_buf_puts(&b, ",metric,kind,value,n,k,lo,hi,rep_n,rep_mean,rep_sd,majority,"
                             "adversary_effective,tie,note\n", err);
    for (size_t i = 0; !rc && i < n_rows; i++) {
        const struct sn_stat_row *r = &rows[i];
        rc = sn_stats_csv_field(&b, r->group, err);
        for (size_t j = 0; !rc && j < n_by; j++)
            rc = sn_buf_puts(&b, ",", err) || sn_stats_csv_field(&b, r->group_values[j], err);
        if (rc || (rc = sn_buf_printf(&b, err, ",%s,%s", r->metric, sn_stat_kind_name(r->kind))) ||
            (rc = csv_num(&b, r->value, err)) ||
            (rc = sn_buf_printf(&b, err, ",%llu", (unsigned long long)r->n)) ||
            (rc = csv_num(&b, r->k, err)) || (rc = csv_num(&b, r->lo, err)) ||
            (rc = csv_num(&b, r->hi, err)) ||
            (rc = sn_buf_printf(&b, err, ",%llu", (unsigned long long)r->rep_n)) ||
            (rc = csv_num(&b, r->rep_mean, err)) || (rc = csv_num(&b, r->rep_sd, err)) ||
            (rc = sn_buf_printf(&b, err, ",%s,%s,%s,", sn_majority_name(mt.majority),
                                mt.adv_eff ? "true" : "false",
                                mt.majority == SN_MAJORITY_JUDGE ? "judge"
                                : mt.majority == SN_MAJORITY_STRICT ? "none" : sn_vote_tie_name(mt.tie))) ||
            (rc = sn_stats_csv_field(&b, r->note ? r->note : "", err)) ||
            (rc = sn_buf_puts(&b, "\n", err)))
            break;
    }
    if (rc) {
        sn_buf_free(&b);
        return err->code ? err->code : rc;
    }
    rc = sn_atomic_write(path, b.data, b.len, err);
    sn_buf_free(&b);
    return rc;
}

/* headline metrics for the short table */
static bool headline(const char *m)
{
    if (!strncmp(m, "accuracy.agent[", 15) || !strncmp(m, "nac.agent[", 10))
        return false;
    if (!strncmp(m, "revision.r", 10) && strncmp(m, "revision.r0_r1.", 15) != 0)
        return false;
    return true;
}

static int fmt_val(struct sn_buf *b, enum sn_stat_kind kind, double v, struct sn_err *err)
{
    if (!isfinite(v))
        return sn_buf_printf(b, err, "%10s", "undefined");
    switch (kind) {
    case SN_STAT_RATE: return sn_buf_printf(b, err, "%9.1f%%", 100.0 * v);
    case SN_STAT_COUNT: return sn_buf_printf(b, err, "%10.0f", v);
    case SN_STAT_PP: return sn_buf_printf(b, err, "%10.1f", v);
    case SN_STAT_DIFF: return sn_buf_printf(b, err, "%+8.1fpp", 100.0 * v);
    default: return sn_buf_printf(b, err, "%10.4f", v);
    }
}

int sn_stats_format_table(struct sn_stats *s, bool full, struct sn_buf *out, struct sn_err *err)
{
    const struct sn_stat_row *rows;
    size_t n_rows;
    struct sn_stats_meta mt;
    int rc = rows_and_meta(s, &rows, &n_rows, &mt, err);
    if (rc)
        return rc;
    const char *cur = NULL;
    for (size_t i = 0; i < n_rows && !rc; i++) {
        const struct sn_stat_row *r = &rows[i];
        if (!cur || strcmp(cur, r->group) != 0) {
            cur = r->group;
            rc = sn_buf_printf(out, err, "%s== %s ==\n%-36s %10s %9s  %-21s %s\n",
                               i ? "\n" : "", r->group, "metric", "value", "n", "95% interval",
                               "over replicates: mean ± sd");
        }
        if (rc || (!full && !headline(r->metric)))
            continue;
        if ((rc = sn_buf_printf(out, err, "%-36s ", r->metric)) ||
            (rc = fmt_val(out, r->kind, r->value, err)) ||
            (rc = sn_buf_printf(out, err, " %9llu  ", (unsigned long long)r->n)))
            break;
        if (isfinite(r->lo)) {
            char iv[64];
            if (r->kind == SN_STAT_RATE)
                snprintf(iv, sizeof iv, "[%.1f%%, %.1f%%]", 100 * r->lo, 100 * r->hi);
            else
                snprintf(iv, sizeof iv, "[%.4f, %.4f]", r->lo, r->hi);
            rc = sn_buf_printf(out, err, "%-21s ", iv);
        } else {
            rc = sn_buf_printf(out, err, "%-21s ", "");
        }
        if (rc)
            break;
        char rm[48] = "", rs[48] = "";
        if (r->rep_n) {
            if (r->kind == SN_STAT_RATE) {
                snprintf(rm, sizeof rm, "%.1f%%", 100.0 * r->rep_mean);
                snprintf(rs, sizeof rs, "%.1f%%", 100.0 * r->rep_sd);
            } else if (r->kind == SN_STAT_DIFF) {
                snprintf(rm, sizeof rm, "%+.1fpp", 100.0 * r->rep_mean);
                snprintf(rs, sizeof rs, "%.1fpp", 100.0 * r->rep_sd);
            } else if (r->kind == SN_STAT_MEAN) {
                snprintf(rm, sizeof rm, "%.4f", r->rep_mean);
                snprintf(rs, sizeof rs, "%.4f", r->rep_sd);
            } else {
                snprintf(rm, sizeof rm, "%.1f", r->rep_mean);
                snprintf(rs, sizeof rs, "%.1f", r->rep_sd);
            }
        }
        if (r->rep_n >= 2)
            rc = sn_buf_printf(out, err, "%s ± %s (%llu)\n", rm, rs,
                               (unsigned long long)r->rep_n);
        else if (r->rep_n == 1)
            rc = sn_buf_printf(out, err, "%s ± undefined (1 replicate)\n", rm);
        else
            rc = sn_buf_puts(out, "-\n", err);
        if (!rc && r->note && (strcmp(r->metric, "design.mixed") == 0 ||
                               !strncmp(r->metric, "panel.", 6)))
            rc = sn_buf_printf(out, err, "  warning: %s\n", r->note); /* once per group */
    }
    if (!rc)
        rc = sn_buf_printf(out, err,
                           "\n%llu trajectories; panel decision: %s (%s)%s; %llu skipped lines%s%s"
                           "%s\n",
                           (unsigned long long)sn_stats_n_added(s), sn_majority_name(mt.majority),
                           tie_text(mt.majority, mt.tie),
                           mt.adv_eff ? "; adversary-effective items only" : "",
                           (unsigned long long)mt.n_skipped, mt.first_skip ? " (first: " : "",
                           mt.first_skip ? mt.first_skip : "", mt.first_skip ? ")" : "");
    if (!rc && mt.adv_eff)
        rc = sn_buf_printf(out, err, "%llu trajectories dropped by --adversary-effective\n",
                           (unsigned long long)sn_stats_n_filtered(s));
    if (!rc && !full)
        rc = sn_buf_puts(out, "(headline metrics; --full for every row)\n", err);
    return rc;
}
