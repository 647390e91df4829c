/* tests/test_common_reliability.c: bad input and failed writes in common/ (README "Errors and
** exit codes"): an empty directory walk, "is a directory", write failures on a full device,
** whole-string number parsing, recipes (top-level sections, duplicate keys, NUL bytes, --set
** values that must parse whole), JSON that would be cut at U+0000, and safetensors shapes
** that overflow. */
#include "common/common.h"
#include "hf/hf.h"
#include "testutil.h"

#include <stdint.h>

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void test_dirs(const char *dir)
{
    struct sn_err err = {0};
    char sub[1100], **paths = (char **)1;
    size_t n = 99;
    snprintf(sub, sizeof sub, "%s/empty", dir);
    CHECK(sn_mkdirs(sub, &err) == SN_OK);
    const char *in[] = {sub};
    const char *suf[] = {".jsonl", NULL};
    /* an empty walk: no array at all, and no qsort over NULL (UBSan) */
    CHECK(sn_paths_expand(in, 1, suf, &paths, &n, &err) == SN_OK);
    CHECK(n == 0);
    sn_paths_free(paths, n);

    char *text = NULL;
    sn_err_clear(&err);
    CHECK(sn_file_read(sub, 0, &text, NULL, &err) == SN_E_IO);
    CHECK_MSG(strstr(err.msg, "is a directory") && strstr(err.msg, sub), "%s", err.msg);
    struct sn_lines *l = NULL;
    sn_err_clear(&err);
    CHECK(sn_lines_open(sub, 0, &l, &err) == SN_E_IO && !l);
    CHECK_MSG(strstr(err.msg, "is a directory"), "%s", err.msg);
    cJSON *j = NULL;
    sn_err_clear(&err);
    CHECK(sn_recipe_load(sub, NULL, 0, &j, &err) == SN_E_IO);
    CHECK_MSG(strstr(err.msg, "is a directory"), "%s", err.msg);
}

static void test_full_device(void)
{
    struct sn_err err = {0};
    FILE *f = fopen("/dev/full", "w");
    CHECK(f != NULL);
    if (!f)
        return;
    /* stdio buffers: the write "succeeds" until the flush that must be checked */
    CHECK(fputs("results that will never arrive\n", f) >= 0);
    CHECK(sn_stream_finish(f, "out.txt", &err) == SN_E_IO);
    CHECK_MSG(strstr(err.msg, "out.txt: write failed") && strstr(err.msg, "No space left"),
              "%s", err.msg);
    /* a healthy stream finishes cleanly */
    FILE *g = tmpfile();
    sn_err_clear(&err);
    CHECK(g && fputs("ok\n", g) >= 0 && sn_stream_finish(g, "tmp", &err) == SN_OK);
}

static void test_parse_u64(void)
{
    uint64_t v = 7;
    CHECK(sn_parse_u64("42", 2, 0, 100, &v) && v == 42);
    CHECK(sn_parse_u64("18446744073709551615", 20, 0, UINT64_MAX, &v) && v == UINT64_MAX);
    v = 7;
    CHECK(!sn_parse_u64("18446744073709551616", 20, 0, UINT64_MAX, &v) && v == 7);
    CHECK(!sn_parse_u64("99999999999999999999", 20, 0, UINT64_MAX, &v));
    CHECK(!sn_parse_u64("", 0, 0, 10, &v));
    CHECK(!sn_parse_u64("3x", 2, 0, 10, &v));
    CHECK(!sn_parse_u64(" 3", 2, 0, 10, &v));
    CHECK(!sn_parse_u64("+3", 2, 0, 10, &v));
    CHECK(!sn_parse_u64("-0", 2, 0, 10, &v));
    CHECK(!sn_parse_u64("11", 2, 0, 10, &v)); /* above hi */
    CHECK(!sn_parse_u64("0", 1, 1, 10, &v));  /* below lo */
    CHECK(sn_parse_u64("3/4", 1, 0, 10, &v) && v == 3); /* a prefix of given length */
}

static void test_recipes(const char *dir)
{
    char path[1100];
    struct sn_err err = {0};
    cJSON *j = NULL;
    snprintf(path, sizeof path, "%s/r.json", dir);

    const char *top = "{\"simulat\": {\"rounds\": 3}}";
    write_file(path, top, strlen(top));
    CHECK(sn_recipe_load(path, NULL, 0, &j, &err) == SN_E_ARG && !j);
    CHECK_MSG(strstr(err.msg, "unknown key 'simulat'") &&
              strstr(err.msg, "did you mean 'simulate'"), "%s", err.msg);
    sn_err_clear(&err);
    const char *sets_top[] = {"biuld.max_len=3"};
    CHECK(sn_recipe_load(NULL, sets_top, 1, &j, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "'biuld'") && strstr(err.msg, "'build'"), "%s", err.msg);

    const char *dup = "{\"simulate\": {\"experiments\": [{\"rounds\": 2, \"rounds\": 5}]}}";
    write_file(path, dup, strlen(dup));
    sn_err_clear(&err);
    CHECK(sn_recipe_load(path, NULL, 0, &j, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "duplicate key 'simulate.experiments[0].rounds'"), "%s", err.msg);
    const char *dup_top = "{\"out_dir\": \"a\", \"out_dir\": \"b\"}";
    write_file(path, dup_top, strlen(dup_top));
    sn_err_clear(&err);
    CHECK(sn_recipe_load(path, NULL, 0, &j, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "duplicate key 'out_dir'"), "%s", err.msg);

    const char nul[] = "{\"out_dir\": \"a\"}\0{\"simulat\": 1}";
    write_file(path, nul, sizeof nul - 1);
    sn_err_clear(&err);
    CHECK(sn_recipe_load(path, NULL, 0, &j, &err) == SN_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "NUL byte") && strstr(err.msg, ":1:17"), "%s", err.msg);

    /* --set values parse whole: "3x" is the string "3x", which a typed getter refuses */
    const char *sets[] = {"simulate.rounds=3x", "simulate.n=2k", "simulate.ok=12"};
    sn_err_clear(&err);
    CHECK(sn_recipe_load(NULL, sets, 3, &j, &err) == SN_OK);
    const cJSON *sim = cJSON_GetObjectItem(j, "simulate");
    int64_t v;
    CHECK(cJSON_IsString(cJSON_GetObjectItem(sim, "rounds")));
    CHECK(sn_json_get_int(sim, "simulate", "rounds", 0, &v, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "simulate.rounds: expected an integer"), "%s", err.msg);
    sn_err_clear(&err);
    CHECK(sn_json_get_int(sim, "simulate", "n", 0, &v, &err) == SN_E_ARG);
    sn_err_clear(&err);
    CHECK(sn_json_get_int(sim, "simulate", "ok", 0, &v, &err) == SN_OK && v == 12);
    cJSON_Delete(j);
}

static void test_json_text(void)
{
    struct sn_err err = {0};
    cJSON *j = NULL;
    const char *trail = "{\"a\": 1} x";
    CHECK(sn_json_parse(trail, strlen(trail), "t.json", &j, &err) == SN_E_FORMAT && !j);
    CHECK_MSG(strstr(err.msg, "t.json:1:10") && strstr(err.msg, "after the end"), "%s",
              err.msg);
    const char *zero = "{\"text\": \"before\\u0000after\"}";
    sn_err_clear(&err);
    CHECK(sn_json_parse(zero, strlen(zero), "z.json", &j, &err) == SN_E_FORMAT && !j);
    CHECK_MSG(strstr(err.msg, "z.json:1:17") && strstr(err.msg, "\\u0000"), "%s", err.msg);
    /* an escaped backslash before "u0000" is text, not an escape */
    const char *lit = "{\"text\": \"a\\\\u0000\"}";
    CHECK(sn_json_nul_escape(lit, strlen(lit)) == (size_t)-1);
    sn_err_clear(&err);
    CHECK(sn_json_parse(lit, strlen(lit), "l.json", &j, &err) == SN_OK && j);
    CHECK_STR(cJSON_GetObjectItem(j, "text")->valuestring, "a\\u0000");
    cJSON_Delete(j);
    CHECK(sn_json_nul_escape(zero, strlen(zero)) == 16);
}

static void test_safetensors_overflow(void)
{
    struct sn_err err = {0};
    struct sn_st_file *f = NULL;
    char buf[512];
    const char *hdrs[] = {
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [1e30], \"data_offsets\": [0, 4]}}",
        "{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 4294967296], "
        "\"data_offsets\": [0, 4]}}"};
    for (int k = 0; k < 2; k++) {
        size_t h = strlen(hdrs[k]);
        uint64_t hl = h;
        memcpy(buf, &hl, 8); /* little-endian header length (x86-64, aarch64) */
        memcpy(buf + 8, hdrs[k], h);
        memset(buf + 8 + h, 0, 4);
        sn_err_clear(&err);
        CHECK(sn_st_open_memory(buf, 8 + h + 4, "m.safetensors", &f, &err) == SN_E_FORMAT);
        CHECK_MSG(strstr(err.msg, "overflows") && !strstr(err.msg, "not a non-negative"), "%s",
                  err.msg);
        sn_st_close(f);
        f = NULL;
    }
}

int main(void)
{
    const char *dir = sn_test_dir("common_reliability");
    test_dirs(dir);
    test_full_device();
    test_parse_u64();
    test_recipes(dir);
    test_json_text();
    test_safetensors_overflow();
    return sn_test_done();
}
