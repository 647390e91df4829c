/* cli/cmd_eval.c: `sentinel eval` (docs/design.md §1; docs/eval.md). Offline replay of recorded
** debates: every ranker (the baselines and the runtime detector)
** scores what each sentinel received, Algorithm 1 turns the scores into blacklists, and the
** figures of docs/eval.md are printed side by side, written as JSON (--json, atomically) and per
** message as CSV (--items, atomically). The runtime detector (--detector, export/export.h) ranks
** through sn_detect_scorer_ranker, the same (context, response) scorer the simulation's
** `sentinel` defense takes. The oracle (eval/detect_oracle.c) ranks in every report as a
** ceiling: a column of every table, never a "best baseline", and apart from the rankers in the
** JSON (its key "oracle") and absent from --items. */
#include "cli/cli.h"
#include "cli/cmd_eval_defended.h"
#include "tuples/tuples.h"
#include "shard/shard.h"
#include "eval/detect.h"

#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel eval -i TRAJ... [options]\n"
"       sentinel eval --defended DIR [--recipe R] --detector D.gguf [options]\n"
"\n"
"Detection by offline replay of recorded debates (docs/eval.md): each round every sentinel\n"
"(honest agent) scores the messages it received, adds the bottom-k senders to its cumulative\n"
"blacklist (Algorithm 1), and the report gives, per round, for each debate's last round and\n"
"pooled over rounds, per group (scenario, dataset, in/out-of-domain): balanced accuracy\n"
"(1 - (FPR + FNR) / 2) and AUROC (the headline figures), agent-level detection accuracy, FPR\n"
"and FNR, the per-round hit rate (rankings whose bottom-k holds an adversary), pair-level\n"
"rates, and task accuracy with and without the exclusions under both tie rules (strict: the\n"
"recorded panel decision; tie-neutral: a tie among m answers holding gold counts 1/m); every\n"
"ranker next to the best baseline and the oracle (it knows the roles: a ceiling, never a\n"
"baseline); per group the AUROC by message type (correct honest messages over adversaries',\n"
"tampered copies', misled agents', ...) and the share of AITM rankings whose tampered copy\n"
"is ranked lowest; and a short summary at the end, naming every group where the detector's\n"
"AUROC interval lies below 0.5.\n"
"\n"
"With --defended DIR the report also holds defended debates (docs/eval.md): DIR/clean,\n"
"DIR/attacked, DIR/defended and DIR/clean_defended hold the same debates without adversaries,\n"
"under attack, under attack with the `sentinel` defense, and without adversaries with it;\n"
"with --recipe R they are simulated first (every experiment of R's `simulate` section that\n"
"has an attack, run four ways; resumable). The report gives per round each arm's task\n"
"accuracy (both tie rules), recovery = (defended - attacked) / (clean - attacked) on the\n"
"tie-neutral accuracy (n/a with the reason when clean and attacked do not differ beyond\n"
"their 95%% intervals), the oracle's recovery and the share of it, the cost of the defence\n"
"at zero attackers = clean - clean-defended, one sentinel's scoring time and its overhead\n"
"over the round's time with parallel generation (the paper's Table 1; sim agents: modelled\n"
"at --gen-tokens-per-s), and for endpoint debates the overhead measured end to end (the\n"
"arms' wall time per debate-round with minus without the detector). The replay part runs\n"
"on -i TRAJ, or on\n"
"DIR/attacked without -i. Intervals: a seeded cluster bootstrap over items (debates of one\n"
"item drawn together); AITM debates are scored at message level (agent level n/a).\n"
"\n");
    fprintf(f,
"options:\n"
"  -i, --input PATH        a trajectory file or directory (repeatable; or give them as args)\n"
"      --detector D.gguf   the runtime detector (a GGUF of `sentinel export`): ranked\n"
"                          beside the baselines, each message scored as R(message ⊕\n"
"                          context) with the template and settings stored in the file\n"
"      --threads N         OpenBLAS threads of the detector (default: OPENBLAS_NUM_THREADS,\n"
"                          else OMP_NUM_THREADS, else one per CPU)\n"
"      --baselines LIST    comma-separated: random, shortest, disagree, ngram, judge\n"
"                          (default random,shortest,disagree, plus ngram with --train-shards\n"
"                          and judge with --judge-endpoint)\n"
"      --train-shards DIR  shard set (manifest.json) of the detector's training: its train\n"
"                          split trains the n-gram baseline, and its train questions are\n"
"                          the leakage check's (debates on them are refused)\n"
"      --ngram-train DATA  what the n-gram baseline trains on: roles (default: the messages\n"
"                          of the train split's trajectories, adversary vs honest) or tuples\n"
"                          (the train split's chosen vs rejected texts, the earlier data)\n"
"      --train-trajectories PATH  where the trajectories the shards were built from are,\n"
"                          when not at the manifest's recorded paths (repeatable)\n"
"      --judge-endpoint F  JSON file with an OpenAI-compatible endpoint object for the LLM\n"
"                          judge (docs/openai.md)\n"
"      --k K               bottom-k per round per sentinel (default 1)\n"
"      --rule RULE         all (default, the paper's line 8) or unlisted (docs/eval.md)\n"
"      --seed S            seed of the tie rule, the random baseline and the bootstrap\n"
"                          (default 1)\n"
"      --bootstrap N       cluster-bootstrap resamples (default 1000; 0 = none)\n"
"      --json OUT          write the whole report as JSON (atomically)\n"
"      --items CSV         write one row per scored message of every ranker but the oracle\n"
"                          (atomically)\n"
"      --allow-overlap     evaluate debates whose question was seen in training (its text,\n"
"                          whatever the dataset is named, or its (dataset, item)) anyway,\n"
"                          with a warning and the groups question=seen and question=unseen\n"
"                          (default: refuse)\n"
"      --skip-bad          skip (and count) lines that are not valid trajectories\n"
"      --defended DIR      defended debates: the arms DIR/clean, DIR/attacked, DIR/defended\n"
"      --recipe R          with --defended: simulate the arms from R's `simulate` section\n"
"                          (needs --detector; the defense uses --k and --rule)\n"
"      --set KEY=VALUE     with --recipe: override a recipe key (repeatable)\n"
"      --limit N           with --recipe: at most N items per experiment\n"
"      --gen-tokens-per-s X  generation speed for the overhead of sim debates, which have\n"
"                          no real generation time (default 50 tokens/s; endpoint debates\n"
"                          use their recorded latency)\n"
"      --quiet             no table on stdout\n"
"      --progress MODE     auto (default: a bar on a terminal, plain lines otherwise), bar,\n"
"                          plain or none: debates replayed and their rate\n"
"  -h, --help              this help\n"
"\n"
"Exit status: 0 ok, 1 failure, 2 usage error.\n");
}

#define MAX_RANKERS 8

struct ev {
    struct sn_detect_ranker r[MAX_RANKERS];
    bool   simple[MAX_RANKERS]; /* ctx from sn_detect_baseline */
    struct sn_detect *d[MAX_RANKERS];
    size_t n;
    struct sn_ngram *ngram;
    struct sn_judge *judge;
    struct sn_llm_backend *judge_b;
    struct sn_cli_scorer *det;
    struct sn_defense_scorer det_scorer; /* borrowed by the "detector" ranker */
    struct sn_buf items;
};

static void ev_free(struct ev *e)
{
    for (size_t i = 0; i < e->n; i++) {
        sn_detect_free(e->d[i]);
        if (e->simple[i])
            sn_detect_baseline_free(&e->r[i]);
    }
    sn_ngram_free(e->ngram);
    sn_judge_free(e->judge);
    sn_llm_backend_close(e->judge_b);
    sn_cli_scorer_free(e->det);
    sn_buf_free(&e->items);
}

/* One figure of the table: its name (also its key in the JSON's best_baseline), where it is in a
** summary, which way is better, and whether it is the same for every ranker (the vote of every
** agent excludes nobody: never a best baseline to beat). */
struct figure {
    const char *name;
    size_t      off;
    bool        higher_better;
    bool        same_for_all;
};
#define FIG(n, f, h, a) {n, offsetof(struct sn_detect_summary, f), h, a}
static const struct figure figures[] = {
    FIG("balanced accuracy (agents)", agent_bacc, true, false),
    FIG("detection accuracy (agents)", agent_acc, true, false),
    FIG("FPR (agents)", agent_fpr, false, false),
    FIG("FNR (agents)", agent_fnr, false, false),
    FIG("hit rate (per round)", hit, true, false),
    FIG("balanced accuracy (pairs)", pair_bacc, true, false),
    FIG("detection accuracy (pairs)", pair_acc, true, false),
    FIG("FPR (pairs)", pair_fpr, false, false),
    FIG("FNR (pairs)", pair_fnr, false, false),
    FIG("balanced accuracy (messages)", msg_bacc, true, false),
    FIG("FPR (messages)", msg_fpr, false, false),
    FIG("FNR (messages)", msg_fnr, false, false),
    FIG("AUROC (messages)", auroc, true, false),
    FIG("tampered copy lowest (AITM rankings)", tampered_lowest, true, false),
    FIG("task accuracy, defended", task_defended, true, false),
    FIG("task accuracy, defended, tie-neutral", task_defended_neutral, true, false),
    FIG("task accuracy, undefended", task_undefended, true, true),
    FIG("task accuracy, undefended, tie-neutral", task_undefended_neutral, true, true),
};
#define N_FIG (sizeof figures / sizeof figures[0])

static const struct sn_detect_rate *fig_of(const struct sn_detect_summary *s, size_t f)
{
    return (const struct sn_detect_rate *)((const char *)s + figures[f].off);
}

static size_t fig_index(size_t off)
{
    for (size_t f = 0; f < N_FIG; f++)
        if (figures[f].off == off)
            return f;
    return 0;
}

static bool is_oracle(const char *name) { return strcmp(name, "oracle") == 0; }
static bool is_baseline(const char *name)
{
    return strcmp(name, "detector") != 0 && !is_oracle(name);
}

/* index of the ranker named name, -1 when absent */
static int ranker_index(const struct ev *e, const char *name)
{
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->r[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* index of the best baseline for figure f (-1 when none has a value); never the oracle */
static int best_baseline(const struct ev *e, const struct sn_detect_summary *s, size_t f)
{
    int best = -1;
    for (size_t i = 0; i < e->n; i++) {
        double p = fig_of(&s[i], f)->p;
        if (!is_baseline(e->r[i].name) || isnan(p))
            continue;
        double b = best >= 0 ? fig_of(&s[best], f)->p : 0;
        if (best < 0 || (figures[f].higher_better ? p > b : p < b))
            best = (int)i;
    }
    return best;
}

static void print_rate(const struct sn_detect_rate *r)
{
    if (isnan(r->p))
        printf(" %22s", "n/a");
    else if (isnan(r->lo))
        printf(" %8.3f %13s", r->p, "");
    else
        printf(" %8.3f [%.3f,%.3f]", r->p, r->lo, r->hi);
}

/* every ranker's summary of a group and row */
static int summaries(const struct ev *e, const char *group, size_t row,
                     struct sn_detect_summary *s, struct sn_err *err)
{
    for (size_t i = 0; i < e->n; i++) {
        int rc = sn_detect_summary(e->d[i], group, row, &s[i], err);
        if (rc)
            return rc;
    }
    return SN_OK;
}

/* The group's AUROC by message type, pooled over rounds, every ranker a column (docs/eval.md
** "By message type"). */
static int print_types(const struct ev *e, const char *group, struct sn_err *err)
{
    struct sn_detect_types t[MAX_RANKERS];
    for (size_t i = 0; i < e->n; i++) {
        int rc = sn_detect_types(e->d[i], group, &t[i], err);
        if (rc)
            return rc;
    }
    printf("-- by message type, pooled over rounds: AUROC(above over below), 0.5 = chance;");
    for (int k = 0; k < SN_MSG_TYPE_COUNT; k++)
        printf("%s %s %llu", k ? "," : "", sn_msg_type_name((enum sn_msg_type)k),
               (unsigned long long)t[0].n[k]);
    printf(" messages\n%-40s", "above over below");
    for (size_t i = 0; i < e->n; i++)
        printf(" %22s", is_oracle(e->r[i].name) ? "oracle (ceiling)" : e->r[i].name);
    printf("\n");
    for (size_t p = 0; p < SN_DETECT_TYPE_PAIRS; p++) {
        char label[64];
        snprintf(label, sizeof label, "%s over %s",
                 sn_msg_type_name(sn_detect_type_pairs[p].above),
                 sn_msg_type_name(sn_detect_type_pairs[p].below));
        printf("%-40s", label);
        for (size_t i = 0; i < e->n; i++)
            print_rate(&t[i].auroc[p]);
        printf("\n");
    }
    return SN_OK;
}

static int print_group(const struct ev *e, const char *group, struct sn_err *err)
{
    struct sn_detect_summary s[MAX_RANKERS];
    size_t R = sn_detect_n_rounds(e->d[0], group);
    printf("\n== %s ==\n", group);
    for (size_t r = 0; r < R + 2; r++) {
        size_t row = r < R ? r : r == R ? SN_DETECT_LAST : SN_DETECT_POOLED;
        int rc = summaries(e, group, row, s, err);
        if (rc)
            return rc;
        if (row == SN_DETECT_LAST)
            printf("-- last round (each debate's last round), %llu debates\n",
                   (unsigned long long)s[0].n_debates);
        else if (row == SN_DETECT_POOLED)
            printf("-- pooled over rounds (every round of every debate), %llu debates, %llu "
                   "debate-rounds\n",
                   (unsigned long long)s[0].n_debates, (unsigned long long)s[0].n_units);
        else
            printf("-- round %zu, %llu debates\n", r, (unsigned long long)s[0].n_debates);
        printf("%-40s", "figure");
        for (size_t i = 0; i < e->n; i++)
            printf(" %22s", is_oracle(e->r[i].name) ? "oracle (ceiling)" : e->r[i].name);
        printf("  best baseline\n");
        for (size_t f = 0; f < N_FIG; f++) {
            printf("%-40s", figures[f].name);
            for (size_t i = 0; i < e->n; i++)
                print_rate(fig_of(&s[i], f));
            int b = best_baseline(e, s, f);
            printf("  %s\n", b >= 0 ? e->r[b].name : "-");
        }
        if (s[0].agent_na[0]) /* AITM: docs/eval.md "AITM" */
            printf("agent and pair level n/a: %s\n", s[0].agent_na);
        else if (s[0].n_aitm)
            printf("agent and pair level: %llu interceptor (AITM) debates left out; they count "
                   "at message level\n", (unsigned long long)s[0].n_aitm);
        /* the plain statement: where the detector does not beat the best baseline */
        for (size_t i = 0; row == SN_DETECT_LAST && i < e->n; i++) {
            if (strcmp(e->r[i].name, "detector") != 0)
                continue;
            for (size_t f = 0; f < N_FIG; f++) {
                if (figures[f].same_for_all)
                    continue;
                int b = best_baseline(e, s, f);
                double p = fig_of(&s[i], f)->p, q = b >= 0 ? fig_of(&s[b], f)->p : NAN;
                if (b >= 0 && !isnan(p) && !(figures[f].higher_better ? p > q : p < q))
                    printf("the detector does NOT beat the best baseline (%s) on %s: %.3f vs "
                           "%.3f\n", e->r[b].name, figures[f].name, p, q);
            }
        }
    }
    return print_types(e, group, err);
}

/* "p [lo, hi]" or "n/a" of a JSON rate-like object into buf */
static const char *json_ratio(const cJSON *o, char *buf, size_t n)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "p");
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(o, "lo");
    const cJSON *hi = cJSON_GetObjectItemCaseSensitive(o, "hi");
    if (!cJSON_IsNumber(p))
        snprintf(buf, n, "n/a");
    else if (cJSON_IsNumber(lo) && cJSON_IsNumber(hi))
        snprintf(buf, n, "%.3f [%.3f, %.3f]", p->valuedouble, lo->valuedouble, hi->valuedouble);
    else
        snprintf(buf, n, "%.3f", p->valuedouble);
    return buf;
}

/* The short summary that ends the report (docs/eval.md "Report"): the headline figures of the
** group all — balanced accuracy and AUROC, and task accuracy under the tie-neutral rule — for
** the last round and pooled, the detector next to the oracle and the best baseline; with
** defended debates, the last round's recovery and its share of the oracle's. */
static int print_summary(const struct ev *e, const cJSON *defended, struct sn_err *err)
{
    static const size_t head[] = {offsetof(struct sn_detect_summary, agent_bacc),
                                  offsetof(struct sn_detect_summary, auroc),
                                  offsetof(struct sn_detect_summary, task_defended_neutral),
                                  offsetof(struct sn_detect_summary, tampered_lowest)};
    static const size_t rows[] = {SN_DETECT_LAST, SN_DETECT_POOLED};
    struct sn_detect_summary s[2][MAX_RANKERS];
    for (size_t w = 0; w < 2; w++) {
        int rc = summaries(e, "all", rows[w], s[w], err);
        if (rc)
            return rc;
    }
    int det = ranker_index(e, "detector"), orc = ranker_index(e, "oracle");
    printf("\n== summary: group all (every table above; definitions in docs/eval.md) ==\n");
    printf("headline figures: balanced accuracy = 1 - (FPR + FNR) / 2 over agents, and AUROC "
           "over messages; task accuracy here is tie-neutral (a tie among m answers holding "
           "gold counts 1/m)\n");
    printf("%-52s %22s %22s %22s\n", "figure", "detector", "oracle (ceiling)",
           "best baseline");
    char won[768] = "", lost[768] = "";
    for (size_t h = 0; h < sizeof head / sizeof head[0]; h++) {
        size_t f = fig_index(head[h]);
        bool aitm = head[h] == offsetof(struct sn_detect_summary, tampered_lowest);
        for (size_t w = 0; w < 2; w++) {
            /* AITM's share pooled only, and only when some ranking held a tampered copy */
            if (aitm && (w == 0 || !(fig_of(&s[w][0], f)->n > 0)))
                continue;
            char label[96];
            snprintf(label, sizeof label, "%s, %s", figures[f].name,
                     w ? "pooled" : "last round");
            printf("%-52s", label);
            if (det >= 0)
                print_rate(fig_of(&s[w][det], f));
            else
                printf(" %22s", "(no --detector)");
            if (orc >= 0)
                print_rate(fig_of(&s[w][orc], f));
            else
                printf(" %22s", "n/a");
            int b = best_baseline(e, s[w], f);
            if (b >= 0)
                print_rate(fig_of(&s[w][b], f));
            else
                printf(" %22s", "n/a");
            printf(" %s\n", b >= 0 ? e->r[b].name : "");
            if (det >= 0 && b >= 0 && !isnan(fig_of(&s[w][det], f)->p)) {
                double p = fig_of(&s[w][det], f)->p, q = fig_of(&s[w][b], f)->p;
                bool beats = figures[f].higher_better ? p > q : p < q;
                char *dst = beats ? won : lost;
                size_t l = strlen(dst);
                snprintf(dst + l, sizeof won - l, "%s%s", l ? "; " : "", label);
            }
        }
    }
    if (det >= 0 && (won[0] || lost[0]))
        printf("the detector beats the best baseline on: %s; it does NOT on: %s\n",
               won[0] ? won : "none", lost[0] ? lost : "none");
    if (det >= 0) { /* docs/eval.md "Below chance" */
        struct sn_buf line = {0};
        int rc = sn_detect_below_chance(e->d[det], "detector", &line, NULL, err);
        if (!rc)
            printf("%s\n", line.data);
        sn_buf_free(&line);
        if (rc)
            return rc;
    }
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(defended, "groups");
    const cJSON *row = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(g, "all"), "last_round");
    if (row) {
        char a[80], b[80], c[80];
        const cJSON *rec = cJSON_GetObjectItemCaseSensitive(row, "recovery");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(row, "recovery_share_of_oracle");
        printf("defended debates, last round: recovery (tie-neutral) %s; the oracle's %s; "
               "share of the oracle's %s\n",
               json_ratio(rec, a, sizeof a),
               json_ratio(cJSON_GetObjectItemCaseSensitive(row, "recovery_oracle"), b, sizeof b),
               json_ratio(sh, c, sizeof c));
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(rec, "na");
        if (!cJSON_IsString(why))
            why = cJSON_GetObjectItemCaseSensitive(sh, "na");
        if (cJSON_IsString(why))
            printf("  n/a: %s\n", why->valuestring);
        /* what the defence costs when nobody attacks: one more quantity, not a recovery */
        const cJSON *cost = cJSON_GetObjectItemCaseSensitive(row, "cost_of_defence");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(row, "accuracy_tie_neutral");
        printf("zero attackers, last round: clean %s, clean-defended %s; cost of the defence "
               "(clean - clean-defended) %s\n",
               json_ratio(cJSON_GetObjectItemCaseSensitive(acc, "clean"), a, sizeof a),
               json_ratio(cJSON_GetObjectItemCaseSensitive(acc, "clean_defended"), b, sizeof b),
               json_ratio(cost, c, sizeof c));
        why = cJSON_GetObjectItemCaseSensitive(cost, "na");
        if (cJSON_IsString(why))
            printf("  n/a: %s\n", why->valuestring);
    }
    return SN_OK;
}

static int add_ranker(struct ev *e, struct sn_detect_ranker r, bool simple,
                      const struct sn_detect_params *p, struct sn_err *err)
{
    if (e->n == MAX_RANKERS)
        return sn_err_set(err, SN_E_ARG, "at most %d rankers", MAX_RANKERS);
    e->r[e->n] = r;
    e->simple[e->n] = simple;
    int rc = sn_detect_create(p, &e->r[e->n], &e->d[e->n], err);
    e->n++; /* freed by ev_free either way */
    return rc;
}

static int setup(struct ev *e, const char *list, const struct sn_ngram_data *nd,
                 const char *judge_path, const struct sn_detect_params *p, struct sn_err *err)
{
    const char *shards = nd->shards_dir;
    char buf[256];
    if (list)
        snprintf(buf, sizeof buf, "%s", list);
    else
        snprintf(buf, sizeof buf, "random,shortest,disagree%s%s", shards ? ",ngram" : "",
                 judge_path ? ",judge" : "");
    int rc = SN_OK;
    for (char *tok = buf, *next; !rc && tok && *tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        for (size_t i = 0; i < e->n; i++)
            if (strcmp(e->r[i].name, tok) == 0)
                return sn_err_set(err, SN_E_ARG, "--baselines: '%s' given twice", tok);
        if (is_oracle(tok))
            return sn_err_set(err, SN_E_ARG, "--baselines: 'oracle' is not a baseline: it is "
                              "in every report as the ceiling (docs/eval.md \"Oracle\")");
        if (strcmp(tok, "ngram") == 0) {
            if (!shards)
                return sn_err_set(err, SN_E_ARG, "the ngram baseline needs --train-shards DIR");
            struct sn_ngram_params np = sn_ngram_default_params();
            if ((rc = sn_ngram_train_data(&np, nd, &e->ngram, err)))
                return rc;
            rc = add_ranker(e, sn_ngram_ranker(e->ngram), false, p, err);
        } else if (strcmp(tok, "judge") == 0) {
            if (!judge_path)
                return sn_err_set(err, SN_E_ARG, "the judge baseline needs --judge-endpoint FILE");
            cJSON *cfg = NULL;
            if ((rc = sn_json_load(judge_path, &cfg, err)))
                return rc;
            rc = sn_sim_endpoint_open(cfg, &e->judge_b, err);
            cJSON_Delete(cfg);
            if (!rc)
                rc = sn_judge_create(e->judge_b, &e->judge, err);
            if (!rc)
                rc = add_ranker(e, sn_judge_ranker(e->judge), false, p, err);
        } else {
            struct sn_detect_ranker r;
            if ((rc = sn_detect_baseline(tok, p->seed, &r, err)))
                return rc;
            rc = add_ranker(e, r, true, p, err);
        }
    }
    if (!rc && e->det)
        rc = add_ranker(e, sn_detect_scorer_ranker(&e->det_scorer), false, p, err);
    if (!rc && e->n == 0)
        rc = sn_err_set(err, SN_E_ARG, "no rankers (--baselines is empty)");
    if (!rc) /* the ceiling, last: every table's rightmost ranker */
        rc = add_ranker(e, sn_detect_oracle_ranker(), false, p, err);
    return rc;
}

/* what the n-gram baseline trained on and the C it chose (docs/eval.md "Baselines") */
static void print_ngram(const struct sn_ngram *m)
{
    const struct sn_ngram_info *in = sn_ngram_get_info(m);
    printf("ngram baseline: %s labels, %zu texts (%zu trusted, %zu not) of %zu train-split "
           "trajectories (%zu evaluated debates left out), %zu terms; C = %g",
           sn_ngram_labels_name(in->labels), in->n_texts, in->n_trusted,
           in->n_texts - in->n_trusted, in->n_trajectories, in->n_excluded, in->n_features,
           in->c);
    if (in->selected) {
        printf(" chosen on %zu validation texts of %zu %s (class-balanced log loss:",
               in->n_validation, in->n_validation_groups,
               in->labels == SN_NGRAM_ROLES ? "questions" : "items");
        for (size_t i = 0; i < in->n_grid; i++)
            printf("%s C=%g %.4f", i ? "," : "", in->c_grid[i], in->validation_loss[i]);
        printf(")");
    } else {
        printf(" (%s)", in->no_selection);
    }
    printf("; L-BFGS %d iterations%s\n", in->iterations, in->converged ? ", converged" :
           ", NOT converged");
}

/* ---- the leakage check (docs/eval.md "Leakage") ---------------------------------------- */

struct leak {
    struct sn_strmap q, qog, items; /* the train split's question keys, question + options +
                                    ** gold keys (the manifest's train_questions) and (dataset,
                                    ** item id) keys (its tuples) */
    struct sn_strmap ids;           /* the evaluated debates' ids */
    uint64_t n_debates, n_seen, n_q, n_qog, n_item;
    char ex_id[96], ex_q[160];      /* the first debate seen in training */
    struct sn_buf key;
};

static void leak_free(struct leak *L)
{
    sn_strmap_free(&L->q);
    sn_strmap_free(&L->qog);
    sn_strmap_free(&L->items);
    sn_strmap_free(&L->ids);
    sn_buf_free(&L->key);
}

/* Whether t's question was seen in training: its text (the content key, whatever the dataset
** is named) or its (dataset, item id). by[0..3) = by text, by text + options + gold, by item. */
static int leak_seen(struct leak *L, const struct sn_traj *t, bool *seen, bool by[3],
                     struct sn_err *err)
{
    char q[65], qog[65];
    int rc = sn_question_keys(t, q, qog, err);
    sn_buf_reset(&L->key);
    if (!rc)
        rc = sn_detect_item_key(t->dataset, t->item_id, &L->key, err);
    if (rc)
        return rc;
    by[0] = sn_strmap_has(&L->q, q, 64);
    by[1] = sn_strmap_has(&L->qog, qog, 64);
    by[2] = sn_strmap_has(&L->items, L->key.data, L->key.len);
    *seen = by[0] || by[2];
    return SN_OK;
}

/* leak_seen as the defended debates' tables ask it (sn_eval_seen) */
static int leak_seen_cb(void *ctx, const struct sn_traj *t, bool *seen, struct sn_err *err)
{
    bool by[3];
    return leak_seen(ctx, t, seen, by, err);
}

/* The first pass over the evaluated debates: their ids (left out of the n-gram baseline's
** training and validation) and how many are on questions seen in training. */
static int leak_scan(struct leak *L, const char *shards, char **paths, size_t n_paths,
                     const struct sn_traj_reader_params *rp, struct sn_err *err)
{
    struct sn_manifest *man = NULL;
    int rc = sn_manifest_load(shards, &man, err);
    if (!rc)
        rc = sn_manifest_train_questions(man, &L->q, &L->qog, err);
    sn_manifest_free(man);
    if (!rc)
        rc = sn_detect_train_items(shards, &L->items, err);
    for (size_t f = 0; !rc && f < n_paths; f++) {
        struct sn_traj_reader *r = NULL;
        if ((rc = sn_traj_reader_open(paths[f], rp, &r, err)))
            break;
        for (;;) {
            struct sn_traj *t = NULL;
            rc = sn_traj_reader_next(r, &t, err);
            if (rc || !t)
                break;
            bool seen = false, by[3] = {false, false, false};
            rc = sn_strmap_put(&L->ids, t->id, strlen(t->id), 0, NULL, err);
            if (!rc)
                rc = leak_seen(L, t, &seen, by, err);
            if (rc)
                sn_err_wrap(err, "%s: debate %s", paths[f], t->id);
            if (!rc && seen && L->n_seen++ == 0) {
                snprintf(L->ex_id, sizeof L->ex_id, "%s", t->id);
                /* one line, at most 100 bytes, cut at a character boundary */
                const char *qt = t->question ? t->question : "";
                size_t len = strlen(qt), k = len < 100 ? len : 100;
                while (k < len && k && ((unsigned char)qt[k] & 0xC0) == 0x80)
                    k--;
                snprintf(L->ex_q, sizeof L->ex_q, "%.*s%s", (int)k, qt, k < len ? "..." : "");
                for (char *c = L->ex_q; *c; c++)
                    if (*c == '\n' || *c == '\r' || *c == '\t')
                        *c = ' ';
            }
            L->n_q += by[0];
            L->n_qog += by[1];
            L->n_item += by[2];
            L->n_debates += !rc;
            sn_traj_free(t);
            if (rc)
                break;
        }
        sn_traj_reader_close(r);
    }
    return rc;
}

static int write_json(const struct ev *e, const char *path, char **inputs, size_t n_inputs,
                      uint64_t n_debates, uint64_t n_skipped, const struct leak *L,
                      cJSON *defended, struct sn_err *err)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        cJSON_Delete(defended);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    cJSON_AddStringToObject(root, "schema", "sentinel.eval/1");
    cJSON_AddStringToObject(root, "mode", defended ? "replay+defended" : "replay");
    if (defended) /* taken over by root */
        cJSON_AddItemToObject(root, "defended", defended);
    cJSON *in = cJSON_AddArrayToObject(root, "inputs");
    for (size_t i = 0; i < n_inputs; i++)
        cJSON_AddItemToArray(in, cJSON_CreateString(inputs[i]));
    cJSON_AddNumberToObject(root, "debates", (double)n_debates);
    cJSON_AddNumberToObject(root, "skipped_lines", (double)n_skipped);
    cJSON_AddNumberToObject(root, "debates_on_train_items", (double)(L ? L->n_item : 0));
    if (L) { /* the content check (docs/eval.md "Leakage") */
        cJSON_AddNumberToObject(root, "debates_on_train_questions", (double)L->n_q);
        cJSON_AddNumberToObject(root, "debates_on_train_questions_options_gold",
                                (double)L->n_qog);
        cJSON_AddNumberToObject(root, "debates_question_seen", (double)L->n_seen);
    }
    if (e->ngram) {
        const struct sn_ngram_info *in = sn_ngram_get_info(e->ngram);
        cJSON *ng = cJSON_AddObjectToObject(root, "ngram");
        cJSON_AddStringToObject(ng, "labels", sn_ngram_labels_name(in->labels));
        cJSON_AddNumberToObject(ng, "trajectories", (double)in->n_trajectories);
        cJSON_AddNumberToObject(ng, "excluded_evaluated", (double)in->n_excluded);
        cJSON_AddNumberToObject(ng, "texts", (double)in->n_texts);
        cJSON_AddNumberToObject(ng, "trusted", (double)in->n_trusted);
        cJSON_AddNumberToObject(ng, "features", (double)in->n_features);
        cJSON_AddNumberToObject(ng, "c", in->c);
        cJSON_AddBoolToObject(ng, "c_selected", in->selected);
        cJSON *gr = cJSON_AddArrayToObject(ng, "c_grid");
        cJSON *vl = cJSON_AddArrayToObject(ng, "validation_loss");
        for (size_t i = 0; in->selected && gr && vl && i < in->n_grid; i++) {
            cJSON_AddItemToArray(gr, cJSON_CreateNumber(in->c_grid[i]));
            cJSON_AddItemToArray(vl, cJSON_CreateNumber(in->validation_loss[i]));
        }
        cJSON_AddNumberToObject(ng, "validation_texts", (double)in->n_validation);
        cJSON_AddNumberToObject(ng, "validation_groups", (double)in->n_validation_groups);
        if (in->no_selection[0])
            cJSON_AddStringToObject(ng, "no_selection", in->no_selection);
        cJSON_AddNumberToObject(ng, "iterations", in->iterations);
        cJSON_AddBoolToObject(ng, "converged", in->converged);
    }
    /* the oracle apart from the rankers: a reader that takes every ranker but the detector
    ** for a baseline must not take the ceiling for one */
    cJSON *rk = cJSON_AddArrayToObject(root, "rankers");
    int rc = SN_OK;
    for (size_t i = 0; !rc && i < e->n; i++) {
        cJSON *rep = NULL;
        rc = sn_detect_report(e->d[i], &rep, err);
        if (rc)
            break;
        if (is_oracle(e->r[i].name)) {
            cJSON_AddBoolToObject(rep, "ceiling", true);
            cJSON_AddItemToObject(root, "oracle", rep);
        } else {
            cJSON_AddItemToArray(rk, rep);
        }
    }
    /* the groups where the detector is worse than chance (docs/eval.md "Below chance") */
    int det = ranker_index(e, "detector");
    if (!rc && det >= 0) {
        struct sn_buf line = {0};
        cJSON *bc = NULL;
        rc = sn_detect_below_chance(e->d[det], "detector", &line, &bc, err);
        sn_buf_free(&line);
        if (!rc)
            cJSON_AddItemToObject(root, "detector_below_chance", bc);
    } else if (!rc) {
        cJSON_AddNullToObject(root, "detector_below_chance");
    }
    if (!rc && e->judge) {
        const char *why = NULL;
        cJSON *j = cJSON_AddObjectToObject(root, "judge");
        cJSON_AddNumberToObject(j, "calls", (double)sn_judge_calls(e->judge));
        cJSON_AddNumberToObject(j, "malformed", (double)sn_judge_malformed(e->judge, &why));
        cJSON_AddStringToObject(j, "first_malformed", why ? why : "");
    }
    /* the best baseline per figure of every group: of the older overall row (best_baseline,
    ** as sentinel.eval/1 readers know it), of the last round and pooled */
    static const struct { const char *key; size_t row; } best_rows[] = {
        {"best_baseline", SN_DETECT_OVERALL},
        {"best_baseline_last_round", SN_DETECT_LAST},
        {"best_baseline_pooled", SN_DETECT_POOLED}};
    size_t ng = 0;
    const char *const *groups = !rc && e->n ? sn_detect_groups(e->d[0], &ng) : NULL;
    for (size_t w = 0; !rc && w < sizeof best_rows / sizeof best_rows[0]; w++) {
        cJSON *best = cJSON_AddObjectToObject(root, best_rows[w].key);
        for (size_t g = 0; best && g < ng && !rc; g++) {
            struct sn_detect_summary s[MAX_RANKERS];
            rc = summaries(e, groups[g], best_rows[w].row, s, err);
            cJSON *go = cJSON_AddObjectToObject(best, groups[g]);
            for (size_t f = 0; !rc && f < N_FIG; f++) {
                int b = best_baseline(e, s, f);
                if (b >= 0)
                    cJSON_AddStringToObject(go, figures[f].name, e->r[b].name);
                else
                    cJSON_AddNullToObject(go, figures[f].name);
            }
        }
    }
    if (!rc)
        rc = sn_json_save(path, root, err);
    cJSON_Delete(root);
    return rc;
}

int sn_cmd_eval(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"input", required_argument, 0, 'i'},       {"detector", required_argument, 0, 'D'},
        {"baselines", required_argument, 0, 'b'},   {"train-shards", required_argument, 0, 'T'},
        {"judge-endpoint", required_argument, 0, 'J'}, {"k", required_argument, 0, 'k'},
        {"rule", required_argument, 0, 'R'},        {"seed", required_argument, 0, 's'},
        {"bootstrap", required_argument, 0, 'B'},   {"json", required_argument, 0, 'j'},
        {"items", required_argument, 0, 'I'},       {"skip-bad", no_argument, 0, 'S'},
        {"quiet", no_argument, 0, 'q'},             {"help", no_argument, 0, 'h'},
        {"allow-overlap", no_argument, 0, 'O'},     {"threads", required_argument, 0, 't'},
        {"defended", required_argument, 0, 'F'},   {"recipe", required_argument, 0, 'r'},
        {"set", required_argument, 0, 'E'},        {"limit", required_argument, 0, 'L'},
        {"gen-tokens-per-s", required_argument, 0, 'G'},
        {"ngram-train", required_argument, 0, 'N'},
        {"train-trajectories", required_argument, 0, 'P'},
        {"progress", required_argument, 0, 'W'},
        {0, 0, 0, 0}};
    const char *train_traj[64];
    struct sn_ngram_data nd = {.labels = SN_NGRAM_ROLES, .trajectories = train_traj};
    bool ngram_opts = false;
    const char *inputs[256];
    size_t n_inputs = 0;
    const char *detector = NULL, *list = NULL, *shards = NULL, *judge = NULL, *json = NULL,
               *items = NULL;
    bool quiet = false, skip_bad = false, allow_overlap = false;
    int threads = 0;
    struct sn_detect_params p = sn_detect_default_params();
    struct sn_defended_params dfp = sn_defended_default_params();
    const char *def_dir = NULL, *recipe = NULL;
    const char *sets[64];
    size_t n_sets = 0, limit = 0;
    bool gen_speed = false;
    int c, progress_mode = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "i:hq", lopts, NULL)) != -1) {
        char *end = NULL;
        long long v;
        switch (c) {
        case 'i':
            if (n_inputs == 256)
                return sn_cli_usage_error("eval", "too many inputs (at most 256)");
            inputs[n_inputs++] = optarg;
            break;
        case 'D': detector = optarg; break;
        case 'W':
            if (sn_cli_progress_mode("eval", optarg, &progress_mode))
                return SN_EXIT_USAGE;
            break;
        case 'F': def_dir = optarg; break;
        case 'r': recipe = optarg; break;
        case 'E':
            if (n_sets == 64)
                return sn_cli_usage_error("eval", "too many --set (at most 64)");
            sets[n_sets++] = optarg;
            break;
        case 'L':
            v = strtoll(optarg, &end, 10);
            if (!*optarg || *end || v < 1)
                return sn_cli_usage_error("eval", "--limit: '%s' is not a positive count",
                                          optarg);
            limit = (size_t)v;
            break;
        case 'G': {
            double x = strtod(optarg, &end);
            if (!*optarg || *end || !(x > 0.0) || !isfinite(x))
                return sn_cli_usage_error("eval", "--gen-tokens-per-s: '%s' is not a positive "
                                          "number", optarg);
            dfp.gen_tokens_per_s = x;
            gen_speed = true;
            break;
        }
        case 'N': {
            struct sn_err perr = {0};
            if (sn_ngram_labels_parse(optarg, &nd.labels, &perr))
                return sn_cli_usage_error("eval", "--ngram-train: %s", perr.msg);
            ngram_opts = true;
            break;
        }
        case 'P':
            if (nd.n_trajectories == 64)
                return sn_cli_usage_error("eval", "too many --train-trajectories (at most 64)");
            train_traj[nd.n_trajectories++] = optarg;
            ngram_opts = true;
            break;
        case 'b': list = optarg; break;
        case 'T': shards = optarg; break;
        case 'J': judge = optarg; break;
        case 'j': json = optarg; break;
        case 'I': items = optarg; break;
        case 'q': quiet = true; break;
        case 'S': skip_bad = true; break;
        case 'O': allow_overlap = true; break;
        case 'R':
            if (strcmp(optarg, "all") == 0)
                p.rule = SN_DEFENSE_RULE_ALL;
            else if (strcmp(optarg, "unlisted") == 0)
                p.rule = SN_DEFENSE_RULE_UNLISTED;
            else
                return sn_cli_usage_error("eval", "--rule: '%s' (all, unlisted)", optarg);
            break;
        case 't':
            v = strtoll(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > 1024)
                return sn_cli_usage_error("eval", "--threads: '%s' is not in [1, 1024]", optarg);
            threads = (int)v;
            break;
        case 'k': case 's': case 'B':
            v = strtoll(optarg, &end, 10);
            if (!*optarg || *end || v < (c == 'k' ? 1 : 0) || v > (c == 's' ? LLONG_MAX : 1000000))
                return sn_cli_usage_error("eval", "--%s: '%s' is not a valid value",
                                          c == 'k' ? "k" : c == 's' ? "seed" : "bootstrap",
                                          optarg);
            if (c == 'k')
                p.k = (int)v;
            else if (c == 's')
                p.seed = (uint64_t)v;
            else
                p.n_boot = (int)v;
            break;
        case 'h': usage(stdout); return SN_EXIT_OK;
        default: return sn_cli_bad_option("eval", argv[optind - 1], lopts);
        }
    }
    for (int i = optind; i < argc; i++) {
        if (n_inputs == 256)
            return sn_cli_usage_error("eval", "too many inputs (at most 256)");
        inputs[n_inputs++] = argv[i];
    }
    if ((recipe || n_sets || limit || gen_speed) && !def_dir)
        return sn_cli_usage_error("eval", "--recipe, --set, --limit and --gen-tokens-per-s go "
                                  "with --defended DIR");
    if (recipe && !detector)
        return sn_cli_usage_error("eval", "--defended with --recipe needs --detector D.gguf (the "
                                  "defense of the defended arm)");
    if (!n_inputs && !def_dir)
        return sn_cli_usage_error("eval", "no trajectories (-i TRAJ)");
    if (ngram_opts && !shards)
        return sn_cli_usage_error("eval", "--ngram-train and --train-trajectories go with "
                                  "--train-shards DIR");
    nd.shards_dir = shards;
    nd.skip_bad = skip_bad;
    char attacked_dir[4096];
    if (!n_inputs) { /* the replay runs on the attacked arm */
        snprintf(attacked_dir, sizeof attacked_dir, "%s/attacked", def_dir);
        inputs[n_inputs++] = attacked_dir;
    }
    dfp.seed = p.seed;
    dfp.n_boot = p.n_boot;
    dfp.k = p.k; /* the oracle of the defended debates goes through the defense's k and rule */
    dfp.rule = p.rule;

    struct sn_err err = {0};
    struct ev e = {0};
    char **paths = NULL;
    size_t n_paths = 0;
    uint64_t n_debates = 0, n_skipped = 0;
    struct leak leak = {0};
    size_t n_errors_files = 0;
    int rc = SN_OK;
    cJSON *def_report = NULL;
    /* the detector first: every ranker sees the context it was trained on (the tuple
    ** builder's, with the history settings stored in its GGUF) */
    if (!rc && detector) {
        rc = sn_cli_scorer_open(detector, threads, &e.det, &err);
        if (!rc) {
            e.det_scorer = sn_cli_scorer_callback(e.det);
            p.history_sentences = e.det_scorer.history_sentences;
            p.history_chars = e.det_scorer.history_chars;
        }
    }
    if (!rc && recipe) {
        struct sn_eval_arms_params ap = {
            .recipe_path = recipe, .sets = sets, .n_sets = n_sets, .dir = def_dir,
            .detector = detector, .scorer = e.det_scorer, .k = p.k, .rule = p.rule,
            .limit = limit, .quiet = quiet};
        rc = sn_eval_arms_simulate(&ap, &err);
    }
    /* after the simulation: without --recipe, -i may name the arms' files */
    if (!rc)
        rc = sn_traj_paths(inputs, n_inputs, &paths, &n_paths, &n_errors_files, &err);
    if (!rc && n_errors_files)
        SN_WARN("eval: skipping %zu errors-*.jsonl file(s) in the inputs (debates simulate "
                "could not finish)", n_errors_files);
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    rp.skip_bad = skip_bad;
    /* the leakage check first, before anything is trained or replayed */
    if (!rc && shards)
        rc = leak_scan(&leak, shards, paths, n_paths, &rp, &err);
    if (!rc && leak.n_seen && !allow_overlap)
        rc = sn_err_set(&err, SN_E_FORMAT, "%llu of %llu evaluated debates are on questions "
                        "seen in training (the train split of %s; %llu by their text, "
                        "whatever the dataset is named, %llu of them with the same options "
                        "and gold; %llu by dataset and item id), e.g. debate %s: \"%s\"; their "
                        "figures would measure memory, not detection (--allow-overlap "
                        "evaluates anyway and reports the groups question=seen and "
                        "question=unseen)", (unsigned long long)leak.n_seen,
                        (unsigned long long)leak.n_debates, shards,
                        (unsigned long long)leak.n_q, (unsigned long long)leak.n_qog,
                        (unsigned long long)leak.n_item, leak.ex_id, leak.ex_q);
    nd.exclude = &leak.ids; /* the evaluated debates: never the n-gram's training or validation */
    if (!rc)
        rc = setup(&e, list, &nd, judge, &p, &err);
    if (!rc && items)
        rc = sn_buf_printf(&e.items, &err, "%s\n", sn_detect_items_header());
    /* the replay scores every message with every ranker: a progress display as train's
    ** (the number of debates is known only once read, so no ETA) */
    struct sn_progress *bar = NULL;
    struct sn_progress_params pp = sn_progress_default_params();
    pp.label = "eval";
    pp.unit = "debates";
    pp.force_mode = progress_mode;
    struct sn_err perr = {0}; /* no display is no failure */
    if (!rc && sn_progress_create(&pp, &bar, &perr))
        bar = NULL;
    for (size_t f = 0; !rc && f < n_paths; f++) {
        struct sn_traj_reader *r = NULL;
        if ((rc = sn_traj_reader_open(paths[f], &rp, &r, &err)))
            break;
        for (;;) {
            struct sn_traj *t = NULL;
            rc = sn_traj_reader_next(r, &t, &err);
            if (rc || !t)
                break;
            /* with overlap allowed, every debate is in question=seen or question=unseen */
            bool seen = false, by[3];
            bool grouped = shards && allow_overlap;
            if (grouped)
                rc = leak_seen(&leak, t, &seen, by, &err);
            for (size_t i = 0; !rc && i < e.n; i++)
                rc = sn_detect_add_in_group(e.d[i], t, grouped ? "question" : NULL,
                                            seen ? "seen" : "unseen",
                                            items && !is_oracle(e.r[i].name) ? &e.items : NULL,
                                            &err);
            sn_traj_free(t);
            if (rc)
                break;
            n_debates++;
            sn_progress_update(bar, n_debates, NULL);
        }
        n_skipped += sn_traj_reader_n_skipped(r);
        sn_traj_reader_close(r);
    }
    if (bar)
        sn_progress_finish(bar, rc ? "stopped" : "replayed");
    if (!rc && n_debates == 0)
        rc = sn_err_set(&err, SN_E_ARG, "no debates in the inputs");
    if (!rc && leak.n_seen)
        fprintf(stderr, "sentinel eval: WARNING: %llu of %llu debates are on questions seen in "
                "training (the train split of %s; %llu by their text, %llu by dataset and item "
                "id) (--allow-overlap): their figures are not held-out; the groups "
                "question=seen and question=unseen split them\n", (unsigned long long)leak.n_seen,
                (unsigned long long)n_debates, shards, (unsigned long long)leak.n_q,
                (unsigned long long)leak.n_item);
    if (!rc && !quiet) {
        printf("sentinel eval: %llu debates, k = %d, rule %s, seed %llu, %d bootstrap "
               "resamples\n", (unsigned long long)n_debates, p.k, sn_defense_rule_name(p.rule),
               (unsigned long long)p.seed, p.n_boot);
        if (n_skipped)
            printf("skipped %llu bad lines\n", (unsigned long long)n_skipped);
        printf("agent and pair rates are cumulative (blacklists as held after the round); "
               "balanced accuracy = 1 - (FPR + FNR) / 2;\nhit rate (per round) = the share of "
               "the round's rankings (one per sentinel, among those that received an "
               "adversarial message) whose bottom-k holds its sender, not cumulative;\ntask "
               "accuracy: strict = the recorded panel decision (a tie for the top answer is "
               "wrong), tie-neutral = a tie among m answers holding gold counts 1/m;\nthe "
               "oracle knows the roles and ranks every adversary lowest: a ceiling, never a "
               "baseline (docs/eval.md)\n");
        if (e.ngram)
            print_ngram(e.ngram);
        if (leak.n_seen && allow_overlap)
            printf("%llu of %llu debates are on questions seen in training (%llu by their text, "
                   "%llu of them with the same options and gold; %llu by dataset and item id): "
                   "see the groups question=seen and question=unseen\n",
                   (unsigned long long)leak.n_seen, (unsigned long long)n_debates,
                   (unsigned long long)leak.n_q, (unsigned long long)leak.n_qog,
                   (unsigned long long)leak.n_item);
        size_t ng = 0;
        const char *const *groups = sn_detect_groups(e.d[0], &ng);
        for (size_t g = 0; !rc && g < ng; g++)
            rc = print_group(&e, groups[g], &err);
        if (!rc && e.judge) {
            const char *why = NULL;
            uint64_t bad = sn_judge_malformed(e.judge, &why);
            printf("\njudge: %llu calls, %llu malformed rankings%s%s\n",
                   (unsigned long long)sn_judge_calls(e.judge), (unsigned long long)bad,
                   bad ? "; first: " : "", bad ? why : "");
        }
        if (!rc && !detector)
            printf("\nno detector in this report (no --detector): the figures above are the "
                   "baselines'.\n");
    }
    /* with overlap allowed, the defended debates split into question=seen and =unseen too */
    struct sn_eval_seen seen_q = {leak_seen_cb, &leak};
    if (!rc && def_dir)
        rc = sn_eval_arms_report(def_dir, &dfp, e.det ? &e.det_scorer : NULL, &p,
                                 shards && allow_overlap ? &seen_q : NULL, quiet, &def_report,
                                 &err);
    if (!rc && !quiet)
        rc = print_summary(&e, def_report, &err);
    if (!rc && json)
        rc = write_json(&e, json, paths, n_paths, n_debates, n_skipped, shards ? &leak : NULL,
                        def_report, &err);
    else
        cJSON_Delete(def_report);
    if (!rc && items)
        rc = sn_atomic_write(items, e.items.data, e.items.len, &err);
    sn_paths_free(paths, n_paths);
    leak_free(&leak);
    ev_free(&e);
    return rc ? sn_cli_fail("eval", &err) : SN_EXIT_OK;
}
