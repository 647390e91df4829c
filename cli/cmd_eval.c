/* cli/cmd_eval.c: `sentinel eval` (docs/design.md §1; docs/eval.md). Offline replay of recorded
** debates: every ranker (the baselines and the runtime detector)
** scores what each sentinel received, Algorithm 1 turns the scores into blacklists, and the
** figures of docs/eval.md are printed side by side, written as JSON (--json, atomically) and per
** message as CSV (--items, atomically). The runtime detector (--detector, export/export.h) ranks
** through sn_detect_scorer_ranker, the same (context, response) scorer the simulation's
** `sentinel` defense takes. */
#include "cli/cli.h"
#include "cli/cmd_eval_defended.h"
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
"blacklist (Algorithm 1), and the report gives, per round and group (scenario, dataset,\n"
"in/out-of-domain): agent-level detection accuracy, FPR and FNR (Wilson 95%%), pair-level\n"
"rates and AUROC (cluster bootstrap over debates), task accuracy with and without the\n"
"exclusions; every ranker next to the best baseline.\n"
"\n"
"With --defended DIR the report also holds defended debates (docs/eval.md): DIR/clean,\n"
"DIR/attacked and DIR/defended hold the same debates without adversaries, under attack, and\n"
"under attack with the `sentinel` defense; with --recipe R they are simulated first (every\n"
"experiment of R's `simulate` section that has an attack, run three ways; resumable). The\n"
"report gives per round each arm's task accuracy, recovery = (defended - attacked) /\n"
"(clean - attacked) (n/a with the reason when clean and attacked do not differ beyond\n"
"their Wilson intervals), the detector's scoring time and its overhead over the round's\n"
"generation time. The replay part runs on -i TRAJ, or on DIR/attacked without -i.\n"
"\n"
"options:\n"
"  -i, --input PATH        a trajectory file or directory (repeatable; or give them as args)\n"
"      --detector D.gguf   the runtime detector (a GGUF of `sentinel export`): ranked\n"
"                          beside the baselines, each message scored as R(message ⊕\n"
"                          context) with the template and settings stored in the file\n"
"      --threads N         OpenBLAS threads of the detector (default: OpenBLAS's choice)\n"
"      --baselines LIST    comma-separated: random, shortest, disagree, ngram, judge\n"
"                          (default random,shortest,disagree, plus ngram with --train-shards\n"
"                          and judge with --judge-endpoint)\n"
"      --train-shards DIR  shard set (manifest.json) whose train split trains the n-gram\n"
"                          baseline\n"
"      --judge-endpoint F  JSON file with an OpenAI-compatible endpoint object for the LLM\n"
"                          judge (docs/openai.md)\n"
"      --k K               bottom-k per round per sentinel (default 1)\n"
"      --rule RULE         all (default, the paper's line 8) or unlisted (docs/eval.md)\n"
"      --seed S            seed of the tie rule, the random baseline, the n-gram shuffle and\n"
"                          the bootstrap (default 1)\n"
"      --bootstrap N       cluster-bootstrap resamples (default 1000; 0 = none)\n"
"      --json OUT          write the whole report as JSON (atomically)\n"
"      --items CSV         write one row per scored message (atomically)\n"
"      --allow-overlap     evaluate debates whose (dataset, item) is in the train split of\n"
"                          --train-shards anyway, with a warning (default: refuse)\n"
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

/* one figure of the table: its name, where it is in a summary, and which way is better */
struct figure {
    const char *name;
    size_t      off;
    bool        higher_better;
};
#define FIG(n, f, h) {n, offsetof(struct sn_detect_summary, f), h}
static const struct figure figures[] = {
    FIG("detection accuracy (agents)", agent_acc, true),
    FIG("FPR (agents)", agent_fpr, false),
    FIG("FNR (agents)", agent_fnr, false),
    FIG("detection accuracy (pairs)", pair_acc, true),
    FIG("FPR (pairs)", pair_fpr, false),
    FIG("FNR (pairs)", pair_fnr, false),
    FIG("AUROC (messages)", auroc, true),
    FIG("task accuracy, defended", task_defended, true),
    FIG("task accuracy, undefended", task_undefended, true),
};
#define N_FIG (sizeof figures / sizeof figures[0])

static const struct sn_detect_rate *fig_of(const struct sn_detect_summary *s, size_t f)
{
    return (const struct sn_detect_rate *)((const char *)s + figures[f].off);
}

static bool is_baseline(const char *name) { return strcmp(name, "detector") != 0; }

/* index of the best baseline for figure f (-1 when none has a value) */
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

static int print_group(const struct ev *e, const char *group, struct sn_err *err)
{
    struct sn_detect_summary s[MAX_RANKERS];
    size_t R = sn_detect_n_rounds(e->d[0], group);
    printf("\n== %s ==\n", group);
    for (size_t r = 0; r <= R; r++) {
        size_t round = r == R ? SIZE_MAX : r;
        for (size_t i = 0; i < e->n; i++) {
            int rc = sn_detect_summary(e->d[i], group, round, &s[i], err);
            if (rc)
                return rc;
        }
        if (round == SIZE_MAX)
            printf("-- overall (each debate's last round; AUROC over all rounds), %llu debates\n",
                   (unsigned long long)s[0].n_debates);
        else
            printf("-- round %zu, %llu debates\n", r, (unsigned long long)s[0].n_debates);
        printf("%-28s", "figure");
        for (size_t i = 0; i < e->n; i++)
            printf(" %22s", e->r[i].name);
        printf("  best baseline\n");
        for (size_t f = 0; f < N_FIG; f++) {
            printf("%-28s", figures[f].name);
            for (size_t i = 0; i < e->n; i++)
                print_rate(fig_of(&s[i], f));
            int b = best_baseline(e, s, f);
            printf("  %s\n", b >= 0 ? e->r[b].name : "-");
        }
        /* the plain statement: where the detector does not beat the best baseline */
        for (size_t i = 0; round == SIZE_MAX && i < e->n; i++) {
            if (is_baseline(e->r[i].name))
                continue;
            for (size_t f = 0; f < N_FIG; f++) {
                /* undefended accuracy excludes nobody: the same for every ranker */
                if (figures[f].off == offsetof(struct sn_detect_summary, task_undefended))
                    continue;
                int b = best_baseline(e, s, f);
                double p = fig_of(&s[i], f)->p, q = b >= 0 ? fig_of(&s[b], f)->p : NAN;
                if (b >= 0 && !isnan(p) && !(figures[f].higher_better ? p > q : p < q))
                    printf("the detector does NOT beat the best baseline (%s) on %s: %.3f vs "
                           "%.3f\n", e->r[b].name, figures[f].name, p, q);
            }
        }
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

static int setup(struct ev *e, const char *list, const char *shards, const char *judge_path,
                 const struct sn_detect_params *p, struct sn_err *err)
{
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
        if (strcmp(tok, "ngram") == 0) {
            if (!shards)
                return sn_err_set(err, SN_E_ARG, "the ngram baseline needs --train-shards DIR");
            struct sn_ngram_params np = sn_ngram_default_params();
            np.seed = p->seed;
            if ((rc = sn_ngram_train_shards(&np, shards, &e->ngram, err)))
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
    return rc;
}

static int write_json(const struct ev *e, const char *path, char **inputs, size_t n_inputs,
                      uint64_t n_debates, uint64_t n_skipped, uint64_t n_overlap,
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
    cJSON_AddNumberToObject(root, "debates_on_train_items", (double)n_overlap);
    cJSON *rk = cJSON_AddArrayToObject(root, "rankers");
    int rc = SN_OK;
    for (size_t i = 0; !rc && i < e->n; i++) {
        cJSON *rep = NULL;
        rc = sn_detect_report(e->d[i], &rep, err);
        if (!rc)
            cJSON_AddItemToArray(rk, rep);
    }
    if (!rc && e->judge) {
        const char *why = NULL;
        cJSON *j = cJSON_AddObjectToObject(root, "judge");
        cJSON_AddNumberToObject(j, "calls", (double)sn_judge_calls(e->judge));
        cJSON_AddNumberToObject(j, "malformed", (double)sn_judge_malformed(e->judge, &why));
        cJSON_AddStringToObject(j, "first_malformed", why ? why : "");
    }
    /* the best baseline per figure of the overall row of every group */
    cJSON *best = rc ? NULL : cJSON_AddObjectToObject(root, "best_baseline");
    size_t ng = 0;
    const char *const *groups = !rc && e->n ? sn_detect_groups(e->d[0], &ng) : NULL;
    for (size_t g = 0; best && g < ng && !rc; g++) {
        struct sn_detect_summary s[MAX_RANKERS];
        for (size_t i = 0; i < e->n && !rc; i++)
            rc = sn_detect_summary(e->d[i], groups[g], SIZE_MAX, &s[i], err);
        cJSON *go = cJSON_AddObjectToObject(best, groups[g]);
        for (size_t f = 0; !rc && f < N_FIG; f++) {
            int b = best_baseline(e, s, f);
            if (b >= 0)
                cJSON_AddStringToObject(go, figures[f].name, e->r[b].name);
            else
                cJSON_AddNullToObject(go, figures[f].name);
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
        {0, 0, 0, 0}};
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
    int c;
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
        default: return sn_cli_usage_error("eval", "unknown option");
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
    char attacked_dir[4096];
    if (!n_inputs) { /* the replay runs on the attacked arm */
        snprintf(attacked_dir, sizeof attacked_dir, "%s/attacked", def_dir);
        inputs[n_inputs++] = attacked_dir;
    }
    dfp.seed = p.seed;
    dfp.n_boot = p.n_boot;

    struct sn_err err = {0};
    struct ev e = {0};
    char **paths = NULL;
    size_t n_paths = 0;
    uint64_t n_debates = 0, n_skipped = 0, n_overlap = 0;
    struct sn_strmap train_items = {0};
    struct sn_buf key = {0};
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
    if (!rc)
        rc = setup(&e, list, shards, judge, &p, &err);
    if (!rc && items)
        rc = sn_buf_printf(&e.items, &err, "%s\n", sn_detect_items_header());
    if (!rc && shards)
        rc = sn_detect_train_items(shards, &train_items, &err);
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    rp.skip_bad = skip_bad;
    for (size_t f = 0; !rc && f < n_paths; f++) {
        struct sn_traj_reader *r = NULL;
        if ((rc = sn_traj_reader_open(paths[f], &rp, &r, &err)))
            break;
        for (;;) {
            struct sn_traj *t = NULL;
            rc = sn_traj_reader_next(r, &t, &err);
            if (rc || !t)
                break;
            if (shards) {
                sn_buf_reset(&key);
                rc = sn_detect_item_key(t->dataset, t->item_id, &key, &err);
                if (!rc && sn_strmap_has(&train_items, key.data, key.len)) {
                    n_overlap++;
                    if (!allow_overlap)
                        rc = sn_err_set(&err, SN_E_FORMAT, "%s: debate %s is on item '%s' "
                                        "(dataset '%s') of the train split of %s: the figures "
                                        "would measure memory, not detection (--allow-overlap "
                                        "evaluates anyway, with a warning)", paths[f], t->id,
                                        t->item_id, t->dataset, shards);
                }
            }
            for (size_t i = 0; !rc && i < e.n; i++)
                rc = sn_detect_add(e.d[i], t, items ? &e.items : NULL, &err);
            sn_traj_free(t);
            if (rc)
                break;
            n_debates++;
        }
        n_skipped += sn_traj_reader_n_skipped(r);
        sn_traj_reader_close(r);
    }
    if (!rc && n_debates == 0)
        rc = sn_err_set(&err, SN_E_ARG, "no debates in the inputs");
    if (!rc && n_overlap)
        fprintf(stderr, "sentinel eval: WARNING: %llu of %llu debates are on items of the "
                "train split of %s (--allow-overlap): their figures are not held-out\n",
                (unsigned long long)n_overlap, (unsigned long long)n_debates, shards);
    if (!rc && !quiet) {
        printf("sentinel eval: %llu debates, k = %d, rule %s, seed %llu, %d bootstrap "
               "resamples\n", (unsigned long long)n_debates, p.k, sn_defense_rule_name(p.rule),
               (unsigned long long)p.seed, p.n_boot);
        if (n_skipped)
            printf("skipped %llu bad lines\n", (unsigned long long)n_skipped);
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
    if (!rc && def_dir)
        rc = sn_eval_arms_report(def_dir, &dfp, e.det ? &e.det_scorer : NULL, &p, quiet,
                                 &def_report, &err);
    if (!rc && json)
        rc = write_json(&e, json, paths, n_paths, n_debates, n_skipped, n_overlap, def_report,
                        &err);
    else
        cJSON_Delete(def_report);
    if (!rc && items)
        rc = sn_atomic_write(items, e.items.data, e.items.len, &err);
    sn_paths_free(paths, n_paths);
    sn_strmap_free(&train_items);
    sn_buf_free(&key);
    ev_free(&e);
    return rc ? sn_cli_fail("eval", &err) : SN_EXIT_OK;
}
