/* tests/shim/enospc.c: a full disk on demand, for tests (LD_PRELOAD=libsn_enospc.so).
**
** SN_ENOSPC_AFTER=N    the first N bytes written to matching files succeed; every later write
**                      (write, pwrite, pwrite64, writev) and fsync/fdatasync of such a file
**                      fails with ENOSPC, as on a file system that has just filled up. A write
**                      that crosses the limit is cut short (a partial write), as the kernel does.
** SN_ENOSPC_MATCH=S    only files whose path contains S count and fail (default: every regular
**                      file; terminals, pipes and sockets are never touched, so messages still
**                      reach stderr).
** It reaches whatever calls these functions through the dynamic linker: our code and HDF5's
** file driver. glibc's stdio calls its internal write directly, so FILE streams are tested
** with /dev/full instead. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static _Atomic long long budget = -2; /* -2: not read yet; -1: no limit */

static long long limit(void)
{
    long long b = atomic_load(&budget);
    if (b == -2) {
        const char *e = getenv("SN_ENOSPC_AFTER");
        long long v = e && *e ? strtoll(e, NULL, 10) : -1;
        long long expect = -2;
        atomic_compare_exchange_strong(&budget, &expect, v < 0 ? -1 : v);
        b = atomic_load(&budget);
    }
    return b;
}

static int matches(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    const char *m = getenv("SN_ENOSPC_MATCH");
    if (!m || !*m)
        return 1;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return 0;
    path[n] = '\0';
    return strstr(path, m) != NULL;
}

/* How many of n bytes may be written now: n, fewer (a partial write), or -1 (ENOSPC). */
static ssize_t allow(int fd, size_t n)
{
    if (limit() < 0 || !matches(fd))
        return (ssize_t)n;
    for (;;) {
        long long b = atomic_load(&budget);
        if (b <= 0) {
            errno = ENOSPC;
            return -1;
        }
        long long take = (long long)n < b ? (long long)n : b;
        if (atomic_compare_exchange_weak(&budget, &b, b - take))
            return (ssize_t)take;
    }
}

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef int (*sync_fn)(int);
/* dlsym returns an object pointer, which ISO C does not convert to a function pointer
** (-Wpedantic); its bytes are copied instead, which is what POSIX guarantees to work. */
#define REAL(name, type)                                                                     \
    static type real_##name;                                                                 \
    if (!real_##name) {                                                                      \
        void *sym_ = dlsym(RTLD_NEXT, #name);                                                \
        memcpy(&real_##name, &sym_, sizeof real_##name);                                     \
    }                                                                                        \
    (void)0

ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(write, write_fn);
    ssize_t k = allow(fd, n);
    return k < 0 ? -1 : real_write(fd, buf, (size_t)k);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite, pwrite_fn);
    ssize_t k = allow(fd, n);
    return k < 0 ? -1 : real_pwrite(fd, buf, (size_t)k, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite64, pwrite_fn);
    ssize_t k = allow(fd, n);
    return k < 0 ? -1 : real_pwrite64(fd, buf, (size_t)k, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    REAL(writev, writev_fn);
    size_t n = 0;
    for (int i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    ssize_t k = allow(fd, n);
    if (k < 0)
        return -1;
    if ((size_t)k == n)
        return real_writev(fd, iov, cnt);
    REAL(write, write_fn);
    return cnt > 0 ? real_write(fd, iov[0].iov_base, (size_t)k < iov[0].iov_len ? (size_t)k
                                                                                  : iov[0].iov_len)
                   : 0;
}

static int sync_fails(int fd)
{
    return limit() >= 0 && atomic_load(&budget) <= 0 && matches(fd);
}

int fsync(int fd)
{
    REAL(fsync, sync_fn);
    if (sync_fails(fd)) {
        errno = ENOSPC;
        return -1;
    }
    return real_fsync(fd);
}

int fdatasync(int fd)
{
    REAL(fdatasync, sync_fn);
    if (sync_fails(fd)) {
        errno = ENOSPC;
        return -1;
    }
    return real_fdatasync(fd);
}
