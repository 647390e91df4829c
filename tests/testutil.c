/* tests/testutil.c: see testutil.h. */
#include "testutil.h"

#include <stdarg.h>
#include <sys/wait.h>

int sn_test_failures, sn_test_checks;

int sn_test_done(void)
{
    printf("%d passed, %d failed\n", sn_test_checks - sn_test_failures, sn_test_failures);
    return sn_test_failures ? 1 : 0;
}

int sn_test_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

const char *sn_test_dir(const char *name)
{
    static char path[1024];
    const char *base = getenv("SENTINEL_TMP");
    snprintf(path, sizeof path, "%s/%s", base && *base ? base : "/tmp", name);
    if (sn_test_sh("rm -rf '%s' && mkdir -p '%s'", path, path) != 0) {
        fprintf(stderr, "cannot make %s\n", path);
        exit(2);
    }
    return path;
}

const char *sn_test_path(const char *dir, const char *name)
{
    static char buf[8][2300];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

void sn_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) == EOF || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

const char *sn_test_bin(void)
{
    const char *bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN is not set\n");
        exit(1);
    }
    return bin;
}
