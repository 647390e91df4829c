/* tests/test_tokenizer_cli.c: `sentinel tokenize` end to end on the demo tokenizer: ids equal
** the library's, --decode inverts, --json keeps newlines, --threads gives the same output,
** errors name the line, usage errors exit 2. */
#include "testutil.h"
#include "tokenizer/tokenizer.h"

static const char *bin;
static char dir[1024];

static char *slurp(const char *path, size_t *n)
{
    char *s = NULL;
    struct sn_err err = {0};
    if (sn_file_read(path, 0, &s, n, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return NULL;
    }
    return s;
}

int main(void)
{
    bin = sn_test_bin();
    snprintf(dir, sizeof dir, "%s", sn_test_dir("tokenizer_cli"));
    char tj[1200], lib[1200];
    snprintf(tj, sizeof tj, "%s/demo.json", dir);
    snprintf(lib, sizeof lib, "%s/demo-lib.json", dir);
    struct sn_err err = {0};

    CHECK(sn_test_sh("'%s' tokenize --help | grep -q -- --decode", bin) == 0);
    CHECK(sn_test_sh("'%s' tokenize --write-demo '%s'", bin, tj) == 0);
    CHECK(sn_tokenizer_write_demo(lib, &err) == SN_OK);
    CHECK(sn_test_sh("cmp -s '%s' '%s'", tj, lib) == 0);

    /* 3005 plain lines: ids equal the library's, --threads 3 gives the same output, --decode
    ** gives the text back (each sentinel run loads libtorch: keep the runs few) */
    static const char *lines[] = {"Hello world, the answer is (B) Jupiter.",
                                  "<|im_start|>user", "", "  tabs\tand   spaces  ",
                                  "日本語 café 12345 👍"};
    struct sn_tokenizer *t = NULL;
    CHECK(sn_tokenizer_open(tj, &t, &err) == SN_OK);
    if (!t)
        return sn_test_done();
    struct sn_buf in = {0}, want = {0}, line = {0};
    for (int i = 0; i < 3005; i++) {
        struct sn_ids ids = {0};
        sn_buf_reset(&line);
        if (i < 5)
            sn_buf_puts(&line, lines[i], NULL);
        else
            sn_buf_printf(&line, NULL, "line %d: %s", i, lines[i % 5]);
        sn_buf_printf(&in, NULL, "%s\n", line.data);
        CHECK(sn_tokenizer_encode(t, line.data, line.len, &ids, &err) == SN_OK);
        for (size_t k = 0; k < ids.n; k++)
            sn_buf_printf(&want, NULL, k ? " %d" : "%d", ids.v[k]);
        sn_buf_puts(&want, "\n", NULL);
        sn_ids_free(&ids);
    }
    char p_in[1200], p_ids[1200], p_back[1200], p_err[1200];
    snprintf(p_in, sizeof p_in, "%s/in.txt", dir);
    snprintf(p_ids, sizeof p_ids, "%s/ids.txt", dir);
    snprintf(p_back, sizeof p_back, "%s/back.txt", dir);
    snprintf(p_err, sizeof p_err, "%s/err.txt", dir);
    CHECK(sn_atomic_write(p_in, in.data, in.len, &err) == SN_OK);
    CHECK(sn_test_sh("'%s' tokenize --tokenizer '%s' < '%s' > '%s'", bin, tj, p_in, p_ids) == 0);
    size_t n;
    char *got = slurp(p_ids, &n);
    CHECK(got && n == want.len && !memcmp(got, want.data, n));
    sn_free(got);
    CHECK(sn_test_sh("'%s' tokenize --tokenizer '%s' --threads 3 < '%s' | cmp -s - '%s'", bin,
                     tj, p_in, p_ids) == 0);
    CHECK(sn_test_sh("'%s' tokenize --tokenizer '%s' --decode --threads 2 < '%s' > '%s'", bin,
                     tj, p_ids, p_back) == 0);
    CHECK(sn_test_sh("cmp -s '%s' '%s'", p_in, p_back) == 0);

    /* --json: newlines and quotes inside a text survive encode + decode */
    const char *js = "\"two\\nlines \\\"quoted\\\" \\u00e9\\ud83d\\ude00\"\n\"<|im_end|>\"\n\"\"\n";
    CHECK(sn_atomic_write(p_in, js, strlen(js), &err) == SN_OK);
    CHECK(sn_test_sh("'%s' tokenize --tokenizer '%s' --json < '%s' > '%s'", bin, tj, p_in,
                     p_ids) == 0);
    got = slurp(p_ids, &n);
    CHECK(got && strstr(got, "\n511\n\n") != NULL);
    sn_free(got);
    CHECK(sn_test_sh("'%s' tokenize --tokenizer '%s' --json --decode < '%s' > '%s'", bin, tj,
                     p_ids, p_back) == 0);
    got = slurp(p_back, &n);
    CHECK_STR(got, "\"two\\nlines \\\"quoted\\\" \xC3\xA9\xF0\x9F\x98\x80\"\n\"<|im_end|>\"\n\"\"\n");
    sn_free(got);

    /* errors name the line */
    CHECK(sn_test_sh("printf 'ok\\nab\\377\\n' | '%s' tokenize --tokenizer '%s' >/dev/null "
                     "2>'%s'", bin, tj, p_err) == 1);
    CHECK(sn_test_sh("grep -q 'stdin:2: invalid UTF-8 at byte offset 2' '%s'", p_err) == 0);
    CHECK(sn_test_sh("printf '65 66\\n65 512\\n' | '%s' tokenize --tokenizer '%s' --decode "
                     ">/dev/null 2>'%s'", bin, tj, p_err) == 1);
    CHECK(sn_test_sh("grep -q 'stdin:2: token id 512 at position 1' '%s'", p_err) == 0);
    CHECK(sn_test_sh("printf '\"abc\\n' | '%s' tokenize --tokenizer '%s' --json >/dev/null "
                     "2>'%s'", bin, tj, p_err) == 1);
    CHECK(sn_test_sh("grep -q 'stdin:1: unterminated JSON string' '%s'", p_err) == 0);
    CHECK(sn_test_sh("printf 'x\\n' | '%s' tokenize --tokenizer '%s' --threads 0 2>/dev/null",
                     bin, tj) == 2);
    CHECK(sn_test_sh("'%s' tokenize --tokenizer '%s/none.json' < /dev/null 2>'%s'", bin, dir,
                     p_err) == 1);
    CHECK(sn_test_sh("grep -q 'none.json' '%s'", p_err) == 0);

    sn_buf_free(&in);
    sn_buf_free(&want);
    sn_buf_free(&line);
    sn_tokenizer_free(t);
    return sn_test_done();
}
