/* import/import.c: the importer driver (import/import.h): input expansion, one line
** reader per file, skip/count policy and the atomic (optionally gzip) output. Formats live in
** their own files (collab_attack.c, chatlog.c); what they share, the trajectory writer included,
** in import_shared.c. */
#include "import/import_internal.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>


static const struct imp_format *const formats[] = {&imp_format_collab_attack,
                                                   &imp_format_chatlog};
static const char *const format_names[] = {"collab-attack", "chatlog", NULL};

const char *const *sn_import_formats(void) { return format_names; }

struct sn_import_params sn_import_default_params(void)
{
    struct sn_import_params p = {0};
    p.format = "collab-attack";
    return p;
}

static const struct imp_format *find_format(const char *name)
{
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (name && !strcmp(formats[i]->name, name))
            return formats[i];
    return NULL;
}

/* ---- output: plain or one gzip stream, atomically ---- */

struct outw {
    struct sn_atomic_file *af;
    FILE    *f;
    bool     gz;
    z_stream zs;
    bool     zinit;
    unsigned char zbuf[1 << 16];
};

static int outw_write(struct outw *w, const void *p, size_t n, int flush, struct sn_err *err)
{
    if (!w->gz) {
        if (n && fwrite(p, 1, n, w->f) != n)
            return sn_err_set(err, SN_E_IO, "write failed");
        return SN_OK;
    }
    w->zs.next_in = (unsigned char *)(uintptr_t)p;
    w->zs.avail_in = (uInt)n;
    do {
        w->zs.next_out = w->zbuf;
        w->zs.avail_out = sizeof w->zbuf;
        int z = deflate(&w->zs, flush);
        if (z == Z_STREAM_ERROR)
            return sn_err_set(err, SN_E_NOMEM, "zlib: deflate failed");
        size_t have = sizeof w->zbuf - w->zs.avail_out;
        if (have && fwrite(w->zbuf, 1, have, w->f) != have)
            return sn_err_set(err, SN_E_IO, "write failed");
    } while (w->zs.avail_out == 0 || (flush == Z_FINISH && w->zs.avail_in));
    return SN_OK;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* The root a file's relative path is taken from: the directory input that holds it, or "". */
static const char *root_of(const char *path, const char *const *inputs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(inputs[i]);
        while (k > 1 && inputs[i][k - 1] == '/')
            k--;
        if (sn_path_is_dir(inputs[i]) && !strncmp(path, inputs[i], k) && path[k] == '/')
            return inputs[i];
    }
    return "";
}

static int import_file(const struct imp_format *fmt, struct imp_file *f, struct sn_buf *line_out,
                       struct outw *w, struct sn_progress *prog, struct sn_err *err)
{
    struct sn_import_summary *sum = f->sum;
    struct sn_lines *lr;
    int rc = sn_lines_open(f->path, 0, &lr, err);
    if (rc)
        return rc;
    uint64_t n_rec = 0;
    for (;;) {
        const char *line;
        size_t len;
        bool complete;
        struct sn_err lerr = {0};
        rc = sn_lines_next(lr, &line, &len, &complete, &lerr);
        if (rc) {
            if (f->p->skip_bad) {
                sum->n_bad++;
                if (!sum->first_bad[0])
                    snprintf(sum->first_bad, sizeof sum->first_bad, "%s", lerr.msg);
                rc = SN_OK;
                break;
            }
            sn_err_set(err, lerr.code, "%s", lerr.msg);
            break;
        }
        if (!line)
            break;
        uint64_t lineno = sn_lines_lineno(lr); /* 1-based */
        size_t k = 0;
        while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r'))
            k++;
        if (k == len)
            continue; /* blank line */
        char where[1200];
        snprintf(where, sizeof where, "%s:%llu", f->path, (unsigned long long)lineno);
        size_t mark = line_out->len;
        rc = fmt->record(f, line, len, lineno - 1, where, line_out, &lerr);
        if (rc) {
            line_out->len = mark;
            if (line_out->data)
                line_out->data[mark] = '\0';
            if (f->p->skip_bad && rc == SN_E_FORMAT) {
                sum->n_bad++;
                if (!sum->first_bad[0])
                    snprintf(sum->first_bad, sizeof sum->first_bad, "%s", lerr.msg);
                rc = SN_OK;
                continue;
            }
            sn_err_set(err, lerr.code, "%s", lerr.msg);
            break;
        }
        if (sn_buf_puts(line_out, "\n", err) || outw_write(w, line_out->data, line_out->len,
                                                          Z_NO_FLUSH, err)) {
            rc = err->code;
            break;
        }
        sn_buf_reset(line_out);
        n_rec++;
        sum->n_trajectories++;
        if (prog && (sum->n_trajectories % 100) == 0)
            sn_progress_update(prog, sum->n_trajectories, NULL);
    }
    sn_lines_close(lr);
    if (!rc && n_rec == 0 && !sum->n_bad) {
        sum->n_empty_files++;
        SN_WARN("import: %s: no records (empty file): no trajectories", f->path);
    }
    return rc;
}

int sn_import_run(const struct sn_import_params *p, const char *const *inputs, size_t n_inputs,
                  const char *out_path, struct sn_import_summary *summary, struct sn_err *err)
{
    struct sn_import_summary local;
    struct sn_import_summary *sum = summary ? summary : &local;
    memset(sum, 0, sizeof *sum);
    const struct imp_format *fmt = find_format(p->format);
    if (!fmt)
        return sn_err_set(err, SN_E_ARG, "unknown import format '%s' (known: collab-attack, "
                                         "chatlog)", p->format ? p->format : "(null)");
    if (!n_inputs)
        return sn_err_set(err, SN_E_ARG, "no input files");
    static const char *const suffixes[] = {".jsonl", ".jsonl.gz", NULL};
    char **paths = NULL;
    size_t n_paths = 0;
    int rc = sn_paths_expand(inputs, n_inputs, suffixes, &paths, &n_paths, err);
    if (rc)
        return rc;
    if (!n_paths) {
        sn_paths_free(paths, n_paths);
        return sn_err_set(err, SN_E_ARG, "no .jsonl or .jsonl.gz files in the inputs");
    }
    struct outw *w = sn_calloc(1, sizeof *w);
    if (!w) {
        sn_paths_free(paths, n_paths);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    w->gz = ends_with(out_path, ".gz");
    rc = sn_atomic_open(out_path, &w->af, err);
    if (!rc) {
        w->f = sn_atomic_stream(w->af);
        if (w->gz) {
            if (deflateInit2(&w->zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
                rc = sn_err_set(err, SN_E_NOMEM, "zlib: deflateInit2 failed");
            else
                w->zinit = true;
        }
    }
    struct sn_progress *prog = NULL;
    if (!rc) {
        struct sn_progress_params pp = sn_progress_default_params();
        pp.label = "import";
        pp.unit = "debates";
        pp.force_mode = p->progress;
        if (sn_progress_create(&pp, &prog, err))
            rc = err->code;
    }
    struct sn_buf line = {.max = 256u << 20};
    for (size_t i = 0; !rc && i < n_paths; i++) {
        struct imp_file f = {.p = p, .path = paths[i], .sum = sum};
        struct sn_err ferr = {0};
        int frc = fmt->file_open(&f, root_of(paths[i], inputs, n_inputs), &ferr);
        if (frc == SN_E_UNSUPPORTED && p->skip_unsupported) {
            sum->n_unsupported_files++;
            SN_INFO("import: skipped %s", ferr.msg);
            continue;
        }
        if (frc) {
            rc = sn_err_set(err, frc == SN_E_UNSUPPORTED ? SN_E_FORMAT : frc, "%s%s", ferr.msg,
                            frc == SN_E_UNSUPPORTED ? " (--skip-unsupported skips such files)"
                                                    : "");
            break;
        }
        sum->n_files++;
        rc = import_file(fmt, &f, &line, w, prog, err);
        fmt->file_close(&f);
    }
    sn_buf_free(&line);
    if (!rc && w->gz)
        rc = outw_write(w, "", 0, Z_FINISH, err);
    if (w->zinit)
        deflateEnd(&w->zs);
    if (!rc) {
        rc = sn_atomic_commit(w->af, err);
    } else {
        sn_atomic_abort(w->af);
    }
    if (prog) {
        char s[256];
        snprintf(s, sizeof s, "%llu debates from %llu files",
                 (unsigned long long)sum->n_trajectories, (unsigned long long)sum->n_files);
        sn_progress_finish(prog, rc ? NULL : s);
    }
    sn_free(w);
    sn_paths_free(paths, n_paths);
    return rc;
}

int sn_import_record(const struct sn_import_params *p, const char *rel_path, const char *json,
                     size_t len, uint64_t line, struct sn_buf *out,
                     struct sn_import_summary *summary, struct sn_err *err)
{
    struct sn_import_summary local = {0};
    const struct imp_format *fmt = find_format(p->format);
    if (!fmt)
        return sn_err_set(err, SN_E_ARG, "unknown import format '%s'",
                          p->format ? p->format : "(null)");
    struct imp_file f = {.p = p, .path = rel_path, .sum = summary ? summary : &local};
    int rc = fmt->file_open(&f, "", err);
    if (rc)
        return rc;
    char where[1200];
    snprintf(where, sizeof where, "%s:%llu", rel_path, (unsigned long long)line + 1);
    size_t mark = out->len;
    rc = fmt->record(&f, json, len, line, where, out, err);
    if (rc) {
        out->len = mark;
        if (out->data)
            out->data[mark] = '\0';
    }
    fmt->file_close(&f);
    return rc;
}
