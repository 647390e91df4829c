/* cli/cmd_eval_defended.c: the defended-debates mode of `sentinel eval` (docs/eval.md "Defended
** debates"; docs/design.md §4 "Runtime (Algorithm 1)"). The recipe's `simulate` section runs
** four ways (clean, attacked, defended with the `sentinel` defense and the runtime detector,
** and clean with the defense: its cost when nobody attacks); eval/detect_defended.c matches
** the arms debate by debate and computes accuracy per round, recovery, the cost of the
** defence, scoring time and overhead. Each arm's simulation is timed end to end (DIR/<arm>/
** wall.json) for the measured overhead of endpoint debates. The scoring time is measured by replaying the defended
** arm's received messages through the same detector, one thread, after the simulation: the
** simulation's own worker threads share the detector, so timing it there would measure the
** queue as much as the scoring. */
#include "cli/cmd_eval_defended.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const attack_keys[] = {
    "rhetoric", "persona", "best_of_n", "intercepts", "victims", "injection_rate", "adaptive",
    "placement", "adversaries_join", NULL};

static void del_keys(cJSON *o, const char *const *keys)
{
    for (const char *const *k = keys; o && *k; k++)
        cJSON_DeleteItemFromObjectCaseSensitive(o, *k);
}

static void set_item(cJSON *o, const char *key, cJSON *v)
{
    if (cJSON_GetObjectItemCaseSensitive(o, key))
        cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
    else
        cJSON_AddItemToObject(o, key, v);
}

/* The recipe of one arm: the experiments with an attack, changed for the arm. */
static int arm_recipe(const cJSON *recipe, enum sn_arm arm, const struct sn_eval_arms_params *p,
                      cJSON **out, size_t *n_exp, struct sn_err *err)
{
    *out = NULL;
    *n_exp = 0;
    cJSON *r = cJSON_Duplicate(recipe, 1);
    if (!r)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    cJSON *sim = cJSON_GetObjectItemCaseSensitive(r, "simulate");
    cJSON *exps = sim ? cJSON_GetObjectItemCaseSensitive(sim, "experiments") : NULL;
    if (!cJSON_IsObject(sim) || !cJSON_IsArray(exps)) {
        cJSON_Delete(r);
        return sn_err_set(err, SN_E_ARG, "%s: the defended mode needs a `simulate` section with "
                          "`experiments`", p->recipe_path);
    }
    cJSON *defaults = cJSON_GetObjectItemCaseSensitive(sim, "defaults");
    const cJSON *dscen = defaults ? cJSON_GetObjectItemCaseSensitive(defaults, "scenario") : NULL;
    const cJSON *dlab = defaults ? cJSON_GetObjectItemCaseSensitive(defaults, "labels") : NULL;
    cJSON *keep = cJSON_CreateArray();
    if (!keep) {
        cJSON_Delete(r);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    for (cJSON *e = exps->child; e; e = e->next) {
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(e, "scenario");
        if (!sc)
            sc = dscen;
        if (!cJSON_IsString(sc) || strcmp(sc->valuestring, "none") == 0)
            continue; /* a clean experiment has nothing to defend */
        cJSON *x = cJSON_Duplicate(e, 1);
        if (!x)
            break;
        const cJSON *lab = cJSON_GetObjectItemCaseSensitive(e, "labels");
        cJSON *labels = cJSON_IsObject(lab)    ? cJSON_Duplicate(lab, 1)
                        : cJSON_IsObject(dlab) ? cJSON_Duplicate(dlab, 1)
                                               : cJSON_CreateObject();
        if (labels)
            cJSON_AddStringToObject(labels, "arm", sn_arm_name(arm));
        set_item(x, "labels", labels ? labels : cJSON_CreateObject());
        bool clean = arm == SN_ARM_CLEAN || arm == SN_ARM_CLEAN_DEFENDED;
        if (arm == SN_ARM_DEFENDED || arm == SN_ARM_CLEAN_DEFENDED) {
            cJSON *d = cJSON_CreateObject();
            if (d) {
                cJSON_AddStringToObject(d, "name", "sentinel");
                cJSON_AddStringToObject(d, "detector", p->detector);
                cJSON_AddNumberToObject(d, "bottom_k", p->k);
                cJSON_AddStringToObject(d, "rule", sn_defense_rule_name(p->rule));
            }
            set_item(x, "defense", d ? d : cJSON_CreateNull());
        } else {
            set_item(x, "defense", cJSON_CreateString("none"));
        }
        if (clean) {
            del_keys(x, attack_keys);
            set_item(x, "scenario", cJSON_CreateString("none"));
            set_item(x, "n_adversaries", cJSON_CreateNumber(0));
        }
        cJSON_AddItemToArray(keep, x);
        (*n_exp)++;
    }
    if ((arm == SN_ARM_CLEAN || arm == SN_ARM_CLEAN_DEFENDED) && defaults) {
        del_keys(defaults, attack_keys);
        cJSON_DeleteItemFromObjectCaseSensitive(defaults, "scenario");
        cJSON_DeleteItemFromObjectCaseSensitive(defaults, "n_adversaries");
    }
    cJSON_ReplaceItemInObjectCaseSensitive(sim, "experiments", keep);
    *out = r;
    return SN_OK;
}

static int scorer_open(void *user, const char *detector, struct sn_defense_scorer *out,
                       struct sn_err *err)
{
    const struct sn_eval_arms_params *p = user;
    if (strcmp(detector, p->detector) != 0)
        return sn_err_set(err, SN_E_ARG, "defended mode: unexpected detector '%s'", detector);
    *out = p->scorer;
    return SN_OK;
}

/* DIR/<arm>/wall.json: the wall time of the simulation that wrote every debate of the arm (a
** run that resumed a partial arm records why it has none; a run with nothing left to do keeps
** the file as it is, so the time survives resumption). */
static int save_wall(const char *dir, const struct sn_simulate_report *rep, double wall_ms,
                     struct sn_err *err)
{
    if (rep->done == 0)
        return SN_OK;
    char path[4200];
    snprintf(path, sizeof path, "%s/wall.json", dir);
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    cJSON_AddStringToObject(j, "schema", "sentinel.arm-wall/1");
    cJSON_AddNumberToObject(j, "debates", (double)rep->done);
    if (rep->skipped == 0 && rep->failed == 0) {
        cJSON_AddNumberToObject(j, "wall_ms", wall_ms);
    } else {
        char why[160];
        snprintf(why, sizeof why, "its simulation was resumed (%llu debates written before, "
                 "%llu failed): one wall time does not cover them all",
                 (unsigned long long)rep->skipped, (unsigned long long)rep->failed);
        cJSON_AddNullToObject(j, "wall_ms");
        cJSON_AddStringToObject(j, "why", why);
    }
    int rc = sn_json_save(path, j, err);
    cJSON_Delete(j);
    return rc;
}

int sn_eval_arms_simulate(const struct sn_eval_arms_params *p, struct sn_err *err)
{
    cJSON *recipe = NULL;
    int rc = sn_recipe_load(p->recipe_path, p->sets, p->n_sets, &recipe, err);
    for (int a = 0; !rc && a < SN_ARM_COUNT; a++) {
        cJSON *r = NULL;
        size_t n_exp = 0;
        char dir[4096], path[4200];
        snprintf(dir, sizeof dir, "%s/%s", p->dir, sn_arm_name((enum sn_arm)a));
        snprintf(path, sizeof path, "%s/recipe.json", dir);
        if ((rc = arm_recipe(recipe, (enum sn_arm)a, p, &r, &n_exp, err)))
            break;
        if (n_exp == 0)
            rc = sn_err_set(err, SN_E_ARG, "%s: no experiment with an attack in `simulate` (the "
                            "defended mode runs each one clean, attacked, defended and clean with the defense)",
                            p->recipe_path);
        if (!rc)
            rc = sn_mkdirs(dir, err);
        if (!rc)
            rc = sn_json_save(path, r, err);
        struct sn_simulate_params sp = sn_simulate_default_params();
        sp.out_dir = dir;
        sp.limit = p->limit;
        sp.progress_mode = p->quiet ? 3 : 0;
        sp.scorer_open = scorer_open;
        sp.scorer_user = (void *)p;
        struct sn_simulate_report rep = {0};
        if (!rc && !p->quiet)
            fprintf(stderr, "sentinel eval: simulating the %s arm (%zu experiments) -> %s\n",
                    sn_arm_name((enum sn_arm)a), n_exp, dir);
        double t0 = sn_now();
        if (!rc && (rc = sn_simulate_run(r, &sp, &rep, err)))
            sn_err_wrap(err, "the %s arm", sn_arm_name((enum sn_arm)a));
        if (!rc)
            rc = save_wall(dir, &rep, 1000.0 * (sn_now() - t0), err);
        cJSON_Delete(r);
    }
    cJSON_Delete(recipe);
    return rc;
}

/* Every trajectory of DIR/<arm>: into the accumulator (timing = NULL) or through the replay.
** The attacked arm's debates join question=seen or question=unseen when `seen` is given. A
** missing DIR/clean_defended (arms written before the fourth arm existed) is no error. */
static int read_arm(const char *dir, enum sn_arm arm, struct sn_defended *d,
                    struct sn_detect *timing, const struct sn_eval_seen *seen, uint64_t *n_read,
                    struct sn_err *err)
{
    char in[4096];
    snprintf(in, sizeof in, "%s/%s", dir, sn_arm_name(arm));
    if (arm == SN_ARM_CLEAN_DEFENDED && !timing && !sn_path_exists(in))
        return SN_OK;
    const char *inputs[1] = {in};
    char **paths = NULL;
    size_t n_paths = 0;
    int rc = sn_traj_paths(inputs, 1, &paths, &n_paths, NULL, err);
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    for (size_t f = 0; !rc && f < n_paths; f++) {
        struct sn_traj_reader *r = NULL;
        if ((rc = sn_traj_reader_open(paths[f], &rp, &r, err)))
            break;
        for (;;) {
            struct sn_traj *t = NULL;
            if ((rc = sn_traj_reader_next(r, &t, err)) || !t)
                break;
            bool is_seen = false, grouped = seen && arm == SN_ARM_ATTACKED;
            if (grouped)
                rc = seen->fn(seen->ctx, t, &is_seen, err);
            if (!rc)
                rc = timing ? sn_detect_add(timing, t, NULL, err)
                            : sn_defended_add_in_group(d, arm, t, grouped ? "question" : NULL,
                                                       is_seen ? "seen" : "unseen", err);
            if (rc)
                sn_err_wrap(err, "%s:%llu", paths[f],
                            (unsigned long long)sn_traj_reader_lineno(r));
            sn_traj_free(t);
            if (rc)
                break;
            (*n_read)++;
        }
        sn_traj_reader_close(r);
    }
    sn_paths_free(paths, n_paths);
    return rc;
}

/* DIR/<arm>/wall.json into the accumulator: the wall time when it covers every debate the arm
** holds now, else the reason it does not. No file: the arm was not simulated by eval. */
static int load_wall(const char *dir, enum sn_arm arm, uint64_t n_debates, struct sn_defended *d,
                     struct sn_err *err)
{
    char path[4200], why[120];
    snprintf(path, sizeof path, "%s/%s/wall.json", dir, sn_arm_name(arm));
    if (!sn_path_exists(path))
        return SN_OK;
    cJSON *j = NULL;
    int rc = sn_json_load(path, &j, err);
    if (rc)
        return rc;
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "wall_ms");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "debates");
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(j, "why");
    if (!cJSON_IsNumber(n) || (!cJSON_IsNumber(w) && !cJSON_IsNull(w))) {
        cJSON_Delete(j);
        return sn_err_set(err, SN_E_FORMAT, "%s: expected `debates` and `wall_ms` (number or "
                          "null)", path);
    }
    if (cJSON_IsString(y))
        sn_defended_set_wall(d, arm, NAN, y->valuestring);
    else if ((uint64_t)n->valuedouble != n_debates) {
        snprintf(why, sizeof why, "its timed simulation wrote %.0f debates, the arm holds %llu",
                 n->valuedouble, (unsigned long long)n_debates);
        sn_defended_set_wall(d, arm, NAN, why);
    } else if (cJSON_IsNumber(w))
        sn_defended_set_wall(d, arm, w->valuedouble, NULL);
    cJSON_Delete(j);
    return SN_OK;
}

static void print_rate(const struct sn_detect_rate *r)
{
    if (isnan(r->p))
        printf(" %21s", "n/a");
    else if (isnan(r->lo))
        printf(" %6.3f %14s", r->p, "");
    else
        printf(" %6.3f [%.3f,%.3f]", r->p, r->lo, r->hi);
}

static void print_ms(double v)
{
    if (isnan(v))
        printf(" %10s", "n/a");
    else
        printf(" %10.2f", v);
}

/* One group: a table on the tie-neutral accuracy (with recovery, the oracle's and the share of
** it, and the timing), then the strict accuracy of the same rows, then why any figure is n/a. */
static int print_group(struct sn_defended *d, const char *group, struct sn_err *err)
{
    size_t R = sn_defended_n_rounds(d, group);
    struct sn_defended_round *s = sn_calloc(R + 1, sizeof *s);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t r = 0; r <= R; r++) {
        int rc = sn_defended_summary(d, group, r == R ? SN_DETECT_LAST : r, &s[r], err);
        if (rc) {
            sn_free(s);
            return rc;
        }
    }
    printf("\n== defended debates: %s ==\n", group);
    printf("task accuracy, tie-neutral (a tie among m answers holding gold counts 1/m); recovery "
           "and the oracle's on it\n");
    printf("%-8s %7s %21s %21s %21s %21s %21s %21s %21s %21s %10s %10s %10s\n", "round",
           "debates", "clean", "attacked", "defended", "defended(all vote)", "oracle",
           "recovery", "oracle's recovery", "share of oracle's", "score ms", "round ms",
           "overhead%");
    char why[4096] = "";
    size_t wl = 0;
    for (size_t r = 0; r <= R; r++) {
        char name[16];
        snprintf(name, sizeof name, r == R ? "last" : "%zu", r);
        printf("%-8s %7llu", name, (unsigned long long)s[r].n_units);
        print_rate(&s[r].acc_neutral[SN_ARM_CLEAN]);
        print_rate(&s[r].acc_neutral[SN_ARM_ATTACKED]);
        print_rate(&s[r].acc_kept_neutral);
        print_rate(&s[r].acc_neutral[SN_ARM_DEFENDED]);
        print_rate(&s[r].acc_oracle_neutral);
        print_rate(&s[r].recovery);
        print_rate(&s[r].recovery_oracle);
        print_rate(&s[r].share);
        print_ms(s[r].score_ms_sentinel);
        print_ms(s[r].round_ms);
        print_ms(s[r].overhead_pct);
        printf("\n");
        if (s[r].na[0] && wl < sizeof why - 1)
            wl += (size_t)snprintf(why + wl, sizeof why - wl, "  round %s: recovery n/a: %s\n",
                                   name, s[r].na);
        else if (s[r].share_na[0] && wl < sizeof why - 1)
            wl += (size_t)snprintf(why + wl, sizeof why - wl, "  round %s: share of the "
                                   "oracle's recovery n/a: %s\n", name, s[r].share_na);
        if (wl > sizeof why - 1)
            wl = sizeof why - 1;
    }
    printf("task accuracy, strict (the recorded panel decision: a tie for the top answer is "
           "wrong)\n");
    printf("%-8s %7s %21s %21s %21s %21s %21s\n", "round", "debates", "clean", "attacked",
           "defended", "defended(all vote)", "oracle");
    for (size_t r = 0; r <= R; r++) {
        char name[16];
        snprintf(name, sizeof name, r == R ? "last" : "%zu", r);
        printf("%-8s %7llu", name, (unsigned long long)s[r].n_units);
        print_rate(&s[r].acc[SN_ARM_CLEAN]);
        print_rate(&s[r].acc[SN_ARM_ATTACKED]);
        print_rate(&s[r].acc_kept);
        print_rate(&s[r].acc[SN_ARM_DEFENDED]);
        print_rate(&s[r].acc_oracle);
        printf("\n");
    }
    printf("zero attackers, tie-neutral: the cost of the defence = clean - clean-defended (the "
           "vote of the agents the sentinels did not exclude), over the debates with a "
           "clean_defended twin\n");
    printf("%-8s %7s %21s %21s %21s %21s\n", "round", "debates", "clean", "clean-defended",
           "clean-def.(all vote)", "cost of the defence");
    for (size_t r = 0; r <= R; r++) {
        char name[16];
        snprintf(name, sizeof name, r == R ? "last" : "%zu", r);
        printf("%-8s %7llu", name, (unsigned long long)s[r].n_cost);
        if (s[r].n_cost == s[r].n_units)
            print_rate(&s[r].acc_neutral[SN_ARM_CLEAN]);
        else
            printf(" %21s", "(other debates)");
        print_rate(&s[r].acc_kept_clean_neutral);
        print_rate(&s[r].acc_neutral[SN_ARM_CLEAN_DEFENDED]);
        print_rate(&s[r].cost);
        printf("\n");
    }
    if (s[R].cost_na[0])
        printf("  cost of the defence n/a: %s\n", s[R].cost_na);
    fputs(why, stdout);
    sn_free(s);
    return SN_OK;
}

int sn_eval_arms_report(const char *dir, const struct sn_defended_params *p,
                        const struct sn_defense_scorer *scorer, const struct sn_detect_params *dp,
                        const struct sn_eval_seen *seen, bool quiet, cJSON **out,
                        struct sn_err *err)
{
    *out = NULL;
    struct sn_defended *d = NULL;
    struct sn_detect *timing = NULL;
    uint64_t n[SN_ARM_COUNT] = {0}, n_timed = 0;
    int rc = sn_defended_create(p, &d, err);
    for (int a = 0; !rc && a < SN_ARM_COUNT; a++)
        if (!(rc = read_arm(dir, (enum sn_arm)a, d, NULL, seen, &n[a], err)))
            rc = load_wall(dir, (enum sn_arm)a, n[a], d, err);
    struct sn_detect_ranker inner = scorer ? sn_detect_scorer_ranker(scorer)
                                           : (struct sn_detect_ranker){0};
    if (!rc && scorer) {
        struct sn_detect_ranker timed = sn_defended_timed_ranker(d, &inner);
        struct sn_detect_params tp = *dp;
        tp.n_boot = 0;
        rc = sn_detect_create(&tp, &timed, &timing, err);
        if (!rc)
            rc = read_arm(dir, SN_ARM_DEFENDED, d, timing, NULL, &n_timed, err);
    }
    uint64_t un[SN_ARM_COUNT];
    if (!rc)
        sn_defended_unmatched(d, un);
    if (!rc && !quiet) {
        printf("\nsentinel eval: defended debates in %s: %llu clean, %llu attacked, %llu "
               "defended, %llu clean-defended (unmatched: %llu, %llu, %llu, %llu); recovery = "
               "(defended - attacked) / (clean - attacked) on the tie-neutral task accuracy; "
               "the cost of the defence = clean - clean-defended; %d bootstrap resamples over "
               "matched debates, seed %llu\n",
               dir, (unsigned long long)n[0], (unsigned long long)n[1],
               (unsigned long long)n[2], (unsigned long long)n[3], (unsigned long long)un[0],
               (unsigned long long)un[1], (unsigned long long)un[2], (unsigned long long)un[3],
               p->n_boot, (unsigned long long)p->seed);
        printf("defended = the vote of the agents the sentinels have not excluded; defended(all "
               "vote) = every agent votes; oracle = the attacked debates' vote after the "
               "oracle's exclusions (k = %d, rule %s; the discussion is the attacked one, so "
               "a live defense may recover more). Overhead as the paper's Table 1: one "
               "sentinel's scoring time per round (score ms: %s) over the round's time with "
               "parallel generation (round ms: the slowest agent for simultaneous talk, the sum "
               "for one-by-one); generation time: endpoint debates from their recorded latency, "
               "sim debates modelled at %.0f tokens/s (--gen-tokens-per-s; an assumption, not a "
               "measurement)\n", p->k, sn_defense_rule_name(p->rule),
               scorer ? "the detector re-scoring what each sentinel received, one thread"
                      : "n/a (no --detector)", p->gen_tokens_per_s);
        /* endpoint debates: the paper's own measurement, end to end */
        static const char *const pair[2] = {"attacked -> defended", "clean -> clean-defended"};
        for (int q = 0; q < 2; q++) {
            struct sn_defended_measured m;
            sn_defended_measured(d, q, &m);
            if (m.na[0])
                printf("overhead, measured (%s): n/a: %s\n", pair[q], m.na);
            else
                printf("overhead, measured (%s): wall time per debate-round %.2f ms without the "
                       "detector, %.2f ms with it: %+.2f ms, %+.2f%%\n", pair[q],
                       m.wall_ms_without, m.wall_ms_with, m.diff_ms, m.overhead_pct);
        }
        size_t ng = 0;
        const char *const *groups = sn_defended_groups(d, &ng);
        for (size_t g = 0; !rc && g < ng; g++)
            rc = print_group(d, groups[g], err);
    }
    cJSON *j = NULL;
    if (!rc)
        rc = sn_defended_report(d, &j, err);
    if (!rc) {
        cJSON_AddStringToObject(j, "dir", dir);
        cJSON *cnt = cJSON_AddObjectToObject(j, "debates");
        for (int a = 0; cnt && a < SN_ARM_COUNT; a++)
            cJSON_AddNumberToObject(cnt, sn_arm_name((enum sn_arm)a), (double)n[a]);
        cJSON_AddBoolToObject(j, "timed", scorer != NULL);
        *out = j;
    }
    sn_detect_free(timing);
    sn_defended_free(d);
    return rc;
}
