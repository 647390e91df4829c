/* tests/test_export_progress.c: `sentinel export --peft` and `--hf` show the same progress
** display as the GGUF export (cli/cmd_export.c; the library calls the progress hook before
** each layer and after the last, export/write.h): with --progress plain each write ends with
** its own line "export --peft: L/L layers (100.0%) ... written" (and likewise --hf, -o), the
** library reports done of total layers in order ending at total, and --progress none prints
** no progress line. Nothing about timing is asserted. */
#include "export/write.h"
#include "tests/testutil.h"
#include "tests/testutil_qwen2.h"

struct seen {
    uint64_t done[64], total[64];
    int n;
};

static void record(void *user, uint64_t done, uint64_t total)
{
    struct seen *s = user;
    if (s->n < 64) {
        s->done[s->n] = done;
        s->total[s->n] = total;
        s->n++;
    }
}

static void check_calls(const struct seen *s, int L, const char *what)
{
    CHECK_MSG(s->n == L + 1, "%s: %d progress calls, want %d", what, s->n, L + 1);
    for (int i = 0; i < s->n && i <= L; i++)
        CHECK_MSG(s->done[i] == (uint64_t)i && s->total[i] == (uint64_t)L,
                  "%s: call %d reported %llu/%llu", what, i, (unsigned long long)s->done[i],
                  (unsigned long long)s->total[i]);
}

int main(void)
{
    const char *dir = sn_test_dir("export_progress");
    char base[1200], ad[1200], peft[1200], hf[1200], log[1200];
    snprintf(base, sizeof base, "%s/base", dir);
    snprintf(ad, sizeof ad, "%s/adapter", dir);
    snprintf(peft, sizeof peft, "%s/peft", dir);
    snprintf(hf, sizeof hf, "%s/hf", dir);
    snprintf(log, sizeof log, "%s/export.log", dir);
    enum { L = 3 };
    struct sn_test_qwen2 c = {32, L, 4, 2, 64, SN_TOKENIZER_DEMO_VOCAB, 512, 1e6, 0.2, 5, NULL};
    struct sn_test_peft a = {4, 8.0, 0, 0, 0.1, 6};
    struct sn_err err = {0};
    if (sn_test_qwen2_write(&c, base, NULL, &err) || sn_test_peft_write(&c, &a, ad, NULL, &err)) {
        fprintf(stderr, "fixture: %s\n", err.msg);
        return 1;
    }

    /* the library: done of total layers, in order, ending at total */
    struct sn_export_params p = sn_export_default_params();
    p.base_dir = base;
    p.adapter_dir = ad;
    p.progress = record;
    struct seen s1 = {0}, s2 = {0};
    p.progress_user = &s1;
    CHECK_MSG(sn_export_peft(&p, peft, &err) == SN_OK, "%s", err.msg);
    check_calls(&s1, L, "peft");
    p.progress_user = &s2;
    CHECK_MSG(sn_export_hf(&p, hf, &err) == SN_OK, "%s", err.msg);
    check_calls(&s2, L, "hf");

    /* the CLI: one display per output, in plain lines when asked */
    const char *bin = sn_test_bin();
    CHECK(sn_test_sh("'%s' export --base '%s' --adapter '%s' --peft '%s/p2' --hf '%s/h2' "
                     "-o '%s/d.gguf' --progress plain 2> '%s'", bin, base, ad, dir, dir, dir,
                     log) == 0);
    CHECK(sn_test_file_has(log, "export --peft: 3/3 layers (100.0%)"));
    CHECK(sn_test_file_has(log, "export --hf: 3/3 layers (100.0%)"));
    CHECK(sn_test_file_has(log, "export: 3/3 layers (100.0%)"));
    CHECK(sn_test_sh("grep 'export --peft: 3/3 layers' '%s' | grep -q 'written'", log) == 0);
    CHECK(sn_test_sh("grep 'export --hf: 3/3 layers' '%s' | grep -q 'eta'", log) == 0);
    CHECK(sn_test_sh("'%s' export --base '%s' --adapter '%s' --peft '%s/p3' --hf '%s/h3' "
                     "--progress none 2> '%s'", bin, base, ad, dir, dir, log) == 0);
    CHECK(sn_test_sh("grep -q 'layers' '%s'", log) != 0);
    CHECK(sn_test_file_has(log, "wrote the merged Hugging Face directory"));
    return sn_test_done();
}
