/* cli/cmd_score_detector.c: `sentinel score --detector D.gguf` (docs/design.md §1): the runtime
** detector (export/export.h, pure C + OpenBLAS) inside `sentinel` itself, no libtorch. It is
** compiled into both executables; `score` without --detector is the training-side model
** (cli/cmd_score.c, in sentinel-torch), which reads (context, response) pairs through the
** same readers here (sn_cli_score_jsonl, sn_cli_score_pair_files). Prints one reward per line
** ("%.6f"; "%.9g" with --exact). */
#include "cli/cli.h"
#include "export/export.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sentinel score --detector D.gguf [--ids | --jsonl FILE |\n"
        "                      --context FILE --response FILE] [--threads N] [--max-tokens N]\n"
        "                      [--exact] [--kernels SPEC] [--verbose]\n"
        "\n"
        "Scores with the runtime detector (a GGUF written by `sentinel export`; pure C +\n"
        "OpenBLAS, no libtorch) and prints one reward per line (%%.6f), in input order.\n"
        "\n"
        "inputs (one of):\n"
        "  (default)            stdin lines of UTF-8 text, each tokenized with the GGUF's\n"
        "                       tokenizer and scored as it is (no template)\n"
        "  --ids                stdin lines of space-separated token ids, scored as they are\n"
        "  --jsonl FILE         JSON Lines ('-' = stdin; each line answered as it arrives, so\n"
        "                       it runs as a coprocess): {\"context\": C, \"response\": R} scores\n"
        "                       R(R + C) with the prompt template stored in the GGUF (as in\n"
        "                       training); {\"context\": C, \"responses\": [R1, ...]} scores each\n"
        "                       response with the context's tokens computed once\n"
        "  --context FILE --response FILE\n"
        "                       one (context, response) pair from two files\n"
        "options:\n"
        "  --threads N          OpenBLAS threads (default: OPENBLAS_NUM_THREADS, else\n"
        "                       OMP_NUM_THREADS, else one per CPU). The same GGUF, input and\n"
        "                       threads give the same bits in every process of one\n"
        "                       environment (docs/export.md \"Reproducibility\")\n"
        "  --exact              print rewards with 9 significant digits (%%.9g), the float\n"
        "                       exactly, to compare runs bit for bit\n"
        "  --max-tokens N       longest sequence (default: the GGUF's sentinel.max_len)\n"
        "  --kernels SPEC       auto, portable, avx2 or avx512, optionally +dot, +tile or\n"
        "                       +int8 (how BF16 and Q8_0 matrices are multiplied) and +blas\n"
        "                       (F32 products by OpenBLAS, not our AVX-512F sgemm); default: the\n"
        "                       environment's SENTINEL_KERNELS, else auto (docs/export.md\n"
        "                       \"Weight formats and kernels\")\n"
        "  --verbose            print the kernels and threads chosen to stderr\n"
        "  -h, --help           this help\n"
        "Errors name the input line. Exit status: 0 ok, 1 failure, 2 usage error.\n");
}

static void print_reward(float r, bool exact)
{
    printf(exact ? "%.9g\n" : "%.6f\n", r);
}

static int parse_ids(const char *s, struct sn_ids *out, uint64_t lineno, struct sn_err *err)
{
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r')
            s++;
        if (!*s)
            return SN_OK;
        char *end = NULL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || (*end && *end != ' ' && *end != '\t' && *end != '\r') || errno ||
            v < 0 || v > INT32_MAX)
            return sn_err_set(err, SN_E_FORMAT, "stdin:%llu: '%.20s' is not a token id",
                              (unsigned long long)lineno, s);
        int rc = sn_ids_push(out, (int32_t)v, err);
        if (rc)
            return rc;
        s = end;
    }
}

static int score_lines(struct sn_detector *d, bool ids_mode, bool exact, struct sn_err *err)
{
    char *line = NULL;
    size_t cap = 0;
    uint64_t lineno = 0;
    struct sn_ids ids = {0};
    int rc = SN_OK;
    while (!rc) {
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
        ids.n = 0;
        rc = ids_mode ? parse_ids(line, &ids, lineno, err)
                      : sn_tokenizer_encode(sn_detector_tokenizer(d), line, (size_t)n, &ids, err);
        float r = 0;
        if (!rc)
            rc = sn_detector_score_ids(d, ids.v, ids.n, &r, NULL, err);
        if (rc) {
            sn_err_wrap(err, "stdin:%llu", (unsigned long long)lineno);
            if (err->code == SN_E_ARG)  /* a bad input line fails the job; not a usage error */
                err->code = SN_E_FORMAT;
        } else {
            print_reward(r, exact);
            fflush(stdout); /* each answer as its line is read: usable as a coprocess */
        }
    }
    free(line);
    sn_ids_free(&ids);
    return rc;
}

int sn_cli_score_jsonl(const char *path, const struct sn_cli_pair_scorer *sc,
                       struct sn_err *err)
{
    struct sn_lines *lr = NULL;
    const char *name = strcmp(path, "-") ? path : "/dev/stdin";
    int rc = sn_lines_open(name, 0, &lr, err);
    const char **resp = NULL;
    float *scores = NULL;
    while (!rc) {
        const char *line;
        size_t len;
        bool complete;
        rc = sn_lines_next(lr, &line, &len, &complete, err);
        if (rc || !line)
            break;
        uint64_t ln = sn_lines_lineno(lr);
        if (len == 0)
            continue;
        cJSON *j = NULL;
        char where[64];
        snprintf(where, sizeof where, "%s:%llu", path, (unsigned long long)ln);
        if ((rc = sn_json_parse(line, len, where, &j, err)))
            break;
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "context");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "response");
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "responses"), *x;
        if (!cJSON_IsString(c) || (!cJSON_IsString(r) && !cJSON_IsArray(rs))) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: expected {\"context\": string, \"response\": "
                            "string} or {\"context\": string, \"responses\": [string, ...]}",
                            where);
        } else if (cJSON_IsString(r)) {
            float s = 0;
            rc = sc->score(sc->user, c->valuestring, r->valuestring, &s, err);
            if (!rc)
                print_reward(s, sc->exact);
        } else {
            size_t n = (size_t)cJSON_GetArraySize(rs), k = 0;
            resp = sn_calloc(n + 1, sizeof *resp);
            scores = sn_calloc(n + 1, sizeof *scores);
            if (!resp || !scores)
                rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            const cJSON *arr = rc ? NULL : rs;
            cJSON_ArrayForEach(x, arr) {
                if (!cJSON_IsString(x)) {
                    rc = sn_err_set(err, SN_E_FORMAT, "%s: responses[%zu] is not a string",
                                    where, k);
                    break;
                }
                resp[k++] = x->valuestring;
            }
            if (!rc)
                rc = sc->score_shared(sc->user, c->valuestring, resp, n, scores, err);
            for (size_t i = 0; !rc && i < n; i++)
                print_reward(scores[i], sc->exact);
            sn_free(resp);
            sn_free(scores);
            resp = NULL;
            scores = NULL;
        }
        if (rc && strncmp(err->msg, where, strlen(where))) /* one location prefix, not two */
            sn_err_wrap(err, "%s", where);
        else
            fflush(stdout); /* each line's answers before the next is read (a coprocess) */
        cJSON_Delete(j);
    }
    sn_lines_close(lr);
    return rc;
}

int sn_cli_score_pair_files(const char *context_file, const char *response_file,
                            const struct sn_cli_pair_scorer *sc, struct sn_err *err)
{
    char *ctx = NULL, *resp = NULL;
    size_t n = 0;
    float s = 0;
    int rc = sn_file_read(context_file, 0, &ctx, &n, err);
    if (!rc)
        rc = sn_file_read(response_file, 0, &resp, &n, err);
    if (!rc)
        rc = sc->score(sc->user, ctx, resp, &s, err);
    if (!rc)
        print_reward(s, sc->exact);
    sn_free(ctx);
    sn_free(resp);
    return rc;
}

static int detector_pair(void *user, const char *context, const char *response, float *out,
                         struct sn_err *err)
{
    return sn_detector_score(user, context, response, out, err);
}

static int detector_shared(void *user, const char *context, const char *const *responses,
                           size_t n, float *out, struct sn_err *err)
{
    return sn_detector_score_shared(user, context, responses, n, out, err);
}

int sn_cmd_score_detector(int argc, char **argv)
{
    static const struct option opts[] = {
        {"detector", required_argument, NULL, 'd'}, {"ids", no_argument, NULL, 'i'},
        {"jsonl", required_argument, NULL, 'j'},     {"context", required_argument, NULL, 'c'},
        {"response", required_argument, NULL, 'r'},  {"threads", required_argument, NULL, 't'},
        {"max-tokens", required_argument, NULL, 'm'}, {"help", no_argument, NULL, 'h'},
        {"exact", no_argument, NULL, 'x'},            {"kernels", required_argument, NULL, 'k'},
        {"verbose", no_argument, NULL, 'v'},          {NULL, 0, NULL, 0},
    };
    const char *det = NULL, *jsonl = NULL, *cfile = NULL, *rfile = NULL;
    bool ids = false, exact = false, verbose = false;
    struct sn_detector_params dp = sn_detector_default_params();
    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "h", opts, NULL);
        if (c == -1)
            break;
        char *end = NULL;
        long v;
        switch (c) {
        case 'd': det = optarg; break;
        case 'i': ids = true; break;
        case 'j': jsonl = optarg; break;
        case 'c': cfile = optarg; break;
        case 'r': rfile = optarg; break;
        case 'x': exact = true; break;
        case 'k': dp.kernels = optarg; break;
        case 'v': verbose = true; break;
        case 't':
        case 'm':
            v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > (1L << 24))
                return sn_cli_usage_error("score", "--%s must be a positive integer",
                                          c == 't' ? "threads" : "max-tokens");
            if (c == 't')
                dp.n_threads = (int)v;
            else
                dp.max_tokens = (int)v;
            break;
        case 'h': usage(stdout); return SN_EXIT_OK;
        default:
            return sn_cli_bad_option("score", argv[optind - 1], opts);
        }
    }
    if (optind < argc)
        return sn_cli_usage_error("score", "unexpected argument '%s'", argv[optind]);
    if (!det)
        return sn_cli_usage_error("score", "--detector D.gguf is required");
    if (!cfile != !rfile)
        return sn_cli_usage_error("score", "--context and --response go together");
    if ((ids + !!jsonl + !!cfile) > 1)
        return sn_cli_usage_error("score", "choose one input: --ids, --jsonl or "
                                  "--context/--response");
    struct sn_err err = {0};
    struct sn_detector *d = NULL;
    int rc = sn_detector_open(det, &dp, &d, &err);
    if (!rc && verbose)
        fprintf(stderr, "sentinel: %s: %d threads; %s\n", det, sn_detector_n_threads(d),
                sn_detector_kernels(d));
    struct sn_cli_pair_scorer sc = {detector_pair, detector_shared, d, exact};
    if (!rc && cfile) {
        rc = sn_cli_score_pair_files(cfile, rfile, &sc, &err);
    } else if (!rc && jsonl) {
        rc = sn_cli_score_jsonl(jsonl, &sc, &err);
    } else if (!rc) {
        rc = score_lines(d, ids, exact, &err);
    }
    fflush(stdout);
    sn_detector_free(d);
    return rc ? sn_cli_fail("score", &err) : SN_EXIT_OK;
}

/* True when argv holds `name` or `name=...` before a "--" (getopt_long's long-option forms). */
bool sn_cli_has_option(int argc, char **argv, const char *name)
{
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            return false;
        if (!strncmp(argv[i], name, n) && (argv[i][n] == 0 || argv[i][n] == '='))
            return true;
    }
    return false;
}
