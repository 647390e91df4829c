/* tests/test_export_fixture.c: the suite's shared tiny detector (ctest fixture tiny_detector,
** tests/export_fixture.cmake). A random 2-layer Qwen2 (hidden 32, the demo tokenizer, seeded)
** is written as a Hugging Face directory and exported once by `sentinel export` to
** $SENTINEL_TMP/tiny_detector/d.gguf, for the CLI tests that need a detector file but not a
** trained one (sn_test_tiny_detector). Needs no libtorch. Checks what those tests rely on:
** the file opens, scores are finite and depend on the response, and the context the engine
** and the evaluation give it fits (max length 1024). */
#include "export/export.h"
#include "testutil.h"
#include "testutil_qwen2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    const char *bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN not set\n");
        return 1;
    }
    char dir[1100], mdir[1200];
    snprintf(dir, sizeof dir, "%s", sn_test_dir("tiny_detector"));
    snprintf(mdir, sizeof mdir, "%s/model", dir);
    struct sn_err err = {0};
    struct sn_test_qwen2 c = {32, 2, 4, 2, 64, SN_TOKENIZER_DEMO_VOCAB, 1024, 1e6, 0.2, 31, NULL};
    CHECK_MSG(sn_test_qwen2_write(&c, mdir, NULL, &err) == SN_OK, "%s", err.msg);
    CHECK(sn_test_sh("cd '%s' && '%s' export --base model -o d.gguf.tmp --type f32 "
                     "--max-len 1024 2> err.txt", dir, bin) == 0);
    struct sn_detector *d = NULL;
    CHECK_MSG(sn_detector_open(sn_test_path(dir, "d.gguf.tmp"), NULL, &d, &err) == SN_OK, "%s",
              err.msg);
    float a = NAN, b = NAN;
    CHECK_MSG(d && sn_detector_score(d, "Question: 2 + 2?", "(B) 4", &a, &err) == SN_OK, "%s",
              err.msg);
    CHECK_MSG(d && sn_detector_score(d, "Question: 2 + 2?", "(C) 5, clearly", &b, &err) == SN_OK,
              "%s", err.msg);
    CHECK_MSG(isfinite(a) && isfinite(b) && a != b, "rewards %g %g", a, b);
    sn_detector_free(d);
    /* published under its final name only when it passed, so a dependent test never reads a
    ** half-checked file */
    if (!sn_test_failures)
        CHECK(sn_test_sh("cd '%s' && mv d.gguf.tmp d.gguf", dir) == 0);
    return sn_test_done();
}
