/* cli/cmd_simulate.c: `sentinel simulate` (docs/design.md §1; README.md (CLI reference)): debates
** under attack -> trajectories. The work is sim/run.c; this file parses options, loads
** the recipe with --set overrides, turns SIGINT/SIGTERM into a clean stop (the output stays
** valid and a re-run continues), and opens the runtime detector of a `sentinel` defense
** (cli/detector_scorer.c; data/ cannot use export/: it hands us the recipe's "detector"). */
#include "cli/cli.h"
#include "sim/sim.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static volatile int cancel_flag;
static volatile sig_atomic_t stop_signal; /* the first signal, for the exit status */

static void on_signal(int sig)
{
    if (cancel_flag) { /* second signal: stop now */
        signal(sig, SIG_DFL);
        raise(sig);
    }
    stop_signal = sig;
    cancel_flag = 1;
}

/* The detectors of the run's `sentinel` defenses, one per distinct path (each thread-safe). */
#define MAX_DETECTORS 16
struct dets {
    char path[MAX_DETECTORS][1024];
    struct sn_cli_scorer *s[MAX_DETECTORS];
    int n;
};

static int det_open(void *user, const char *path, struct sn_defense_scorer *out,
                    struct sn_err *err)
{
    struct dets *D = user;
    int i = 0;
    while (i < D->n && strcmp(D->path[i], path) != 0)
        i++;
    if (i == D->n) {
        if (D->n == MAX_DETECTORS)
            return sn_err_set(err, SN_E_ARG, "more than %d distinct detectors", MAX_DETECTORS);
        int rc = sn_cli_scorer_open(path, 0, &D->s[i], err);
        if (rc)
            return rc;
        snprintf(D->path[i], sizeof D->path[i], "%s", path);
        D->n++;
    }
    *out = sn_cli_scorer_callback(D->s[i]);
    return SN_OK;
}

static void dets_free(struct dets *D)
{
    for (int i = 0; i < D->n; i++)
        sn_cli_scorer_free(D->s[i]);
    D->n = 0;
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel simulate --recipe RECIPE -o DIR [options]\n"
"\n"
"Runs the multi-agent debates of the recipe's `simulate` section (attack scenarios, topologies,\n"
"communication strategies, LLM endpoints or built-in sim agents) and appends one trajectory\n"
"per debate to DIR/trajectories-<i>of<n>.jsonl.gz (schema sentinel.trajectory/1).\n"
"Resumable: a re-run skips debates already written, drops a partial record left by a kill,\n"
"and retries the debates listed in DIR/errors-<i>of<n>.jsonl.\n"
"\n"
"options:\n"
"  -r, --recipe FILE     recipe (JSON) with a `simulate` section (required)\n"
"  -o, --out DIR         output directory (default: <recipe out_dir>/trajectories)\n"
"      --set KEY=VALUE   override a recipe key, e.g. --set simulate.defaults.rounds=2\n"
"                        (repeatable; VALUE is JSON when it parses, else a string)\n"
"      --shard I/N       run only shard I of N (0 <= I < N): a deterministic, disjoint split\n"
"                        of the (experiment, item, replicate) debates by id, for job arrays\n"
"      --replicates K    run every experiment K times (overrides the recipe)\n"
"      --limit N         at most N items per experiment (quick trials)\n"
"      --threads N       worker threads (default: 1 for sim endpoints, else twice the\n"
"                        largest endpoint concurrency, so every request slot stays busy)\n"
"      --progress MODE   auto (default: a bar on a terminal, plain lines otherwise), bar,\n"
"                        plain, none\n"
"  -h, --help            this help\n"
"\n"
"Exit status: 0 all debates written; 1 some debates failed (listed in the errors file; re-run\n"
"to retry) or the job failed; 2 usage or recipe error; 130/143 stopped by SIGINT/SIGTERM\n"
"after the debates in flight were written (a second signal kills): re-run to continue.\n"
"Recipe keys: docs/simulate.md. A `sentinel` defense scores with\n"
"the runtime detector named by its \"detector\" key (a GGUF of `sentinel export`).\n");
}

int sn_cmd_simulate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"recipe", required_argument, NULL, 'r'},  {"out", required_argument, NULL, 'o'},
        {"set", required_argument, NULL, 's'},     {"shard", required_argument, NULL, 'S'},
        {"replicates", required_argument, NULL, 'R'}, {"limit", required_argument, NULL, 'l'},
        {"threads", required_argument, NULL, 't'}, {"progress", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    const char *recipe_path = NULL, *out = NULL;
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    size_t n_sets = 0;
    struct sn_simulate_params p = sn_simulate_default_params();
    int c, status = SN_EXIT_OK;
    if (!sets) {
        fprintf(stderr, "sentinel simulate: out of memory\n");
        return SN_EXIT_FAIL;
    }
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "r:o:h", opts, NULL)) != -1) {
        uint64_t u = 0;
        switch (c) {
        case 'r': recipe_path = optarg; break;
        case 'o': out = optarg; break;
        case 's': sets[n_sets++] = optarg; break;
        case 'S': {
            /* Both numbers whole and in range: "3/", "/4", "3/+4" and "3/ 4" are refused. */
            const char *slash = strchr(optarg, '/');
            uint64_t i = 0, n = 0;
            if (!slash || !sn_parse_u64(optarg, (size_t)(slash - optarg), 0, 999999, &i) ||
                !sn_parse_u64(slash + 1, strlen(slash + 1), 1, 1000000, &n) || i >= n) {
                free(sets);
                return sn_cli_usage_error("simulate", "--shard '%s': expected I/N with "
                                          "0 <= I < N", optarg);
            }
            p.shard_index = (int)i;
            p.shard_count = (int)n;
            break;
        }
        case 'R': case 'l': case 't':
            if (!sn_parse_u64(optarg, strlen(optarg), 1, 100000000, &u)) {
                free(sets);
                return sn_cli_usage_error("simulate", "--%s '%s': expected a positive integer",
                                          c == 'R' ? "replicates" : c == 'l' ? "limit"
                                                                             : "threads",
                                          optarg);
            }
            if (c == 'R')
                p.replicates = (int)u;
            else if (c == 'l')
                p.limit = (size_t)u;
            else
                p.threads = (int)u;
            break;
        case 'p':
            if (!strcmp(optarg, "auto")) p.progress_mode = 0;
            else if (!strcmp(optarg, "bar")) p.progress_mode = 1;
            else if (!strcmp(optarg, "plain")) p.progress_mode = 2;
            else if (!strcmp(optarg, "none")) p.progress_mode = 3;
            else {
                free(sets);
                return sn_cli_usage_error("simulate", "--progress '%s': expected auto, bar, "
                                          "plain or none", optarg);
            }
            break;
        case 'h':
            usage(stdout);
            free(sets);
            return SN_EXIT_OK;
        default:
            free(sets);
            if (optopt)
                return sn_cli_usage_error("simulate", "option '-%c' is unknown or lacks its "
                                          "value", optopt);
            return sn_cli_bad_option("simulate", argv[optind - 1], opts);
        }
    }
    if (optind < argc) {
        free(sets);
        return sn_cli_usage_error("simulate", "unexpected argument '%s'", argv[optind]);
    }
    if (!recipe_path) {
        free(sets);
        return sn_cli_usage_error("simulate", "--recipe is required");
    }
    struct sn_err err = {0};
    cJSON *recipe = NULL;
    char out_buf[1024];
    if (sn_recipe_load(recipe_path, sets, n_sets, &recipe, &err)) {
        free(sets);
        return sn_cli_fail("simulate", &err);
    }
    free(sets);
    if (!out) {
        const cJSON *od = cJSON_GetObjectItemCaseSensitive(recipe, "out_dir");
        if (!cJSON_IsString(od)) {
            cJSON_Delete(recipe);
            return sn_cli_usage_error("simulate", "-o DIR is required (the recipe has no "
                                      "out_dir)");
        }
        struct sn_err perr = {0};
        if (sn_path_fmt(out_buf, sizeof out_buf, &perr, "%s/trajectories", od->valuestring)) {
            cJSON_Delete(recipe);
            return sn_cli_fail("simulate", &perr);
        }
        out = out_buf;
    }
    p.out_dir = out;
    p.cancel = &cancel_flag;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sn_simulate_report rep;
    static struct dets dets; /* large; one simulate per process */
    p.scorer_open = det_open;
    p.scorer_user = &dets;
    int rc = sn_simulate_run(recipe, &p, &rep, &err);
    dets_free(&dets);
    cJSON_Delete(recipe);
    if (rc) {
        status = rc == SN_E_CANCELLED ? sn_cli_interrupted("simulate", &err, stop_signal)
                                      : sn_cli_fail("simulate", &err);
    } else {
        fprintf(stderr, "simulate: %llu debates planned for shard %d/%d, %llu written now, %llu "
                "already present -> %s\n", (unsigned long long)rep.planned, p.shard_index,
                p.shard_count, (unsigned long long)rep.done, (unsigned long long)rep.skipped,
                rep.traj_path);
    }
    return status;
}
