/* tests/test_export_adapter.c: the adapter-side exports of `sentinel export` (export/export.h),
** without libtorch for parts 1-3 (the model and adapter are written with the safetensors writer,
** tests/testutil_qwen2.h):
**   1. --adapter-only: the LoRA GGUF reads back through our strict reader (general.type
**      adapter, adapter.type lora, alpha, lora_a {in, r} / lora_b {r, out} pairs); for every
**      pair, base + (alpha/r)·B·A computed here in double from the base GGUF and the adapter
**      GGUF equals the merged GGUF (sn_export_gguf with the adapter), and the head pair on
**      output.weight turns the base's row 0 into the merged head and leaves other rows 0.
**      The same with rsLoRA (alpha folded as alpha·sqrt(r)). Corrupt adapter GGUFs (unpaired,
**      rank mismatch, a non-LoRA tensor, another adapter.type) are refused with clear errors.
**      The CLI writes the same bytes as the library.
**   2. --peft DIR: tensors copied byte for byte, the head renamed to base_model.model.score.weight,
**      "score" in modules_to_save; the detector of base + that directory scores as before; an
**      adapter of another shape is refused.
**   3. --hf DIR: merged weights equal the merged GGUF's, score.weight = head, config.json says
**      Qwen2ForSequenceClassification, num_labels 1, pad_token_id; the f16 variant is F16.
**   4. Independent readers of the --hf and --peft directories: Debian's /usr/bin/python3 with
**      torch (tests/ref/export_hf_check.py: names, shapes, dtypes, config fields; then
**      tests/ref/qwen2_ref.py: a float64 PyTorch forward of the HF directory, and of base +
**      PEFT directory, against our detector's hidden states and rewards to 1e-4), and, with
**      libtorch, `sentinel score --model HF_DIR` and `sentinel score --model BASE --adapter
**      PEFT_DIR` against `sentinel score --detector` to 1e-4.
**      Parts that need python torch are skipped (with a message) where it cannot be imported. */
#include "testutil.h"
#include "export/export.h"
#include "export/write.h"
#include "tests/testutil_qwen2.h"

#include <cjson/cJSON.h>

static struct sn_err E;
#define OK(x) CHECK_MSG((x) == SN_OK, "%s", E.msg)

/* base + (alpha/r)·B·A (adapter GGUF) against the merged GGUF, for every pair; returns the
** number of pairs checked. Tolerance: relative to |W| + Σ|s·b·a| (f32 sgemm vs double). */
static int check_pairs(const char *base_gguf, const char *adapter_gguf, const char *merged_gguf,
                       double *alpha_out)
{
    struct sn_gguf *gb = NULL, *ga = NULL, *gm = NULL;
    OK(sn_gguf_open(base_gguf, &gb, &E));
    OK(sn_gguf_open(adapter_gguf, &ga, &E));
    OK(sn_gguf_open(merged_gguf, &gm, &E));
    if (!gb || !ga || !gm) {
        sn_gguf_close(gb);
        sn_gguf_close(ga);
        sn_gguf_close(gm);
        return 0;
    }
    const char *s = NULL;
    double alpha = 0;
    OK(sn_gguf_get_str(ga, "general.type", true, NULL, &s, &E));
    CHECK_STR(s, "adapter");
    OK(sn_gguf_get_str(ga, "adapter.type", true, NULL, &s, &E));
    CHECK_STR(s, "lora");
    OK(sn_gguf_get_str(ga, "general.architecture", true, NULL, &s, &E));
    CHECK_STR(s, "qwen2");
    OK(sn_gguf_get_f64(ga, "adapter.lora.alpha", true, 0, &alpha, &E));
    *alpha_out = alpha;
    int pairs = 0;
    for (size_t i = 0; i < sn_gguf_n_tensors(ga); i++) {
        const struct sn_gguf_tensor *a = sn_gguf_tensor(ga, i);
        size_t n = strlen(a->name);
        if (n < 8 || strcmp(a->name + n - 7, ".lora_a"))
            continue;
        char bn[96], wn[96];
        snprintf(bn, sizeof bn, "%.*s.lora_b", (int)(n - 7), a->name);
        snprintf(wn, sizeof wn, "%.*s", (int)(n - 7), a->name);
        const struct sn_gguf_tensor *b = sn_gguf_find_tensor(ga, bn);
        const struct sn_gguf_tensor *w = sn_gguf_find_tensor(gb, wn);
        const struct sn_gguf_tensor *m = sn_gguf_find_tensor(gm, wn);
        bool head = !strcmp(wn, "output.weight");
        CHECK_MSG(b && w && (m || head), "%s: partner, base or merged tensor missing", wn);
        if (!b || !w || (!m && !head))
            continue;
        const uint64_t in = w->ne[0], out = w->ne[1], r = b->ne[0];
        CHECK_MSG(a->ne[0] == in && a->ne[1] == r && b->ne[1] == out, "%s: shapes a {%llu, %llu}"
                  " b {%llu, %llu} base {%llu, %llu}", wn, (unsigned long long)a->ne[0],
                  (unsigned long long)a->ne[1], (unsigned long long)b->ne[0],
                  (unsigned long long)b->ne[1], (unsigned long long)in,
                  (unsigned long long)out);
        if (a->ne[0] != in || a->ne[1] != r || b->ne[1] != out)
            continue;
        float *fw = malloc(sizeof(float) * in * out), *fa = malloc(sizeof(float) * in * r);
        float *fb = malloc(sizeof(float) * r * out), *fm = malloc(sizeof(float) * in * out);
        OK(sn_gguf_tensor_to_f32(w, fw, &E));
        OK(sn_gguf_tensor_to_f32(a, fa, &E));
        OK(sn_gguf_tensor_to_f32(b, fb, &E));
        if (head) {   /* the merged file has the head under our key, not output.weight */
            const float *hv = NULL;
            size_t hn = 0;
            OK(sn_gguf_get_arr_f32(gm, SN_GGUF_KEY_HEAD, &hv, &hn, &E));
            CHECK(hn == in);
            memset(fm, 0, sizeof(float) * in * out);
            if (hv && hn == in)
                memcpy(fm, hv, sizeof(float) * in);
        } else {
            OK(sn_gguf_tensor_to_f32(m, fm, &E));
        }
        const double scale = alpha / (double)r;
        double worst = 0, delta = 0;
        for (uint64_t o = 0; o < out; o++)
            for (uint64_t j = 0; j < in; j++) {
                double acc = 0, mag = fabs(fw[o * in + j]);
                for (uint64_t k = 0; k < r; k++) {
                    acc += (double)fb[o * r + k] * fa[k * in + j];
                    mag += fabs(scale * fb[o * r + k] * fa[k * in + j]);
                }
                double want = fw[o * in + j] + scale * acc;
                worst = fmax(worst, fabs(fm[o * in + j] - want) / (1e-12 + mag));
                delta = fmax(delta, fabs(scale * acc));
            }
        CHECK_MSG(worst < 1e-5, "%s: base + alpha/r B A off the merged tensor by %.3g (relative)",
                  wn, worst);
        CHECK_MSG(delta > 1e-3, "%s: the adapter changes nothing (|dW| max %.3g)", wn, delta);
        pairs++;
        free(fw);
        free(fa);
        free(fb);
        free(fm);
    }
    sn_gguf_close(gb);
    sn_gguf_close(ga);
    sn_gguf_close(gm);
    return pairs;
}

/* A hand-made adapter GGUF with one spoilt feature: must be refused, naming `expect`. */
static void bad_adapter(const char *what, const char *type, const char *t1, uint64_t a0,
                        uint64_t a1, const char *t2, uint64_t b0, uint64_t b1,
                        const char *expect)
{
    struct sn_gguf_writer *w = NULL;
    static float zeros[4096];
    uint8_t *buf = NULL;
    size_t len = 0;
    struct sn_gguf *g = NULL;
    struct sn_err err = {0};
    OK(sn_gguf_writer_create(&w, &E));
    OK(sn_gguf_writer_set_str(w, "general.architecture", "qwen2", &E));
    OK(sn_gguf_writer_set_str(w, "general.type", "adapter", &E));
    OK(sn_gguf_writer_set_str(w, "adapter.type", type, &E));
    OK(sn_gguf_writer_set_f32(w, "adapter.lora.alpha", 8.0f, &E));
    uint64_t na[2] = {a0, a1}, nb[2] = {b0, b1};
    OK(sn_gguf_writer_add_tensor(w, t1, SN_GGML_F32, 2, na, zeros, &E));
    if (t2)
        OK(sn_gguf_writer_add_tensor(w, t2, SN_GGML_F32, 2, nb, zeros, &E));
    OK(sn_gguf_writer_to_memory(w, &buf, &len, &E));
    int rc = sn_gguf_open_memory(buf, len, what, &g, &err);
    CHECK_MSG(rc == SN_E_FORMAT && !g && strstr(err.msg, expect), "%s: rc %d, message '%s', "
              "expected '%s'", what, rc, err.msg, expect);
    sn_gguf_close(g);
    sn_free(buf);
    sn_gguf_writer_free(w);
}

static int write_ids_lines(const char *path, int32_t (*ids)[40], const int *lens, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < lens[i]; k++)
            fprintf(f, "%s%d", k ? " " : "", ids[i][k]);
        fputc('\n', f);
    }
    return fclose(f);
}

/* A qwen2_ref.py case: rows right-padded to 40 with mask 0. */
static void ref_case(const char *path, const char *name, const char *model, const char *adapter,
                     int32_t (*ids)[40], const int *lens, int n, float (*hid)[64],
                     const float *rewards)
{
    cJSON *j = cJSON_CreateObject(), *ji = cJSON_AddArrayToObject(j, "ids");
    cJSON *jm = cJSON_AddArrayToObject(j, "mask"), *jh = cJSON_AddArrayToObject(j, "hidden");
    cJSON_AddStringToObject(j, "name", name);
    cJSON_AddStringToObject(j, "model", model);
    if (adapter)
        cJSON_AddStringToObject(j, "adapter", adapter);
    else
        cJSON_AddNullToObject(j, "adapter");
    for (int i = 0; i < n; i++) {
        int row[40], mask[40];
        for (int k = 0; k < 40; k++) {
            row[k] = k < lens[i] ? ids[i][k] : 0;
            mask[k] = k < lens[i];
        }
        cJSON_AddItemToArray(ji, cJSON_CreateIntArray(row, 40));
        cJSON_AddItemToArray(jm, cJSON_CreateIntArray(mask, 40));
        cJSON_AddItemToArray(jh, cJSON_CreateFloatArray(hid[i], 64));
    }
    cJSON_AddItemToObject(j, "rewards", cJSON_CreateFloatArray(rewards, n));
    cJSON_AddNumberToObject(j, "tol", 1e-4);
    OK(sn_json_save(path, j, &E));
    cJSON_Delete(j);
}

int main(void)
{
    const char *dir = sn_test_dir("export_adapter");
    const char *src = getenv("SENTINEL_SRC");
    const char *bin = sn_test_bin();
    char mdir[1024], adir[1024], rsdir[1024], wdir[1024], m2dir[1024];
    char gbase[1024], gad[1024], gmerged[1024], grs[1024], grsm[1024], gcli[1024];
    char peft[1024], hf[1024], hf16[1024], gpeft[1024];
    snprintf(mdir, sizeof mdir, "%s/base", dir);
    snprintf(m2dir, sizeof m2dir, "%s/base-wide", dir);
    snprintf(adir, sizeof adir, "%s/adapter", dir);
    snprintf(rsdir, sizeof rsdir, "%s/adapter-rslora", dir);
    snprintf(wdir, sizeof wdir, "%s/adapter-wrapped", dir);
    snprintf(gbase, sizeof gbase, "%s/base-logit.gguf", dir);
    snprintf(gad, sizeof gad, "%s/adapter.gguf", dir);
    snprintf(gmerged, sizeof gmerged, "%s/merged.gguf", dir);
    snprintf(grs, sizeof grs, "%s/rslora.gguf", dir);
    snprintf(grsm, sizeof grsm, "%s/rslora-merged.gguf", dir);
    snprintf(gcli, sizeof gcli, "%s/adapter-cli.gguf", dir);
    snprintf(gpeft, sizeof gpeft, "%s/merged-from-peft.gguf", dir);
    snprintf(peft, sizeof peft, "%s/peft-out", dir);
    snprintf(hf, sizeof hf, "%s/hf-out", dir);
    snprintf(hf16, sizeof hf16, "%s/hf16-out", dir);

    struct sn_test_qwen2 c = {64, 2, 4, 2, 128, SN_TOKENIZER_DEMO_VOCAB, 1024, 1e6, 0.15, 31,
                              NULL};
    struct sn_test_peft pa = {4, 8.0, 0, 0, 0.1, 7};
    float *head_base = NULL, *head_ad = NULL;
    OK(sn_test_qwen2_write(&c, mdir, &head_base, &E));
    OK(sn_test_peft_write(&c, &pa, adir, &head_ad, &E));
    struct sn_test_peft prs = {8, 16.0, 1, 0, 0.1, 9};
    OK(sn_test_peft_write(&c, &prs, rsdir, NULL, &E));
    struct sn_test_peft pw = {4, 8.0, 0, 1, 0.1, 7};   /* same values as adir, wrapped head */
    OK(sn_test_peft_write(&c, &pw, wdir, NULL, &E));

    /* 1. the adapter GGUF */
    struct sn_export_params ep = sn_export_default_params();
    ep.base_dir = mdir;
    ep.max_len = 256;
    ep.head_as_logit = true;
    OK(sn_export_gguf(&ep, gbase, &E));
    ep.head_as_logit = false;
    ep.adapter_dir = adir;
    OK(sn_export_gguf(&ep, gmerged, &E));
    OK(sn_export_adapter_gguf(&ep, gad, &E));
    double alpha = 0;
    int pairs = check_pairs(gbase, gad, gmerged, &alpha);
    CHECK_MSG(pairs == 7 * c.L + 1, "%d LoRA pairs checked, expected %d (7 per layer + head)",
              pairs, 7 * c.L + 1);
    CHECK_CLOSE(alpha, 8.0, 0, 1e-7);
    {   /* the head pair: lora_b = e0, and the full head under our key */
        struct sn_gguf *g = NULL;
        OK(sn_gguf_open(gad, &g, &E));
        const struct sn_gguf_tensor *b = g ? sn_gguf_find_tensor(g, "output.weight.lora_b")
                                           : NULL;
        CHECK(b && b->ne[0] == 1 && b->ne[1] == (uint64_t)c.V && b->type == SN_GGML_F32);
        if (b) {
            const float *v = b->data;
            int ok = v[0] == 1.0f;
            for (uint64_t i = 1; i < b->n_elements; i++)
                ok &= v[i] == 0.0f;
            CHECK(ok);
        }
        const float *hv = NULL;
        size_t hn = 0;
        if (g)
            OK(sn_gguf_get_arr_f32(g, SN_GGUF_KEY_HEAD, &hv, &hn, &E));
        CHECK(hv && hn == (size_t)c.E && !memcmp(hv, head_ad, sizeof(float) * (size_t)c.E));
        sn_gguf_close(g);
    }
    {   /* the detector refuses an adapter file, saying what it is */
        struct sn_detector *dx = NULL;
        struct sn_err e2 = {0};
        int rc = sn_detector_open(gad, NULL, &dx, &e2);
        CHECK_MSG(rc == SN_E_UNSUPPORTED && !dx && strstr(e2.msg, "LoRA adapter GGUF"), "%s",
                  e2.msg);
    }
    /* rsLoRA: llama.cpp's alpha/r must equal PEFT's alpha/sqrt(r) */
    ep.adapter_dir = rsdir;
    OK(sn_export_gguf(&ep, grsm, &E));
    OK(sn_export_adapter_gguf(&ep, grs, &E));
    pairs = check_pairs(gbase, grs, grsm, &alpha);
    CHECK(pairs == 7 * c.L + 1);
    CHECK_CLOSE(alpha, 16.0 * sqrt(8.0), 0, 1e-6);
    /* corrupt adapter files */
    bad_adapter("unpaired", "lora", "blk.0.attn_q.weight.lora_a", 64, 4, NULL, 0, 0,
                "has no partner");
    bad_adapter("lonely b", "lora", "blk.0.attn_q.weight.lora_b", 4, 64, NULL, 0, 0,
                "has no partner");
    bad_adapter("rank", "lora", "blk.0.attn_q.weight.lora_a", 64, 4, "blk.0.attn_q.weight.lora_b",
                8, 64, "disagree on the rank");
    bad_adapter("not lora", "lora", "blk.0.attn_q.weight", 64, 64, NULL, 0, 0,
                "must end in .lora_a or .lora_b");
    bad_adapter("type", "ia3", "blk.0.attn_q.weight.lora_a", 64, 4, "blk.0.attn_q.weight.lora_b",
                4, 64, "only \"lora\"");
    /* the CLI writes the library's bytes; --adapter-only needs --adapter */
    ep.adapter_dir = adir;
    CHECK(sn_test_sh("%s export --base %s --adapter %s --adapter-only -o %s", bin, mdir, adir,
                     gcli) == 0);
    {
        char *x = NULL, *y = NULL;
        size_t lx = 0, ly = 0;
        OK(sn_file_read(gad, 0, &x, &lx, &E));
        OK(sn_file_read(gcli, 0, &y, &ly, &E));
        CHECK_MSG(x && y && lx == ly && !memcmp(x, y, lx), "the CLI's adapter GGUF differs");
        sn_free(x);
        sn_free(y);
    }
    CHECK(sn_test_sh("%s export --base %s --adapter-only -o %s/x.gguf 2>/dev/null", bin, mdir,
                     dir) == 2);

    /* 2. the PEFT directory (input with PEFT's wrapper name for the head) */
    ep.adapter_dir = wdir;
    OK(sn_export_peft(&ep, peft, &E));
    {
        char p1[1200], p2[1200];
        snprintf(p1, sizeof p1, "%s/adapter_model.safetensors", wdir);
        snprintf(p2, sizeof p2, "%s/adapter_model.safetensors", peft);
        struct sn_st_file *fi = NULL, *fo = NULL;
        OK(sn_st_open(p1, &fi, &E));
        OK(sn_st_open(p2, &fo, &E));
        CHECK(fi && fo && sn_st_count(fi) == sn_st_count(fo));
        for (size_t i = 0; fi && fo && i < sn_st_count(fi); i++) {
            const struct sn_st_tensor *t = sn_st_get(fi, i);
            const char *want = strstr(t->name, "modules_to_save") ? "base_model.model.score.weight"
                                                                  : t->name;
            const struct sn_st_tensor *u = sn_st_find(fo, want);
            CHECK_MSG(u && u->dtype == t->dtype && u->nbytes == t->nbytes &&
                      !memcmp(u->data, t->data, t->nbytes), "%s -> %s", t->name, want);
        }
        CHECK(fo && sn_st_find(fo, "base_model.model.score.weight") &&
              !sn_st_find(fo, "base_model.model.score.modules_to_save.default.weight"));
        sn_st_close(fi);
        sn_st_close(fo);
        cJSON *j = NULL;
        snprintf(p2, sizeof p2, "%s/adapter_config.json", peft);
        OK(sn_json_load(p2, &j, &E));
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "modules_to_save");
        CHECK(cJSON_IsArray(m) && cJSON_GetArraySize(m) == 1 &&
              !strcmp(cJSON_GetArrayItem(m, 0)->valuestring, "score"));
        cJSON_Delete(j);
    }
    ep.adapter_dir = peft;
    OK(sn_export_gguf(&ep, gpeft, &E));
    struct sn_detector *dm = NULL, *dp = NULL;
    OK(sn_detector_open(gmerged, NULL, &dm, &E));
    OK(sn_detector_open(gpeft, NULL, &dp, &E));
    /* sequences used below: random ids, 1..40 tokens */
    enum { NSEQ = 5 };
    int32_t ids[NSEQ][40];
    const int lens[NSEQ] = {1, 3, 12, 27, 40};
    float hid[NSEQ][64], rew[NSEQ];
    struct sn_rng rng;
    sn_rng_seed(&rng, 99);
    for (int i = 0; i < NSEQ; i++)
        for (int k = 0; k < 40; k++)
            ids[i][k] = (int32_t)sn_rng_below(&rng, (uint64_t)c.V);
    for (int i = 0; dm && dp && i < NSEQ; i++) {
        float r2 = 0;
        OK(sn_detector_score_ids(dm, ids[i], (size_t)lens[i], &rew[i], hid[i], &E));
        OK(sn_detector_score_ids(dp, ids[i], (size_t)lens[i], &r2, NULL, &E));
        CHECK(r2 == rew[i]);
    }
    sn_detector_free(dp);
    /* an adapter for another base (feed-forward width 96 instead of 128) is refused */
    struct sn_test_qwen2 c2 = c;
    c2.F = 96;
    OK(sn_test_qwen2_write(&c2, m2dir, NULL, &E));
    ep.base_dir = m2dir;
    ep.adapter_dir = adir;
    {
        struct sn_err e2 = {0};
        char out[1200];
        snprintf(out, sizeof out, "%s/peft-bad", dir);
        int rc = sn_export_peft(&ep, out, &e2);
        CHECK_MSG(rc == SN_E_FORMAT && strstr(e2.msg, "expected A"), "rc %d: %s", rc, e2.msg);
        CHECK(!sn_path_exists(out));
        snprintf(out, sizeof out, "%s/bad.gguf", dir);
        memset(&e2, 0, sizeof e2);
        rc = sn_export_adapter_gguf(&ep, out, &e2);
        CHECK_MSG(rc == SN_E_FORMAT && strstr(e2.msg, "expected A"), "rc %d: %s", rc, e2.msg);
    }
    ep.base_dir = mdir;

    /* 3. the merged Hugging Face directory */
    ep.adapter_dir = adir;
    OK(sn_export_hf(&ep, hf, &E));
    {
        char p[1200];
        snprintf(p, sizeof p, "%s/model.safetensors", hf);
        struct sn_st_file *f = NULL;
        struct sn_gguf *g = NULL;
        OK(sn_st_open(p, &f, &E));
        OK(sn_gguf_open(gmerged, &g, &E));
        static const char *const pairs_hf_gg[][2] = {
            {"model.embed_tokens.weight", "token_embd.weight"},
            {"model.norm.weight", "output_norm.weight"},
            {"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"},
            {"model.layers.0.self_attn.q_proj.bias", "blk.0.attn_q.bias"},
            {"model.layers.1.self_attn.k_proj.weight", "blk.1.attn_k.weight"},
            {"model.layers.1.self_attn.v_proj.weight", "blk.1.attn_v.weight"},
            {"model.layers.0.self_attn.o_proj.weight", "blk.0.attn_output.weight"},
            {"model.layers.1.mlp.gate_proj.weight", "blk.1.ffn_gate.weight"},
            {"model.layers.0.mlp.up_proj.weight", "blk.0.ffn_up.weight"},
            {"model.layers.1.mlp.down_proj.weight", "blk.1.ffn_down.weight"},
            {"model.layers.1.post_attention_layernorm.weight", "blk.1.ffn_norm.weight"},
        };
        for (size_t i = 0; f && g && i < sizeof pairs_hf_gg / sizeof *pairs_hf_gg; i++) {
            const struct sn_st_tensor *t = sn_st_find(f, pairs_hf_gg[i][0]);
            const struct sn_gguf_tensor *u = sn_gguf_find_tensor(g, pairs_hf_gg[i][1]);
            CHECK_MSG(t && u && t->dtype == SN_ST_F32 && t->nbytes == u->nbytes &&
                      !memcmp(t->data, u->data, t->nbytes), "%s", pairs_hf_gg[i][0]);
        }
        /* 12 per layer + embeddings, final norm, head; no lm_head */
        CHECK(f && sn_st_count(f) == (size_t)(12 * c.L + 3));
        const struct sn_st_tensor *s = f ? sn_st_find(f, "score.weight") : NULL;
        CHECK(s && s->n_dims == 2 && s->shape[0] == 1 && s->shape[1] == c.E &&
              !memcmp(s->data, head_ad, sizeof(float) * (size_t)c.E));
        sn_st_close(f);
        sn_gguf_close(g);
        cJSON *j = NULL;
        snprintf(p, sizeof p, "%s/config.json", hf);
        OK(sn_json_load(p, &j, &E));
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "architectures");
        CHECK(cJSON_IsArray(a) && cJSON_GetArraySize(a) == 1 &&
              !strcmp(cJSON_GetArrayItem(a, 0)->valuestring, "Qwen2ForSequenceClassification"));
        const cJSON *nl = cJSON_GetObjectItemCaseSensitive(j, "num_labels");
        const cJSON *pad = cJSON_GetObjectItemCaseSensitive(j, "pad_token_id");
        CHECK(cJSON_IsNumber(nl) && nl->valuedouble == 1);
        /* the demo tokenizer's <|endoftext|> */
        CHECK(cJSON_IsNumber(pad) && pad->valuedouble == SN_TOKENIZER_DEMO_VOCAB - 3);
        cJSON_Delete(j);
        snprintf(p, sizeof p, "%s/tokenizer.json", hf);
        CHECK(sn_path_exists(p));
    }
    ep.type = SN_GGML_F16;
    OK(sn_export_hf(&ep, hf16, &E));
    ep.type = SN_GGML_F32;
    {
        char p[1200];
        snprintf(p, sizeof p, "%s/model.safetensors", hf16);
        struct sn_st_file *f = NULL;
        OK(sn_st_open(p, &f, &E));
        const struct sn_st_tensor *t = f ? sn_st_find(f, "model.layers.0.mlp.up_proj.weight")
                                         : NULL;
        CHECK(t && t->dtype == SN_ST_F16);
        sn_st_close(f);
    }
    CHECK(sn_test_sh("%s export --base %s --adapter %s --hf %s/hf-cli --peft %s/peft-cli", bin,
                     mdir, adir, dir, dir) == 0);
    CHECK(sn_test_sh("cmp -s %s/model.safetensors %s/hf-cli/model.safetensors", hf, dir) == 0);

    /* 4. independent readers */
    char cpath[1200];
    int st = sn_test_sh(SN_TEST_PY " %s/tests/ref/export_hf_check.py %s %s", src ? src : "..",
                        hf, hf16);
    if (st == 77) {
        printf("python torch not importable: the Python checks are skipped\n");
    } else {
        CHECK_MSG(st == 0, "export_hf_check.py failed on %s", hf);
        snprintf(cpath, sizeof cpath, "%s/case-hf.json", dir);
        ref_case(cpath, "hf", hf, NULL, ids, lens, NSEQ, hid, rew);
        st = sn_test_sh(SN_TEST_PY " %s/tests/ref/qwen2_ref.py %s", src ? src : "..", cpath);
        CHECK_MSG(st == 0, "the PyTorch forward of %s disagrees with the detector", hf);
        snprintf(cpath, sizeof cpath, "%s/case-peft.json", dir);
        ref_case(cpath, "base+peft", mdir, peft, ids, lens, NSEQ, hid, rew);
        st = sn_test_sh(SN_TEST_PY " %s/tests/ref/qwen2_ref.py %s", src ? src : "..", cpath);
        CHECK_MSG(st == 0, "the PyTorch forward of base + %s disagrees with the detector", peft);
    }
#ifdef SENTINEL_WITH_TORCH
    {   /* the libtorch path reads the HF directory: same rewards as the GGUF to 1e-4 */
        char pi[1200], pm[1200], pd[1200];
        snprintf(pi, sizeof pi, "%s/ids.txt", dir);
        snprintf(pm, sizeof pm, "%s/rewards-model.txt", dir);
        snprintf(pd, sizeof pd, "%s/rewards-detector.txt", dir);
        CHECK(write_ids_lines(pi, ids, lens, NSEQ) == 0);
        CHECK(sn_test_sh("%s score --model %s --ids < %s > %s", bin, hf, pi, pm) == 0);
        CHECK(sn_test_sh("%s score --detector %s --ids < %s > %s", bin, gmerged, pi, pd) == 0);
        float rm[NSEQ + 1], rd[NSEQ + 1];
        int nm = sn_test_read_floats(pm, rm, NSEQ + 1), nd = sn_test_read_floats(pd, rd, NSEQ + 1);
        CHECK(nm == NSEQ && nd == NSEQ);
        for (int i = 0; i < NSEQ && nm == NSEQ && nd == NSEQ; i++) {
            CHECK_CLOSE(rm[i], rd[i], 1e-4, 1e-4);
            CHECK_CLOSE(rd[i], rew[i], 1e-6, 0);  /* %.6f of the library's value */
        }
        printf("score --model HF_DIR vs --detector: %d rewards, e.g. %.6f / %.6f\n", nm, rm[0],
               rd[0]);
        /* the --peft directory loads in the training side's PEFT loader over the base */
        snprintf(pm, sizeof pm, "%s/rewards-peft.txt", dir);
        CHECK(sn_test_sh("%s score --model %s --adapter %s --ids < %s > %s", bin, mdir, peft, pi,
                         pm) == 0);
        nm = sn_test_read_floats(pm, rm, NSEQ + 1);
        CHECK(nm == NSEQ);
        for (int i = 0; i < NSEQ && nm == NSEQ; i++)
            CHECK_CLOSE(rm[i], rew[i], 1e-4, 1e-4);
    }
#endif
    sn_detector_free(dm);
    free(head_base);
    free(head_ad);
    return sn_test_done();
}
