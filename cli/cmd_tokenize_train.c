/* cli/cmd_tokenize_train.c: `sentinel tokenize train` (usage in README.md, "sentinel tokenize
** train"): learns a byte-level BPE tokenizer (tokenizer.h, sn_bpe_trainer_*) from debate
** trajectories and/or plain text files and writes it as tokenizer.json.
** Reading is here (cli/ may use data/); the learning is tokenizer/bpe_train.c.
** What is read: of a trajectory (docs/formats.md#trajectory) its question, its options, and
** every message's text and rewritten deliveries, each a document of its own; of a plain text
** file every line with its newline, as Hugging Face tokenizers' trainer reads files. */
#include "cli/cli.h"
#include "data/data.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SPECIALS 256

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel tokenize train -o FILE [options] INPUT...\n"
"\n"
"Learns a byte-level BPE tokenizer (plain BPE over the Qwen2 pre-tokenizer's pieces, like\n"
"Hugging Face tokenizers' BpeTrainer) and writes it as a tokenizer.json with the layout of\n"
"the demo's and Qwen2's (NFC, Qwen2 split regex + ByteLevel, BPE): ids 0-255 are the bytes,\n"
"then the learned tokens, then the special tokens. `sentinel build --tokenizer`, this\n"
"command's encoder and Hugging Face tokenizers load it and give the same ids.\n"
"INPUT: trajectory files (*.jsonl, *.jsonl.gz from `sentinel simulate`/`import`: their\n"
"questions, options and message texts are read), directories searched for them, or any\n"
"other file, read as UTF-8 plain text line by line. Deterministic: the same inputs and\n"
"options give the same bytes.\n"
"\n"
"options:\n"
"  -o, --out FILE          the tokenizer.json to write (atomically; required)\n"
"      --vocab-size N      ids in all: 256 bytes + learned tokens + special tokens\n"
"                          (default 8192); training stops earlier when no pair is left\n"
"      --min-frequency N   stop when the most frequent pair occurs fewer than N times\n"
"                          (default 2; 1 = merge while any pair is left)\n"
"      --special TOKEN     a special token (repeatable, in id order); default the ChatML\n"
"                          three: <|endoftext|> <|im_start|> <|im_end|>\n"
"      --no-specials       no special tokens at all (`sentinel build` needs the ChatML\n"
"                          <|im_start|> and <|im_end|> for its prompt template)\n"
"      --progress MODE     auto (default), bar, plain or none\n"
"  -h, --help              this help\n"
"\n"
"Errors name the file and line: a malformed trajectory, invalid UTF-8 (with its byte in\n"
"the line), an unreadable file. Exit status: 0 ok, 1 failure, 2 usage error (also: an\n"
"empty corpus, a vocabulary below 256 + the specials).\n");
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static bool is_trajectory_file(const char *path)
{
    return ends_with(path, ".jsonl") || ends_with(path, ".jsonl.gz");
}

struct reading {
    struct sn_bpe_trainer *t;
    struct sn_progress    *bar;
    uint64_t files, texts, bytes;
};

static void reading_progress(struct reading *r)
{
    char extra[96];
    snprintf(extra, sizeof extra, "texts %" PRIu64 "  %.1f MB", r->texts, (double)r->bytes / 1e6);
    sn_progress_update(r->bar, r->files, extra);
}

/* Adds one text; an error is prefixed with where it came from. */
static int add_text(struct reading *r, const char *s, size_t n, const char *where,
                    struct sn_err *err)
{
    struct sn_err e = {0};
    r->texts++;
    r->bytes += n;
    if (r->texts % 1024 == 0) /* a large file shows its progress too (the bar rate-limits) */
        reading_progress(r);
    if (!s || !n)
        return SN_OK;
    if (sn_bpe_trainer_add(r->t, s, n, &e))
        return sn_err_set(err, e.code, "%s: %s", where, e.msg);
    return SN_OK;
}

static int read_trajectories(struct reading *r, const char *path, struct sn_err *err)
{
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    struct sn_traj_reader *rd = NULL;
    struct sn_traj *tr = NULL;
    int rc = sn_traj_reader_open(path, &rp, &rd, err);
    char where[4352], field[256];
    while (!rc && !(rc = sn_traj_reader_next(rd, &tr, err)) && tr) {
        snprintf(where, sizeof where, "%s:%" PRIu64, path, sn_traj_reader_lineno(rd));
        if (!sn_traj_utf8_valid(tr, field, sizeof field)) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: field '%s' is not valid UTF-8", where, field);
            break;
        }
        rc = add_text(r, tr->question, strlen(tr->question), where, err);
        for (size_t i = 0; !rc && i < tr->n_options; i++)
            rc = add_text(r, tr->options[i], strlen(tr->options[i]), where, err);
        for (size_t k = 0; !rc && k < tr->n_rounds; k++)
            for (size_t m = 0; !rc && m < tr->rounds[k].n_msgs; m++) {
                const struct sn_traj_msg *msg = &tr->rounds[k].msgs[m];
                rc = add_text(r, msg->text, strlen(msg->text), where, err);
                for (size_t d = 0; !rc && d < msg->n_deliveries; d++)
                    rc = add_text(r, msg->deliveries[d].text, strlen(msg->deliveries[d].text),
                                  where, err);
            }
        sn_traj_free(tr);
        tr = NULL;
    }
    sn_traj_free(tr);
    sn_traj_reader_close(rd);
    return rc;
}

/* Plain text (or gzip-compressed text): each line with its newline is one text. */
static int read_text_file(struct reading *r, const char *path, struct sn_err *err)
{
    struct sn_lines *ln = NULL;
    struct sn_buf b = {0};
    const char *line;
    size_t len;
    bool complete;
    char where[4352];
    int rc = sn_lines_open(path, 0, &ln, err);
    while (!rc && !(rc = sn_lines_next(ln, &line, &len, &complete, err)) && line) {
        snprintf(where, sizeof where, "%s:%" PRIu64, path, sn_lines_lineno(ln));
        sn_buf_reset(&b);
        if (!(rc = sn_buf_append(&b, line, len, err)) &&
            !(rc = complete ? sn_buf_append(&b, "\n", 1, err) : SN_OK))
            rc = add_text(r, b.data, b.len, where, err);
    }
    sn_buf_free(&b);
    sn_lines_close(ln);
    return rc;
}

/* The corpus files: directories give their trajectory files, files are taken as they are. */
static int list_inputs(char **inputs, size_t n_inputs, char ***paths, size_t *n_paths,
                       struct sn_err *err)
{
    size_t cap = 0;
    *paths = NULL;
    *n_paths = 0;
    for (size_t i = 0; i < n_inputs; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0)
            return sn_err_set(err, SN_E_IO, "cannot read %s: %s", inputs[i], strerror(errno));
        char **found = NULL;
        size_t n_found = 0;
        if (S_ISDIR(st.st_mode)) {
            const char *in[1] = {inputs[i]};
            if (sn_traj_paths(in, 1, &found, &n_found, NULL, err))
                return err->code;
        }
        size_t add = S_ISDIR(st.st_mode) ? n_found : 1;
        if (*n_paths + add > cap) {
            size_t nc = cap ? 2 * cap : 16;
            while (nc < *n_paths + add)
                nc *= 2;
            char **np = sn_realloc(*paths, nc * sizeof *np);
            if (!np) {
                sn_paths_free(found, n_found);
                return sn_err_set(err, SN_E_NOMEM, "out of memory");
            }
            *paths = np;
            cap = nc;
        }
        if (S_ISDIR(st.st_mode)) {
            for (size_t k = 0; k < n_found; k++)
                (*paths)[(*n_paths)++] = found[k];
            sn_free(found); /* the strings moved to *paths */
        } else if (!((*paths)[(*n_paths)++] = sn_strdup(inputs[i]))) {
            (*n_paths)--;
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
    }
    return SN_OK;
}

struct merging {
    struct sn_progress *bar;
};

static int on_merge(void *user, size_t n_tokens, size_t target)
{
    struct merging *m = user;
    (void)target;
    if (m->bar)
        sn_progress_update(m->bar, n_tokens, NULL);
    return 0;
}

static int parse_count(const char *opt, const char *s, uint64_t max, uint64_t *out)
{
    if (!sn_parse_u64(s, strlen(s), 0, max, out))
        return sn_cli_usage_error("tokenize train", "%s '%s': expected an integer in [0, %"
                                  PRIu64 "]", opt, s, max);
    return SN_EXIT_OK;
}

int sn_cmd_tokenize_train(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},
        {"vocab-size", required_argument, NULL, 'v'},
        {"min-frequency", required_argument, NULL, 'm'},
        {"special", required_argument, NULL, 's'},
        {"no-specials", no_argument, NULL, 'S'},
        {"progress", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct sn_bpe_train_params tp = sn_bpe_train_default_params();
    const char *out = NULL, *specials[MAX_SPECIALS];
    size_t n_specials = 0;
    bool no_specials = false;
    int progress_mode = 0, c, status = SN_EXIT_OK;
    uint64_t v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'v':
            if ((status = parse_count("--vocab-size", optarg, (uint64_t)1 << 24, &v)))
                return status;
            tp.vocab_size = (size_t)v;
            break;
        case 'm':
            if ((status = parse_count("--min-frequency", optarg, UINT64_MAX, &v)))
                return status;
            tp.min_frequency = v;
            break;
        case 's':
            if (n_specials == MAX_SPECIALS)
                return sn_cli_usage_error("tokenize train", "more than %d --special tokens",
                                          MAX_SPECIALS);
            specials[n_specials++] = optarg;
            break;
        case 'S': no_specials = true; break;
        case 'p':
            if ((status = sn_cli_progress_mode("tokenize train", optarg, &progress_mode)))
                return status;
            break;
        case 'h': usage(stdout); return SN_EXIT_OK;
        default: return sn_cli_bad_option("tokenize train", argv[optind - 1], opts);
        }
    }
    if (!out)
        return sn_cli_usage_error("tokenize train", "--out FILE is required");
    if (optind >= argc)
        return sn_cli_usage_error("tokenize train", "no INPUT: give trajectory files, "
                                  "directories or text files");
    if (no_specials && n_specials)
        return sn_cli_usage_error("tokenize train", "--no-specials and --special together");
    if (n_specials || no_specials) {
        tp.specials = specials;
        tp.n_specials = n_specials;
    }
    struct merging mg = {0};
    tp.progress = on_merge;
    tp.user = &mg;

    struct sn_err err = {0};
    struct reading r = {0};
    struct sn_bpe_train_report rep = {0};
    char **paths = NULL;
    size_t n_paths = 0;
    double t0 = sn_now();
    if (sn_bpe_trainer_create(&tp, &r.t, &err) ||
        list_inputs(argv + optind, (size_t)(argc - optind), &paths, &n_paths, &err)) {
        status = sn_cli_fail("tokenize train", &err);
        goto done;
    }
    struct sn_progress_params pp = sn_progress_default_params();
    pp.label = "tokenize train: reading";
    pp.unit = "files";
    pp.total = n_paths;
    pp.force_mode = progress_mode;
    if (sn_progress_create(&pp, &r.bar, &err)) {
        status = sn_cli_fail("tokenize train", &err);
        goto done;
    }
    int rc = SN_OK;
    for (size_t i = 0; !rc && i < n_paths; i++) {
        rc = is_trajectory_file(paths[i]) ? read_trajectories(&r, paths[i], &err)
                                          : read_text_file(&r, paths[i], &err);
        r.files++;
        reading_progress(&r);
    }
    sn_progress_finish(r.bar, rc ? "stopped" : "done");
    r.bar = NULL;
    if (rc) {
        status = sn_cli_fail("tokenize train", &err);
        goto done;
    }
    double t1 = sn_now();
    pp.label = "tokenize train: merging";
    pp.unit = "tokens";
    pp.total = tp.vocab_size - (tp.specials ? tp.n_specials : 3);
    pp.initial = 256;
    if (sn_progress_create(&pp, &mg.bar, &err)) {
        status = sn_cli_fail("tokenize train", &err);
        goto done;
    }
    rc = sn_bpe_trainer_train(r.t, &rep, &err);
    sn_progress_finish(mg.bar, rc ? "stopped" : "done");
    if (rc || sn_bpe_trainer_write(r.t, out, &err)) {
        status = sn_cli_fail("tokenize train", &err);
        goto done;
    }
    double t2 = sn_now();
    fprintf(stderr, "sentinel tokenize train: wrote %s: %zu ids (%zu learned, %zu merges), "
            "%.2f MB of text in %" PRIu64 " texts of %zu files, %" PRIu64 " pre-tokens (%zu "
            "distinct); read %.2f s, trained and wrote %.2f s, in all %.2f s = %.2f MB/s\n",
            out, rep.vocab_size, rep.vocab_size - 256 - (tp.specials ? tp.n_specials : 3),
            rep.n_merges, (double)rep.bytes / 1e6, r.texts, n_paths, rep.n_pretokens,
            rep.n_words, t1 - t0, t2 - t1, t2 - t0,
            t2 > t0 ? (double)rep.bytes / 1e6 / (t2 - t0) : 0.0);
    if (rep.ran_out)
        fprintf(stderr, "sentinel tokenize train: stopped before --vocab-size %zu: no pair "
                "occurs %" PRIu64 " times or more (--min-frequency)\n", tp.vocab_size,
                tp.min_frequency > 1 ? tp.min_frequency : 1);
done:
    sn_paths_free(paths, n_paths);
    sn_bpe_trainer_free(r.t);
    return status;
}
