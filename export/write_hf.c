/* export/write_hf.c: the Hugging Face outputs of `sentinel export` (export/write.h;
** docs/export.md): the PEFT adapter directory, validated against the base and re-written, and
** the merged Qwen2ForSequenceClassification directory (docs/formats.md#model-directory,
** #adapter-checkpoint). The inputs come through export/write_inputs.c (hf/ parses every
** Hugging Face file). */
#include "export/write_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The n values of f as safetensors dtype dt: f itself for F32, else a converted copy that
** bufs keeps. */
static int st_data(struct sn_exw_bufs *bufs, const float *f, size_t n, enum sn_st_dtype dt,
                   const void **data, struct sn_err *err)
{
    *data = f;
    if (dt == SN_ST_F32)
        return SN_OK;
    uint16_t *h = sn_malloc(n * 2 + 1);
    int rc = h ? sn_exw_keep(bufs, h, err) : sn_err_set(err, SN_E_NOMEM, "export: out of memory");
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        h[i] = dt == SN_ST_F16 ? sn_f32_to_f16(f[i]) : sn_f32_to_bf16(f[i]);
    *data = h;
    return SN_OK;
}

/* ---- the PEFT directory -------------------------------------------------------------------- */

/* Copy-and-validate: the trainer already writes PEFT's layout
** (docs/formats.md#adapter-checkpoint), so the adapter's tensors are checked against the base (every one a LoRA pair of
** a Qwen2 projection with the base's shapes, or the head [1, E]) and re-written unchanged in
** their own dtype, with the head under PEFT's name base_model.model.score.weight (the base's
** score.weight when the adapter has none: a SEQ_CLS adapter without it does not load in PEFT).
** adapter_config.json is the adapter's, with "score" added to modules_to_save. */
int sn_export_peft(const struct sn_export_params *p, const char *out_dir, struct sn_err *err)
{
    struct sn_exw_sources s;
    struct sn_st_writer *w = NULL;
    cJSON *cfg = NULL;
    float *hbase = NULL;
    size_t used = 0;
    char path[4096];
    if (!out_dir)
        return sn_err_set(err, SN_E_ARG, "export: an output directory is needed");
    int rc = sn_exw_sources_open(p, true, false, &s, err);
    if (!rc)
        rc = sn_st_writer_create(&w, err);
    if (rc)
        goto done;
    const int64_t E = s.c.E;
    for (int64_t l = 0; l < s.c.L; l++) {
        if (p->progress) /* as sn_export_gguf: done of total layers, for a progress display */
            p->progress(p->progress_user, (uint64_t)l, (uint64_t)s.c.L);
        for (size_t k = 0; k < SN_EXW_N_LAYER; k++) {
            int64_t d0, d1;
            const struct sn_st_tensor *A, *B;
            if ((rc = sn_exw_layer_pair(&s, l, k, &d0, &d1, &A, &B, err)))
                goto done;
            if (!A)
                continue;
            if ((rc = sn_st_writer_add(w, A->name, A->dtype, 2, A->shape, A->data, err)) ||
                (rc = sn_st_writer_add(w, B->name, B->dtype, 2, B->shape, B->data, err)))
                goto done;
            used += 2;
        }
    }
    if (p->progress)
        p->progress(p->progress_user, (uint64_t)s.c.L, (uint64_t)s.c.L);
    const struct sn_st_tensor *hs = NULL;
    if ((rc = sn_exw_adapter_head(&s.ad, E, &hs, err)))
        goto done;
    if (hs) {
        rc = sn_st_writer_add(w, "base_model.model.score.weight", hs->dtype, 2, hs->shape,
                              hs->data, err);
        used++;
    } else {
        const int64_t shape[2] = {1, E};
        rc = sn_exw_load_f32(s.wts, p->base_dir, "score.weight", 1, E, true, &hbase, err);
        if (!rc && !hbase)
            rc = sn_err_set(err, SN_E_FORMAT, "%s: no reward head: neither the adapter nor the "
                            "base has score.weight", s.ad.path);
        if (!rc)
            rc = sn_st_writer_add(w, "base_model.model.score.weight", SN_ST_F32, 2, shape,
                                  hbase, err);
    }
    if (!rc)
        rc = sn_exw_adapter_all_used(&s.ad, used, err);
    if (!rc)
        rc = sn_st_writer_set_metadata(w, "format", "pt", err);
    if (rc)
        goto done;
    /* adapter_config.json: the adapter's (adapter_open validated it), "score" saved */
    if ((rc = sn_exw_join(path, sizeof path, p->adapter_dir, "adapter_config.json", err)) ||
        (rc = sn_json_load(path, &cfg, err)))
        goto done;
    cJSON *mts = cJSON_GetObjectItemCaseSensitive(cfg, "modules_to_save"), *x;
    bool has_score = false;
    cJSON *list = cJSON_IsArray(mts) ? mts : NULL;
    cJSON_ArrayForEach(x, list)
        has_score |= cJSON_IsString(x) && !strcmp(x->valuestring, "score");
    if (!has_score) {
        if (!cJSON_IsArray(mts)) {
            cJSON_DeleteItemFromObjectCaseSensitive(cfg, "modules_to_save");
            mts = cJSON_AddArrayToObject(cfg, "modules_to_save");
        }
        if (!mts || !cJSON_AddItemToArray(mts, cJSON_CreateString("score"))) {
            rc = sn_err_set(err, SN_E_NOMEM, "export: out of memory");
            goto done;
        }
    }
    if ((rc = sn_mkdirs(out_dir, err)) ||
        (rc = sn_exw_join(path, sizeof path, out_dir, "adapter_model.safetensors", err)) ||
        (rc = sn_st_writer_save(w, path, err)) ||
        (rc = sn_exw_join(path, sizeof path, out_dir, "adapter_config.json", err)))
        goto done;
    rc = sn_json_save(path, cfg, err);
done:
    cJSON_Delete(cfg);
    sn_free(hbase);
    sn_st_writer_free(w);
    sn_exw_sources_close(&s);
    return rc;
}

/* ---- the merged Hugging Face directory ----------------------------------------------------- */

/* Copies dir/name to out/name (atomically) if it exists; `required` makes its absence an error. */
static int copy_file(const char *dir, const char *out, const char *name, bool required,
                     struct sn_err *err)
{
    char src[4096], dst[4096];
    char *data = NULL;
    size_t n = 0;
    int rc = sn_exw_join(src, sizeof src, dir, name, err);
    if (!rc)
        rc = sn_exw_join(dst, sizeof dst, out, name, err);
    if (rc)
        return rc;
    if (!sn_path_exists(src))
        return required ? sn_err_set(err, SN_E_IO, "%s: not found", src) : SN_OK;
    rc = sn_file_read(src, (size_t)1 << 30, &data, &n, err);
    if (!rc)
        rc = sn_atomic_write(dst, data, n, err);
    sn_free(data);
    return rc;
}

static int set_json(cJSON *j, const char *key, cJSON *v, struct sn_err *err)
{
    if (!v)
        return sn_err_set(err, SN_E_NOMEM, "export: out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(j, key);
    cJSON_AddItemToObject(j, key, v);
    return SN_OK;
}

/* A Qwen2ForSequenceClassification directory with the LoRA merged (W + s · B A in f32, as in
** the GGUF) and the head as score.weight [1, E]: config.json is the base's with architectures,
** num_labels = 1 (id2label/label2id of one label), pad_token_id (the base's, else the
** tokenizer's <|endoftext|>, else <|im_end|>; transformers pools at the last non-pad token),
** torch_dtype of the written type and no tied lm_head; model.safetensors with the HF names;
** the base's tokenizer files copied. */
int sn_export_hf(const struct sn_export_params *p, const char *out_dir, struct sn_err *err)
{
    struct sn_exw_sources s;
    struct sn_st_writer *w = NULL;
    struct sn_exw_bufs bufs = {0};
    struct sn_hf_tokenizer tk = {0};
    cJSON *cfg = NULL;
    float *head = NULL, *f = NULL;
    size_t used = 0;
    char name[512], path[4096];
    if (!out_dir)
        return sn_err_set(err, SN_E_ARG, "export: an output directory is needed");
    int rc = sn_exw_sources_open(p, false, false, &s, err);
    if (!rc)
        rc = sn_hf_tokenizer_load(p->base_dir, s.c.V, &tk, err);
    if (!rc)
        rc = sn_st_writer_create(&w, err);
    if (rc)
        goto done;
    const int64_t E = s.c.E;
    const enum sn_st_dtype dt = p->type == SN_GGML_F16 ? SN_ST_F16
                              : p->type == SN_GGML_BF16 ? SN_ST_BF16 : SN_ST_F32;
    /* head: the adapter's, else the base's */
    const struct sn_st_tensor *hs = NULL;
    if (s.ad.st && (rc = sn_exw_adapter_head(&s.ad, E, &hs, err)))
        goto done;
    if (hs) {
        if ((rc = sn_exw_tensor_f32(hs, &head, err)))
            goto done;
        used++;
    } else if ((rc = sn_exw_load_f32(s.wts, p->base_dir, "score.weight", 1, E, true, &head, err))) {
        goto done;
    }
    if (!head) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no reward head: neither the base nor the "
                        "adapter has score.weight", p->base_dir);
        goto done;
    }
    /* tensors, in HF names and shapes; converted like the GGUF's matrices (1-D too: HF keeps
    ** one dtype per checkpoint) */
    for (int64_t l = -1; l <= s.c.L; l++) {   /* -1: embeddings, L: the final norm */
        if (p->progress && l >= 0) /* as sn_export_gguf: done of total layers */
            p->progress(p->progress_user, (uint64_t)l, (uint64_t)s.c.L);
        size_t nk = (l < 0 || l == s.c.L) ? 1 : SN_EXW_N_LAYER;
        for (size_t k = 0; k < nk; k++) {
            int64_t d0 = E, d1 = 0;   /* HF [d1 = out, d0 = in]; d1 = 0 for vectors */
            bool lora = false, optional = false;
            if (l < 0) {
                d1 = s.c.V;
                snprintf(name, sizeof name, "model.embed_tokens.weight");
            } else if (l == s.c.L) {
                snprintf(name, sizeof name, "model.norm.weight");
            } else {
                sn_exw_layer_dims(sn_exw_layer_map[k].kind, E, s.Ekv, s.c.F, &d0, &d1);
                lora = d1 != 0;
                optional = sn_exw_layer_map[k].kind >= 5;   /* q/k/v biases */
                snprintf(name, sizeof name, "model.layers.%" PRId64 ".%s", l, sn_exw_layer_map[k].hf);
            }
            if ((rc = sn_exw_load_f32(s.wts, p->base_dir, name, d1 ? d1 : d0, d1 ? d0 : 0, optional,
                               &f, err)))
                goto done;
            if (!f)
                continue;
            if ((rc = sn_exw_keep(&bufs, f, err)))
                goto done;
            if (lora && s.ad.st) {
                char module[512];
                snprintf(module, sizeof module, "%.*s", (int)(strlen(name) - strlen(".weight")),
                         name);
                if ((rc = sn_exw_adapter_merge(&s.ad, module, f, d1, d0, &used, err)))
                    goto done;
            }
            const int64_t shape[2] = {d1 ? d1 : d0, d0};
            const void *data;
            if ((rc = st_data(&bufs, f, (size_t)(d1 ? d1 : 1) * (size_t)d0, dt, &data, err)) ||
                (rc = sn_st_writer_add(w, name, dt, d1 ? 2 : 1, shape, data, err)))
                goto done;
        }
    }
    {
        const int64_t shape[2] = {1, E};
        const void *data;
        if ((rc = st_data(&bufs, head, (size_t)E, dt, &data, err)) ||
            (rc = sn_st_writer_add(w, "score.weight", dt, 2, shape, data, err)))
            goto done;
    }
    if (s.ad.st && (rc = sn_exw_adapter_all_used(&s.ad, used, err)))
        goto done;
    if ((rc = sn_st_writer_set_metadata(w, "format", "pt", err)))
        goto done;
    /* config.json */
    if ((rc = sn_exw_join(path, sizeof path, p->base_dir, "config.json", err)) ||
        (rc = sn_json_load(path, &cfg, err)))
        goto done;
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(cfg, "pad_token_id");
    double pad_id = cJSON_IsNumber(pad) && pad->valuedouble >= 0 &&
                    pad->valuedouble < (double)s.c.V ? pad->valuedouble
                  : tk.pad >= 0 ? tk.pad : tk.eos;
    if (pad_id < 0) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no pad_token_id, and the tokenizer has neither "
                        "<|endoftext|> nor <|im_end|>; transformers needs one to pool", path);
        goto done;
    }
    cJSON *arch = cJSON_CreateArray(), *i2l = cJSON_CreateObject(), *l2i = cJSON_CreateObject();
    if (arch)
        cJSON_AddItemToArray(arch, cJSON_CreateString("Qwen2ForSequenceClassification"));
    if (i2l)
        cJSON_AddStringToObject(i2l, "0", "LABEL_0");
    if (l2i)
        cJSON_AddNumberToObject(l2i, "LABEL_0", 0);
    if ((rc = set_json(cfg, "architectures", arch, err)) ||
        (rc = set_json(cfg, "num_labels", cJSON_CreateNumber(1), err)) ||
        (rc = set_json(cfg, "id2label", i2l, err)) ||
        (rc = set_json(cfg, "label2id", l2i, err)) ||
        (rc = set_json(cfg, "pad_token_id", cJSON_CreateNumber(pad_id), err)) ||
        (rc = set_json(cfg, "tie_word_embeddings", cJSON_CreateFalse(), err)) ||
        (rc = set_json(cfg, "torch_dtype", cJSON_CreateString(
                           dt == SN_ST_F16 ? "float16" : dt == SN_ST_BF16 ? "bfloat16"
                                                                          : "float32"), err)))
        goto done;
    if ((rc = sn_mkdirs(out_dir, err)) ||
        (rc = sn_exw_join(path, sizeof path, out_dir, "model.safetensors", err)) ||
        (rc = sn_st_writer_save(w, path, err)) ||
        (rc = sn_exw_join(path, sizeof path, out_dir, "config.json", err)) ||
        (rc = sn_json_save(path, cfg, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "tokenizer.json", true, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "tokenizer_config.json", false, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "special_tokens_map.json", false, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "vocab.json", false, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "merges.txt", false, err)))
        goto done;
done:
    sn_exw_bufs_free(&bufs);
    sn_free(head);
    cJSON_Delete(cfg);
    sn_hf_tokenizer_free(&tk);
    sn_st_writer_free(w);
    sn_exw_sources_close(&s);
    return rc;
}
