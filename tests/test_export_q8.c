/* tests/test_export_q8.c: `sentinel export --type q8_0` (llama.cpp's Q8_0 blocks: 32 int8 and an
** f16 scale) and the detector that dequantizes it at open, without libtorch:
**   1. every matrix of the Q8_0 file is Q8_0 (1-D tensors F32), general.file_type 7; per block,
**      the scale is max|x| / 127 of the f32 export's values to f16 precision, the largest value
**      comes back as ±127·d, and every value is within d/2 of the f32 weight (round to nearest);
**   2. the Q8_0 detector's rewards with f32 tiles (kernels "auto+tile": each tile of rows
**      dequantized into the sgemm) equal, bit for bit, those of an f32 export of the
**      dequantized weights (written back into a model directory here), and the f32 detector's
**      within 0.1·(1 + |r|) (TOL_Q8, below), not bit-equal (quantization happened); with the
**      default kernels (BF16 dot products where the CPU has AVX512-BF16) within TOL_Q8 too;
**   3. a matrix whose rows are not a multiple of 32 long is written F16 (ggml's converter does
**      the same); the writer refuses a Q8_0 tensor with such rows and the reader a file that
**      claims one; q8_0 is refused for --hf and --adapter-only. */
#include "testutil.h"
#include "export/export.h"
#include "export/write.h"
#include "tests/testutil_qwen2.h"

static struct sn_err E;
#define OK(x) CHECK_MSG((x) == SN_OK, "%s", E.msg)

/* Reward tolerance against f32: Q8_0 rounds each weight by up to d/2 = max|x_block| / 254, and
** this random tiny model amplifies weight noise (std 0.15 matrices, noisy norms, a head of norm
** ~8; Q8_0 keeps about 7 bits relative to the block maximum, f16 11): Q8_0 moves its rewards
** by up to ~5e-2·(1 + |r|) (measured, printed below). 0.1
** bounds that; the exact check is the next one: the Q8_0 detector equals an f32 detector of the
** dequantized weights bit for bit. */
#define TOL_Q8 0.1

/* HF names of the GGUF matrices (for the dequantized copy of the model). */
static const char *const hf_of[][2] = {
    {"attn_q.weight", "self_attn.q_proj.weight"},   {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},   {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

/* Copies the model directory src to dst with every matrix replaced by the Q8_0 file's
** dequantized values. */
static void write_dequantized(const char *src, const char *dst, const char *q8)
{
    char p[1200];
    struct sn_gguf *g = NULL;
    OK(sn_gguf_open(q8, &g, &E));
    CHECK(sn_test_sh("rm -rf '%s' && cp -r '%s' '%s'", dst, src, dst) == 0);
    snprintf(p, sizeof p, "%s/model.safetensors", src);
    struct sn_st_file *f = NULL;
    struct sn_st_writer *w = NULL;
    OK(sn_st_open(p, &f, &E));
    OK(sn_st_writer_create(&w, &E));
    float *bufs[64];
    int nb = 0;
    for (size_t i = 0; g && f && w && i < sn_st_count(f); i++) {
        const struct sn_st_tensor *t = sn_st_get(f, i);
        char gg[128] = "";
        unsigned l;
        char rest[128];
        if (!strcmp(t->name, "model.embed_tokens.weight"))
            snprintf(gg, sizeof gg, "token_embd.weight");
        else if (sscanf(t->name, "model.layers.%u.%127s", &l, rest) == 2)
            for (size_t k = 0; k < sizeof hf_of / sizeof *hf_of; k++)
                if (!strcmp(rest, hf_of[k][1]))
                    snprintf(gg, sizeof gg, "blk.%u.%s", l, hf_of[k][0]);
        const struct sn_gguf_tensor *q = gg[0] ? sn_gguf_find_tensor(g, gg) : NULL;
        const void *data = t->data;
        if (q && nb < 64) {
            CHECK(q->type == SN_GGML_Q8_0 && q->n_elements == t->n_elements);
            bufs[nb] = malloc(sizeof(float) * q->n_elements);
            OK(sn_gguf_tensor_to_f32(q, bufs[nb], &E));
            data = bufs[nb++];
        }
        OK(sn_st_writer_add(w, t->name, t->dtype, t->n_dims, t->shape, data, &E));
    }
    CHECK(nb == 15);
    snprintf(p, sizeof p, "%s/model.safetensors", dst);
    OK(sn_st_writer_save(w, p, &E));
    for (int i = 0; i < nb; i++)
        free(bufs[i]);
    sn_st_writer_free(w);
    sn_st_close(f);
    sn_gguf_close(g);
}

int main(void)
{
    const char *dir = sn_test_dir("export_q8");
    char mdir[1100], g32[1100], g8[1100], m3dir[1100], g3[1100];
    snprintf(mdir, sizeof mdir, "%s/tiny", dir);
    snprintf(g32, sizeof g32, "%s/f32.gguf", dir);
    snprintf(g8, sizeof g8, "%s/q8.gguf", dir);
    snprintf(m3dir, sizeof m3dir, "%s/narrow", dir);
    snprintf(g3, sizeof g3, "%s/narrow-q8.gguf", dir);
    struct sn_test_qwen2 c = {64, 2, 4, 2, 128, SN_TOKENIZER_DEMO_VOCAB, 1024, 1e6, 0.15, 21,
                              NULL};
    OK(sn_test_qwen2_write(&c, mdir, NULL, &E));
    struct sn_export_params ep = sn_export_default_params();
    ep.base_dir = mdir;
    ep.max_len = 256;
    OK(sn_export_gguf(&ep, g32, &E));
    ep.type = SN_GGML_Q8_0;
    OK(sn_export_gguf(&ep, g8, &E));

    /* 1. the blocks */
    struct sn_gguf *ga = NULL, *gq = NULL;
    OK(sn_gguf_open(g32, &ga, &E));
    OK(sn_gguf_open(g8, &gq, &E));
    if (!ga || !gq)
        return sn_test_done();
    uint64_t ft = 0;
    OK(sn_gguf_get_u64(gq, "general.file_type", true, 0, &ft, &E));
    CHECK(ft == 7);
    CHECK(sn_gguf_n_tensors(gq) == sn_gguf_n_tensors(ga));
    int n_q8 = 0;
    double worst_step = 0;
    for (size_t i = 0; i < sn_gguf_n_tensors(gq); i++) {
        const struct sn_gguf_tensor *q = sn_gguf_tensor(gq, i);
        const struct sn_gguf_tensor *a = sn_gguf_find_tensor(ga, q->name);
        CHECK(a && a->n_elements == q->n_elements);
        if (!a || a->n_elements != q->n_elements)
            continue;
        if (q->n_dims == 1) {
            CHECK_MSG(q->type == SN_GGML_F32, "%s: 1-D tensor is %s", q->name,
                      sn_ggml_type_name(q->type));
            continue;
        }
        CHECK_MSG(q->type == SN_GGML_Q8_0, "%s is %s", q->name, sn_ggml_type_name(q->type));
        CHECK(q->nbytes == q->n_elements / 32 * 34);
        n_q8++;
        const float *x = a->data;
        float *y = malloc(sizeof(float) * q->n_elements);
        OK(sn_gguf_tensor_to_f32(q, y, &E));
        for (uint64_t b = 0; b < q->n_elements / 32; b++) {
            double amax = 0, d;
            uint64_t at = 0;
            for (int j = 0; j < 32; j++)
                if (fabs(x[b * 32 + j]) > amax) {
                    amax = fabs(x[b * 32 + j]);
                    at = b * 32 + j;
                }
            uint16_t h;
            memcpy(&h, (const uint8_t *)q->data + b * 34, 2);
            d = sn_f16_to_f32(h);
            /* f16 has 11 significant bits: relative rounding <= 2^-11 */
            CHECK_MSG(fabs(d - amax / 127) <= amax / 127 * 4.9e-4 + 1e-12, "%s block %llu: scale "
                      "%g, max|x|/127 = %g", q->name, (unsigned long long)b, d, amax / 127);
            CHECK_MSG(fabs(fabs(y[at]) - 127 * d) <= 1e-6 * (1 + 127 * d), "%s block %llu: the "
                      "largest value comes back as %g, not +-127 d = %g", q->name,
                      (unsigned long long)b, y[at], 127 * d);
            for (int j = 0; j < 32; j++) {
                double e = fabs((double)y[b * 32 + j] - x[b * 32 + j]);
                /* round to nearest of x/d' with d' the f32 scale, stored as f16 d: the grid is
                ** d apart, plus 127·|d - d'| from the scale's own rounding */
                double bound = d / 2 + 127 * amax / 127 * 4.9e-4 + 1e-7;
                if (d > 0)
                    worst_step = fmax(worst_step, e / d);
                CHECK_MSG(e <= bound, "%s[%llu]: |%g - %g| > %g", q->name,
                          (unsigned long long)(b * 32 + j), y[b * 32 + j], x[b * 32 + j], bound);
            }
        }
        free(y);
    }
    CHECK(n_q8 == 1 + 7 * c.L);   /* token_embd and the seven projections of each layer */
    printf("%d Q8_0 matrices; worst |dequantized - f32| = %.3f steps of d\n", n_q8, worst_step);
    sn_gguf_close(ga);
    sn_gguf_close(gq);

    /* 2. rewards: against f32 (loose), and against the dequantized weights in f32 (exact) */
    char ddir[1100], gd[1100];
    snprintf(ddir, sizeof ddir, "%s/dequantized", dir);
    snprintf(gd, sizeof gd, "%s/dequantized.gguf", dir);
    write_dequantized(mdir, ddir, g8);
    ep.type = SN_GGML_F32;
    ep.base_dir = ddir;
    OK(sn_export_gguf(&ep, gd, &E));
    ep.type = SN_GGML_Q8_0;
    ep.base_dir = mdir;
    struct sn_detector *d32 = NULL, *d8 = NULL, *dd = NULL, *d8auto = NULL;
    struct sn_detector_params tiles = sn_detector_default_params();
    tiles.kernels = "auto+tile";
    OK(sn_detector_open(g32, NULL, &d32, &E));
    OK(sn_detector_open(g8, &tiles, &d8, &E));
    OK(sn_detector_open(g8, NULL, &d8auto, &E));
    OK(sn_detector_open(gd, NULL, &dd, &E));
    struct sn_rng rng;
    sn_rng_seed(&rng, 5);
    double worst = 0;
    int differ = 0;
    static const size_t lens[] = {1, 4, 17, 64, 200};
    for (size_t k = 0; d32 && d8 && k < sizeof lens / sizeof *lens; k++) {
        int32_t ids[256];
        for (size_t i = 0; i < lens[k]; i++)
            ids[i] = (int32_t)sn_rng_below(&rng, (uint64_t)c.V);
        float r32 = 0, r8 = 0, rd = 1, ra = 0;
        OK(sn_detector_score_ids(d32, ids, lens[k], &r32, NULL, &E));
        OK(sn_detector_score_ids(d8, ids, lens[k], &r8, NULL, &E));
        if (d8auto)
            OK(sn_detector_score_ids(d8auto, ids, lens[k], &ra, NULL, &E));
        CHECK_MSG(fabs(ra - r32) / (1 + fabs(r32)) <= TOL_Q8, "default kernels: %.9g vs f32 "
                  "%.9g", ra, r32);
        if (dd)
            OK(sn_detector_score_ids(dd, ids, lens[k], &rd, NULL, &E));
        CHECK_MSG(rd == r8, "len %zu: q8_0 %.9g, f32 of the dequantized weights %.9g", lens[k],
                  r8, rd);
        double rel = fabs(r8 - r32) / (1 + fabs(r32));
        worst = fmax(worst, rel);
        differ += r8 != r32;
        printf("len %3zu: f32 %+.6f q8_0 %+.6f (|diff| / (1 + |r|) = %.2e)\n", lens[k], r32, r8,
               rel);
        CHECK(rel <= TOL_Q8);
    }
    CHECK(differ > 0);
    printf("worst reward difference q8_0 vs f32: %.2e (tolerance %.0e)\n", worst, TOL_Q8);
    sn_detector_free(d32);
    sn_detector_free(d8);
    sn_detector_free(d8auto);
    sn_detector_free(dd);

    /* 3. rows of 48: F16 fallback; refusals */
    struct sn_test_qwen2 c3 = {48, 1, 4, 2, 64, SN_TOKENIZER_DEMO_VOCAB, 1024, 1e6, 0.15, 22,
                               NULL};
    OK(sn_test_qwen2_write(&c3, m3dir, NULL, &E));
    ep.base_dir = m3dir;
    OK(sn_export_gguf(&ep, g3, &E));
    struct sn_gguf *g = NULL;
    OK(sn_gguf_open(g3, &g, &E));
    const struct sn_gguf_tensor *tq = g ? sn_gguf_find_tensor(g, "blk.0.attn_q.weight") : NULL;
    const struct sn_gguf_tensor *td = g ? sn_gguf_find_tensor(g, "blk.0.ffn_down.weight") : NULL;
    CHECK(tq && tq->type == SN_GGML_F16);   /* ne[0] = 48 */
    CHECK(td && td->type == SN_GGML_Q8_0);  /* ne[0] = 64 */
    sn_gguf_close(g);
    struct sn_detector *d3 = NULL;
    OK(sn_detector_open(g3, NULL, &d3, &E));
    sn_detector_free(d3);
    {
        struct sn_gguf_writer *w = NULL;
        static float zeros[64 * 2];
        uint8_t q[2 * 34] = {0};
        uint64_t ne48[2] = {48, 2}, ne64[2] = {64, 1};
        struct sn_err e2 = {0};
        OK(sn_gguf_writer_create(&w, &E));
        int rc = w ? sn_gguf_writer_add_tensor(w, "t48", SN_GGML_Q8_0, 2, ne48, zeros, &e2)
                   : -1;
        CHECK_MSG(rc == SN_E_ARG && strstr(e2.msg, "not a multiple"), "%s", e2.msg);
        OK(sn_gguf_writer_add_tensor(w, "t64xx", SN_GGML_Q8_0, 2, ne64, q, &E));
        uint8_t *buf = NULL;
        size_t len = 0;
        OK(sn_gguf_writer_to_memory(w, &buf, &len, &E));
        /* claim ne[0] = 48: the info is name (u64 len + bytes), u32 n_dims, u64 ne[0], ... */
        uint8_t *p = NULL;
        for (size_t i = 0; buf && !p && i + 5 <= len; i++)
            if (!memcmp(buf + i, "t64xx", 5))
                p = buf + i;
        CHECK(p != NULL);
        if (p) {
            uint64_t v = 48;
            memcpy(p + 5 + 4, &v, 8);
            struct sn_gguf *gb = NULL;
            memset(&e2, 0, sizeof e2);
            rc = sn_gguf_open_memory(buf, len, "q8-48", &gb, &e2);
            CHECK_MSG(rc == SN_E_FORMAT && strstr(e2.msg, "not a multiple of Q8_0's block"),
                      "rc %d: %s", rc, e2.msg);
            sn_gguf_close(gb);
        }
        sn_free(buf);
        sn_gguf_writer_free(w);
    }
    {
        struct sn_err e2 = {0};
        char out[1200];
        snprintf(out, sizeof out, "%s/hf", dir);
        ep.base_dir = mdir;
        CHECK(sn_export_hf(&ep, out, &e2) == SN_E_ARG && strstr(e2.msg, "q8_0"));
    }
    CHECK(sn_test_sh("%s export --base %s --type q8_0 -o %s/cli.gguf --max-len 256", sn_test_bin(),
                     mdir, dir) == 0);
    CHECK(sn_test_sh("cmp -s %s %s/cli.gguf", g8, dir) == 0);
    return sn_test_done();
}
