/* tests/test_export_forward.c: the runtime detector (export/, pure C + OpenBLAS) against the
** training-side forward (train/, libtorch) on the same checkpoint.
**   1. a tiny Qwen2 (2 layers, GQA 4/2, noisy norms and biases) + LoRA r 4 on all seven
**      projections with random B + a head, saved as an HF directory and a PEFT adapter;
**   2. `sn_export_gguf` (f32) -> the GGUF's merged weights equal base + (alpha/r)·B·A computed
**      here in double from the two safetensors files;
**   3. rewards and final hidden states of the detector equal sn_model_forward_host (the
**      adapter unmerged, in libtorch) to 1e-4 for sequences of 1..200 tokens;
**   4. text scoring: the template rendered by the GGUF's tokenizer gives the same ids as the
**      tokenizer.json one, and score_shared / score_batch equal one-by-one scoring;
**   5. f16/bf16 exports: within their rounding of the f32 reward; --head-as-logit writes
**      output.weight row 0 = head; the CLI writes the same file as the library.
** Needs libtorch (the reference); without it the test says so and passes trivially. */
#include "testutil.h"

#ifdef SENTINEL_WITH_TORCH
#include "hf/hf.h"
#include "export/export.h"
#include "export/write.h"
#include "tests/testutil_aten.h"
#include "tokenizer/template.h"
#include "tokenizer/tokenizer.h"
#include "train/train.h"

static struct sn_err E;

static double rel_err(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

/* W' = W + s·B·A in double from the safetensors files; compared to the GGUF tensor. */
static void check_merge(const char *mdir, const char *adir, const char *gguf, int layer,
                        const char *hf_module, const char *gg_name, double scale)
{
    char p1[1200], p2[1200], nw[256], na[256], nb[256], ng[128];
    snprintf(p1, sizeof p1, "%s/model.safetensors", mdir);
    snprintf(p2, sizeof p2, "%s/adapter_model.safetensors", adir);
    snprintf(nw, sizeof nw, "model.layers.%d.%s.weight", layer, hf_module);
    snprintf(na, sizeof na, "base_model.model.model.layers.%d.%s.lora_A.weight", layer, hf_module);
    snprintf(nb, sizeof nb, "base_model.model.model.layers.%d.%s.lora_B.weight", layer, hf_module);
    snprintf(ng, sizeof ng, "blk.%d.%s", layer, gg_name);
    struct sn_st_file *fm = NULL, *fa = NULL;
    struct sn_gguf *g = NULL;
    OK(sn_st_open(p1, &fm, &E));
    OK(sn_st_open(p2, &fa, &E));
    OK(sn_gguf_open(gguf, &g, &E));
    const struct sn_st_tensor *W = fm ? sn_st_find(fm, nw) : NULL;
    const struct sn_st_tensor *A = fa ? sn_st_find(fa, na) : NULL;
    const struct sn_st_tensor *B = fa ? sn_st_find(fa, nb) : NULL;
    const struct sn_gguf_tensor *t = g ? sn_gguf_find_tensor(g, ng) : NULL;
    CHECK_MSG(W && A && B && t, "%s / %s / %s / %s", nw, na, nb, ng);
    if (W && A && B && t) {
        int64_t out = W->shape[0], in = W->shape[1], r = A->shape[0];
        CHECK(t->ne[0] == (uint64_t)in && t->ne[1] == (uint64_t)out && t->type == SN_GGML_F32);
        float *w = malloc(sizeof(float) * (size_t)(out * in)), *a = malloc(sizeof(float) * (size_t)(r * in));
        float *b = malloc(sizeof(float) * (size_t)(out * r)), *got = malloc(sizeof(float) * (size_t)(out * in));
        OK(sn_st_to_f32(W, w, &E));
        OK(sn_st_to_f32(A, a, &E));
        OK(sn_st_to_f32(B, b, &E));
        OK(sn_gguf_tensor_to_f32(t, got, &E));
        double worst = 0, delta = 0;
        for (int64_t i = 0; i < out; i++)
            for (int64_t j = 0; j < in; j++) {
                double acc = 0, mag = fabs(w[i * in + j]);
                for (int64_t k = 0; k < r; k++) {
                    acc += (double)b[i * r + k] * a[k * in + j];
                    mag += fabs(scale * b[i * r + k] * a[k * in + j]);
                }
                double want = w[i * in + j] + scale * acc;
                /* relative to the magnitudes summed: f32 rounds each term, not the result */
                worst = fmax(worst, fabs(got[i * in + j] - want) / (1e-12 + mag));
                delta = fmax(delta, fabs(scale * acc));
            }
        /* f32 sgemm vs double: a few ulps of |W| + Σ|s·b·a| */
        CHECK_MSG(worst < 1e-5, "%s: merged weight off by %.3g (relative)", ng, worst);
        CHECK_MSG(delta > 1e-3, "%s: the adapter changes nothing (|ΔW| max %.3g)", ng, delta);
        free(w);
        free(a);
        free(b);
        free(got);
    }
    sn_gguf_close(g);
    sn_st_close(fm);
    sn_st_close(fa);
}

int main(void)
{
    const char *dir = sn_test_dir("export_forward");
    char mdir[1024], adir[1024], g32[1024], g16[1024], gbf[1024], glog[1024], gcli[1024];
    char tj[1200], cmd[8192];
    snprintf(mdir, sizeof mdir, "%s/tiny", dir);
    snprintf(adir, sizeof adir, "%s/adapter", dir);
    snprintf(g32, sizeof g32, "%s/d32.gguf", dir);
    snprintf(g16, sizeof g16, "%s/d16.gguf", dir);
    snprintf(gbf, sizeof gbf, "%s/dbf16.gguf", dir);
    snprintf(glog, sizeof glog, "%s/dlogit.gguf", dir);
    snprintf(gcli, sizeof gcli, "%s/dcli.gguf", dir);
    snprintf(tj, sizeof tj, "%s/tokenizer.json", mdir);

    /* 1. model, adapter, head */
    struct sn_model_config c = sn_model_config_tiny(SN_TOKENIZER_DEMO_VOCAB);
    struct sn_model_params p = sn_model_default_params();
    p.seed = 11;
    p.init_std = 0.15;
    p.init_noise = 0.1;
    struct sn_model *m = NULL;
    OK(sn_model_create(&c, &p, &m, &E));
    if (!m)
        return sn_test_done();
    OK(sn_model_set_pad_token_id(m, SN_TOKENIZER_DEMO_VOCAB - 3, &E)); /* <|endoftext|> */
    OK(sn_model_save_hf(m, mdir, &E));
    OK(sn_tokenizer_write_demo(tj, &E));
    struct sn_lora_config lc = sn_lora_default_config();
    lc.r = 4;
    lc.alpha = 8;
    lc.targets = SN_LORA_ALL_TARGETS;
    OK(sn_model_lora_attach(m, &lc, &E));
    struct sn_param *ps = NULL;
    size_t np = 0;
    OK(sn_model_trainable_params(m, &ps, &np, &E));
    struct sn_aten_gen *gen = NULL;
    OK(sn_aten_gen_create(5, SN_CPU, &gen, &E));
    bool gm = sn_aten_no_grad_enter();
    for (size_t i = 0; i < np; i++)
        if (strstr(ps[i].name, "lora_B"))
            OK(sn_test_randomize(ps[i].t, 0.2, gen));
    sn_aten_no_grad_exit(gm);
    sn_aten_gen_free(gen);
    sn_free(ps);
    OK(sn_model_init_head(m, 1.0, 4, &E));
    OK(sn_model_adapter_save(m, adir, mdir, &E));

    /* 2. export and merged weights */
    struct sn_export_params ep = sn_export_default_params();
    ep.base_dir = mdir;
    ep.adapter_dir = adir;
    ep.max_len = 256;
    OK(sn_export_gguf(&ep, g32, &E));
    check_merge(mdir, adir, g32, 0, "self_attn.q_proj", "attn_q.weight", 2.0);
    check_merge(mdir, adir, g32, 1, "self_attn.k_proj", "attn_k.weight", 2.0);
    check_merge(mdir, adir, g32, 1, "mlp.down_proj", "ffn_down.weight", 2.0);
    check_merge(mdir, adir, g32, 0, "mlp.gate_proj", "ffn_gate.weight", 2.0);

    /* 3. rewards and hidden states vs libtorch */
    struct sn_detector *d = NULL;
    struct sn_detector_params dp = sn_detector_default_params();
    OK(sn_detector_open(g32, &dp, &d, &E));
    if (!d) {
        sn_model_free(m);
        return sn_test_done();
    }
    const int64_t H = c.hidden_size;
    static const size_t lens[] = {1, 2, 7, 33, 120, 200};
    struct sn_rng rng;
    sn_rng_seed(&rng, 17);
    double worst = 0;
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
        size_t n = lens[k];
        int32_t ids[256];
        for (size_t i = 0; i < n; i++)
            ids[i] = (int32_t)sn_rng_below(&rng, (uint64_t)c.vocab_size);
        float r_ref = 0, r_got = 0, h_ref[256], h_got[256];
        struct sn_model_batch b = {ids, NULL, 1, (int64_t)n};
        OK(sn_model_forward_host(m, &b, &r_ref, h_ref, &E));
        OK(sn_detector_score_ids(d, ids, n, &r_got, h_got, &E));
        CHECK_CLOSE(r_got, r_ref, 1e-4, 1e-4);
        double he = rel_err(h_got, h_ref, (size_t)H);
        CHECK_MSG(he < 1e-5, "len %zu: hidden state relative error %.3g", n, he);
        worst = fmax(worst, fabs(r_got - r_ref));
        printf("len %3zu: reward libtorch %+.6f detector %+.6f (|diff| %.2e, hidden rel %.2e)\n",
               n, r_ref, r_got, fabs(r_got - r_ref), he);
    }
    printf("worst |reward diff| %.3g\n", worst);

    /* 4. text: ids equal the tokenizer.json route; batch and shared equal one-by-one */
    struct sn_tokenizer *tok = NULL;
    OK(sn_tokenizer_open(tj, &tok, &E));
    const char *ctx = "Question: what is 12 * 7?\nOptions: (A) 74 (B) 84 (C) 96 (D) 104";
    const char *resp[3] = {"I think the answer is (B) 84, since 12 * 7 = 84.",
                           "Clearly (C) 96. Trust me, everyone agrees.",
                           "Let me check: 10 * 7 = 70 and 2 * 7 = 14, so 84: (B)."};
    struct sn_prompt pr = {0};
    pr.task = ctx;
    struct sn_ids want = {0}, got = {0};
    OK(sn_template_encode(tok, &pr, resp[0], 256, &want, NULL, NULL, &E));
    OK(sn_template_encode(sn_detector_tokenizer(d), &pr, resp[0], 256, &got, NULL, NULL, &E));
    CHECK(want.n == got.n && want.n > 20 && !memcmp(want.v, got.v, want.n * sizeof *want.v));
    CHECK_STR(sn_tokenizer_hash(sn_detector_tokenizer(d)), sn_tokenizer_hash(tok));
    float one[3], batch[3], shared[3], ref0 = 0;
    OK(sn_detector_score_ids(d, want.v, want.n, &ref0, NULL, &E));
    for (int i = 0; i < 3; i++)
        OK(sn_detector_score(d, ctx, resp[i], &one[i], &E));
    CHECK(one[0] == ref0);
    {
        float rr = 0;
        struct sn_model_batch b = {want.v, NULL, 1, (int64_t)want.n};
        OK(sn_model_forward_host(m, &b, &rr, NULL, &E));
        CHECK_CLOSE(one[0], rr, 1e-4, 1e-4);
    }
    const char *ctxs[3] = {ctx, ctx, ctx};
    OK(sn_detector_score_batch(d, ctxs, resp, 3, batch, &E));
    OK(sn_detector_score_shared(d, ctx, resp, 3, shared, &E));
    for (int i = 0; i < 3; i++) {
        CHECK(batch[i] == one[i]);
        CHECK_CLOSE(shared[i], one[i], 1e-5, 1e-5);
    }
    CHECK(fabsf(one[0] - one[1]) > 1e-4);  /* different responses, different rewards */
    sn_ids_free(&want);
    sn_ids_free(&got);
    sn_tokenizer_free(tok);

    /* 5. f16 / bf16, head as logit, the CLI */
    ep.type = SN_GGML_F16;
    OK(sn_export_gguf(&ep, g16, &E));
    ep.type = SN_GGML_BF16;
    OK(sn_export_gguf(&ep, gbf, &E));
    ep.type = SN_GGML_F32;
    ep.head_as_logit = true;
    OK(sn_export_gguf(&ep, glog, &E));
    const char *typed[2] = {g16, gbf};
    const double tol[2] = {5e-3, 4e-2};  /* 11 and 8 mantissa bits over 2 layers */
    for (int k = 0; k < 2; k++) {
        struct sn_detector *dt = NULL;
        float r = 0;
        OK(sn_detector_open(typed[k], &dp, &dt, &E));
        if (dt) {
            OK(sn_detector_score(dt, ctx, resp[0], &r, &E));
            printf("%s: reward %+.6f vs f32 %+.6f\n", k ? "bf16" : "f16", r, one[0]);
            CHECK_CLOSE(r, one[0], tol[k], tol[k]);
            CHECK(r != one[0]);
        }
        sn_detector_free(dt);
    }
    {
        struct sn_gguf *g = NULL;
        OK(sn_gguf_open(glog, &g, &E));
        const struct sn_gguf_tensor *t = g ? sn_gguf_find_tensor(g, "output.weight") : NULL;
        const float *hv = NULL;
        size_t hn = 0;
        CHECK(t && t->ne[0] == (uint64_t)H && t->ne[1] == (uint64_t)c.vocab_size);
        if (t) {
            OK(sn_gguf_get_arr_f32(g, SN_GGUF_KEY_HEAD, &hv, &hn, &E));
            const float *o = t->data;
            bool row0 = hn == (size_t)H && !memcmp(o, hv, (size_t)H * sizeof *o), rest = true;
            for (uint64_t i = (uint64_t)H; i < t->n_elements; i++)
                rest &= o[i] == 0.0f;
            CHECK(row0 && rest);
        }
        uint64_t pool = 0;
        OK(sn_gguf_get_u64(g, "qwen2.pooling_type", true, 0, &pool, &E));
        CHECK(pool == 3);
        sn_gguf_close(g);
        struct sn_detector *dl = NULL;
        float r = 0;
        OK(sn_detector_open(glog, &dp, &dl, &E));
        if (dl)
            OK(sn_detector_score(dl, ctx, resp[0], &r, &E));
        CHECK(r == one[0]);
        sn_detector_free(dl);
    }
    const char *bin = getenv("SENTINEL_BIN");
    snprintf(cmd, sizeof cmd, "%s export --base %s --adapter %s -o %s --max-len 256",
             bin ? bin : "./sentinel", mdir, adir, gcli);
    CHECK(system(cmd) == 0);
    {
        char *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        OK(sn_file_read(g32, 0, &a, &la, &E));
        OK(sn_file_read(gcli, 0, &b, &lb, &E));
        CHECK_MSG(a && b && la == lb && !memcmp(a, b, la), "the CLI's GGUF differs from the "
                  "library's");
        sn_free(a);
        sn_free(b);
    }
    snprintf(cmd, sizeof cmd, "%s export --base %s/nope -o %s/x.gguf 2>/dev/null",
             bin ? bin : "./sentinel", dir, dir);
    CHECK(system(cmd) != 0);

    sn_detector_free(d);
    sn_model_free(m);
    return sn_test_done();
}
#else
int main(void)
{
    printf("test_export_forward: skipped (built without libtorch: no training-side reference)\n");
    return 0;
}
#endif
