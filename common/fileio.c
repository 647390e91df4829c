/* common/fileio.c: whole-file reads, directories, atomic writes, plain/gzip line readers,
** input path expansion. */
#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int sn_file_read(const char *path, size_t max_bytes, char **out, size_t *len,
                 struct sn_err *err)
{
    *out = NULL;
    if (len)
        *len = 0;
    if (!max_bytes)
        max_bytes = (size_t)1 << 30;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_err_set(err, SN_E_IO, "%s: %s", path, strerror(errno));
    if (sn_stream_is_dir(f)) {
        fclose(f);
        return sn_err_set(err, SN_E_IO, "%s: is a directory (expected a file)", path);
    }
    struct sn_buf b = {.max = max_bytes};
    char chunk[65536];
    size_t n;
    int rc = SN_OK;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        rc = sn_buf_append(&b, chunk, n, err);
        if (rc) {
            sn_err_wrap(err, "%s", path);
            break;
        }
    }
    if (!rc && ferror(f))
        rc = sn_err_set(err, SN_E_IO, "%s: read error", path);
    fclose(f);
    if (!rc && !b.data)
        rc = sn_buf_append(&b, "", 0, err); /* empty file: still a valid C string */
    if (rc) {
        sn_buf_free(&b);
        return rc;
    }
    *out = b.data;
    if (len)
        *len = b.len;
    return SN_OK;
}

bool sn_stream_is_dir(FILE *f)
{
    struct stat st;
    return f && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode);
}

int sn_stream_finish(FILE *f, const char *name, struct sn_err *err)
{
    /* A write error may have happened long before (ferror is sticky; errno is not): fflush
    ** again so errno describes the device now, and say "write failed" either way. */
    bool bad = ferror(f) != 0;
    errno = 0;
    if (fflush(f) != 0)
        bad = true;
    int e = errno;
    bool std = f == stdout || f == stderr;
    if (!std && fclose(f) != 0 && !bad) {
        bad = true;
        e = errno;
    }
    if (!bad && std && ferror(f))
        bad = true;
    if (bad)
        return sn_err_set(err, SN_E_IO, "%s: write failed: %s", name,
                          e ? strerror(e) : "an earlier write to it failed (device full or "
                          "closed?)");
    return SN_OK;
}

bool sn_path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

bool sn_path_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- path lengths ---- */

/* A path or name of any length, shown in a one-line message of a fixed size: up to 100 bytes
** as they are; a longer one as its first and last 40 bytes around "[...N bytes...]" (cut on
** UTF-8 character boundaries), so the reason after it is never pushed out of the message. */
static const char *shown(const char *s, size_t n, char *buf, size_t cap)
{
    if (n <= 100) {
        snprintf(buf, cap, "%.*s", (int)n, s);
        return buf;
    }
    size_t head = 40, tail = 40;
    while (head > 1 && ((unsigned char)s[head] & 0xC0) == 0x80)
        head--;
    while (tail > 1 && ((unsigned char)s[n - tail] & 0xC0) == 0x80)
        tail--;
    snprintf(buf, cap, "%.*s[...%zu bytes...]%.*s", (int)head, s, n - head - tail, (int)tail,
             s + n - tail);
    return buf;
}

/* The check behind sn_path_check_len, with the limits given: path_max counts the NUL (as
** PATH_MAX does), name_max does not (as NAME_MAX). */
static int check_len(const char *path, const char *suffix, long path_max, long name_max,
                     struct sn_err *err)
{
    size_t n = strlen(path), sl = suffix ? strlen(suffix) : 0;
    char sp[160], sc[160], with[160] = "";
    if (n + sl + 1 > (size_t)path_max) {
        if (sl)
            snprintf(with, sizeof with, ", %zu with the suffix '%.60s' of the temporary file "
                     "written first", n + sl, suffix);
        return sn_err_set(err, SN_E_ARG, "%s: file name too long (the path is %zu bytes%s; "
                          "the system allows %ld)", shown(path, n, sp, sizeof sp), n, with,
                          path_max - 1);
    }
    for (size_t i = 0; i < n;) {
        size_t k = strcspn(path + i, "/");
        bool last = i + k == n;
        size_t kk = k + (last ? sl : 0);
        if (kk > (size_t)name_max) {
            if (last && sl)
                snprintf(with, sizeof with, ", %zu with the suffix '%.60s' of the temporary "
                         "file written first", kk, suffix);
            return sn_err_set(err, SN_E_ARG, "%s: file name too long ('%s' is %zu bytes%s; the "
                              "system allows %ld per name)", shown(path, n, sp, sizeof sp),
                              shown(path + i, k, sc, sizeof sc), k, with, name_max);
        }
        i += k + 1;
    }
    return SN_OK;
}

int sn_path_check_len(const char *path, const char *suffix, struct sn_err *err)
{
    return check_len(path, suffix, PATH_MAX, NAME_MAX, err);
}

int sn_path_fmt(char *buf, size_t cap, struct sn_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    if (n < 0)
        return sn_err_set(err, SN_E_ARG, "cannot format the path '%s'", fmt);
    if ((size_t)n < cap)
        return sn_path_check_len(buf, NULL, err);
    /* longer than the buffer: the message shows the whole path by its ends */
    char *full = sn_malloc((size_t)n + 1);
    if (!full)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    va_start(ap, fmt);
    vsnprintf(full, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = sn_path_check_len(full, NULL, err);
    if (!rc) {
        char sp[160];
        rc = sn_err_set(err, SN_E_ARG, "%s: file name too long (the path is %d bytes; this "
                        "command holds at most %zu)", shown(full, (size_t)n, sp, sizeof sp), n,
                        cap - 1);
    }
    sn_free(full);
    return rc;
}

/* After a call on path (or on path + suffix) failed with ENAMETOOLONG. NAME_MAX is the most
** any Linux file system allows; some allow fewer, which only the directory can say: ask the
** nearest existing ancestor. */
static int name_too_long(const char *path, const char *suffix, struct sn_err *err)
{
    char dir[PATH_MAX];
    long name_max = -1;
    size_t n = strlen(path);
    if (n < sizeof dir) {
        memcpy(dir, path, n + 1);
        while (name_max <= 0) {
            char *slash = strrchr(dir, '/');
            if (!slash) {
                name_max = pathconf(".", _PC_NAME_MAX);
                break;
            }
            *slash = '\0';
            name_max = pathconf(dir[0] ? dir : "/", _PC_NAME_MAX);
            if (!dir[0])
                break;
        }
    }
    if (name_max <= 0 || name_max > NAME_MAX)
        name_max = NAME_MAX;
    int rc = check_len(path, suffix, PATH_MAX, name_max, err);
    if (rc)
        return rc;
    char sp[160];
    return sn_err_set(err, SN_E_ARG, "%s%s: file name too long (refused by the file system; a "
                      "name there may have at most %ld bytes)", shown(path, n, sp, sizeof sp),
                      suffix ? suffix : "", name_max);
}

/* "<path>: <strerror>", or the name-too-long message for ENAMETOOLONG. */
static int path_error(const char *path, const char *suffix, int e, struct sn_err *err)
{
    if (e == ENAMETOOLONG)
        return name_too_long(path, suffix, err);
    return sn_err_set(err, SN_E_IO, "%s%s: %s", path, suffix ? suffix : "", strerror(e));
}

int sn_mkdirs(const char *path, struct sn_err *err)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0)
        return sn_err_set(err, SN_E_ARG, "empty directory path");
    /* Before the first mkdir: a name too long further down must not leave the directories
    ** above it made. */
    int rc = sn_path_check_len(path, NULL, err);
    if (rc)
        return rc;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                if (errno == ENAMETOOLONG)
                    return name_too_long(path, NULL, err);
                return sn_err_set(err, SN_E_IO, "mkdir %s: %s", buf, strerror(errno));
            }
            buf[i] = c;
        }
    }
    if (!sn_path_is_dir(path))
        return sn_err_set(err, SN_E_IO, "%s: exists and is not a directory", path);
    return SN_OK;
}

/* ---- atomic writes ---- */

struct sn_atomic_file {
    char *path;
    char *tmp;
    FILE *f;
};

static int fsync_dir_of(const char *path, struct sn_err *err)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        dir[0] = '.';
        dir[1] = '\0';
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof dir)
            return sn_path_check_len(path, NULL, err);
        memcpy(dir, path, n ? n : 1);
        dir[n ? n : 1] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return path_error(dir, NULL, errno, err);
    int rc = fsync(fd);
    close(fd);
    /* Some filesystems refuse fsync on directories (EINVAL); the rename is still atomic. */
    if (rc != 0 && errno != EINVAL && errno != EROFS)
        return sn_err_set(err, SN_E_IO, "fsync %s: %s", dir, strerror(errno));
    return SN_OK;
}

int sn_fsync_path(const char *path, struct sn_err *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return path_error(path, NULL, errno, err);
    int rc = fsync(fd);
    close(fd);
    if (rc != 0)
        return sn_err_set(err, SN_E_IO, "fsync %s: %s", path, strerror(errno));
    return SN_OK;
}

int sn_rename_durable(const char *from, const char *to, struct sn_err *err)
{
    if (rename(from, to) != 0) {
        if (errno == ENAMETOOLONG)
            return name_too_long(strlen(from) > strlen(to) ? from : to, NULL, err);
        return sn_err_set(err, SN_E_IO, "rename %s -> %s: %s", from, to, strerror(errno));
    }
    return fsync_dir_of(to, err);
}

void sn_atomic_abort(struct sn_atomic_file *a)
{
    if (!a)
        return;
    if (a->f)
        fclose(a->f);
    if (a->tmp)
        unlink(a->tmp);
    sn_free(a->tmp);
    sn_free(a->path);
    sn_free(a);
}

int sn_atomic_open(const char *path, struct sn_atomic_file **out, struct sn_err *err)
{
    *out = NULL;
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".tmp.%ld", (long)getpid());
    int rc = sn_path_check_len(path, suffix, err);
    if (rc)
        return rc;
    struct sn_atomic_file *a = sn_calloc(1, sizeof *a);
    if (!a)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    size_t n = strlen(path) + sizeof suffix;
    a->path = sn_strdup(path);
    a->tmp = sn_malloc(n);
    if (!a->path || !a->tmp) {
        sn_atomic_abort(a);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    }
    snprintf(a->tmp, n, "%s%s", path, suffix);
    a->f = fopen(a->tmp, "wb");
    if (!a->f) {
        rc = path_error(path, suffix, errno, err);
        sn_atomic_abort(a);
        return rc;
    }
    *out = a;
    return SN_OK;
}

FILE *sn_atomic_stream(struct sn_atomic_file *a) { return a->f; }
const char *sn_atomic_tmp_path(const struct sn_atomic_file *a) { return a->tmp; }

int sn_atomic_commit(struct sn_atomic_file *a, struct sn_err *err)
{
    int rc = SN_OK;
    if (fflush(a->f) != 0 || ferror(a->f))
        rc = sn_err_set(err, SN_E_IO, "%s: write failed: %s", a->tmp, strerror(errno));
    else if (fsync(fileno(a->f)) != 0)
        rc = sn_err_set(err, SN_E_IO, "fsync %s: %s", a->tmp, strerror(errno));
    if (fclose(a->f) != 0 && !rc)
        rc = sn_err_set(err, SN_E_IO, "%s: close failed: %s", a->tmp, strerror(errno));
    a->f = NULL;
    if (!rc)
        rc = sn_rename_durable(a->tmp, a->path, err);
    if (rc) {
        sn_atomic_abort(a);
        return rc;
    }
    sn_free(a->tmp);
    sn_free(a->path);
    sn_free(a);
    return SN_OK;
}

/* Plain write(2)/fsync(2)/close(2), not stdio: each call's result is checked where it happens
** (stdio would report a failed write only at a later flush, without the errno), and the calls
** go through the dynamic linker, so tests can make them fail (tests/shim/enospc.c). */
int sn_atomic_write(const char *path, const void *data, size_t n, struct sn_err *err)
{
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".tmp.%ld", (long)getpid());
    int rc = sn_path_check_len(path, suffix, err);
    if (rc)
        return rc;
    size_t tn = strlen(path) + sizeof suffix;
    char *tmp = sn_malloc(tn);
    if (!tmp)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    snprintf(tmp, tn, "%s%s", path, suffix);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = path_error(path, suffix, errno, err);
        sn_free(tmp);
        return rc;
    }
    const char *p = data;
    size_t left = n;
    while (left && !rc) {
        ssize_t k = write(fd, p, left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            rc = sn_err_set(err, SN_E_IO, "%s: write failed after %zu of %zu bytes: %s; %s was "
                            "not changed", tmp, n - left, n, k < 0 ? strerror(errno) :
                            "no progress", path);
        else {
            p += k;
            left -= (size_t)k;
        }
    }
    if (!rc && fsync(fd) != 0)
        rc = sn_err_set(err, SN_E_IO, "fsync %s: %s; %s was not changed", tmp, strerror(errno),
                        path);
    if (close(fd) != 0 && !rc)
        rc = sn_err_set(err, SN_E_IO, "%s: close failed: %s; %s was not changed", tmp,
                        strerror(errno), path);
    if (!rc)
        rc = sn_rename_durable(tmp, path, err);
    if (rc)
        unlink(tmp);
    sn_free(tmp);
    return rc;
}

/* ---- line reader ---- */

struct sn_lines {
    FILE    *f;
    char    *path;
    bool     is_gzip;       /* decided by the magic bytes 1f 8b, not by the name */
    bool     in_member;     /* inside a gzip member (inflate has unfinished state) */
    z_stream zs;
    bool     zs_ready;
    unsigned char *raw;     /* compressed (or plain) input not yet consumed */
    size_t   raw_len, raw_pos;
    bool     raw_eof;
    uint64_t raw_offset;    /* file offset of raw[0] */
    char    *chunk;         /* decoded bytes not yet returned */
    size_t   chunk_len, chunk_pos;
    struct sn_buf line;
    uint64_t lineno;
    bool     eof;
    bool     stream;        /* a pipe, socket or terminal: read(2) what is there, never wait
                            ** for a full buffer, so a coprocess sees each line as it arrives */
};

enum { LINES_CHUNK = 1 << 16, LINES_RAW = 1 << 16 };

/* Fills r->raw from r->f: a regular file by fread (whole buffers), a stream by one read(2)
** that returns as soon as any bytes are there (retried on EINTR). *got = 0 at end of input. */
static int raw_read(struct sn_lines *r, size_t *got, struct sn_err *err)
{
    *got = 0;
    if (!r->stream) {
        *got = fread(r->raw, 1, LINES_RAW, r->f);
        if (ferror(r->f))
            return sn_err_set(err, SN_E_IO, "%s: read error at byte %llu", r->path,
                              (unsigned long long)r->raw_offset);
        return SN_OK;
    }
    for (;;) {
        ssize_t n = read(fileno(r->f), r->raw, LINES_RAW);
        if (n >= 0) {
            *got = (size_t)n;
            return SN_OK;
        }
        if (errno != EINTR)
            return sn_err_set(err, SN_E_IO, "%s: read error at byte %llu: %s", r->path,
                              (unsigned long long)r->raw_offset, strerror(errno));
    }
}

int sn_lines_open(const char *path, size_t max_line, struct sn_lines **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_lines *r = sn_calloc(1, sizeof *r);
    if (!r)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    r->path = sn_strdup(path);
    r->chunk = sn_malloc(LINES_CHUNK);
    r->raw = sn_malloc(LINES_RAW);
    r->line.max = max_line ? max_line : ((size_t)256 << 20);
    if (!r->path || !r->chunk || !r->raw) {
        sn_lines_close(r);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    }
    r->f = fopen(path, "rb");
    if (!r->f || sn_stream_is_dir(r->f)) {
        int rc = r->f ? sn_err_set(err, SN_E_IO, "%s: is a directory (expected a file)", path)
                      : sn_err_set(err, SN_E_IO, "%s: %s", path, strerror(errno));
        sn_lines_close(r);
        return rc;
    }
    struct stat st;
    r->stream = fstat(fileno(r->f), &st) == 0 && !S_ISREG(st.st_mode);
    int rc = raw_read(r, &r->raw_len, err);
    /* the gzip magic is two bytes: a stream may deliver the first alone */
    while (!rc && r->stream && r->raw_len == 1 && r->raw[0] == 0x1f) {
        size_t more = 0;
        ssize_t n;
        do
            n = read(fileno(r->f), r->raw + 1, LINES_RAW - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
            rc = sn_err_set(err, SN_E_IO, "%s: read error: %s", path, strerror(errno));
        else
            more = (size_t)n;
        r->raw_len += more;
        if (!more)
            break;
    }
    if (rc) {
        sn_lines_close(r);
        return rc;
    }
    r->raw_eof = r->stream ? r->raw_len == 0 : r->raw_len < LINES_RAW;
    r->is_gzip = r->raw_len >= 2 && r->raw[0] == 0x1f && r->raw[1] == 0x8b;
    if (r->is_gzip) {
        /* 16 + MAX_WBITS: gzip wrapper only. Members are decoded one after another (a file
        ** appended to one member per record is valid gzip); zlib's gzread would silently
        ** ignore a cut-short member after a complete one, which hides lost records. */
        if (inflateInit2(&r->zs, 16 + MAX_WBITS) != Z_OK) {
            sn_lines_close(r);
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory (zlib)", path);
        }
        r->zs_ready = true;
    }
    *out = r;
    return SN_OK;
}

static int raw_refill(struct sn_lines *r, struct sn_err *err)
{
    if (r->raw_pos < r->raw_len || r->raw_eof)
        return SN_OK;
    r->raw_offset += r->raw_len;
    r->raw_pos = 0;
    int rc = raw_read(r, &r->raw_len, err);
    if (rc)
        return rc;
    if (r->stream ? r->raw_len == 0 : r->raw_len < LINES_RAW)
        r->raw_eof = true;
    return SN_OK;
}

static int truncated(struct sn_lines *r, struct sn_err *err, const char *what)
{
    return sn_err_set(err, SN_E_FORMAT,
                      "%s: truncated or corrupt gzip after line %llu (%s at byte %llu); "
                      "the file was probably cut short by a killed writer",
                      r->path, (unsigned long long)r->lineno, what,
                      (unsigned long long)(r->raw_offset + r->raw_pos));
}

static int lines_fill(struct sn_lines *r, struct sn_err *err)
{
    r->chunk_len = 0;
    r->chunk_pos = 0;
    for (;;) {
        int rc = raw_refill(r, err);
        if (rc)
            return rc;
        size_t avail = r->raw_len - r->raw_pos;
        if (!r->is_gzip) {
            if (!avail) {
                r->eof = true;
                return SN_OK;
            }
            memcpy(r->chunk, r->raw + r->raw_pos, avail);
            r->chunk_len = avail;
            r->raw_pos += avail;
            return SN_OK;
        }
        if (!avail) {
            if (r->in_member)
                return truncated(r, err, "member cut short");
            r->eof = true;
            return SN_OK;
        }
        r->zs.next_in = r->raw + r->raw_pos;
        r->zs.avail_in = (uInt)avail;
        r->zs.next_out = (Bytef *)r->chunk;
        r->zs.avail_out = LINES_CHUNK;
        r->in_member = true;
        int z = inflate(&r->zs, Z_NO_FLUSH);
        r->raw_pos += avail - r->zs.avail_in;
        r->chunk_len = LINES_CHUNK - r->zs.avail_out;
        if (z == Z_STREAM_END) {
            r->in_member = false;
            inflateReset(&r->zs);
        } else if (z == Z_DATA_ERROR || z == Z_NEED_DICT) {
            return truncated(r, err, r->zs.msg ? r->zs.msg : "data error");
        } else if (z == Z_MEM_ERROR) {
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory (zlib)", r->path);
        } else if (z != Z_OK && z != Z_BUF_ERROR) {
            return truncated(r, err, "inflate failed");
        }
        if (r->chunk_len)
            return SN_OK;
    }
}

int sn_lines_next(struct sn_lines *r, const char **line, size_t *len, bool *complete,
                  struct sn_err *err)
{
    *line = NULL;
    if (len)
        *len = 0;
    if (complete)
        *complete = false;
    sn_buf_reset(&r->line);
    bool have_any = false;
    for (;;) {
        if (r->chunk_pos == r->chunk_len) {
            if (r->eof)
                break;
            int rc = lines_fill(r, err);
            if (rc)
                return rc;
            if (r->eof)
                break;
        }
        char *start = r->chunk + r->chunk_pos;
        size_t avail = r->chunk_len - r->chunk_pos;
        char *nl = memchr(start, '\n', avail);
        size_t take = nl ? (size_t)(nl - start) : avail;
        if (sn_buf_append(&r->line, start, take, err))
            return sn_err_wrap(err, "%s:%llu: line too long", r->path,
                               (unsigned long long)r->lineno + 1);
        have_any = true;
        r->chunk_pos += take + (nl ? 1 : 0);
        if (nl) {
            r->lineno++;
            if (r->line.len && r->line.data[r->line.len - 1] == '\r')
                r->line.data[--r->line.len] = '\0';
            *line = r->line.data ? r->line.data : "";
            if (len)
                *len = r->line.len;
            if (complete)
                *complete = true;
            return SN_OK;
        }
    }
    if (have_any && r->line.len) { /* last line without a newline: maybe cut by a kill */
        r->lineno++;
        *line = r->line.data;
        if (len)
            *len = r->line.len;
    }
    return SN_OK;
}

uint64_t sn_lines_lineno(const struct sn_lines *r) { return r->lineno; }
const char *sn_lines_path(const struct sn_lines *r) { return r->path; }

void sn_lines_close(struct sn_lines *r)
{
    if (!r)
        return;
    if (r->zs_ready)
        inflateEnd(&r->zs);
    if (r->f)
        fclose(r->f);
    sn_free(r->raw);
    sn_buf_free(&r->line);
    sn_free(r->chunk);
    sn_free(r->path);
    sn_free(r);
}

/* ---- path expansion ---- */

struct path_list {
    char **v;
    size_t n, cap;
};

static int path_push(struct path_list *l, const char *p, struct sn_err *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = sn_realloc(l->v, cap * sizeof *v);
        if (!v)
            return sn_err_set(err, SN_E_NOMEM, "out of memory listing files");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = sn_strdup(p);
    if (!l->v[l->n])
        return sn_err_set(err, SN_E_NOMEM, "out of memory listing files");
    l->n++;
    return SN_OK;
}

static bool has_suffix(const char *name, const char *const *suffixes)
{
    size_t n = strlen(name);
    for (; suffixes && *suffixes; suffixes++) {
        size_t k = strlen(*suffixes);
        if (n >= k && strcmp(name + n - k, *suffixes) == 0)
            return true;
    }
    return false;
}

static int walk(const char *dir, const char *const *suffixes, struct path_list *l, int depth,
                struct sn_err *err)
{
    if (depth > 32)
        return sn_err_set(err, SN_E_ARG, "%s: directories nested too deeply", dir);
    DIR *d = opendir(dir);
    if (!d)
        return sn_err_set(err, SN_E_IO, "%s: %s", dir, strerror(errno));
    struct dirent *e;
    int rc = SN_OK;
    char path[4096];
    while (!rc && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue; /* hidden files and temp files of atomic writers */
        if (strstr(e->d_name, ".tmp."))
            continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path)
            continue;
        if (sn_path_is_dir(path))
            rc = walk(path, suffixes, l, depth + 1, err);
        else if (has_suffix(e->d_name, suffixes))
            rc = path_push(l, path, err);
    }
    closedir(d);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sn_paths_expand(const char *const *inputs, size_t n_inputs, const char *const *suffixes,
                    char ***out, size_t *n_out, struct sn_err *err)
{
    struct path_list l = {0};
    int rc = SN_OK;
    *out = NULL;
    *n_out = 0;
    for (size_t i = 0; i < n_inputs && !rc; i++) {
        if (sn_path_is_dir(inputs[i]))
            rc = walk(inputs[i], suffixes, &l, 0, err);
        else if (sn_path_exists(inputs[i]))
            rc = path_push(&l, inputs[i], err);
        else
            rc = sn_err_set(err, SN_E_IO, "%s: no such file or directory", inputs[i]);
    }
    if (rc) {
        sn_paths_free(l.v, l.n);
        return rc;
    }
    if (l.n) /* an empty list has no array: qsort must not see NULL */
        qsort(l.v, l.n, sizeof *l.v, cmp_str);
    size_t w = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (w && strcmp(l.v[w - 1], l.v[i]) == 0)
            sn_free(l.v[i]);
        else
            l.v[w++] = l.v[i];
    }
    *out = l.v;
    *n_out = w;
    return SN_OK;
}

void sn_paths_free(char **paths, size_t n)
{
    if (!paths)
        return;
    for (size_t i = 0; i < n; i++)
        sn_free(paths[i]);
    sn_free(paths);
}
