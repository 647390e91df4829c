/* cli/cmd_score.c: `sentinel score` (docs/design.md §1; usage in README.md (CLI reference)).
** Training-side scoring: the Qwen2 reward model of train/ (libtorch, f32 on the CPU) loaded
** from a HF model directory, optionally with a PEFT adapter checkpoint, reads one sequence per
** stdin line (token ids with --ids, else text tokenized with MODEL_DIR/tokenizer.json) and
** prints one reward per line ("%.6f"), in input order, computed in batches. Errors name the
** input line (stdin:LINE). With --jsonl or --context/--response it scores (context, response)
** pairs rendered with the prompt template, as the tuple builder and the runtime detector do
** (tokenizer/template.h), read by the same code as `score --detector`. Built without libtorch
** it exits 3 (not in this build). */
#include "cli/cli.h"
#include "train/recipe.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#ifdef SENTINEL_WITH_TORCH
#include "tokenizer/template.h"
#include "tokenizer/tokenizer.h"
#include "train/train.h"

#include <errno.h>
#endif

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sentinel score {--model MODEL_DIR [--adapter CKPT_DIR] |\n"
        "                       --checkpoint DIR [--last]}\n"
        "                      [--ids | --jsonl FILE |\n"
        "                      --context FILE --response FILE] [--batch N] [--threads N]\n"
        "                      [--max-tokens N]\n"
        "\n"
        "Scores sequences with the training-side reward model R(r + c) (train/, libtorch, f32 on\n"
        "the CPU): reads one sequence per line on stdin and prints one reward per line (%%.6f),\n"
        "in input order. The reward is the score head applied to the final-norm hidden state of\n"
        "the last token (no padding is involved: each line is scored as it is).\n"
        "\n"
        "options:\n"
        "  --model DIR        Hugging Face Qwen2 model directory: config.json and\n"
        "                     model.safetensors (or shards + model.safetensors.index.json)\n"
        "  --checkpoint DIR   instead of --model/--adapter: a training output directory (its\n"
        "                     best checkpoint; --last: its last) or one checkpoint, adapter or\n"
        "                     full model as its files say (docs/run.md \"Which checkpoint\")\n"
        "  --adapter DIR      PEFT adapter checkpoint (adapter_config.json +\n"
        "                     adapter_model.safetensors) written by `sentinel train`: its LoRA is\n"
        "                     applied and its head (base_model.model.score.weight) used\n"
        "  --ids              input lines are space-separated token ids (e.g. from\n"
        "                     `sentinel tokenize`); without it, lines are UTF-8 text encoded with\n"
        "                     MODEL_DIR/tokenizer.json (no special tokens added)\n"
        "  --jsonl FILE       JSON Lines ('-' = stdin) of {\"context\": C, \"response\": R} (or\n"
        "                     \"responses\": [R1, ...]): each pair rendered with the prompt\n"
        "                     template (sentinel-chatml/1, as in training) and scored\n"
        "  --context FILE --response FILE\n"
        "                     one (context, response) pair from two files\n"
        "  --max-tokens N     longest rendered pair; longer ones lose history, then the front\n"
        "                     of the response, as in `sentinel build` (default: the model's\n"
        "                     max_position_embeddings; give the shards' max_len to score\n"
        "                     exactly as training did)\n"
        "  --batch N          sequences per forward pass (default 8)\n"
        "  --threads N        libtorch intra-op threads (default: libtorch's choice)\n"
        "  -h, --help         this help\n"
        "\n"
        "The head comes from --adapter when given, else from MODEL_DIR's score.weight (HF\n"
        "sequence-classification checkpoints carry one); with neither it is an error.\n"
        "Errors name the input line: a token that is not an integer, an id outside the\n"
        "vocabulary, an empty line, a sequence longer than max_position_embeddings.\n"
        "Exit status: 0 ok, 1 failure, 2 usage error, 3 built without libtorch.\n"
        "With --detector D.gguf it scores with the runtime detector instead (no libtorch):\n"
        "see 'sentinel score --detector x --help'.\n");
}

#ifdef SENTINEL_WITH_TORCH

struct pending {
    int32_t **seq;   /* per line */
    size_t   *len;
    uint64_t *lineno;
    size_t    n;
};

static void pending_clear(struct pending *p)
{
    for (size_t i = 0; i < p->n; i++)
        sn_free(p->seq[i]);
    p->n = 0;
}

/* Right-pads the pending sequences into one batch, scores them, prints the rewards. */
static int flush_batch(struct sn_model *m, struct pending *p, struct sn_err *err)
{
    if (p->n == 0)
        return SN_OK;
    size_t T = 0;
    for (size_t i = 0; i < p->n; i++)
        T = p->len[i] > T ? p->len[i] : T;
    int32_t *ids = sn_calloc(p->n * T, sizeof *ids), *mask = sn_calloc(p->n * T, sizeof *mask);
    float *r = sn_calloc(p->n, sizeof *r);
    int rc = SN_OK;
    if (!ids || !mask || !r) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    } else {
        for (size_t i = 0; i < p->n; i++)
            for (size_t t = 0; t < p->len[i]; t++) {
                ids[i * T + t] = p->seq[i][t];
                mask[i * T + t] = 1;
            }
        struct sn_model_batch b = {ids, mask, (int64_t)p->n, (int64_t)T};
        rc = sn_model_forward_host(m, &b, r, NULL, err);
        if (rc)
            sn_err_wrap(err, "stdin:%llu-%llu", (unsigned long long)p->lineno[0],
                        (unsigned long long)p->lineno[p->n - 1]);
        for (size_t i = 0; !rc && i < p->n; i++)
            printf("%.6f\n", r[i]);
        fflush(stdout);
    }
    sn_free(ids);
    sn_free(mask);
    sn_free(r);
    pending_clear(p);
    return rc;
}

/* "12 7 9" -> ids; errors name the line and the token. */
static int parse_ids(const char *line, uint64_t lineno, int64_t vocab, struct sn_ids *out,
                     struct sn_err *err)
{
    const char *s = line;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r')
            s++;
        if (!*s)
            break;
        char *end = NULL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || (*end && *end != ' ' && *end != '\t' && *end != '\r') || errno) {
            size_t n = strcspn(s, " \t\r");
            return sn_err_set(err, SN_E_FORMAT, "stdin:%llu: '%.*s' is not a token id (expected "
                              "space-separated integers)", (unsigned long long)lineno,
                              (int)(n > 40 ? 40 : n), s);
        }
        if (v < 0 || v >= vocab)
            return sn_err_set(err, SN_E_FORMAT, "stdin:%llu: token id %lld outside the "
                              "vocabulary [0, %lld)", (unsigned long long)lineno, v,
                              (long long)vocab);
        int rc = sn_ids_push(out, (int32_t)v, err);
        if (rc)
            return rc;
        s = end;
    }
    return SN_OK;
}

/* (context, response) pairs through the template, one forward each (cli/cli.h). */
struct model_pairs {
    struct sn_model           *m;
    const struct sn_tokenizer *tok;
    size_t                     max_len;
    int64_t                    vocab;
};

static int model_pair(void *user, const char *context, const char *response, float *out,
                      struct sn_err *err)
{
    struct model_pairs *mp = user;
    struct sn_prompt pr = {0};
    pr.task = context;
    struct sn_ids ids = {0};
    int rc = sn_template_encode(mp->tok, &pr, response, mp->max_len, &ids, NULL, NULL, err);
    for (size_t i = 0; !rc && i < ids.n; i++)
        if (ids.v[i] >= mp->vocab)
            rc = sn_err_set(err, SN_E_FORMAT, "the tokenizer produced id %d but the model's "
                            "vocabulary has %lld", ids.v[i], (long long)mp->vocab);
    if (!rc) {
        struct sn_model_batch b = {ids.v, NULL, 1, (int64_t)ids.n};
        rc = sn_model_forward_host(mp->m, &b, out, NULL, err);
    }
    sn_ids_free(&ids);
    return rc;
}

static int model_shared(void *user, const char *context, const char *const *responses,
                        size_t n, float *out, struct sn_err *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = model_pair(user, context, responses[i], &out[i], err);
        if (rc)
            return sn_err_wrap(err, "responses[%zu]", i);
    }
    return SN_OK;
}

static int run(const char *model_dir, const char *adapter_dir, bool ids_mode, int batch,
               const char *jsonl, const char *cfile, const char *rfile, long max_tokens,
               struct sn_err *err)
{
    struct sn_model *m = NULL;
    struct sn_tokenizer *tok = NULL;
    struct sn_model_params mp = sn_model_default_params();
    struct pending p = {0};
    char *line = NULL;
    size_t cap = 0;
    uint64_t lineno = 0;
    int rc = sn_model_open_hf(model_dir, &mp, &m, err);
    if (!rc && adapter_dir)
        rc = sn_model_adapter_load(m, adapter_dir, err);
    if (!rc && !sn_model_has_head(m))
        rc = sn_err_set(err, SN_E_FORMAT, "no reward head: %s has no score.weight%s", model_dir,
                        adapter_dir ? " and the adapter has no base_model.model.score.weight"
                                    : "; give --adapter CKPT_DIR with a trained head");
    if (!rc && !ids_mode) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/tokenizer.json", model_dir) >= (int)sizeof path)
            rc = sn_err_set(err, SN_E_ARG, "%s: path too long", model_dir);
        else if (!sn_path_exists(path))
            rc = sn_err_set(err, SN_E_IO, "%s: not found; text mode needs the model's "
                            "tokenizer.json (or use --ids)", path);
        else
            rc = sn_tokenizer_open(path, &tok, err);
    }
    p.seq = sn_calloc((size_t)batch, sizeof *p.seq);
    p.len = sn_calloc((size_t)batch, sizeof *p.len);
    p.lineno = sn_calloc((size_t)batch, sizeof *p.lineno);
    if (!rc && (!p.seq || !p.len || !p.lineno))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    int64_t vocab = m ? sn_model_get_config(m)->vocab_size : 0;
    int64_t max_len = m ? sn_model_get_config(m)->max_position_embeddings : 0;
    if (!rc && (jsonl || cfile)) {
        if (max_tokens > max_len)
            rc = sn_err_set(err, SN_E_ARG, "--max-tokens %ld exceeds the model's "
                            "max_position_embeddings %lld", max_tokens, (long long)max_len);
        struct model_pairs mp = {m, tok, (size_t)(max_tokens > 0 ? max_tokens : max_len), vocab};
        struct sn_cli_pair_scorer sc = {model_pair, model_shared, &mp, false};
        if (!rc)
            rc = cfile ? sn_cli_score_pair_files(cfile, rfile, &sc, err)
                       : sn_cli_score_jsonl(jsonl, &sc, err);
        fflush(stdout);
    }
    while (!rc && !jsonl && !cfile) {
        errno = 0;
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) {
            if (ferror(stdin))
                rc = sn_err_set(err, SN_E_IO, "stdin: %s", strerror(errno));
            break;
        }
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        struct sn_ids ids = {0};
        if (ids_mode) {
            rc = parse_ids(line, lineno, vocab, &ids, err);
        } else {
            rc = sn_tokenizer_encode(tok, line, (size_t)n, &ids, err);
            if (rc)
                sn_err_wrap(err, "stdin:%llu", (unsigned long long)lineno);
            for (size_t i = 0; !rc && i < ids.n; i++)
                if (ids.v[i] >= vocab)
                    rc = sn_err_set(err, SN_E_FORMAT, "stdin:%llu: the tokenizer produced id %d "
                                    "but the model's vocabulary has %lld",
                                    (unsigned long long)lineno, ids.v[i], (long long)vocab);
        }
        if (!rc && ids.n == 0)
            rc = sn_err_set(err, SN_E_FORMAT, "stdin:%llu: empty sequence (nothing to score)",
                            (unsigned long long)lineno);
        if (!rc && (int64_t)ids.n > max_len)
            rc = sn_err_set(err, SN_E_FORMAT, "stdin:%llu: %zu tokens exceed "
                            "max_position_embeddings %lld", (unsigned long long)lineno, ids.n,
                            (long long)max_len);
        if (rc) {
            sn_ids_free(&ids);
            break;
        }
        p.seq[p.n] = ids.v; /* ownership moves to the batch */
        p.len[p.n] = ids.n;
        p.lineno[p.n] = lineno;
        p.n++;
        if ((int)p.n == batch)
            rc = flush_batch(m, &p, err);
    }
    if (!rc && !jsonl && !cfile)
        rc = flush_batch(m, &p, err);
    if (p.seq)
        pending_clear(&p);
    sn_free(p.seq);
    sn_free(p.len);
    sn_free(p.lineno);
    free(line);
    sn_tokenizer_free(tok);
    sn_model_free(m);
    return rc;
}
#endif /* SENTINEL_WITH_TORCH */

int sn_cmd_score(int argc, char **argv)
{
    if (sn_cli_has_option(argc, argv, "--detector"))
        return sn_cmd_score_detector(argc, argv);  /* the same code as in `sentinel` */
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},   {"adapter", required_argument, NULL, 'a'},
        {"ids", no_argument, NULL, 'i'},           {"batch", required_argument, NULL, 'b'},
        {"threads", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'},
        {"jsonl", required_argument, NULL, 'j'},   {"context", required_argument, NULL, 'c'},
        {"response", required_argument, NULL, 'r'},
        {"max-tokens", required_argument, NULL, 'x'},
        {"checkpoint", required_argument, NULL, 'K'}, {"last", no_argument, NULL, 'Z'},
        {NULL, 0, NULL, 0},
    };
    const char *model = NULL, *adapter = NULL, *jsonl = NULL, *cfile = NULL, *rfile = NULL;
    const char *ckpt_path = NULL;
    bool ids = false, last = false;
    static struct sn_ckpt_choice ck; /* --checkpoint: model and adapter point here */
    long batch = 8, threads = 0, max_tokens = 0;
    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "h", opts, NULL);
        if (c == -1)
            break;
        char *end = NULL;
        switch (c) {
        case 'm': model = optarg; break;
        case 'a': adapter = optarg; break;
        case 'K': ckpt_path = optarg; break;
        case 'Z': last = true; break;
        case 'i': ids = true; break;
        case 'b':
            batch = strtol(optarg, &end, 10);
            if (!*optarg || *end || batch < 1 || batch > 65536)
                return sn_cli_usage_error("score", "--batch must be an integer in 1..65536");
            break;
        case 't':
            threads = strtol(optarg, &end, 10);
            if (!*optarg || *end || threads < 1 || threads > 4096)
                return sn_cli_usage_error("score", "--threads must be a positive integer");
            break;
        case 'j': jsonl = optarg; break;
        case 'c': cfile = optarg; break;
        case 'r': rfile = optarg; break;
        case 'x':
            max_tokens = strtol(optarg, &end, 10);
            if (!*optarg || *end || max_tokens < 1 || max_tokens > (1L << 24))
                return sn_cli_usage_error("score", "--max-tokens must be a positive integer");
            break;
        case 'h': usage(stdout); return SN_EXIT_OK;
        default:
            return sn_cli_bad_option("score", argv[optind - 1], opts);
        }
    }
    if (optind < argc)
        return sn_cli_usage_error("score", "unexpected argument '%s'", argv[optind]);
    if (ckpt_path && (model || adapter))
        return sn_cli_usage_error("score", "--checkpoint decides --model and --adapter from its "
                                  "files: give one or the other");
    if (last && !ckpt_path)
        return sn_cli_usage_error("score", "--last needs --checkpoint RUN_DIR");
    if (ckpt_path) { /* the one place that choice is made: train/recipe.h */
        struct sn_err cerr = {0};
        if (sn_train_checkpoint_pick(ckpt_path, last ? SN_CKPT_LAST : SN_CKPT_BEST, &ck, &cerr))
            return sn_cli_fail("score", &cerr);
        model = ck.base;
        adapter = ck.kind == SN_CKPT_ADAPTER ? ck.dir : NULL;
    }
    if (!model)
        return sn_cli_usage_error("score", "--model MODEL_DIR (or --checkpoint) is required");
    if (!cfile != !rfile)
        return sn_cli_usage_error("score", "--context and --response go together");
    if ((ids + !!jsonl + !!cfile) > 1)
        return sn_cli_usage_error("score", "choose one input: --ids, --jsonl or "
                                  "--context/--response");
#ifdef SENTINEL_WITH_TORCH
    if (threads > 0)
        sn_aten_set_num_threads((int)threads);
    struct sn_err err = {0};
    int rc = run(model, adapter, ids, (int)batch, jsonl, cfile, rfile, max_tokens, &err);
    return rc ? sn_cli_fail("score", &err) : SN_EXIT_OK;
#else
    (void)adapter;
    (void)ids;
    (void)jsonl;
    (void)max_tokens;
    (void)batch;
    (void)threads;
    return sn_cli_unavailable("score", "this build has no libtorch (configured with "
                                       "-DSENTINEL_WITH_TORCH=OFF); the training-side model is "
                                       "not available");
#endif
}
