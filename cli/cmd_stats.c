/* cli/cmd_stats.c: `sentinel stats` (docs/design.md §1, §4 "Group metrics"). Reads
** trajectory files in one streaming pass (two with --adversary-effective) and prints the
** group-dynamics metrics as a table, JSON and/or CSV. `sentinel stats panels --rates B,H,A`
** does the matched-panel arithmetic on three given rates. Definitions: docs/formats.md. */
#include "cli/cli.h"
#include "eval/eval.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel stats [options] TRAJ...\n"
"       sentinel stats panels --rates B,H,A [--json OUT]\n"
"\n"
"Group-dynamics metrics of debates under attack (docs/design.md §4): SDI, FAT, ASR, NAC,\n"
"consensus per round, accuracy per round (per agent, honest-slot mean, panel decision) and\n"
"its deltas, revision regimes (kept-correct, kept-wrong, DC, DM, P(D=1), P(DM|D=1)), flip\n"
"rate, Wilson 95%% intervals, mean ± SD over replicates, matched panels.\n"
"TRAJ: trajectory files (.jsonl.gz or .jsonl) or directories searched for them.\n"
"\n"
"options:\n"
"  -i, --input PATH        a trajectory file or directory (repeatable; or give them as args)\n"
"      --by FIELD,...      group by fields: scenario, strategy, topology, dataset, n_agents,\n"
"                          n_honest (= n_collaborators), n_adversaries, n_interceptors,\n"
"                          model, model[i], persona[i], role[i], panel (= labels.panel),\n"
"                          labels.KEY, replicate, defense, attack, experiment, task,\n"
"                          subject, item_id, backend\n"
"      --majority RULE     panel decision: plurality (default; ties by --tie), strict (a\n"
"                          tie is no decision and counts wrong), judge (the recorded\n"
"                          judge's answer), source (the Collaboration-attack evaluation's\n"
"                          vote: unparsed answers are one value of their own; reproduces its\n"
"                          per-round majority accuracies on imported debates)\n"
"      --tie RULE          plurality ties: none (default: no decision, counted wrong; favours\n"
"                          no slot), lowest-id (the tied answer first held by the lowest\n"
"                          agent id), random (seeded by debate id and round)\n"
"      --adversary-effective  keep only debates whose (experiment, item, replicate) has\n"
"                          adversaries whose round-0 answers are all parsed and not gold;\n"
"                          debates without adversaries are kept (reads the inputs twice)\n"
"      --panel-field FIELD field naming the matched panel (default labels.panel)\n"
"      --panels B,H,A      its values for baseline, honest-mixed, adversarial-mixed\n"
"                          (default baseline,honest-mixed,adversarial-mixed)\n"
"      --panel-metric M    the rate compared across panels\n"
"                          (default revision.r0_r1.p_dm_given_change, the first revision\n"
"                          step; revision.all.p_dm_given_change pools all rounds)\n"
"      --json OUT          write every row as JSON (atomically)\n"
"      --csv OUT           write every row as CSV (atomically)\n"
"      --items OUT         write one CSV line per debate (its own SDI_k, FAT, ASR, κ,\n"
"                          accuracy, flip terms; atomically)\n"
"      --full              print every row (default: headline metrics)\n"
"      --quiet             no table on stdout\n"
"      --skip-bad          skip (and count) lines that are not valid trajectories, and a\n"
"                          truncated gzip tail, instead of failing\n"
"      --explain ID        print, for the debate(s) whose id or item_id is ID, every\n"
"                          agent's answer per round and how each metric term was counted\n"
"      --progress MODE     auto (default), bar, plain or none\n"
"  -h, --help              this help\n"
"\n"
"panels: --rates B,H,A    three rates in percent (baseline, honest-mixed,\n"
"                          adversarial-mixed): honest bonus B−H, adversarial penalty A−B,\n"
"                          replacement cost (their sum), break-even prior q* = bonus /\n"
"                          (bonus + penalty), all in percentage points / percent.\n"
"\n"
"Output formats and every definition: docs/formats.md#stats-output.\n"
"Exit status: 0 ok, 1 failure (message names file:line and field), 2 usage error.\n");
}

static int split3(const char *s, char out[3][256])
{
    const char *p = s;
    for (int i = 0; i < 3; i++) {
        const char *c = strchr(p, ',');
        if ((i < 2) != (c != NULL))
            return -1;
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n == 0 || n >= 256)
            return -1;
        memcpy(out[i], p, n);
        out[i][n] = '\0';
        p = c ? c + 1 : p + n;
    }
    return 0;
}

static int cmd_panels(int argc, char **argv)
{
    static const struct option opts[] = {
        {"rates", required_argument, 0, 'r'}, {"json", required_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *rates = NULL, *json = NULL;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': rates = optarg; break;
        case 'j': json = optarg; break;
        case 'h': usage(stdout); return SN_EXIT_OK;
        default:
            return sn_cli_usage_error("stats", "panels: unknown or incomplete option '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind < argc)
        return sn_cli_usage_error("stats", "panels: unexpected argument '%s'", argv[optind]);
    if (!rates)
        return sn_cli_usage_error("stats", "panels: --rates B,H,A is required");
    char parts[3][256];
    double v[3];
    if (split3(rates, parts))
        return sn_cli_usage_error("stats", "panels: --rates: expected three comma-separated "
                                           "rates B,H,A, got '%s'", rates);
    for (int i = 0; i < 3; i++) {
        char *end;
        v[i] = strtod(parts[i], &end);
        if (end == parts[i] || *end || !isfinite(v[i]) || v[i] < 0 || v[i] > 100)
            return sn_cli_usage_error("stats", "panels: --rates: '%s' is not a rate in "
                                               "percent (0 to 100)", parts[i]);
    }
    struct sn_panels p = sn_panels_compute(v[0], v[1], v[2]);
    printf("baseline %.4g%%, honest-mixed %.4g%%, adversarial-mixed %.4g%%\n", v[0], v[1], v[2]);
    printf("honest bonus          %6.1f pp  (baseline − honest-mixed)\n", p.bonus);
    printf("adversarial penalty   %6.1f pp  (adversarial-mixed − baseline)\n", p.penalty);
    printf("replacement cost      %6.1f pp  (bonus + penalty)\n", p.cost);
    if (isfinite(p.q_star))
        printf("break-even prior q*   %6.1f %%   (bonus / (bonus + penalty))\n", p.q_star);
    else
        printf("break-even prior q*   undefined (%s)\n", p.q_star_undefined);
    if (json) {
        struct sn_err err = {0};
        cJSON *o = cJSON_CreateObject();
        if (!o)
            return sn_cli_fail("stats", &(struct sn_err){SN_E_NOMEM, "out of memory"});
        cJSON_AddStringToObject(o, "schema", "sentinel.stats-panels/1");
        cJSON_AddNumberToObject(o, "baseline", v[0]);
        cJSON_AddNumberToObject(o, "honest_mixed", v[1]);
        cJSON_AddNumberToObject(o, "adversarial_mixed", v[2]);
        cJSON_AddNumberToObject(o, "honest_bonus", p.bonus);
        cJSON_AddNumberToObject(o, "adversarial_penalty", p.penalty);
        cJSON_AddNumberToObject(o, "replacement_cost", p.cost);
        if (isfinite(p.q_star))
            cJSON_AddNumberToObject(o, "break_even_q", p.q_star);
        else {
            cJSON_AddNullToObject(o, "break_even_q");
            cJSON_AddStringToObject(o, "break_even_q_undefined", p.q_star_undefined);
        }
        int rc = sn_json_save(json, o, &err);
        cJSON_Delete(o);
        if (rc)
            return sn_cli_fail("stats", &err);
    }
    return SN_EXIT_OK;
}

struct opts {
    const char **inputs;
    size_t       n_inputs;
    char        *by_copy;
    const char **by;
    size_t       n_by;
    const char  *json, *csv, *explain, *items;
    bool         full, quiet, skip_bad;
    int          progress; /* sn_progress force_mode */
};

/* Reads every input file; calls fn on each trajectory. A trajectory with invalid UTF-8 is an
** error naming the field (skipped and counted with --skip-bad); a debate id seen before is
** counted once, and the pass that counts skips (n_skipped set) warns naming both lines. */
typedef int (*traj_fn)(void *ctx, const struct sn_traj *t, struct sn_err *err);

static int read_all(char **paths, size_t n_paths, bool skip_bad, struct sn_progress *prog,
                    uint64_t *done, uint64_t *n_skipped, const char **first_skip_out,
                    char *first_skip, size_t fs_size, traj_fn fn, void *ctx, struct sn_err *err)
{
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    struct sn_strmap seen = {0}; /* id -> file index << 40 | line */
    uint64_t n_dups = 0;
    int rc = SN_OK;
    rp.skip_bad = skip_bad;
    for (size_t i = 0; i < n_paths && !rc; i++) {
        struct sn_traj_reader *r;
        rc = sn_traj_reader_open(paths[i], &rp, &r, err);
        if (rc)
            break;
        uint64_t bad_utf8 = 0;
        for (;;) {
            struct sn_traj *t;
            rc = sn_traj_reader_next(r, &t, err);
            if (rc || !t)
                break;
            uint64_t line = sn_traj_reader_lineno(r);
            char where[160];
            if (!sn_traj_utf8_valid(t, where, sizeof where)) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s:%llu: trajectory '%s': %s: invalid UTF-8", paths[i],
                         (unsigned long long)line, t->id, where);
                sn_traj_free(t);
                if (!skip_bad) {
                    rc = sn_err_set(err, SN_E_FORMAT, "%s (--skip-bad skips such trajectories)",
                                    msg);
                    break;
                }
                bad_utf8++;
                if (first_skip && !first_skip[0])
                    snprintf(first_skip, fs_size, "%s", msg);
                continue;
            }
            bool added = false;
            rc = sn_strmap_put(&seen, t->id, strlen(t->id), (size_t)(i << 40 | line), &added,
                               err);
            if (!rc && !added) {
                size_t prev = *sn_strmap_find(&seen, t->id, strlen(t->id));
                if (n_skipped && n_dups++ < 10)
                    SN_WARN("duplicate debate id '%s': %s:%llu and %s:%llu; counted once",
                            t->id, paths[prev >> 40],
                            (unsigned long long)(prev & (((size_t)1 << 40) - 1)), paths[i],
                            (unsigned long long)line);
                sn_traj_free(t);
                continue;
            }
            if (!rc)
                rc = fn(ctx, t, err);
            sn_traj_free(t);
            if (rc)
                break;
            ++*done;
            if (prog && (*done & 1023) == 0)
                sn_progress_update(prog, *done, NULL);
        }
        if (n_skipped) {
            uint64_t k = sn_traj_reader_n_skipped(r) + bad_utf8;
            if (k && first_skip && !first_skip[0])
                snprintf(first_skip, fs_size, "%s", sn_traj_reader_first_skip(r));
            *n_skipped += k;
            if (first_skip_out)
                *first_skip_out = first_skip[0] ? first_skip : NULL;
        }
        sn_traj_reader_close(r);
    }
    if (!rc && n_dups > 10)
        SN_WARN("%llu duplicate debate ids in all (the first 10 named above); each counted once",
                (unsigned long long)n_dups);
    sn_strmap_free(&seen);
    return rc;
}

static int fn_scan(void *ctx, const struct sn_traj *t, struct sn_err *err)
{
    return sn_stats_scan_effective(ctx, t, err);
}

struct add_ctx {
    struct sn_stats *st;
    FILE            *items; /* --items stream, or NULL */
    struct sn_buf    line;
};

static int fn_add(void *ctx, const struct sn_traj *t, struct sn_err *err)
{
    struct add_ctx *a = ctx;
    int rc = sn_stats_add(a->st, t, err);
    if (rc || !a->items)
        return rc;
    sn_buf_reset(&a->line);
    if ((rc = sn_stats_item_row(a->st, t, &a->line, err)))
        return rc;
    if (a->line.len && fwrite(a->line.data, 1, a->line.len, a->items) != a->line.len)
        return sn_err_set(err, SN_E_IO, "--items: write failed");
    return SN_OK;
}

struct explain_ctx {
    const char     *id;
    enum sn_majority majority;
    enum sn_vote_tie tie;
    uint64_t        n_found;
    struct sn_buf   out;
};

static int fn_explain(void *ctx, const struct sn_traj *t, struct sn_err *err)
{
    struct explain_ctx *e = ctx;
    if (strcmp(t->id, e->id) != 0 && strcmp(t->item_id, e->id) != 0)
        return SN_OK;
    e->n_found++;
    sn_buf_reset(&e->out);
    int rc = sn_stats_explain(t, e->majority, e->tie, &e->out, err);
    if (!rc) {
        fputs(e->n_found > 1 ? "\n" : "", stdout);
        fwrite(e->out.data, 1, e->out.len, stdout);
    }
    return rc;
}

int sn_cmd_stats(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "panels"))
        return cmd_panels(argc - 1, argv + 1);
    static const struct option lopts[] = {
        {"input", required_argument, 0, 'i'},
        {"by", required_argument, 0, 'b'},
        {"majority", required_argument, 0, 'm'},
        {"tie", required_argument, 0, 'T'},
        {"adversary-effective", no_argument, 0, 'a'},
        {"panel-field", required_argument, 0, 'F'},
        {"panels", required_argument, 0, 'P'},
        {"panel-metric", required_argument, 0, 'M'},
        {"json", required_argument, 0, 'j'},
        {"csv", required_argument, 0, 'c'},
        {"items", required_argument, 0, 'I'},
        {"full", no_argument, 0, 'f'},
        {"quiet", no_argument, 0, 'q'},
        {"skip-bad", no_argument, 0, 's'},
        {"explain", required_argument, 0, 'e'},
        {"progress", required_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    struct opts o = {0};
    struct sn_stats_params sp = sn_stats_default_params();
    char panel_vals[3][256];
    struct sn_err err = {0};
    int status = SN_EXIT_OK, rc;
    struct sn_stats *st = NULL;
    char **paths = NULL;
    size_t n_paths = 0;
    struct sn_progress *prog = NULL;
    struct explain_ctx ex = {0};
    struct add_ctx add = {0};
    struct sn_atomic_file *items_file = NULL;

    o.inputs = calloc((size_t)argc + 1, sizeof *o.inputs);
    if (!o.inputs)
        return sn_cli_fail("stats", &(struct sn_err){SN_E_NOMEM, "out of memory"});
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "i:hq", lopts, NULL)) != -1) {
        switch (c) {
        case 'i': o.inputs[o.n_inputs++] = optarg; break;
        case 'b': {
            free(o.by_copy);
            free(o.by);
            o.by_copy = strdup(optarg);
            o.by = calloc(strlen(optarg) + 1, sizeof *o.by);
            o.n_by = 0;
            if (!o.by_copy || !o.by) {
                status = sn_cli_fail("stats", &(struct sn_err){SN_E_NOMEM, "out of memory"});
                goto done;
            }
            for (char *p = o.by_copy;;) {
                char *comma = strchr(p, ',');
                if (comma)
                    *comma = '\0';
                if (!*p) {
                    status = sn_cli_usage_error("stats", "--by: empty field name in '%s'",
                                                optarg);
                    goto done;
                }
                o.by[o.n_by++] = p;
                if (!comma)
                    break;
                p = comma + 1;
            }
            break;
        }
        case 'm':
            if (sn_majority_parse(optarg, &sp.majority, &err)) {
                status = sn_cli_usage_error("stats", "%s", err.msg);
                goto done;
            }
            break;
        case 'T':
            if (sn_vote_tie_parse(optarg, &sp.tie, &err)) {
                status = sn_cli_usage_error("stats", "--tie: %s", err.msg);
                goto done;
            }
            break;
        case 'a': sp.adversary_effective = true; break;
        case 'F': sp.panel_field = optarg; break;
        case 'P':
            if (split3(optarg, panel_vals)) {
                status = sn_cli_usage_error("stats", "--panels: expected three comma-separated "
                                                     "values B,H,A, got '%s'", optarg);
                goto done;
            }
            for (int i = 0; i < 3; i++)
                sp.panel_names[i] = panel_vals[i];
            break;
        case 'M': sp.panel_metric = optarg; break;
        case 'j': o.json = optarg; break;
        case 'c': o.csv = optarg; break;
        case 'I': o.items = optarg; break;
        case 'f': o.full = true; break;
        case 'q': o.quiet = true; break;
        case 's': o.skip_bad = true; break;
        case 'e': o.explain = optarg; break;
        case 'p':
            if (!strcmp(optarg, "auto")) o.progress = 0;
            else if (!strcmp(optarg, "bar")) o.progress = 1;
            else if (!strcmp(optarg, "plain")) o.progress = 2;
            else if (!strcmp(optarg, "none")) o.progress = 3;
            else {
                status = sn_cli_usage_error("stats", "--progress: expected auto, bar, plain or "
                                                     "none, got '%s'", optarg);
                goto done;
            }
            break;
        case 'h': usage(stdout); goto done;
        default:
            status = sn_cli_bad_option("stats", argv[optind - 1], lopts);
            goto done;
        }
    }
    while (optind < argc)
        o.inputs[o.n_inputs++] = argv[optind++];
    if (!o.n_inputs) {
        status = sn_cli_usage_error("stats", "no trajectory files given (-i TRAJ)");
        goto done;
    }
    for (size_t i = 0; i < o.n_by; i++) {
        if (sn_stats_check_field(o.by[i], &err)) {
            status = sn_cli_usage_error("stats", "%s", err.msg);
            goto done;
        }
    }
    size_t n_errors_files = 0;
    if ((rc = sn_traj_paths(o.inputs, o.n_inputs, &paths, &n_paths, &n_errors_files, &err))) {
        status = sn_cli_fail("stats", &err);
        goto done;
    }
    if (n_errors_files)
        SN_WARN("stats: skipping %zu errors-*.jsonl file(s) in the inputs (debates simulate "
                "could not finish)", n_errors_files);

    uint64_t done_n = 0, n_skipped = 0;
    char first_skip[512] = "";
    const char *fs = NULL;
    if (o.explain) {
        ex.id = o.explain;
        ex.majority = sp.majority;
        ex.tie = sp.majority == SN_MAJORITY_STRICT ? SN_VOTE_TIE_NONE : sp.tie;
        if ((rc = read_all(paths, n_paths, o.skip_bad, NULL, &done_n, NULL, NULL, NULL, 0,
                           fn_explain, &ex, &err))) {
            status = sn_cli_fail("stats", &err);
            goto done;
        }
        if (!ex.n_found) {
            sn_err_set(&err, SN_E_ARG, "--explain: no debate with id or item_id '%s' in %zu "
                                       "file(s)", o.explain, n_paths);
            status = sn_cli_fail("stats", &err);
        }
        goto done;
    }

    sp.by = o.by;
    sp.n_by = o.n_by;
    if ((rc = sn_stats_create(&sp, &st, &err))) {
        status = sn_cli_fail("stats", &err);
        goto done;
    }
    for (size_t i = 0; i < n_paths; i++) {
        if ((rc = sn_stats_note_input(st, paths[i], &err))) {
            status = sn_cli_fail("stats", &err);
            goto done;
        }
    }
    struct sn_progress_params pp = sn_progress_default_params();
    pp.label = "stats";
    pp.unit = "debates";
    pp.force_mode = o.progress;
    if (sn_progress_create(&pp, &prog, &err))
        prog = NULL; /* progress is a nicety; go on without it */
    sn_err_clear(&err);
    if (sp.adversary_effective) {
        uint64_t n_scan = 0;
        if ((rc = read_all(paths, n_paths, o.skip_bad, NULL, &n_scan, NULL, NULL, NULL, 0,
                           fn_scan, st, &err))) {
            status = sn_cli_fail("stats", &err);
            goto done;
        }
    }
    add.st = st;
    if (o.items) {
        if ((rc = sn_atomic_open(o.items, &items_file, &err))) {
            status = sn_cli_fail("stats", &err);
            goto done;
        }
        add.items = sn_atomic_stream(items_file);
        fprintf(add.items, "%s\n", sn_stats_item_header());
    }
    if ((rc = read_all(paths, n_paths, o.skip_bad, prog, &done_n, &n_skipped, &fs, first_skip,
                       sizeof first_skip, fn_add, &add, &err))) {
        status = sn_cli_fail("stats", &err);
        goto done;
    }
    if (items_file) {
        rc = sn_atomic_commit(items_file, &err);
        items_file = NULL;
        if (rc) {
            status = sn_cli_fail("stats", &err);
            goto done;
        }
    }
    sn_stats_note_skipped(st, n_skipped, fs);
    if (prog) {
        char summary[128];
        sn_progress_update(prog, done_n, NULL);
        snprintf(summary, sizeof summary, "%llu debates, %llu skipped lines",
                 (unsigned long long)done_n, (unsigned long long)n_skipped);
        sn_progress_finish(prog, summary);
        prog = NULL;
    }
    if (o.json && (rc = sn_stats_write_json(st, o.json, &err))) {
        status = sn_cli_fail("stats", &err);
        goto done;
    }
    if (o.csv && (rc = sn_stats_write_csv(st, o.csv, &err))) {
        status = sn_cli_fail("stats", &err);
        goto done;
    }
    if (!o.quiet) {
        struct sn_buf b = {0};
        if ((rc = sn_stats_format_table(st, o.full, &b, &err))) {
            sn_buf_free(&b);
            status = sn_cli_fail("stats", &err);
            goto done;
        }
        fwrite(b.data, 1, b.len, stdout);
        sn_buf_free(&b);
    }
    if (n_skipped)
        fprintf(stderr, "sentinel stats: skipped %llu bad line(s) (first: %s)\n",
                (unsigned long long)n_skipped, first_skip);

done:
    sn_atomic_abort(items_file);
    sn_buf_free(&add.line);
    if (prog)
        sn_progress_finish(prog, NULL);
    sn_buf_free(&ex.out);
    sn_stats_free(st);
    sn_paths_free(paths, n_paths);
    free(o.inputs);
    free(o.by);
    free(o.by_copy);
    return status;
}
