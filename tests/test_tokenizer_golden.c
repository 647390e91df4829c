/* tests/test_tokenizer_golden.c: our ids against golden ids made by Hugging Face tokenizers
** (Rust) and checked against the JS port, stored in tests/ref/tokenizer_golden.json
** (regenerate with tests/ref/tokenizer_golden.mjs). Needs no node, so it also runs under ASan.
**   - demo tokenizer: always. The demo tokenizer.json must be byte-identical to the one the
**     golden ids were made from (its SHA-256 is recorded), so an accidental change of the
**     demo vocabulary fails here.
**   - Qwen tokenizer: when its tokenizer.json is at $SENTINEL_QWEN_TOKENIZER or where the npm
**     parity test installs it ($SENTINEL_BUILD/npm-tokenizer/...), with the recorded SHA-256.
**     Otherwise that half is skipped with a note (the npm test covers Qwen in depth). */
#include "testutil.h"
#include "tokenizer/tokenizer.h"

static void check_cases(const struct sn_tokenizer *tok, const cJSON *cases, const char *field)
{
    const cJSON *c;
    int i = 0, bad = 0;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(c, "text");
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, field), *w;
        struct sn_ids ids = {0};
        struct sn_err err = {0};
        CHECK(cJSON_IsString(text) && cJSON_IsArray(want));
        if (!cJSON_IsString(text) || !cJSON_IsArray(want))
            continue;
        int rc = sn_tokenizer_encode(tok, text->valuestring, strlen(text->valuestring), &ids,
                                     &err);
        CHECK_MSG(rc == SN_OK, "%s case %d: %s", field, i, err.msg);
        size_t k = 0;
        bool same = (size_t)cJSON_GetArraySize(want) == ids.n;
        cJSON_ArrayForEach(w, want) {
            if (k < ids.n && ids.v[k] != (int32_t)w->valuedouble)
                same = false;
            k++;
        }
        CHECK_MSG(same, "%s case %d (%.60s): %zu ids, want %d", field, i, text->valuestring,
                  ids.n, cJSON_GetArraySize(want));
        bad += !same;
        /* round trip on the same strings */
        char *back = NULL;
        size_t bl = 0;
        CHECK(sn_tokenizer_decode(tok, ids.v, ids.n, &back, &bl, &err) == SN_OK);
        sn_free(back);
        sn_ids_free(&ids);
        i++;
    }
    printf("%s: %d golden strings, %d differ\n", field, i, bad);
}

int main(void)
{
    char path[2048], demo[1200];
    struct sn_err err = {0};
    cJSON *root = sn_test_load_ref("tokenizer_golden.json");
    if (!root)
        return sn_test_done();
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    const cJSON *dsha = cJSON_GetObjectItemCaseSensitive(root, "demo_sha256");
    const cJSON *qsha = cJSON_GetObjectItemCaseSensitive(root, "qwen_sha256");
    CHECK(cJSON_GetArraySize(cases) >= 50 && cJSON_IsString(dsha) && cJSON_IsString(qsha));

    snprintf(demo, sizeof demo, "%s/demo.json", sn_test_dir("tokenizer_golden"));
    struct sn_tokenizer *tok = NULL;
    CHECK(sn_tokenizer_write_demo(demo, &err) == SN_OK);
    CHECK_MSG(sn_tokenizer_open(demo, &tok, &err) == SN_OK, "%s", err.msg);
    if (tok) {
        CHECK_MSG(!strcmp(sn_tokenizer_hash(tok), dsha->valuestring), "the demo tokenizer "
                  "changed (sha256 %s, golden made from %s): regenerate the golden ids with "
                  "tests/ref/tokenizer_golden.mjs if that was intended", sn_tokenizer_hash(tok),
                  dsha->valuestring);
        check_cases(tok, cases, "demo");
        sn_tokenizer_free(tok);
        tok = NULL;
    }

    if (!sn_test_qwen_tokenizer(qsha->valuestring, path, sizeof path)) {
        printf("qwen: skipped (no Qwen tokenizer.json with sha256 %.12s... at %s; the npm test "
               "tokenizer_qwen_parity installs it)\n", qsha->valuestring, path);
    } else {
        CHECK_MSG(sn_tokenizer_open(path, &tok, &err) == SN_OK, "%s", err.msg);
        if (tok)
            check_cases(tok, cases, "qwen");
        sn_tokenizer_free(tok);
    }
    cJSON_Delete(root);
    return sn_test_done();
}
