/* tests/testutil_qwen2.h: writes a random Qwen2ForSequenceClassification directory (config.json,
** model.safetensors in f32 with score.weight, and the demo tokenizer.json or a given one) with
** the safetensors writer only, so tests and benchmarks of export/ need no libtorch.
** Header-only (static functions), shared by tests/test_export_*.c and bench/bench_detector.c. */
#ifndef SN_TESTUTIL_QWEN2_H
#define SN_TESTUTIL_QWEN2_H
#include "hf/hf.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sn_test_qwen2 {
    int    E, L, H, Hkv, F, V, ctx;
    double theta;
    double std;                 /* of the matrices (norm weights 1 ± std/2, biases ± std/2) */
    uint64_t seed;
    const char *tokenizer_json; /* copied into the directory; NULL = the demo tokenizer */
};

static float *sn_test_qwen2_randn(struct sn_rng *r, size_t n, double std, double mean)
{
    float *v = (float *)malloc(n * sizeof *v + 1);
    for (size_t i = 0; v && i < n; i++)
        v[i] = (float)(mean + std * sn_rng_normal(r));
    return v;
}

/* Writes the directory; *head (optional) receives a malloc'd copy of score.weight (E floats). */
static int sn_test_qwen2_write(const struct sn_test_qwen2 *c, const char *dir, float **head,
                               struct sn_err *err)
{
    struct sn_rng r;
    sn_rng_seed(&r, c->seed);
    char path[4200];
    int rc = sn_mkdirs(dir, err);
    if (rc)
        return rc;
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return sn_err_set(err, SN_E_IO, "%s: cannot write", path);
    fprintf(f, "{\"architectures\": [\"Qwen2ForSequenceClassification\"], \"model_type\": "
               "\"qwen2\", \"hidden_size\": %d, \"intermediate_size\": %d, "
               "\"num_hidden_layers\": %d, \"num_attention_heads\": %d, "
               "\"num_key_value_heads\": %d, \"vocab_size\": %d, \"max_position_embeddings\": "
               "%d, \"rms_norm_eps\": 1e-6, \"rope_theta\": %.1f, \"num_labels\": 1, "
               "\"torch_dtype\": \"float32\"}\n",
            c->E, c->F, c->L, c->H, c->Hkv, c->V, c->ctx, c->theta);
    fclose(f);
    struct sn_st_writer *w = NULL;
    float **keep = (float **)calloc((size_t)(14 * c->L + 8), sizeof *keep);
    int nk = 0;
    const int Ekv = c->Hkv * (c->E / c->H);
    struct { const char *n; int d0, d1; double mean, std; } per[] = {
        {"input_layernorm.weight", c->E, 0, 1.0, c->std / 2},
        {"self_attn.q_proj.weight", c->E, c->E, 0, c->std},
        {"self_attn.q_proj.bias", c->E, 0, 0, c->std / 2},
        {"self_attn.k_proj.weight", Ekv, c->E, 0, c->std},
        {"self_attn.k_proj.bias", Ekv, 0, 0, c->std / 2},
        {"self_attn.v_proj.weight", Ekv, c->E, 0, c->std},
        {"self_attn.v_proj.bias", Ekv, 0, 0, c->std / 2},
        {"self_attn.o_proj.weight", c->E, c->E, 0, c->std},
        {"post_attention_layernorm.weight", c->E, 0, 1.0, c->std / 2},
        {"mlp.gate_proj.weight", c->F, c->E, 0, c->std},
        {"mlp.up_proj.weight", c->F, c->E, 0, c->std},
        {"mlp.down_proj.weight", c->E, c->F, 0, c->std},
    };
    rc = keep ? sn_st_writer_create(&w, err) : sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (int l = -1; !rc && l <= c->L; l++) {
        size_t np = l < 0 || l == c->L ? 1 : sizeof per / sizeof *per;
        for (size_t k = 0; !rc && k < np; k++) {
            char name[160];
            int d0, d1;
            double mean, std;
            if (l < 0) {
                snprintf(name, sizeof name, "model.embed_tokens.weight");
                d0 = c->V, d1 = c->E, mean = 0, std = 0.5;
            } else if (l == c->L) {
                snprintf(name, sizeof name, "model.norm.weight");
                d0 = c->E, d1 = 0, mean = 1.0, std = c->std / 2;
            } else {
                snprintf(name, sizeof name, "model.layers.%d.%s", l, per[k].n);
                d0 = per[k].d0, d1 = per[k].d1, mean = per[k].mean, std = per[k].std;
            }
            int64_t shp[2] = {d0, d1};
            float *v = sn_test_qwen2_randn(&r, (size_t)d0 * (size_t)(d1 ? d1 : 1), std, mean);
            keep[nk++] = v;
            rc = v ? sn_st_writer_add(w, name, SN_ST_F32, d1 ? 2 : 1, shp, v, err)
                   : sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
    }
    if (!rc) {
        int64_t shp[2] = {1, c->E};
        float *v = sn_test_qwen2_randn(&r, (size_t)c->E, 1.0, 0);
        keep[nk++] = v;
        rc = sn_st_writer_add(w, "score.weight", SN_ST_F32, 2, shp, v, err);
        if (!rc && head) {
            *head = (float *)malloc((size_t)c->E * sizeof **head);
            memcpy(*head, v, (size_t)c->E * sizeof **head);
        }
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!rc)
        rc = sn_st_writer_save(w, path, err);
    sn_st_writer_free(w);
    for (int i = 0; i < nk; i++)
        free(keep[i]);
    free(keep);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (!rc && !c->tokenizer_json) {
        rc = sn_tokenizer_write_demo(path, err);
    } else if (!rc) {
        char *t = NULL;
        size_t n = 0;
        rc = sn_file_read(c->tokenizer_json, 0, &t, &n, err);
        if (!rc)
            rc = sn_atomic_write(path, t, n, err);
        sn_free(t);
    }
    return rc;
}
/* A random PEFT LoRA adapter for that model (no libtorch): lora_A [r, in] and lora_B [out, r]
** (both random, so B·A != 0) on all seven projections of every layer, a head [1, E] under
** base_model.model.score.weight (or PEFT's wrapper name
** base_model.model.score.modules_to_save.default.weight when head_wrapped), and
** adapter_config.json (task_type SEQ_CLS, modules_to_save ["score"]). */
struct sn_test_peft {
    int      r;
    double   alpha;
    int      rslora;       /* use_rslora: scale alpha / sqrt(r) */
    int      head_wrapped;
    double   std;
    uint64_t seed;
};

static inline int sn_test_peft_write(const struct sn_test_qwen2 *c, const struct sn_test_peft *a,
                                     const char *dir, float **head, struct sn_err *err)
{
    static const char *const mods[] = {"self_attn.q_proj", "self_attn.k_proj",
                                       "self_attn.v_proj", "self_attn.o_proj",
                                       "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
    const int Ekv = c->Hkv * (c->E / c->H);
    const int outs[] = {c->E, Ekv, Ekv, c->E, c->F, c->F, c->E};
    const int ins[] = {c->E, c->E, c->E, c->E, c->E, c->E, c->F};
    struct sn_rng r;
    sn_rng_seed(&r, a->seed);
    char path[4200];
    int rc = sn_mkdirs(dir, err);
    if (rc)
        return rc;
    struct sn_st_writer *w = NULL;
    float **keep = (float **)calloc((size_t)(14 * c->L + 2), sizeof *keep);
    int nk = 0;
    rc = keep ? sn_st_writer_create(&w, err) : sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (int l = 0; !rc && l < c->L; l++)
        for (int m = 0; !rc && m < 7; m++) {
            char na[200], nb[200];
            snprintf(na, sizeof na, "base_model.model.model.layers.%d.%s.lora_A.weight", l,
                     mods[m]);
            snprintf(nb, sizeof nb, "base_model.model.model.layers.%d.%s.lora_B.weight", l,
                     mods[m]);
            int64_t sa[2] = {a->r, ins[m]}, sb[2] = {outs[m], a->r};
            float *va = sn_test_qwen2_randn(&r, (size_t)a->r * (size_t)ins[m], a->std, 0);
            float *vb = sn_test_qwen2_randn(&r, (size_t)a->r * (size_t)outs[m], a->std, 0);
            keep[nk++] = va;
            keep[nk++] = vb;
            rc = va && vb ? sn_st_writer_add(w, na, SN_ST_F32, 2, sa, va, err)
                          : sn_err_set(err, SN_E_NOMEM, "out of memory");
            if (!rc)
                rc = sn_st_writer_add(w, nb, SN_ST_F32, 2, sb, vb, err);
        }
    if (!rc) {
        int64_t shp[2] = {1, c->E};
        float *v = sn_test_qwen2_randn(&r, (size_t)c->E, 1.0, 0);
        keep[nk++] = v;
        rc = v ? sn_st_writer_add(w, a->head_wrapped
                                         ? "base_model.model.score.modules_to_save.default.weight"
                                         : "base_model.model.score.weight",
                                  SN_ST_F32, 2, shp, v, err)
               : sn_err_set(err, SN_E_NOMEM, "out of memory");
        if (!rc && head) {
            *head = (float *)malloc((size_t)c->E * sizeof **head);
            memcpy(*head, v, (size_t)c->E * sizeof **head);
        }
    }
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    if (!rc)
        rc = sn_st_writer_save(w, path, err);
    sn_st_writer_free(w);
    for (int i = 0; i < nk; i++)
        free(keep[i]);
    free(keep);
    if (rc)
        return rc;
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return sn_err_set(err, SN_E_IO, "%s: cannot write", path);
    fprintf(f, "{\"base_model_name_or_path\": \"tiny\", \"bias\": \"none\", \"lora_alpha\": %g, "
               "\"lora_dropout\": 0.0, \"modules_to_save\": [\"score\"], \"peft_type\": \"LORA\", "
               "\"r\": %d, \"target_modules\": [\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", "
               "\"gate_proj\", \"up_proj\", \"down_proj\"], \"task_type\": \"SEQ_CLS\", "
               "\"use_rslora\": %s}\n", a->alpha, a->r, a->rslora ? "true" : "false");
    return fclose(f) ? sn_err_set(err, SN_E_IO, "%s: cannot write", path) : SN_OK;
}
#endif
