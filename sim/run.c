/* sim/run.c: a `simulate` job (docs/design.md §1, §2;
** docs/simulate.md#output-files-and-resume, docs/formats.md "Trajectory", "Errors file").
**
** recipe.simulate -> endpoints (opened once) + experiments -> work list of (experiment, item,
** replicate) units with deterministic ids -> this shard's units (by id hash) minus the ids
** already in the output -> a pool of worker threads running debates -> one gzip member per
** debate appended to <out>/trajectories-<i>of<n>.jsonl.gz under a lock.
**
** Resume: the existing file is scanned member by member with zlib's inflate (not gzread,
** which silently ignores bytes after the last member that do not start a new one, so a
** header cut short by a kill would hide every later append). Everything after the last
** complete member that ends a line is a partial record from a kill: the file is atomically
** rewritten without it. Failures go to <out>/errors-<i>of<n>.jsonl and, as they are not in
** the trajectory file, are retried by the next run. */
#include "sim/run_internal.h"
#include "sim/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ---- id set ---- */

/* A set of unit ids: the keys of a string map (values unused). */
struct idset {
    struct sn_strmap m;
};

static bool idset_has(const struct idset *s, const char *id)
{
    return sn_strmap_has(&s->m, id, strlen(id));
}

static int idset_add(struct idset *s, const char *id, struct sn_err *err)
{
    return sn_strmap_put(&s->m, id, strlen(id), 0, NULL, err);
}

static void idset_free(struct idset *s)
{
    sn_strmap_free(&s->m);
}

/* ---- existing output ---- */

/* The id of a trajectory line: our writer puts it second ("schema" first); any valid JSON
** object with a string "id" is accepted. */
static int line_id(const char *line, size_t len, const char *path, uint64_t lineno,
                   struct idset *ids, struct sn_err *err)
{
    cJSON *o = cJSON_ParseWithLength(line, len);
    const cJSON *id = o ? cJSON_GetObjectItemCaseSensitive(o, "id") : NULL;
    int rc;
    if (!cJSON_IsString(id))
        rc = sn_err_set(err, SN_E_FORMAT, "%s:%llu: not a trajectory line (expected a JSON "
                        "object with a string \"id\"); move the file away to start afresh",
                        path, (unsigned long long)lineno);
    else
        rc = idset_add(ids, id->valuestring, err);
    cJSON_Delete(o);
    return rc;
}

/* Scans path (gzip members), adds the ids of complete lines, and reports the byte offset
** where the valid prefix ends (*good_end) and the file size (*size). */
static int scan_existing(const char *path, struct idset *ids, uint64_t *n_lines,
                         long long *good_end, long long *size, struct sn_err *err)
{
    *good_end = 0;
    *size = 0;
    *n_lines = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_err_set(err, SN_E_IO, "%s: %s", path, strerror(errno));
    enum { IN = 1 << 16, OUTB = 1 << 16 };
    unsigned char *in = sn_malloc(IN), *outb = sn_malloc(OUTB);
    struct sn_buf line = {.max = 256u << 20};
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    int rc = SN_OK;
    if (!in || !outb) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto done;
    }
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        rc = sn_err_set(err, SN_E_NOMEM, "zlib: inflateInit2 failed");
        goto done;
    }
    long long consumed = 0; /* file bytes handed to inflate and used */
    bool in_member = false, eof = false;
    size_t avail = 0;
    for (;;) {
        if (avail == 0 && !eof) {
            avail = fread(in, 1, IN, f);
            if (avail < IN) {
                if (ferror(f)) {
                    rc = sn_err_set(err, SN_E_IO, "%s: read error", path);
                    goto done_z;
                }
                eof = true;
            }
            zs.next_in = in;
            zs.avail_in = (uInt)avail;
            *size += (long long)avail;
        }
        if (zs.avail_in == 0 && eof)
            break; /* clean end, or a member cut short (in_member) */
        if (!in_member && zs.avail_in < 2 && !eof) {
            /* keep it simple: refill after this chunk is used up */
        }
        zs.next_out = outb;
        zs.avail_out = OUTB;
        uInt before = zs.avail_in;
        int z = inflate(&zs, Z_NO_FLUSH);
        consumed += (long long)(before - zs.avail_in);
        avail = zs.avail_in;
        in_member = true;
        size_t got = OUTB - zs.avail_out;
        for (size_t i = 0; i < got; i++) {
            if (outb[i] == '\n') {
                (*n_lines)++;
                if ((rc = line_id(line.data ? line.data : "", line.len, path, *n_lines, ids,
                                  err)))
                    goto done_z;
                sn_buf_reset(&line);
            } else if (sn_buf_append(&line, &outb[i], 1, err)) {
                rc = err->code;
                goto done_z;
            }
        }
        if (z == Z_STREAM_END) {
            in_member = false;
            if (line.len == 0)
                *good_end = consumed; /* a member boundary at a line boundary */
            inflateReset(&zs);
            continue;
        }
        if (z == Z_BUF_ERROR && zs.avail_in == 0 && eof)
            break; /* truncated member */
        if (z != Z_OK && z != Z_BUF_ERROR)
            break; /* corrupt bytes (e.g. a partial header): the tail from good_end goes */
    }
    (void)in_member;
done_z:
    inflateEnd(&zs);
done:
    fclose(f);
    sn_free(in);
    sn_free(outb);
    sn_buf_free(&line);
    return rc;
}

/* A tail left by a kill is the start of one gzip member: its first bytes are the gzip magic
** (1f 8b), or it is a single 1f. Anything else was not written by us and is not dropped. */
static int check_tail(const char *path, long long good_end, long long size, struct sn_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_err_set(err, SN_E_IO, "%s: %s", path, strerror(errno));
    unsigned char m[2] = {0, 0};
    size_t want = size - good_end >= 2 ? 2 : 1;
    int rc = SN_OK;
    if (fseek(f, (long)good_end, SEEK_SET) != 0 || fread(m, 1, want, f) != want)
        rc = sn_err_set(err, SN_E_IO, "%s: cannot read at offset %lld", path, good_end);
    else if (m[0] != 0x1f || (want == 2 && m[1] != 0x8b))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: the %lld bytes from offset %lld are not a gzip "
                        "record (not written by sentinel simulate?); move the file away to start "
                        "afresh", path, size - good_end, good_end);
    fclose(f);
    return rc;
}

/* Cuts path to its first n bytes in place. truncate(2) is one step (a kill leaves the file
** whole or cut) and, unlike a rewrite into a copy, needs no free space: a resume on a full disk
** must not fail here for the very reason it stopped before. */
static int truncate_tail(const char *path, long long n, struct sn_err *err)
{
    if (truncate(path, (off_t)n) != 0)
        return sn_err_set(err, SN_E_IO, "%s: cannot drop the partial tail: %s", path,
                          strerror(errno));
    return sn_fsync_path(path, err);
}

/* ---- gzip member writer ---- */

static int gz_member(const char *data, size_t n, struct sn_buf *out, struct sn_err *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* level 6, gzip wrapper (15 + 16): one self-contained member per record */
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return sn_err_set(err, SN_E_NOMEM, "zlib: deflateInit2 failed");
    size_t bound = (size_t)deflateBound(&zs, (uLong)n);
    if (out->cap < bound + 1) {
        char *p = sn_realloc(out->data, bound + 1);
        if (!p) {
            deflateEnd(&zs);
            return sn_err_set(err, SN_E_NOMEM, "out of memory compressing a record");
        }
        out->data = p;
        out->cap = bound + 1;
    }
    zs.next_in = (Bytef *)data;
    zs.avail_in = (uInt)n;
    zs.next_out = (Bytef *)out->data;
    zs.avail_out = (uInt)bound;
    int z = deflate(&zs, Z_FINISH);
    out->len = bound - zs.avail_out;
    deflateEnd(&zs);
    if (z != Z_STREAM_END)
        return sn_err_set(err, SN_E_NOMEM, "zlib: deflate failed (%d)", z);
    return SN_OK;
}

/* ---- work ---- */

enum { SN_SIM_MAX_DEBATES = 10000000 }; /* work units of one run (about 200 bytes each) */

struct unit {
    int    x;
    size_t item;
    int    rep;
    char   id[160];
};

struct job {
    struct run *R;
    struct unit *units;
    size_t n_units;
    _Atomic size_t next;
    _Atomic uint64_t done, failed, active, calls, tokens;
    pthread_mutex_t lock;
    int traj_fd;        /* O_APPEND; -1 when not open */
    off_t traj_end;     /* end of the last complete record */
    FILE *errs;
    const char *traj_path, *errors_path;
    struct sn_err first_err;
    _Atomic int write_rc;
    struct sn_err write_err;
    struct idset failed_ids;
    volatile int *cancel;
    double last_sync;
};

static void iso_time(char *out, size_t cap)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Appends one gzip record with write(2), each call checked (stdio would report a failed write
** only at a later flush). A failed write (a full disk: ENOSPC) cuts the file back to the end of
** the last complete record, so no partial record is left for the next run to drop, and stops
** the run with a message naming the file and the cause. Called with J->lock held. */
static int append_record(struct job *J, const char *data, size_t n)
{
    size_t left = n;
    while (left) {
        ssize_t k = write(J->traj_fd, data + (n - left), left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            bool cut = ftruncate(J->traj_fd, J->traj_end) == 0;
            J->write_rc = sn_err_set(&J->write_err, SN_E_IO, "%s: write failed: %s; stopped "
                                     "after %llu debates%s; free space and re-run to continue",
                                     J->traj_path, strerror(e),
                                     (unsigned long long)atomic_load(&J->done),
                                     cut ? " (the partial record was removed)" : "");
            return J->write_rc;
        }
        left -= (size_t)k;
    }
    J->traj_end += (off_t)n;
    return SN_OK;
}

static void *worker(void *arg)
{
    struct job *J = arg;
    struct sn_buf line = {.max = 256u << 20}, gz = {.max = 256u << 20};
    for (;;) {
        if (J->cancel && *J->cancel)
            break;
        size_t i = atomic_fetch_add(&J->next, 1);
        if (i >= J->n_units)
            break;
        if (J->write_rc)
            break;
        struct unit *u = &J->units[i];
        struct sn_err err = {0};
        struct sn_debate_stats st = {0};
        sn_buf_reset(&line);
        atomic_fetch_add(&J->active, 1);
        int rc = sn_debate_run(&J->R->setups[u->x], &J->R->qsets[u->x]->items[u->item],
                               u->rep, &line, &st, &err);
        atomic_fetch_sub(&J->active, 1);
        atomic_fetch_add(&J->calls, st.calls);
        atomic_fetch_add(&J->tokens, st.prompt_tokens + st.completion_tokens);
        if (!rc) {
            rc = sn_buf_append(&line, "\n", 1, &err);
            if (!rc)
                rc = gz_member(line.data, line.len, &gz, &err);
            if (rc) { /* our own failure (memory): record as a failed item */
            } else {
                pthread_mutex_lock(&J->lock);
                if (append_record(J, gz.data, gz.len)) {
                    /* stop: the workers see write_rc and take no new debate */
                } else {
                    atomic_fetch_add(&J->done, 1);
                    double now = sn_now();
                    if (now - J->last_sync > 5.0) { /* bound the loss on power failure */
                        fsync(J->traj_fd);
                        J->last_sync = now;
                    }
                }
                pthread_mutex_unlock(&J->lock);
                continue;
            }
        }
        /* failure: errors file + counters */
        struct sn_buf e = {0};
        struct sn_err e2 = {0};
        sn_llm_redact(err.msg, sizeof err.msg); /* no credential reaches the errors file */
        cJSON *o = cJSON_CreateObject();
        char when[32];
        iso_time(when, sizeof when);
        const struct sn_experiment *x = &J->R->xs[u->x];
        char *s = NULL;
        if (o && cJSON_AddStringToObject(o, "id", u->id) &&
            cJSON_AddStringToObject(o, "experiment", x->name) &&
            cJSON_AddStringToObject(o, "item_id", J->R->qsets[u->x]->items[u->item].id) &&
            cJSON_AddNumberToObject(o, "replicate", u->rep) &&
            cJSON_AddStringToObject(o, "error", err.msg) &&
            cJSON_AddStringToObject(o, "time", when))
            s = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        pthread_mutex_lock(&J->lock);
        if (!J->first_err.code)
            J->first_err = err;
        idset_add(&J->failed_ids, u->id, &e2);
        if (s && J->errs &&
            (fputs(s, J->errs) < 0 || fputc('\n', J->errs) == EOF || fflush(J->errs) != 0) &&
            !J->write_rc) /* a lost failure record would hide the debate from the retry */
            J->write_rc = sn_err_set(&J->write_err, SN_E_IO, "%s: write failed: %s",
                                     J->errors_path, strerror(errno));
        atomic_fetch_add(&J->failed, 1);
        pthread_mutex_unlock(&J->lock);
        cJSON_free(s);
        sn_buf_free(&e);
    }
    sn_buf_free(&line);
    sn_buf_free(&gz);
    return NULL;
}

/* Rewrites the errors file to hold, for every id that is still not in the trajectory file,
** its newest entry (the latest reason), in file order. Removed when nothing is left. */
static int finish_errors(const char *path, const struct idset *done, struct sn_err *err)
{
    if (!sn_path_exists(path))
        return SN_OK;
    char *text;
    size_t len;
    int rc = sn_file_read(path, 0, &text, &len, err);
    if (rc)
        return rc;
    struct sn_buf out = {0};
    struct idset kept = {0};
    /* newest entry of an id wins: walk lines from the end */
    size_t end = len;
    while (end > 0 && !rc) {
        size_t s = end;
        if (text[s - 1] == '\n')
            s--;
        size_t b = s;
        while (b > 0 && text[b - 1] != '\n')
            b--;
        cJSON *o = s > b ? cJSON_ParseWithLength(text + b, s - b) : NULL;
        const cJSON *id = o ? cJSON_GetObjectItemCaseSensitive(o, "id") : NULL;
        if (cJSON_IsString(id) && !idset_has(done, id->valuestring) &&
            !idset_has(&kept, id->valuestring)) {
            rc = idset_add(&kept, id->valuestring, err);
            if (!rc) {
                rc = sn_buf_append(&out, text + b, s - b, err);
                if (!rc)
                    rc = sn_buf_append(&out, "\n", 1, err);
            }
        }
        cJSON_Delete(o);
        end = b;
    }
    sn_free(text);
    idset_free(&kept);
    if (!rc) {
        if (out.len == 0) {
            unlink(path);
        } else {
            /* lines were collected newest first; reverse their order */
            struct sn_buf rev = {0};
            size_t e2 = out.len;
            while (e2 > 0 && !rc) {
                size_t b = e2 - 1; /* at '\n' */
                while (b > 0 && out.data[b - 1] != '\n')
                    b--;
                rc = sn_buf_append(&rev, out.data + b, e2 - b, err);
                e2 = b;
            }
            if (!rc)
                rc = sn_atomic_write(path, rev.data, rev.len, err);
            sn_buf_free(&rev);
        }
    }
    sn_buf_free(&out);
    return rc;
}

struct sn_simulate_params sn_simulate_default_params(void)
{
    struct sn_simulate_params p = {0};
    p.shard_index = 0;
    p.shard_count = 1;
    return p;
}

int sn_simulate_check_recipe(const cJSON *recipe, struct sn_err *err)
{
    struct sn_simulate_params p = sn_simulate_default_params();
    struct run R = {.p = &p};
    int rc = sn_sim_run_setup(&R, recipe, err);
    sn_sim_run_free(&R);
    return rc;
}

static uint64_t id_hash(const char *id)
{
    uint8_t d[32];
    struct sn_sha256 h;
    sn_sha256_init(&h);
    sn_sha256_update(&h, id, strlen(id));
    sn_sha256_final(&h, d);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | d[i];
    return v;
}

int sn_simulate_run(const cJSON *recipe, const struct sn_simulate_params *p,
                    struct sn_simulate_report *rep, struct sn_err *err)
{
    memset(rep, 0, sizeof *rep);
    if (!p->out_dir || !*p->out_dir)
        return sn_err_set(err, SN_E_ARG, "simulate: no output directory (-o DIR)");
    if (p->shard_count < 1 || p->shard_index < 0 || p->shard_index >= p->shard_count)
        return sn_err_set(err, SN_E_ARG, "simulate: shard %d/%d: need 0 <= i < n", p->shard_index,
                          p->shard_count);
    struct run R = {.p = p};
    struct job J = {.traj_fd = -1};
    int rc = sn_sim_run_setup(&R, recipe, err);
    if (rc) {
        sn_sim_run_free(&R);
        return rc;
    }
    if ((rc = sn_mkdirs(p->out_dir, err))) {
        sn_sim_run_free(&R);
        return rc;
    }
    /* one writer per output file: a second `simulate` on the same shard and directory is
    ** refused instead of interleaving records (the lock dies with the process) */
    char lock_path[1100];
    if ((rc = sn_path_fmt(rep->traj_path, sizeof rep->traj_path, err,
                          "%s/trajectories-%dof%d.jsonl.gz", p->out_dir, p->shard_index,
                          p->shard_count)) ||
        (rc = sn_path_fmt(rep->errors_path, sizeof rep->errors_path, err,
                          "%s/errors-%dof%d.jsonl", p->out_dir, p->shard_index,
                          p->shard_count)) ||
        (rc = sn_path_fmt(lock_path, sizeof lock_path, err, "%s/.trajectories-%dof%d.lock",
                          p->out_dir, p->shard_index, p->shard_count))) {
        sn_sim_run_free(&R);
        return rc;
    }
    int lock_fd = open(lock_path, O_RDWR | O_CREAT, 0644);
    if (lock_fd < 0) {
        rc = sn_err_set(err, SN_E_IO, "%s: %s", lock_path, strerror(errno));
        sn_sim_run_free(&R);
        return rc;
    }
    if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = sn_err_set(err, SN_E_IO, "%s: another `sentinel simulate` is writing shard %d/%d "
                        "in this directory", rep->traj_path, p->shard_index, p->shard_count);
        close(lock_fd);
        sn_sim_run_free(&R);
        return rc;
    }
    /* resume: ids already written */
    struct idset done = {0}, attempted = {0};
    if (sn_path_exists(rep->traj_path)) {
        uint64_t n_lines;
        long long good_end, size;
        rc = scan_existing(rep->traj_path, &done, &n_lines, &good_end, &size, err);
        if (!rc && good_end < size)
            rc = check_tail(rep->traj_path, good_end, size, err);
        if (!rc && good_end < size) {
            SN_WARN("%s: dropping %lld bytes after the last complete record (an interrupted "
                    "run); %llu records kept", rep->traj_path, size - good_end,
                    (unsigned long long)n_lines);
            rc = truncate_tail(rep->traj_path, good_end, err);
            if (!rc) { /* the ids were counted from complete lines before the cut only */
                idset_free(&done);
                rc = scan_existing(rep->traj_path, &done, &n_lines, &good_end, &size, err);
            }
        }
    }
    /* work list */
    /* Bounded before it sizes an allocation: questions (<= SN_QSET_MAX_N each) times
    ** replicates over all experiments. */
    size_t cap = 0;
    for (int i = 0; !rc && i < R.n_xs; i++) {
        size_t k;
        if (!sn_mul_ok(R.qsets[i]->n, (size_t)R.xs[i].replicates, &k) ||
            k > SN_SIM_MAX_DEBATES - cap)
            rc = sn_err_set(err, SN_E_ARG, "recipe: simulate.experiments[%d] ('%s'): %zu "
                            "questions x %d replicates brings the run past the bound of %d "
                            "debates; lower dataset.n or replicates, or split the recipe", i,
                            R.xs[i].name, R.qsets[i]->n, R.xs[i].replicates,
                            SN_SIM_MAX_DEBATES);
        else
            cap += k;
    }
    J.units = rc ? NULL : sn_calloc(cap ? cap : 1, sizeof *J.units);
    if (!rc && !J.units)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory for %zu work units", cap);
    for (int i = 0; !rc && i < R.n_xs; i++) {
        for (size_t it = 0; it < R.qsets[i]->n; it++)
            for (int r = 0; r < R.xs[i].replicates; r++) {
                struct unit u = {.x = i, .item = it, .rep = r};
                sn_debate_id(R.xs[i].name, R.qsets[i]->items[it].id, r, R.xs[i].seed, u.id,
                             sizeof u.id);
                if (id_hash(u.id) % (uint64_t)p->shard_count != (uint64_t)p->shard_index)
                    continue;
                rep->planned++;
                if (idset_has(&done, u.id)) {
                    rep->skipped++;
                    continue;
                }
                if ((rc = idset_add(&attempted, u.id, err)))
                    break;
                J.units[J.n_units++] = u;
            }
    }
    if (!rc) {
        J.traj_fd = open(rep->traj_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (J.traj_fd < 0)
            rc = sn_err_set(err, SN_E_IO, "%s: %s", rep->traj_path, strerror(errno));
        else if ((J.traj_end = lseek(J.traj_fd, 0, SEEK_END)) < 0)
            rc = sn_err_set(err, SN_E_IO, "%s: %s", rep->traj_path, strerror(errno));
    }
    if (!rc) {
        J.errs = fopen(rep->errors_path, "ab");
        if (!J.errs)
            rc = sn_err_set(err, SN_E_IO, "%s: %s", rep->errors_path, strerror(errno));
    }
    int threads = p->threads;
    int64_t rthreads = 0;
    if (!rc && threads <= 0) {
        rc = sn_json_get_int(cJSON_GetObjectItemCaseSensitive(recipe, "simulate"), "simulate",
                             "threads", 0, &rthreads, err);
        if (!rc && (rthreads < 0 || rthreads > 1024))
            rc = sn_err_set(err, SN_E_ARG, "recipe: 'simulate.threads' must be 0-1024");
        threads = (int)rthreads;
    }
    if (threads <= 0) {
        /* Twice the largest endpoint concurrency: a debate thread spends part of its time
        ** building its next request, and with exactly one thread per slot the slots sit idle
        ** meanwhile (measured: 0.85 of the concurrency/latency bound at 1x, 0.92 at 2x). */
        threads = 1;
        for (int i = 0; i < R.n_eps; i++)
            if (R.eps[i].used && R.eps[i].b && strcmp(sn_llm_backend_kind(R.eps[i].b), "sim") != 0 &&
                2 * R.eps[i].concurrency > threads)
                threads = 2 * R.eps[i].concurrency;
    }
    if (threads > 1024)
        threads = 1024;
    if ((size_t)threads > J.n_units)
        threads = J.n_units ? (int)J.n_units : 1;
    struct sn_progress *prog = NULL;
    if (!rc) {
        J.R = &R;
        J.cancel = p->cancel;
        J.traj_path = rep->traj_path;
        J.errors_path = rep->errors_path;
        J.last_sync = sn_now();
        pthread_mutex_init(&J.lock, NULL);
        struct sn_progress_params pp = sn_progress_default_params();
        pp.label = "simulate";
        pp.unit = "debates";
        pp.total = J.n_units;
        pp.force_mode = p->progress_mode;
        if (sn_progress_create(&pp, &prog, err) != SN_OK) {
            prog = NULL;
            sn_err_clear(err);
        }
        if (rep->skipped)
            SN_INFO("simulate: %llu of %llu debates already in %s; running the remaining %zu",
                    (unsigned long long)rep->skipped, (unsigned long long)rep->planned,
                    rep->traj_path, J.n_units);
        pthread_t *tids = sn_calloc((size_t)threads, sizeof *tids);
        int started = 0;
        if (!tids) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        } else {
            for (int i = 0; i < threads; i++) {
                if (pthread_create(&tids[i], NULL, worker, &J) != 0)
                    break;
                started++;
            }
            if (started == 0)
                rc = sn_err_set(err, SN_E_IO, "cannot start worker threads");
        }
        double t0 = sn_now();
        while (started > 0) {
            uint64_t fin = atomic_load(&J.done) + atomic_load(&J.failed);
            if (fin >= J.n_units || (p->cancel && *p->cancel && atomic_load(&J.active) == 0) ||
                J.write_rc)
                break;
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
            if (prog) {
                int in_flight = 0, paused = 0;
                for (int i = 0; i < R.n_eps; i++)
                    if (R.eps[i].b) {
                        struct sn_llm_stats es = sn_llm_backend_stats(R.eps[i].b);
                        in_flight += es.in_flight;
                        paused += es.paused;
                    }
                double el = sn_now() - t0;
                char extra[200];
                /* an endpoint that is down or loading pauses its debates (ready_timeout_s) */
                snprintf(extra, sizeof extra, "%stok/s %.0f  in-flight %d  active %llu  errors %llu",
                         paused ? "PAUSED: endpoint down  " : "",
                         el > 0 ? (double)atomic_load(&J.tokens) / el : 0.0, in_flight,
                         (unsigned long long)atomic_load(&J.active),
                         (unsigned long long)atomic_load(&J.failed));
                sn_progress_update(prog, atomic_load(&J.done) + atomic_load(&J.failed), extra);
            }
        }
        for (int i = 0; i < started; i++)
            pthread_join(tids[i], NULL);
        sn_free(tids);
        double el = sn_now() - t0;
        rep->done = atomic_load(&J.done);
        rep->failed = atomic_load(&J.failed);
        if (prog) {
            char summary[256];
            snprintf(summary, sizeof summary, "%llu debates written, %llu failed, %.1f debates/s, "
                     "%.0f tok/s", (unsigned long long)rep->done, (unsigned long long)rep->failed,
                     el > 0 ? (double)rep->done / el : 0.0,
                     el > 0 ? (double)atomic_load(&J.tokens) / el : 0.0);
            sn_progress_finish(prog, summary);
        }
        pthread_mutex_destroy(&J.lock);
    }
    if (!rc && J.write_rc) { /* the root cause first: a full disk names ENOSPC */
        *err = J.write_err;
        rc = J.write_rc;
    }
    if (J.traj_fd >= 0) {
        if (fsync(J.traj_fd) != 0 && !rc)
            rc = sn_err_set(err, SN_E_IO, "fsync %s: %s", rep->traj_path, strerror(errno));
        if (close(J.traj_fd) != 0 && !rc)
            rc = sn_err_set(err, SN_E_IO, "%s: close failed: %s", rep->traj_path,
                            strerror(errno));
    }
    if (J.errs && sn_stream_finish(J.errs, rep->errors_path, err) && !rc)
        rc = err->code;
    /* the errors file keeps exactly the ids that are not done */
    if (J.traj_fd >= 0 || J.errs) {
        struct idset now_done = {0};
        struct sn_err e2 = {0};
        uint64_t nl;
        long long ge, sz;
        if (sn_path_exists(rep->traj_path) &&
            scan_existing(rep->traj_path, &now_done, &nl, &ge, &sz, &e2) == SN_OK)
            finish_errors(rep->errors_path, &now_done, &e2);
        idset_free(&now_done);
    }
    if (!rc && rep->failed)
        rc = sn_err_set(err, SN_E_BACKEND, "%llu of %zu debates failed (first: %s); they are "
                        "listed in %s and a re-run retries them", (unsigned long long)rep->failed,
                        J.n_units, J.first_err.msg, rep->errors_path);
    if (!rc && p->cancel && *p->cancel)
        rc = sn_err_set(err, SN_E_CANCELLED, "interrupted after %llu debates; re-run to continue",
                        (unsigned long long)rep->done);
    idset_free(&done);
    idset_free(&attempted);
    idset_free(&J.failed_ids);
    close(lock_fd); /* releases the lock */
    sn_free(J.units);
    sn_sim_run_free(&R);
    return rc;
}
