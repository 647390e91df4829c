/* tests/test_common_core.c: errors, buffers, RNG, SHA-256 (FIPS 180-4 vectors), allocation
** failure injection, line readers over plain and gzip files, path expansion, output paths the
** system cannot hold (refused by name and size, nothing left behind). */
#include "common/common.h"
#include "testutil.h"

#include <dirent.h>
#include <limits.h>
#include <unistd.h>
#include <zlib.h>

static void test_err(void)
{
    struct sn_err err = {0};
    CHECK(sn_err_set(&err, SN_E_IO, "first %d", 1) == SN_E_IO);
    CHECK(sn_err_set(&err, SN_E_FORMAT, "second") == SN_E_IO); /* first failure wins */
    CHECK_STR(err.msg, "first 1");
    sn_err_wrap(&err, "ctx %s", "a.json");
    CHECK_STR(err.msg, "ctx a.json: first 1");
    sn_err_clear(&err);
    sn_err_set(&err, SN_E_ARG, "line1\nline2");
    CHECK(strchr(err.msg, '\n') == NULL); /* one-line messages */
    CHECK_STR(sn_status_name(SN_E_NOMEM), "out of memory");
    CHECK(sn_err_set(NULL, SN_E_ARG, "x") == SN_E_ARG);
}

static void test_buf(void)
{
    struct sn_err err = {0};
    struct sn_buf b = {.max = 16};
    CHECK(sn_buf_puts(&b, "hello ", &err) == SN_OK);
    CHECK(sn_buf_printf(&b, &err, "%d", 42) == SN_OK);
    CHECK_STR(b.data, "hello 42");
    CHECK(sn_buf_puts(&b, "0123456789", &err) == SN_E_NOMEM); /* over the ceiling */
    CHECK(b.len == 8);
    sn_buf_free(&b);
    size_t out;
    CHECK(!sn_mul_ok(SIZE_MAX / 2, 3, &out));
    CHECK(sn_mul_ok(1000, 1000, &out) && out == 1000000);
}

static void test_rng(void)
{
    struct sn_rng a, b;
    sn_rng_seed(&a, 42);
    sn_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++)
        CHECK(sn_rng_u64(&a) == sn_rng_u64(&b));
    /* Reference value: xoshiro256** seeded via splitmix64(42); pins the stream so a change of
    ** generator (which would change every simulated debate) is caught. Recomputed by hand from
    ** the published algorithms in tests/ref/rng_ref.py. */
    sn_rng_seed(&a, 0);
    uint64_t first = sn_rng_u64(&a);
    CHECK_MSG(first == 0x99ec5f36cb75f2b4ull, "got %016llx", (unsigned long long)first);
    sn_rng_seed(&a, 7);
    int counts[5] = {0};
    double sum = 0, sq = 0;
    for (int i = 0; i < 100000; i++) {
        counts[sn_rng_below(&a, 5)]++;
        double u = sn_rng_uniform(&a);
        CHECK(u >= 0.0 && u < 1.0);
        double z = sn_rng_normal(&a);
        sum += z;
        sq += z * z;
    }
    for (int k = 0; k < 5; k++)
        CHECK_CLOSE(counts[k], 20000, 600, 0); /* > 4 sigma of a binomial(1e5, 0.2) */
    CHECK_CLOSE(sum / 1e5, 0.0, 0.02, 0);
    CHECK_CLOSE(sq / 1e5, 1.0, 0.03, 0);
    CHECK(sn_seed_derive(1, "item", 3) == sn_seed_derive(1, "item", 3));
    CHECK(sn_seed_derive(1, "item", 3) != sn_seed_derive(1, "item", 4));
    CHECK(sn_seed_derive(1, "item", 3) != sn_seed_derive(1, "agent", 3));
    int v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, seen = 0;
    sn_rng_shuffle(&a, v, 10, sizeof v[0]);
    for (int i = 0; i < 10; i++)
        seen |= 1 << v[i];
    CHECK(seen == 0x3ff);
}

static void test_sha256(void)
{
    char hex[65];
    sn_sha256_hex("", 0, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sn_sha256_hex("abc", 3, hex);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sn_sha256_hex(two, strlen(two), hex);
    CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a' fed in uneven pieces exercises the block boundary logic */
    struct sn_sha256 s;
    uint8_t d[32];
    char chunk[997];
    memset(chunk, 'a', sizeof chunk);
    sn_sha256_init(&s);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        sn_sha256_update(&s, chunk, n);
        left -= n;
    }
    sn_sha256_final(&s, d);
    static const uint8_t want[4] = {0xcd, 0xc7, 0x6e, 0x5c};
    CHECK(memcmp(d, want, 4) == 0);
}

static void test_alloc_failure(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/small.txt", dir);
    struct sn_err err = {0};
    CHECK(sn_atomic_write(path, "abc\n", 4, &err) == SN_OK);
    /* Fail the N-th allocation for N = 1, 2, ... until the read succeeds: each failure must be
    ** a clean SN_E_NOMEM (ASan checks nothing leaks). */
    int failures = 0;
    for (uint64_t n = 1; n < 50; n++) {
        char *text = NULL;
        struct sn_lines *r = NULL;
        sn_err_clear(&err);
        sn_alloc_fail_after(n);
        int rc = sn_file_read(path, 0, &text, NULL, &err);
        if (!rc)
            rc = sn_lines_open(path, 0, &r, &err);
        sn_alloc_fail_after(0);
        sn_free(text);
        sn_lines_close(r);
        if (rc == SN_OK)
            break;
        CHECK(rc == SN_E_NOMEM);
        failures++;
    }
    CHECK(failures >= 2);
}

static void write_gz(const char *path, const char *text, size_t cut)
{
    gzFile g = gzopen(path, "wb");
    gzwrite(g, text, (unsigned)strlen(text));
    gzclose(g);
    if (cut) {
        FILE *f = fopen(path, "rb");
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fclose(f);
        CHECK(truncate(path, n - (long)cut) == 0);
    }
}

static void test_lines(const char *dir)
{
    char plain[1024], gz[1024], bad[1024];
    struct sn_err err = {0};
    snprintf(plain, sizeof plain, "%s/a.jsonl", dir);
    snprintf(gz, sizeof gz, "%s/b.jsonl.gz", dir);
    snprintf(bad, sizeof bad, "%s/c.jsonl.gz", dir);
    CHECK(sn_atomic_write(plain, "one\r\ntwo\n\nfour-partial", 22, &err) == SN_OK);
    struct sn_lines *r;
    const char *line;
    size_t len;
    bool complete;
    CHECK(sn_lines_open(plain, 0, &r, &err) == SN_OK);
    const char *want[] = {"one", "two", "", "four-partial"};
    for (int i = 0; i < 4; i++) {
        CHECK(sn_lines_next(r, &line, &len, &complete, &err) == SN_OK);
        CHECK_STR(line, want[i]);
        CHECK(complete == (i < 3));
        CHECK(sn_lines_lineno(r) == (uint64_t)i + 1);
    }
    CHECK(sn_lines_next(r, &line, &len, &complete, &err) == SN_OK && line == NULL);
    sn_lines_close(r);

    /* A long gzip file, read whole; then the same file cut short must be an error naming it. */
    struct sn_buf text = {0};
    for (int i = 0; i < 20000; i++)
        sn_buf_printf(&text, &err, "{\"i\": %d, \"pad\": \"%08x\"}\n", i, i * 2654435761u);
    write_gz(gz, text.data, 0);
    write_gz(bad, text.data, 100);
    sn_buf_free(&text);
    CHECK(sn_lines_open(gz, 0, &r, &err) == SN_OK);
    int n = 0;
    while (sn_lines_next(r, &line, &len, &complete, &err) == SN_OK && line)
        n++;
    CHECK(n == 20000);
    sn_lines_close(r);
    CHECK(sn_lines_open(bad, 0, &r, &err) == SN_OK);
    int rc;
    n = 0;
    while ((rc = sn_lines_next(r, &line, &len, &complete, &err)) == SN_OK && line)
        n++;
    CHECK(rc == SN_E_FORMAT);
    CHECK(strstr(err.msg, "c.jsonl.gz") != NULL);
    CHECK(strstr(err.msg, "truncated") != NULL || strstr(err.msg, "corrupt") != NULL);
    CHECK(n < 20000);
    sn_lines_close(r);

    /* Complete members followed by the first bytes of a member cut short (a writer killed
    ** while appending one record): zlib's gzread ignores such tails; we must report them. */
    CHECK(sn_test_sh("cp '%s' '%s.tail' && printf '\\037\\213\\010\\000' >> '%s.tail'", gz, bad,
                     bad) == 0);
    char tail[1100];
    snprintf(tail, sizeof tail, "%s.tail", bad);
    sn_err_clear(&err);
    CHECK(sn_lines_open(tail, 0, &r, &err) == SN_OK);
    n = 0;
    while ((rc = sn_lines_next(r, &line, &len, &complete, &err)) == SN_OK && line)
        n++;
    CHECK_MSG(rc == SN_E_FORMAT && n == 20000, "rc %d n %d", rc, n);
    CHECK(strstr(err.msg, "after line 20000") != NULL);
    sn_lines_close(r);

    /* line length ceiling */
    sn_err_clear(&err);
    CHECK(sn_lines_open(plain, 2, &r, &err) == SN_OK);
    CHECK(sn_lines_next(r, &line, &len, &complete, &err) == SN_E_NOMEM);
    CHECK(strstr(err.msg, "a.jsonl:1") != NULL);
    sn_lines_close(r);
}

static void test_paths(const char *dir)
{
    struct sn_err err = {0};
    char sub[1024], p[1200];
    snprintf(sub, sizeof sub, "%s/tree/x/y", dir);
    CHECK(sn_mkdirs(sub, &err) == SN_OK);
    snprintf(p, sizeof p, "%s/tree/x/y/b.jsonl.gz", dir);
    sn_atomic_write(p, "", 0, &err);
    snprintf(p, sizeof p, "%s/tree/a.jsonl", dir);
    sn_atomic_write(p, "", 0, &err);
    snprintf(p, sizeof p, "%s/tree/notes.txt", dir);
    sn_atomic_write(p, "", 0, &err);
    snprintf(p, sizeof p, "%s/tree/a.jsonl.tmp.123", dir);
    sn_atomic_write(p, "", 0, &err);
    snprintf(p, sizeof p, "%s/tree", dir);
    const char *in[] = {p, p};
    const char *suf[] = {".jsonl", ".jsonl.gz", NULL};
    char **paths;
    size_t n;
    CHECK(sn_paths_expand(in, 2, suf, &paths, &n, &err) == SN_OK);
    CHECK(n == 2); /* de-duplicated, temp files and other suffixes ignored */
    if (n == 2) {
        CHECK(strstr(paths[0], "tree/a.jsonl") != NULL);
        CHECK(strstr(paths[1], "x/y/b.jsonl.gz") != NULL);
    }
    sn_paths_free(paths, n);
    const char *missing[] = {"/nonexistent/sentinel"};
    CHECK(sn_paths_expand(missing, 1, suf, &paths, &n, &err) == SN_E_IO);
}

/* Entries in dir other than . and .. */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void test_long_paths(const char *dir)
{
    struct sn_err err = {0};
    char base[1100], want[600], x300[301], x250[251], p[6000];
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".tmp.%ld", (long)getpid());
    snprintf(base, sizeof base, "%s/long", dir);
    CHECK(sn_mkdirs(base, &err) == SN_OK);
    memset(x300, 'x', 300);
    x300[300] = 0;
    memset(x250, 'y', 250);
    x250[250] = 0;

    /* the exact message: a long path and a long name are shown by their ends and sizes */
    snprintf(p, sizeof p, "o/%s/f", x300);
    CHECK(sn_path_check_len(p, NULL, &err) == SN_E_ARG);
    snprintf(want, sizeof want, "o/%.38s[...224 bytes...]%.38s/f: file name too long ('%.40s"
             "[...220 bytes...]%.40s' is 300 bytes; the system allows %d per name)", x300, x300,
             x300, x300, NAME_MAX);
    CHECK_STR(err.msg, want);
    err = (struct sn_err){0};
    CHECK(sn_path_check_len("o/f", NULL, &err) == SN_OK && err.code == SN_OK);

    /* a name too long: mkdir -p makes nothing, not even the directories above it */
    snprintf(p, sizeof p, "%s/a/%s/b", base, x300);
    CHECK(sn_mkdirs(p, &err) == SN_E_ARG);
    snprintf(want, sizeof want, "is 300 bytes; the system allows %d per name)", NAME_MAX);
    CHECK_MSG(strstr(err.msg, ": file name too long ('xxxx") && strstr(err.msg, want), "%s",
              err.msg);
    CHECK(dir_entries(base) == 0);

    /* a file name that fits alone but not with the temp suffix of the atomic write */
    snprintf(p, sizeof p, "%s/%s", base, x250);
    err = (struct sn_err){0};
    CHECK(sn_atomic_write(p, "data", 4, &err) == SN_E_ARG);
    snprintf(want, sizeof want, "is 250 bytes, %zu with the suffix '%s' of the temporary file "
             "written first; the system allows %d per name)", 250 + strlen(suffix), suffix,
             NAME_MAX);
    CHECK_MSG(strstr(err.msg, ": file name too long ('yyyy") && strstr(err.msg, want), "%s",
              err.msg);
    CHECK(dir_entries(base) == 0);
    snprintf(p, sizeof p, "%s/%s.json", base, x300);
    struct sn_atomic_file *af = (void *)1;
    err = (struct sn_err){0};
    CHECK(sn_atomic_open(p, &af, &err) == SN_E_ARG && af == NULL);
    CHECK_MSG(strstr(err.msg, "file name too long") && strstr(err.msg, "is 305 bytes"), "%s",
              err.msg);
    CHECK(dir_entries(base) == 0);

    /* a whole path too long, every name in it short: shown shortened, the size in full */
    size_t n = (size_t)snprintf(p, sizeof p, "%s", base);
    while (n < 5000)
        n += (size_t)snprintf(p + n, sizeof p - n, "/%.99s", x300);
    err = (struct sn_err){0};
    CHECK(sn_mkdirs(p, &err) == SN_E_ARG);
    snprintf(want, sizeof want, ": file name too long (the path is %zu bytes; the system allows "
             "%d)", n, PATH_MAX - 1);
    CHECK_MSG(strstr(err.msg, want) && strstr(err.msg, " bytes...]"), "%s", err.msg);
    CHECK(dir_entries(base) == 0);
    err = (struct sn_err){0};
    CHECK(sn_atomic_write(p, "data", 4, &err) == SN_E_ARG);
    snprintf(want, sizeof want, ": file name too long (the path is %zu bytes, %zu with the "
             "suffix '%s' of the temporary file written first; the system allows %d)", n,
             n + strlen(suffix), suffix, PATH_MAX - 1);
    CHECK_MSG(strstr(err.msg, want), "%s", err.msg);
    CHECK(dir_entries(base) == 0);

    /* sn_path_fmt: a path that fits, one longer than its buffer (never cut), one longer
    ** than the system allows */
    char buf[64];
    err = (struct sn_err){0};
    CHECK(sn_path_fmt(buf, sizeof buf, &err, "%s/%s", "out", "shards") == SN_OK);
    CHECK(!strcmp(buf, "out/shards"));
    char name[101];
    memset(name, 'z', 100);
    name[100] = '\0';
    CHECK(sn_path_fmt(buf, sizeof buf, &err, "out/%s", name) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, ": file name too long (the path is 104 bytes; this command holds "
                     "at most 63)"), "%s", err.msg);
    err = (struct sn_err){0};
    char big[PATH_MAX + 8];
    CHECK(sn_path_fmt(big, sizeof big, &err, "out/%s/%s", name, p) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, ": file name too long (the path is ") &&
              strstr(err.msg, "the system allows"), "%s", err.msg);
}

int main(void)
{
    const char *dir = sn_test_dir("common_core");
    test_err();
    test_buf();
    test_rng();
    test_sha256();
    test_alloc_failure(dir);
    test_lines(dir);
    test_paths(dir);
    test_long_paths(dir);
    return sn_test_done();
}
