/* cli/cmd_tokenize.c: `sentinel tokenize` (docs/design.md §1; usage in README.md (CLI reference)).
** stdin lines -> one line of space-separated ids per input line, or back with --decode.
** --json: texts are JSON strings, one per line, so newlines inside a text survive.
** --threads N: each batch of lines is cut into N contiguous runs encoded in parallel; output
** order is input order. An error names the input line (stdin:LINE).
** `sentinel tokenize train ...` is cli/cmd_tokenize_train.c. */
#include "cli/cli.h"
#include "export/export.h"
#include "tokenizer/tokenizer.h"

#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_BYTES (4u << 20)
#define BATCH_LINES 65536
#define MAX_THREADS 256

/* A GGUF file starts with the magic "GGUF" (docs/formats.md#gguf). */
static bool is_gguf(const char *path)
{
    char m[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    bool yes = fread(m, 1, 4, f) == 4 && !memcmp(m, "GGUF", 4);
    fclose(f);
    return yes;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sentinel tokenize --tokenizer FILE [--decode] [--json] [--threads N]\n"
        "       sentinel tokenize --write-demo FILE\n"
        "       sentinel tokenize train -o FILE [options] INPUT...  (see its --help)\n"
        "\n"
        "Reads UTF-8 text lines on stdin and prints, for each, one line of space-separated\n"
        "token ids (an empty line for an empty text). Added/special tokens written in the text\n"
        "(<|im_start|>, ...) become their ids. No special tokens are added (like HF tokenizers'\n"
        "encode(text, add_special_tokens=False)). Text is NFC-normalized when the tokenizer\n"
        "says so (Qwen2 does), so decode(encode(x)) = NFC(x).\n"
        "\n"
        "options:\n"
        "  --tokenizer FILE   Hugging Face tokenizer.json of a byte-level BPE (Qwen2/Qwen2.5/\n"
        "                     Qwen3, GPT-2 style), or a GGUF file (its tokenizer.ggml.* keys,\n"
        "                     e.g. a detector written by `sentinel export`)\n"
        "  --decode           the reverse: lines of space-separated ids -> text lines\n"
        "  --json             texts are JSON strings, one per line (\"a\\nb\"), on input when\n"
        "                     encoding and on output when decoding, so newlines survive\n"
        "  --threads N        encode/decode with N threads (default 1); output order is kept\n"
        "  --write-demo FILE  write the demo model's tokenizer.json (512 ids) and exit\n"
        "  -h, --help         this help\n"
        "\n"
        "Errors name the input line: invalid UTF-8 (with its byte offset), a bad JSON string,\n"
        "an id that is not in the vocabulary. Exit status: 0 ok, 1 failure, 2 usage error.\n");
}

struct line {
    size_t off, len; /* into the batch's text */
    uint64_t lineno;
};

struct job {
    const struct sn_tokenizer *tok;
    const char   *text;
    struct line  *lines;
    size_t        first, count;
    bool          decode, json;
    struct sn_buf out;
    struct sn_err err;
    uint64_t      err_line;
};

/* JSON string (optionally surrounded by spaces) -> UTF-8 bytes in *out. */
static int json_unquote(const char *s, size_t n, struct sn_buf *out, struct sn_err *err)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    if (i == n || s[i] != '"')
        return sn_err_set(err, SN_E_FORMAT, "expected a JSON string (\"...\") at column %zu",
                          i + 1);
    i++;
    sn_buf_reset(out);
    for (;;) {
        size_t j = i;
        while (j < n && s[j] != '"' && s[j] != '\\' && (unsigned char)s[j] >= 0x20)
            j++;
        if (j > i && sn_buf_append(out, s + i, j - i, err))
            return err->code;
        i = j;
        if (i == n)
            return sn_err_set(err, SN_E_FORMAT, "unterminated JSON string");
        if ((unsigned char)s[i] < 0x20)
            return sn_err_set(err, SN_E_FORMAT, "control character 0x%02x inside a JSON string "
                              "at column %zu (escape it)", (unsigned)s[i], i + 1);
        if (s[i] == '"')
            break;
        if (++i == n)
            return sn_err_set(err, SN_E_FORMAT, "unterminated escape in a JSON string");
        char c = s[i++], e = 0;
        uint32_t cp = 0;
        switch (c) {
        case '"': e = '"'; break;
        case '\\': e = '\\'; break;
        case '/': e = '/'; break;
        case 'b': e = '\b'; break;
        case 'f': e = '\f'; break;
        case 'n': e = '\n'; break;
        case 'r': e = '\r'; break;
        case 't': e = '\t'; break;
        case 'u':
            for (int pass = 0; pass < 2; pass++) {
                uint32_t v = 0;
                if (n - i < 4)
                    return sn_err_set(err, SN_E_FORMAT, "bad \\u escape at column %zu", i);
                for (int k = 0; k < 4; k++) {
                    char h = s[i + k];
                    v <<= 4;
                    if (h >= '0' && h <= '9') v |= (uint32_t)(h - '0');
                    else if (h >= 'a' && h <= 'f') v |= (uint32_t)(h - 'a' + 10);
                    else if (h >= 'A' && h <= 'F') v |= (uint32_t)(h - 'A' + 10);
                    else return sn_err_set(err, SN_E_FORMAT, "bad \\u escape at column %zu", i);
                }
                i += 4;
                if (pass == 0) {
                    cp = v;
                    if (v >= 0xDC00 && v <= 0xDFFF)
                        return sn_err_set(err, SN_E_FORMAT, "lone low surrogate \\u%04X at "
                                          "column %zu", (unsigned)v, i - 5);
                    if (v < 0xD800 || v > 0xDBFF)
                        break;
                    if (n - i < 2 || s[i] != '\\' || s[i + 1] != 'u')
                        return sn_err_set(err, SN_E_FORMAT, "high surrogate \\u%04X at column "
                                          "%zu is not followed by a low one", (unsigned)v, i - 5);
                    i += 2;
                } else {
                    if (v < 0xDC00 || v > 0xDFFF)
                        return sn_err_set(err, SN_E_FORMAT, "high surrogate not followed by a "
                                          "low one at column %zu", i - 5);
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (v - 0xDC00);
                }
            }
            {
                char u[4];
                size_t l;
                if (cp < 0x80) {
                    u[0] = (char)cp;
                    l = 1;
                } else if (cp < 0x800) {
                    u[0] = (char)(0xC0 | cp >> 6);
                    u[1] = (char)(0x80 | (cp & 0x3F));
                    l = 2;
                } else if (cp < 0x10000) {
                    u[0] = (char)(0xE0 | cp >> 12);
                    u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
                    u[2] = (char)(0x80 | (cp & 0x3F));
                    l = 3;
                } else {
                    u[0] = (char)(0xF0 | cp >> 18);
                    u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
                    u[2] = (char)(0x80 | (cp >> 6 & 0x3F));
                    u[3] = (char)(0x80 | (cp & 0x3F));
                    l = 4;
                }
                if (sn_buf_append(out, u, l, err))
                    return err->code;
            }
            continue;
        default:
            return sn_err_set(err, SN_E_FORMAT, "bad escape '\\%c' at column %zu", c, i - 1);
        }
        if (sn_buf_append(out, &e, 1, err))
            return err->code;
    }
    i++;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    if (i != n)
        return sn_err_set(err, SN_E_FORMAT, "text after the JSON string at column %zu", i + 1);
    if (!out->data && sn_buf_append(out, "", 0, err))
        return err->code;
    return SN_OK;
}

/* Appends text as a JSON string. Text must be UTF-8 (JSON cannot carry other bytes). */
static int json_quote(const char *t, size_t n, struct sn_buf *out, struct sn_err *err)
{
    char esc[8];
    if (sn_buf_append(out, "\"", 1, err))
        return err->code;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && t[j] != '"' && t[j] != '\\' && (unsigned char)t[j] >= 0x20)
            j++;
        if (j > i && sn_buf_append(out, t + i, j - i, err))
            return err->code;
        if (j == n)
            break;
        unsigned char c = (unsigned char)t[j];
        const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" :
                        c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
        if (!e) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            e = esc;
        }
        if (sn_buf_puts(out, e, err))
            return err->code;
        i = j + 1;
    }
    return sn_buf_append(out, "\"", 1, err);
}

static int parse_ids(const char *s, size_t n, struct sn_ids *ids, struct sn_err *err)
{
    size_t i = 0;
    ids->n = 0;
    while (i < n) {
        if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
            i++;
            continue;
        }
        size_t j = i;
        long v = 0;
        while (j < n && s[j] >= '0' && s[j] <= '9' && v <= INT32_MAX)
            v = v * 10 + (s[j++] - '0');
        if (j == i || v > INT32_MAX || (j < n && s[j] != ' ' && s[j] != '\t' && s[j] != '\r'))
            return sn_err_set(err, SN_E_FORMAT, "column %zu: expected a token id (a "
                              "non-negative integer)", i + 1);
        if (sn_ids_push(ids, (int32_t)v, err))
            return err->code;
        i = j;
    }
    return SN_OK;
}

static int put_ids(struct sn_buf *out, const struct sn_ids *ids, struct sn_err *err)
{
    char tmp[16];
    for (size_t k = 0; k < ids->n; k++) {
        char *p = tmp + sizeof tmp;
        uint32_t v = (uint32_t)ids->v[k];
        *--p = k + 1 < ids->n ? ' ' : '\n';
        do {
            *--p = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        if (sn_buf_append(out, p, (size_t)(tmp + sizeof tmp - p), err))
            return err->code;
    }
    return ids->n ? SN_OK : sn_buf_append(out, "\n", 1, err);
}

static void *run_job(void *arg)
{
    struct job *jb = arg;
    struct sn_ids ids = {0};
    struct sn_buf tmp = {0};
    for (size_t i = jb->first; i < jb->first + jb->count; i++) {
        const struct line *ln = &jb->lines[i];
        const char *s = jb->text + ln->off;
        size_t n = ln->len;
        int rc;
        if (!jb->decode) {
            if (jb->json) {
                if ((rc = json_unquote(s, n, &tmp, &jb->err)))
                    goto fail;
                s = tmp.data;
                n = tmp.len;
            }
            ids.n = 0;
            if ((rc = sn_tokenizer_encode(jb->tok, s, n, &ids, &jb->err)) ||
                (rc = put_ids(&jb->out, &ids, &jb->err)))
                goto fail;
        } else {
            char *t = NULL;
            size_t tl = 0, bad;
            if ((rc = parse_ids(s, n, &ids, &jb->err)) ||
                (rc = sn_tokenizer_decode(jb->tok, ids.v, ids.n, &t, &tl, &jb->err)))
                goto fail;
            if (jb->json && !sn_utf8_valid(t, tl, &bad)) {
                sn_free(t);
                sn_err_set(&jb->err, SN_E_FORMAT, "the ids decode to bytes that are not UTF-8 "
                           "(offset %zu), which a JSON string cannot carry", bad);
                goto fail;
            }
            rc = jb->json ? json_quote(t, tl, &jb->out, &jb->err)
                          : sn_buf_append(&jb->out, t, tl, &jb->err);
            sn_free(t);
            if (rc || (rc = sn_buf_append(&jb->out, "\n", 1, &jb->err)))
                goto fail;
        }
        continue;
    fail:
        jb->err_line = ln->lineno;
        break;
    }
    sn_ids_free(&ids);
    sn_buf_free(&tmp);
    return NULL;
}

/* Processes one batch with n_threads jobs; writes the output in order. Returns 0 or an exit
** status. */
static int run_batch(const struct sn_tokenizer *tok, const char *text, struct line *lines,
                     size_t n_lines, int n_threads, bool decode, bool json)
{
    struct job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    bool started[MAX_THREADS] = {0};
    size_t per = (n_lines + (size_t)n_threads - 1) / (size_t)n_threads, at = 0;
    int n_jobs = 0;
    while (at < n_lines && n_jobs < n_threads) {
        struct job *jb = &jobs[n_jobs++];
        memset(jb, 0, sizeof *jb);
        jb->tok = tok;
        jb->text = text;
        jb->lines = lines;
        jb->first = at;
        jb->count = n_lines - at < per ? n_lines - at : per;
        jb->decode = decode;
        jb->json = json;
        jb->out.max = (size_t)1 << 34;
        at += jb->count;
    }
    for (int j = 1; j < n_jobs; j++)
        started[j] = pthread_create(&th[j], NULL, run_job, &jobs[j]) == 0;
    run_job(&jobs[0]);
    for (int j = 1; j < n_jobs; j++) {
        if (started[j])
            pthread_join(th[j], NULL);
        else
            run_job(&jobs[j]);
    }
    int status = SN_EXIT_OK;
    for (int j = 0; j < n_jobs; j++) {
        if (status == SN_EXIT_OK && jobs[j].out.len &&
            fwrite(jobs[j].out.data, 1, jobs[j].out.len, stdout) != jobs[j].out.len) {
            fprintf(stderr, "sentinel tokenize: writing stdout failed\n");
            status = SN_EXIT_FAIL;
        }
        if (status == SN_EXIT_OK && jobs[j].err.code) {
            struct sn_err e = {0};
            sn_err_set(&e, jobs[j].err.code, "stdin:%llu: %s",
                       (unsigned long long)jobs[j].err_line, jobs[j].err.msg);
            status = sn_cli_fail("tokenize", &e);
            if (status == SN_EXIT_USAGE)
                status = SN_EXIT_FAIL;
        }
        sn_buf_free(&jobs[j].out);
    }
    return status;
}

int sn_cmd_tokenize(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tokenizer", required_argument, NULL, 't'},
        {"decode", no_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        {"threads", required_argument, NULL, 'n'},
        {"write-demo", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL, *demo = NULL;
    bool decode = false, json = false;
    long n_threads = 1;
    int c;
    if (argc > 1 && !strcmp(argv[1], "train"))
        return sn_cmd_tokenize_train(argc - 1, argv + 1);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': path = optarg; break;
        case 'd': decode = true; break;
        case 'j': json = true; break;
        case 'w': demo = optarg; break;
        case 'n': {
            char *end;
            n_threads = strtol(optarg, &end, 10);
            if (*end || end == optarg || n_threads < 1 || n_threads > MAX_THREADS)
                return sn_cli_usage_error("tokenize", "--threads wants an integer in [1, %d], "
                                          "got '%s'", MAX_THREADS, optarg);
            break;
        }
        case 'h': usage(stdout); return SN_EXIT_OK;
        default:
            return sn_cli_bad_option("tokenize", argv[optind - 1], opts);
        }
    }
    if (optind < argc)
        return sn_cli_usage_error("tokenize", "unexpected argument '%s' (text comes on stdin)",
                                  argv[optind]);
    struct sn_err err = {0};
    if (demo) {
        if (sn_tokenizer_write_demo(demo, &err))
            return sn_cli_fail("tokenize", &err);
        return SN_EXIT_OK;
    }
    if (!path)
        return sn_cli_usage_error("tokenize", "--tokenizer FILE is required");
    struct sn_tokenizer *tok = NULL;
    if ((is_gguf(path) ? sn_gguf_open_tokenizer(path, &tok, &err)
                       : sn_tokenizer_open(path, &tok, &err)))
        return sn_cli_fail("tokenize", &err);

    struct sn_buf text = {0};
    struct line *lines = sn_malloc(BATCH_LINES * sizeof *lines);
    char *ln = NULL;
    size_t cap = 0, n_lines = 0;
    uint64_t lineno = 0;
    ssize_t got;
    int status = SN_EXIT_OK;
    text.max = (size_t)1 << 33;
    if (!lines) {
        sn_err_set(&err, SN_E_NOMEM, "out of memory");
        status = sn_cli_fail("tokenize", &err);
        goto done;
    }
    while ((got = getline(&ln, &cap, stdin)) >= 0) {
        size_t n = (size_t)got;
        if (n && ln[n - 1] == '\n')
            n--;
        lines[n_lines].off = text.len;
        lines[n_lines].len = n;
        lines[n_lines].lineno = ++lineno;
        n_lines++;
        if (sn_buf_append(&text, ln, n, &err)) {
            status = sn_cli_fail("tokenize", &err);
            goto done;
        }
        if (n_lines == BATCH_LINES || text.len >= BATCH_BYTES) {
            status = run_batch(tok, text.data, lines, n_lines, (int)n_threads, decode, json);
            if (status)
                goto done;
            n_lines = 0;
            sn_buf_reset(&text);
        }
    }
    if (n_lines)
        status = run_batch(tok, text.data, lines, n_lines, (int)n_threads, decode, json);
    if (!status && fflush(stdout) != 0) {
        fprintf(stderr, "sentinel tokenize: writing stdout failed\n");
        status = SN_EXIT_FAIL;
    }
done:
    free(ln);
    sn_free(lines);
    sn_buf_free(&text);
    sn_tokenizer_free(tok);
    return status;
}
