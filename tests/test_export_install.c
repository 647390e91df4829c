/* tests/test_export_install.c: the runtime detector as an installed library (docs/export.md,
** "Embedding the detector"): `cmake --install` into a temporary prefix puts
** libsentinel_detector.so (without libtorch among its dependencies), export/detector.h and
** sentinel-detector.pc there; the C example in docs/export.md, cut out of the page as it is,
** compiles with -std=c11 -Wall -Wextra -Werror and the flags pkg-config gives, runs on a tiny
** exported detector and prints, bit for bit, the reward the library computes in this process
** and `sentinel score --exact` in a third (the same n_threads in all three). */
#include "testutil.h"
#include "export/export.h"
#include "export/write.h"
#include "tests/testutil_qwen2.h"

static struct sn_err E;
#define OK(x) CHECK_MSG((x) == SN_OK, "%s", E.msg)

int main(void)
{
    const char *build = getenv("SENTINEL_BUILD"), *src = getenv("SENTINEL_SRC");
    const char *cmake = getenv("SENTINEL_CMAKE"), *cc = getenv("SENTINEL_CC");
    if (!build || !src || !cmake || !cc) {
        fprintf(stderr, "SENTINEL_BUILD, SENTINEL_SRC, SENTINEL_CMAKE and SENTINEL_CC must be "
                        "set (tests/export_install.cmake sets them)\n");
        return 1;
    }
    const char *dir = sn_test_dir("export_install");
    char prefix[1100], mdir[1100], gguf[1100], ex[1100], pcdir[1200];
    snprintf(prefix, sizeof prefix, "%s/prefix", dir);
    snprintf(mdir, sizeof mdir, "%s/tiny", dir);
    snprintf(gguf, sizeof gguf, "%s/tiny.gguf", dir);
    snprintf(ex, sizeof ex, "%s/score", dir);

    /* 1. install */
    CHECK(sn_test_sh("'%s' --install '%s' --prefix '%s' > '%s/install.log' 2>&1", cmake, build,
                     prefix, dir) == 0);
    CHECK(sn_test_sh("test -f '%s/include/sentinel/export/detector.h' && "
                     "test -f '%s/include/sentinel/common/base.h'", prefix, prefix) == 0);
    /* the .pc and the library, wherever GNUInstallDirs put libdir */
    CHECK(sn_test_sh("pc=$(find '%s' -name sentinel-detector.pc | head -n 1); test -n \"$pc\" && "
                     "dirname \"$pc\" > '%s/pcdir.txt'", prefix, dir) == 0);
    {
        char *t = NULL;
        size_t n = 0;
        OK(sn_file_read(sn_test_path(dir, "pcdir.txt"), 0, &t, &n, &E));
        snprintf(pcdir, sizeof pcdir, "%.*s", t && n ? (int)(n - 1) : 0, t ? t : "");
        sn_free(t);
    }
    CHECK(sn_test_sh("PKG_CONFIG_PATH='%s' pkg-config --variable=libdir sentinel-detector > "
                     "'%s/libdir.txt'", pcdir, dir) == 0);
    char libdir[1200] = "";
    {
        char *t = NULL;
        size_t n = 0;
        OK(sn_file_read(sn_test_path(dir, "libdir.txt"), 0, &t, &n, &E));
        snprintf(libdir, sizeof libdir, "%.*s", t && n ? (int)(n - 1) : 0, t ? t : "");
        sn_free(t);
    }
    CHECK(sn_test_sh("test -f '%s/libsentinel_detector.so'", libdir) == 0);
    /* no libtorch (nor c10) among the library's dependencies */
    CHECK(sn_test_sh("ldd '%s/libsentinel_detector.so' > '%s/ldd.txt' && "
                     "! grep -Eq 'libtorch|libc10' '%s/ldd.txt'", libdir, dir, dir) == 0);

    /* 2. the example of docs/export.md, compiled against the installed library */
    CHECK(sn_test_sh("awk '/<!-- embed-example/ {on = 1; next} on && /^```c/ {c = 1; next} "
                     "c && /^```/ {exit} c {print}' '%s/docs/export.md' > '%s/score.c' && "
                     "test -s '%s/score.c'", src, dir, dir) == 0);
    CHECK_MSG(sn_test_sh("cd '%s' && '%s' -std=c11 -Wall -Wextra -Werror score.c "
                         "$(PKG_CONFIG_PATH='%s' pkg-config --cflags --libs sentinel-detector) "
                         "-o '%s'", dir, cc, pcdir, ex) == 0,
              "the example does not compile against the installed library");

    /* 3. it scores a tiny detector with the same bits as the library here and the CLI, each
    **    with the example's n_threads = 1 (docs/export.md "Reproducibility") */
    struct sn_test_qwen2 c = {64, 2, 4, 2, 128, SN_TOKENIZER_DEMO_VOCAB, 1024, 1e6, 0.15, 3,
                              NULL};
    OK(sn_test_qwen2_write(&c, mdir, NULL, &E));
    struct sn_export_params ep = sn_export_default_params();
    ep.base_dir = mdir;
    ep.max_len = 256;
    OK(sn_export_gguf(&ep, gguf, &E));
    const char *ctx = "Question: what is 12 * 7? Options: (A) 74 (B) 84";
    const char *resp = "It is (B) 84: 10 * 7 + 2 * 7.";
    float want = 0;
    struct sn_detector *d = NULL;
    struct sn_detector_params dp = sn_detector_default_params();
    dp.n_threads = 1;
    OK(sn_detector_open(gguf, &dp, &d, &E));
    if (d)
        OK(sn_detector_score(d, ctx, resp, &want, &E));
    sn_detector_free(d);
    /* the installed library first, then what the environment already names (its cJSON may
    ** live outside the system paths) */
    CHECK(sn_test_sh("LD_LIBRARY_PATH='%s'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} '%s' '%s' '%s' "
                     "'%s' > '%s/out.txt'", libdir, ex, gguf, ctx, resp, dir) == 0);
    float got[2];
    int n = sn_test_read_floats(sn_test_path(dir, "out.txt"), got, 2);
    CHECK(n == 1);
    if (n == 1) {
        printf("installed example: %.9g, library in this process: %.9g\n", got[0], want);
        CHECK_MSG(got[0] == want, "installed example %.9g, this process %.9g: not the same bits",
                  got[0], want);
    }
    {
        char pair[1100];
        snprintf(pair, sizeof pair, "%s/pair.jsonl", dir);
        sn_test_write_file(pair, "{\"context\": \"Question: what is 12 * 7? Options: (A) 74 (B) "
                                 "84\", \"response\": \"It is (B) 84: 10 * 7 + 2 * 7.\"}\n");
        CHECK(sn_test_sh("'%s' score --detector '%s' --jsonl '%s' --threads 1 --exact > "
                         "'%s/cli.txt'", sn_test_bin(), gguf, pair, dir) == 0);
        n = sn_test_read_floats(sn_test_path(dir, "cli.txt"), got, 2);
        CHECK(n == 1);
        if (n == 1)
            CHECK_MSG(got[0] == want, "sentinel score --threads 1: %.9g, this process %.9g: "
                      "not the same bits", got[0], want);
    }
    /* and it reports a bad file as the library does */
    CHECK(sn_test_sh("LD_LIBRARY_PATH='%s'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} '%s' "
                     "'%s/score.c' a b 2> '%s/err.txt'", libdir, ex, dir, dir) == 1);
    CHECK(sn_test_file_has(sn_test_path(dir, "err.txt"), "GGUF"));
    return sn_test_done();
}
