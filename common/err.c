/* common/err.c: error records, logging, allocation (with injectable failure), byte buffers. */
#include "common/common.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static const char *const status_names[] = {
    "ok", "bad argument", "i/o error", "format error", "out of memory",
    "backend error", "cancelled", "unsupported",
};
_Static_assert(sizeof status_names / sizeof status_names[0] == SN_STATUS_COUNT,
               "status_names out of sync with enum sn_status");

const char *sn_status_name(int code)
{
    return code >= 0 && code < SN_STATUS_COUNT ? status_names[code] : "unknown status";
}

int sn_err_set(struct sn_err *err, int code, const char *fmt, ...)
{
    if (!err || err->code != SN_OK)
        return err && err->code ? err->code : code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    /* One line: a message built from outside text must not smuggle a newline in. */
    for (char *p = err->msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return code;
}

int sn_err_wrap(struct sn_err *err, const char *fmt, ...)
{
    if (!err)
        return SN_E_ARG;
    char prefix[256], old[sizeof err->msg];
    size_t room;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    room = strlen(prefix);
    if (room > sizeof err->msg - 3)
        room = sizeof err->msg - 3;
    memcpy(err->msg, prefix, room);
    memcpy(err->msg + room, ": ", 2);
    size_t rest = sizeof err->msg - room - 3;
    size_t n_old = strnlen(old, rest);
    memcpy(err->msg + room + 2, old, n_old);
    err->msg[room + 2 + n_old] = '\0';
    return err->code;
}

void sn_err_clear(struct sn_err *err)
{
    if (err) {
        err->code = SN_OK;
        err->msg[0] = '\0';
    }
}

/* ---- logging ---- */

static enum sn_log_level log_level = SN_LOG_INFO; /* process-wide by design: set by cli/ */

void sn_log_set_level(enum sn_log_level level) { log_level = level; }
enum sn_log_level sn_log_get_level(void) { return log_level; }

void sn_log(enum sn_log_level level, const char *fmt, ...)
{
    static const char *const tags[] = {"error", "warning", "info", "debug"};
    if (level > log_level)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (level == SN_LOG_INFO)
        fprintf(stderr, "sentinel: %s\n", line);
    else
        fprintf(stderr, "sentinel: %s: %s\n", tags[level], line);
}

/* ---- memory ---- */

static uint64_t alloc_fail_at;  /* 0 = never; test hook (docs/design.md §7) */
static uint64_t alloc_count;
static uint64_t alloc_bytes;    /* bytes asked for since start; test hook (sn_alloc_bytes) */

void sn_alloc_fail_after(uint64_t n)
{
    alloc_fail_at = n;
    alloc_count = 0;
}

static bool alloc_should_fail(void)
{
    if (!alloc_fail_at)
        return false;
    return ++alloc_count >= alloc_fail_at;
}

uint64_t sn_alloc_bytes(void) { return alloc_bytes; }

void *sn_malloc(size_t n)
{
    alloc_bytes += n;
    return alloc_should_fail() ? NULL : malloc(n ? n : 1);
}
void *sn_calloc(size_t c, size_t s)
{
    alloc_bytes += (uint64_t)c * s;
    return alloc_should_fail() ? NULL : calloc(c ? c : 1, s ? s : 1);
}
void *sn_realloc(void *p, size_t n)
{
    alloc_bytes += n;
    return alloc_should_fail() ? NULL : realloc(p, n ? n : 1);
}
void  sn_free(void *p) { free(p); }

char *sn_strndup(const char *s, size_t n)
{
    char *d = sn_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *sn_strdup(const char *s) { return s ? sn_strndup(s, strlen(s)) : NULL; }

bool sn_mul_ok(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a)
        return false;
    *out = a * b;
    return true;
}

bool sn_tune_host_allocator(size_t bytes)
{
#ifdef __GLIBC__
    if (bytes > ((size_t)1 << 30))
        bytes = (size_t)1 << 30;
    int v = (int)bytes;
    /* Order matters: a fixed mmap threshold also turns off glibc's dynamic one. */
    int ok = mallopt(M_MMAP_THRESHOLD, v);
    ok &= mallopt(M_TRIM_THRESHOLD, v);
    ok &= mallopt(M_TOP_PAD, v < (64 << 20) ? v : (64 << 20));
    return ok == 1;
#else
    (void)bytes;
    return false;
#endif
}

/* ---- buffers ---- */

int sn_buf_append(struct sn_buf *b, const void *p, size_t n, struct sn_err *err)
{
    size_t max = b->max ? b->max : ((size_t)1 << 30);
    if (n > max || b->len > max - n)
        return sn_err_set(err, SN_E_NOMEM, "buffer would exceed its limit of %zu bytes", max);
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap = cap > SIZE_MAX / 2 ? b->len + n + 1 : cap * 2;
        char *d = sn_realloc(b->data, cap);
        if (!d)
            return sn_err_set(err, SN_E_NOMEM, "out of memory growing a buffer to %zu bytes", cap);
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return SN_OK;
}

int sn_buf_puts(struct sn_buf *b, const char *s, struct sn_err *err)
{
    return sn_buf_append(b, s, strlen(s), err);
}

int sn_buf_printf(struct sn_buf *b, struct sn_err *err, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return sn_err_set(err, SN_E_ARG, "bad format string");
    if ((size_t)n < sizeof small)
        return sn_buf_append(b, small, (size_t)n, err);
    char *big = sn_malloc((size_t)n + 1);
    if (!big)
        return sn_err_set(err, SN_E_NOMEM, "out of memory formatting %d bytes", n);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = sn_buf_append(b, big, (size_t)n, err);
    sn_free(big);
    return rc;
}

void sn_buf_reset(struct sn_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void sn_buf_free(struct sn_buf *b)
{
    sn_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

double sn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
