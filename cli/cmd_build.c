/* cli/cmd_build.c: `sentinel build` (docs/design.md §1; usage in README.md (CLI reference)).
** Trajectories -> (context, chosen, rejected, reference) tuples -> tokenized HDF5 shards +
** manifest.json (tuples/tuples.h, shard/shard.h). Options come from the recipe's `build` section,
** then --set overrides, then the command-line flags. Resumable: killed and re-run with the same
** settings it continues and ends with the same bytes as an uninterrupted build.
**
** Test hook (documented in README.md (CLI reference)): SENTINEL_TEST_KILL_AFTER=K makes the
** process raise SIGKILL right after the K-th tuple it tokenized and handed to the shard set,
** so tests can interrupt a build at a deterministic point mid-shard. */
#include "cli/cli.h"
#include "cli/recipe_check.h"
#include "sim/sim.h" /* sn_sim_endpoint_open: "sim" endpoints, refused by the builder */
#include "tuples/recipe.h"
#include "tuples/tuples.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t cancel_flag; /* the signal that asked to stop, 0 = none */

static void on_signal(int sig)
{
    cancel_flag = sig;
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel build [--recipe RECIPE] -i TRAJ... -o DIR --tokenizer FILE [options]\n"
"\n"
"Turns debate trajectories (*.jsonl or *.jsonl.gz, files or directories searched\n"
"recursively) into (context, chosen, rejected, reference) tuples, renders each response with\n"
"its context through the prompt template sentinel-chatml/1, tokenizes and truncates it to\n"
"--max-len tokens, and writes HDF5 shards of --shard-size tuples per split (train-00000.h5,\n"
"validation-00000.h5, test-00000.h5, ...) plus DIR/manifest.json. Layout and selection rules:\n"
"docs/formats.md#shard.\n"
"\n"
"Preference data (TRL's RewardTrainer datasets) goes through the same template, truncation\n"
"and shards: a JSON Lines file (*.jsonl, *.jsonl.gz) whose first row has the columns chosen\n"
"and rejected is read as rows of {\"prompt\", \"chosen\", \"rejected\"} (standard), or\n"
"{\"chosen\", \"rejected\"} holding the whole sequence (implicit prompt: the shared start is\n"
"the prompt), as strings or lists of {\"role\", \"content\"} messages (conversational: the\n"
"last assistant turn is the response, the earlier turns the context), with an optional\n"
"\"reference\" string for the alignment loss (default: the chosen text). A malformed row\n"
"fails the build naming file:line before anything is written; rows whose prompt leaves no\n"
"room in --max-len are counted (task_too_long), cut ones too (truncated). Mapping and\n"
"choices: docs/formats.md#preference-data.\n"
"\n"
"options:\n"
"  -r, --recipe FILE      recipe (JSON); its `build` section supplies defaults\n"
"  -i, --input PATH       trajectory file or directory (repeatable; default:\n"
"                         build.inputs, else <out_dir>/trajectories)\n"
"  -o, --out DIR          output directory (default: build.out, else <out_dir>/shards)\n"
"      --tokenizer FILE   tokenizer.json (required here or as build.tokenizer)\n"
"      --max-len N        tokens per sequence, template included (default 1024)\n"
"      --shard-size N     tuples per shard (default 4096)\n"
"      --max-pairs M      at most M (chosen, rejected) pairs per round, hardest negatives\n"
"                         first, seeded (default 0 = all pairs)\n"
"      --seed S           seed of the --max-pairs sample (default 0)\n"
"      --skip-bad         count and skip malformed trajectory lines instead of failing\n"
"      --format F         auto (default: per file, preference data when its first row has\n"
"                         chosen and rejected), trajectory or preference\n"
"      --set KEY=VALUE    override a recipe key, e.g. --set build.max_pairs=4\n"
"      --progress MODE    auto (default: a bar on a terminal, plain lines otherwise), bar,\n"
"                         plain or none\n"
"  -h, --help             this help\n"
"\n");
    fprintf(f,
"Recipe keys (section `build`): inputs (path or list), out, tokenizer, max_len, shard_size,\n"
"max_pairs, seed, format (auto), split_by (item), validation_fraction (0.1),\n"
"test_fraction (0.1),\n"
"split_seed (0), validation and test (lists of split_by values),\n"
"history_sentences (2), history_chars (300), dedup (true), skip_bad (false),\n"
"deflate_level (1), summary, summary_endpoint, summary_sentences (3), reference,\n"
"reference_endpoint:\n"
"  summary \"extractive\" (default): each earlier message as \"Round t, agent k (answer X):\n"
"    <first sentences>\"; \"llm\": one summary of the earlier rounds per round, written by\n"
"    build.summary_endpoint (prompt sentinel-summary/1, at most summary_sentences\n"
"    sentences, naming each agent's answer).\n"
"  reference \"dataset\" (default): the gold explanation, else a sentence from the gold\n"
"    answer; \"model\": the gold explanation, else one written by build.reference_endpoint\n"
"    (prompt sentinel-reference/1, given the gold answer); a model reference in which the\n"
"    gold answer is not found is replaced by the templated one and counted as\n"
"    reference_fallback.\n"
"  split_by \"item\" (default): every tuple of a question (dataset + item id), over all\n"
"    its debates and replicates, goes to one split, drawn by a hash of split_seed and the\n"
"    item with the fractions; \"dataset\", \"model\" (the honest agents'), \"scenario\" or\n"
"    \"experiment\" hold out whole values of that field instead. validation / test: lists\n"
"    of values held out by name (every other value trains; no fractions then), e.g.\n"
"    {\"split_by\": \"dataset\", \"test\": [\"medmcqa\"]}. Trajectories labelled\n"
"    labels.split = \"ood\" go to the ood split only, never to train or validation.\n"
"    Preference rows: item = the prompt (rows sharing one share a split), dataset = the\n"
"    file's name without .jsonl / .jsonl.gz; other split_by values are refused.\n"
"  An endpoint is an object in the format of simulate.endpoints (docs/openai.md), or the\n"
"  name of an entry there. Requests use temperature 0 and a seed derived from the\n"
"  trajectory id and round, so with the endpoint's cache_dir a re-run makes no request and\n"
"  gives the same shards. A failed request (after the endpoint's retries) fails the build,\n"
"  naming the trajectory and round. The sim backend cannot write summaries or references.\n"
"\n"
"Re-running with the same settings continues an interrupted build (the shards already in\n"
"the manifest are kept) and ends with the same bytes as an uninterrupted one; a directory\n"
"holding a build with other settings is refused. Ctrl-C stops cleanly.\n"
"Exit status: 0 ok, 1 failure (message names file:line and field for bad input), 2 usage\n"
"or recipe error, 3 a requested feature is not in this build, 130/143 stopped by\n"
"SIGINT/SIGTERM with the complete shards kept (re-run to continue).\n");
}

struct cli_progress {
    struct sn_progress *bar;
    uint64_t kill_after;
    uint64_t last;
};

static int on_progress(void *user, const struct sn_build_progress *p)
{
    struct cli_progress *c = user;
    if (c->kill_after && p->tokenized >= c->kill_after)
        raise(SIGKILL); /* test hook: see the file comment */
    if (cancel_flag)
        return 1;
    if (c->bar && p->tuples - c->last >= 64) {
        char extra[160];
        c->last = p->tuples;
        snprintf(extra, sizeof extra, "traj %" PRIu64 "  dup %" PRIu64 "  tokenized %" PRIu64,
                 p->trajectories, p->counts[SN_TC_DUPLICATE], p->tokenized);
        sn_progress_update(c->bar, p->tuples, extra);
    }
    return 0;
}

static int parse_size(const char *opt, const char *s, size_t *out)
{
    uint64_t v;
    if (!sn_parse_u64(s, strlen(s), 0, SIZE_MAX, &v))
        return sn_cli_usage_error("build", "%s '%s': expected a non-negative integer", opt, s);
    *out = (size_t)v;
    return 0;
}

int sn_cmd_build(int argc, char **argv)
{
    static const struct option opts[] = {
        {"recipe", required_argument, NULL, 'r'}, {"input", required_argument, NULL, 'i'},
        {"out", required_argument, NULL, 'o'}, {"tokenizer", required_argument, NULL, 'T'},
        {"max-len", required_argument, NULL, 'L'}, {"shard-size", required_argument, NULL, 'S'},
        {"max-pairs", required_argument, NULL, 'M'}, {"seed", required_argument, NULL, 'E'},
        {"skip-bad", no_argument, NULL, 'B'}, {"set", required_argument, NULL, 's'},
        {"progress", required_argument, NULL, 'p'}, {"help", no_argument, NULL, 'h'},
        {"format", required_argument, NULL, 'F'},
        {NULL, 0, NULL, 0}};
    const char *recipe_path = NULL, *out = NULL, *tokenizer = NULL;
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    size_t n_inputs = 0, n_sets = 0, max_len = 0, shard_size = 0, max_pairs = 0, seed = 0;
    bool has_max_len = false, has_shard = false, has_pairs = false, has_seed = false;
    bool skip_bad = false;
    int progress_mode = 0, c, status = SN_EXIT_OK;
    const char *format = NULL;
    if (!inputs || !sets) {
        free(inputs);
        free(sets);
        fprintf(stderr, "sentinel build: out of memory\n");
        return SN_EXIT_FAIL;
    }
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":r:i:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': recipe_path = optarg; break;
        case 'i': inputs[n_inputs++] = optarg; break;
        case 'o': out = optarg; break;
        case 'T': tokenizer = optarg; break;
        case 's': sets[n_sets++] = optarg; break;
        case 'B': skip_bad = true; break;
        case 'F': format = optarg; break;
        case 'L': status = parse_size("--max-len", optarg, &max_len); has_max_len = true; break;
        case 'S': status = parse_size("--shard-size", optarg, &shard_size); has_shard = true;
                  break;
        case 'M': status = parse_size("--max-pairs", optarg, &max_pairs); has_pairs = true;
                  break;
        case 'E': status = parse_size("--seed", optarg, &seed); has_seed = true; break;
        case 'p':
            if (!strcmp(optarg, "auto")) progress_mode = 0;
            else if (!strcmp(optarg, "bar")) progress_mode = 1;
            else if (!strcmp(optarg, "plain")) progress_mode = 2;
            else if (!strcmp(optarg, "none")) progress_mode = 3;
            else status = sn_cli_usage_error("build", "--progress '%s': expected auto, bar, "
                                             "plain or none", optarg);
            break;
        case 'h':
            usage(stdout);
            free(inputs);
            free(sets);
            return SN_EXIT_OK;
        case ':':
            status = sn_cli_usage_error("build", "option '%s' needs a value", argv[optind - 1]);
            break;
        default:
            status = sn_cli_bad_option("build", argv[optind - 1], opts);
            break;
        }
        if (status)
            break;
    }
    if (!status && optind < argc)
        status = sn_cli_usage_error("build", "unexpected argument '%s' (inputs go after -i)",
                                    argv[optind]);
    struct sn_err err = {0};
    cJSON *recipe = NULL;
    const cJSON *rin = NULL, *sum_ep = NULL, *ref_ep = NULL;
    struct sn_build_recipe br;
    memset(&br, 0, sizeof br);
    struct sn_tuples_llm llm;
    memset(&llm, 0, sizeof llm);
    struct sn_build_params p = sn_build_default_params();
    char out_buf[1024], in_buf[1024];
    const char **in_list = NULL;
    if (!status && recipe_path && sn_recipe_load(recipe_path, sets, n_sets, &recipe, &err))
        status = sn_cli_fail("build", &err);
    if (!status && recipe) /* a --set wins over the file, whichever name of a setting each uses */
        sn_build_recipe_sets_win(recipe, sets, n_sets);
    if (!status && !recipe_path && n_sets)
        status = sn_cli_usage_error("build", "--set needs --recipe");
    if (!status && recipe && sn_build_params_from_recipe(recipe, &p, &br, &err)) {
        status = err.code == SN_E_UNSUPPORTED ? sn_cli_unavailable("build", err.msg)
                                              : sn_cli_recipe_fail("build", recipe_path, &err);
    }
    if (!status && recipe) { /* flags (parsed above) win over the recipe's keys */
        if (!tokenizer)
            tokenizer = br.tokenizer;
        if (!out)
            out = br.out;
        rin = br.inputs;
        sum_ep = br.summary_endpoint;
        ref_ep = br.reference_endpoint;
        if (br.summary_sentences)
            llm.summary_sentences = br.summary_sentences;
    }
    if (!status && sum_ep && sn_sim_endpoint_open(sum_ep, &llm.summary, &err)) {
        sn_err_wrap(&err, "build.summary_endpoint");
        status = sn_cli_fail("build", &err);
    }
    if (!status && ref_ep && sn_sim_endpoint_open(ref_ep, &llm.reference, &err)) {
        sn_err_wrap(&err, "build.reference_endpoint");
        status = sn_cli_fail("build", &err);
    }
    if (!status && (llm.summary || llm.reference) && sn_tuples_use_llm(&p.tuples, &llm, &err))
        status = sn_cli_fail("build", &err);
    const cJSON *od = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "out_dir") : NULL;
    if (!status && !out) {
        if (!cJSON_IsString(od))
            status = sn_cli_usage_error("build", "-o DIR is required (no build.out or out_dir "
                                        "in a recipe)");
        else {
            if (sn_path_fmt(out_buf, sizeof out_buf, &err, "%s/shards", od->valuestring))
                status = sn_cli_fail("build", &err);
            out = out_buf;
        }
    }
    if (!status && !tokenizer)
        status = sn_cli_usage_error("build", "--tokenizer FILE is required (or build.tokenizer)");
    if (!status && !n_inputs) {
        if (cJSON_IsString(rin)) {
            inputs[n_inputs++] = rin->valuestring;
        } else if (cJSON_IsArray(rin)) {
            const cJSON *e;
            in_list = calloc((size_t)cJSON_GetArraySize(rin) + 1, sizeof *in_list);
            if (in_list)
                cJSON_ArrayForEach(e, rin) in_list[n_inputs++] = e->valuestring;
        } else if (cJSON_IsString(od)) {
            if (sn_path_fmt(in_buf, sizeof in_buf, &err, "%s/trajectories", od->valuestring))
                status = sn_cli_fail("build", &err);
            inputs[n_inputs++] = in_buf;
        }
        if (!n_inputs)
            status = sn_cli_usage_error("build", "no input: give -i TRAJ (or build.inputs)");
    }
    if (status)
        goto done; /* the one cleanup path */
    if (has_max_len)
        p.max_len = max_len;
    if (has_shard)
        p.shard_size = shard_size;
    if (has_pairs)
        p.tuples.max_pairs = max_pairs;
    if (has_seed)
        p.tuples.seed = seed;
    if (skip_bad)
        p.skip_bad = true;
    if (format && sn_input_format_parse(format, &p.format, &err)) {
        status = sn_cli_usage_error("build", "--format %s", err.msg);
        goto done;
    }
    if (!p.shard_size) {
        status = sn_cli_usage_error("build", "--shard-size must be at least 1");
        goto done;
    }
    p.inputs = in_list ? in_list : inputs;
    p.n_inputs = n_inputs;
    p.out_dir = out;
    p.tokenizer_path = tokenizer;

    struct cli_progress cp = {0};
    const char *ka = getenv("SENTINEL_TEST_KILL_AFTER");
    if (ka && *ka)
        cp.kill_after = strtoull(ka, NULL, 10);
    struct sn_progress_params pp = sn_progress_default_params();
    pp.label = "build";
    pp.unit = "tuples";
    pp.force_mode = progress_mode;
    if (sn_progress_create(&pp, &cp.bar, &err))
        cp.bar = NULL;
    p.progress = on_progress;
    p.user = &cp;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct sn_build_report rep;
    err = (struct sn_err){0};
    int rc = sn_tuples_build(&p, &rep, &err);
    if (cp.bar) {
        if (!rc)
            sn_progress_update(cp.bar, (uint64_t)(rep.per_split[SN_SPLIT_TRAIN] +
                               rep.per_split[SN_SPLIT_VALIDATION] + rep.per_split[SN_SPLIT_TEST] +
                               rep.per_split[SN_SPLIT_OOD]),
                               NULL);
        sn_progress_finish(cp.bar, rc ? "stopped" : "done");
    }
    if (rc == SN_E_CANCELLED) {
        fprintf(stderr, "sentinel build: interrupted; the shards listed in %s/manifest.json are "
                        "complete; re-run the same command to continue\n", out);
        status = SN_EXIT_SIGNAL_BASE + (cancel_flag ? cancel_flag : SIGINT);
    } else if (rc) {
        status = sn_cli_fail("build", &err);
    } else {
        printf("build: %s%zu input file(s) -> %s: %" PRId64 " train, %" PRId64 " validation, "
               "%" PRId64 " test, %" PRId64 " ood tuples in %zu shard(s)\n",
               rep.was_complete ? "(already complete) " : rep.resumed ? "(resumed) " : "",
               rep.n_inputs, out, rep.per_split[SN_SPLIT_TRAIN],
               rep.per_split[SN_SPLIT_VALIDATION], rep.per_split[SN_SPLIT_TEST],
               rep.per_split[SN_SPLIT_OOD], rep.n_shards);
        if (rep.counts[SN_TC_PREF_ROWS])
            printf("build: read %" PRIu64 " preference rows: %" PRIu64 " with a sequence "
                   "truncated to max_len %zu, %" PRIu64 " dropped (prompt too long: "
                   "task_too_long), %" PRIu64 " duplicate, %" PRIu64 " malformed skipped\n",
                   rep.counts[SN_TC_PREF_ROWS], rep.counts[SN_TC_TRUNCATED], p.max_len,
                   rep.counts[SN_TC_TASK_TOO_LONG], rep.counts[SN_TC_DUPLICATE],
                   rep.counts[SN_TC_BAD_LINES]);
        if (rep.counts[SN_TC_TRAJECTORIES] || !rep.counts[SN_TC_PREF_ROWS]) {
            printf("build: read %" PRIu64 " trajectories, %" PRIu64 " rounds; skipped:",
                   rep.counts[SN_TC_TRAJECTORIES], rep.counts[SN_TC_ROUNDS]);
            for (int k = SN_TC_BAD_LINES; k < SN_TC_PREF_ROWS; k++)
                if (k != SN_TC_REFERENCE_FALLBACK)
                    printf(" %s %" PRIu64, sn_tuples_count_name((enum sn_tuples_count)k),
                           rep.counts[k]);
            if (p.tuples.reference)
                printf("; templated instead of the model's: reference_fallback %" PRIu64,
                       rep.counts[SN_TC_REFERENCE_FALLBACK]);
            printf("\n");
        }
    }
done:
    sn_llm_backend_close(llm.summary);
    sn_llm_backend_close(llm.reference);
    cJSON_Delete(recipe);
    sn_build_recipe_free(&p);
    free(inputs);
    free(sets);
    free(in_list);
    return status;
}
