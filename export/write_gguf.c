/* export/write_gguf.c: a Hugging Face Qwen2 directory (+ an optional PEFT LoRA adapter) -> a
** qwen2 GGUF that stock llama.cpp loads and our detector reads, and the adapter alone as
** llama.cpp's LoRA GGUF (export/write.h; docs/formats.md#gguf). The inputs come through
** export/write_inputs.c (hf/ parses every Hugging Face file).
**
** Names follow llama.cpp's qwen2 loader (docs/formats.md#gguf):
**   model.embed_tokens.weight                      -> token_embd.weight
**   model.layers.{i}.input_layernorm.weight        -> blk.{i}.attn_norm.weight
**   model.layers.{i}.self_attn.{q,k,v}_proj.weight -> blk.{i}.attn_{q,k,v}.weight (+ .bias)
**   model.layers.{i}.self_attn.o_proj.weight       -> blk.{i}.attn_output.weight
**   model.layers.{i}.post_attention_layernorm.weight -> blk.{i}.ffn_norm.weight
**   model.layers.{i}.mlp.{gate,up,down}_proj.weight  -> blk.{i}.ffn_{gate,up,down}.weight
**   model.norm.weight                              -> output_norm.weight
** An HF [out, in] matrix is row-major with `in` innermost, which is GGUF's ne {in, out}: the
** bytes are the same. Qwen2's RoPE is NEOX-style in llama.cpp, the same as HF's rotate_half, so
** Q and K need no permutation.
**
** The reward head (hidden -> 1, no bias) goes under our key sentinel.score.weight as f32, with
** qwen2.pooling_type = 3 (LAST): llama.cpp then returns the last token's final-norm state,
** whose dot product with the head is the reward. llama.cpp refuses a qwen2 file with a
** cls.output.weight tensor, so the head is never written as one. --head-as-logit also writes
** output.weight with row 0 = head and every other row 0, so logit 0 is the reward. */
#include "export/write_internal.h"
#include "tokenizer/template.h"
#include "tokenizer/tokenizer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The template every ChatML Qwen2 model ships (used when the base has no tokenizer_config). */
static const char chatml_template[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";

/* ---- writing ------------------------------------------------------------------------------ */

/* Adds a tensor from f32 data (ownership of f passes to bufs): 1-D stays F32, matrices are
** converted to `type`. HF shape [d1, d0] (d1 = 0: 1-D [d0]) -> ne {d0, d1}. */
static int add(struct sn_gguf_writer *w, struct sn_exw_bufs *bufs, const char *name, float *f,
               int64_t d0, int64_t d1, int type, struct sn_err *err)
{
    int rc = sn_exw_keep(bufs, f, err);
    if (rc)
        return rc;
    uint64_t ne[2] = {(uint64_t)d0, (uint64_t)(d1 ? d1 : 1)};
    size_t n = (size_t)ne[0] * (size_t)ne[1];
    if (!d1 || type == SN_GGML_F32)
        return sn_gguf_writer_add_tensor(w, name, SN_GGML_F32, d1 ? 2 : 1, ne, f, err);
    if (type == SN_GGML_Q8_0 && d0 % SN_Q8_0_BLOCK == 0) {
        uint8_t *q = sn_malloc(n / SN_Q8_0_BLOCK * (2 + SN_Q8_0_BLOCK) + 1);
        if (!q)
            return sn_err_set(err, SN_E_NOMEM, "export: out of memory for '%s'", name);
        sn_q8_0_quantize(f, n, q);
        if ((rc = sn_exw_keep(bufs, q, err)))
            return rc;
        return sn_gguf_writer_add_tensor(w, name, SN_GGML_Q8_0, 2, ne, q, err);
    }
    if (type == SN_GGML_Q8_0)   /* rows not a multiple of the block: F16, as ggml's converter */
        type = SN_GGML_F16;
    uint16_t *h = sn_malloc(n * 2 + 1);
    if (!h)
        return sn_err_set(err, SN_E_NOMEM, "export: out of memory for '%s'", name);
    for (size_t i = 0; i < n; i++)
        h[i] = type == SN_GGML_F16 ? sn_f32_to_f16(f[i]) : sn_f32_to_bf16(f[i]);
    if ((rc = sn_exw_keep(bufs, h, err)))
        return rc;
    return sn_gguf_writer_add_tensor(w, name, type, 2, ne, h, err);
}

int sn_export_gguf(const struct sn_export_params *p, const char *out_path, struct sn_err *err)
{
    if (!p || !p->base_dir || !out_path)
        return sn_err_set(err, SN_E_ARG, "export: a base directory and an output path are "
                          "needed");
    const char *dir = p->base_dir;
    struct sn_exw_sources s;
    struct sn_hf_tokenizer tk = {0};
    struct sn_exw_bufs bufs = {0};
    struct sn_gguf_writer *w = NULL;
    float *head = NULL;
    size_t used = 0;
    char name[512], hfn[256];
    int rc = sn_exw_sources_open(p, false, true, &s, err);
    if (!rc)
        rc = sn_hf_tokenizer_load(dir, s.c.V, &tk, err);
    if (!rc)
        rc = sn_gguf_writer_create(&w, err);
    if (rc)
        goto done;
    const struct sn_exw_config c = s.c;
    struct sn_hf_weights *wts = s.wts;
    const struct sn_exw_adapter ad = s.ad;
    const int64_t E = c.E, Ekv = c.Hkv * (c.E / c.H), F = c.F;
    uint32_t max_len = p->max_len ? p->max_len : 1024;
    if (max_len > c.ctx)
        max_len = (uint32_t)c.ctx;
    /* llama.cpp's llama_ftype: ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q8_0 7, MOSTLY_BF16 32 */
    int file_type = p->type == SN_GGML_F32 ? 0 : p->type == SN_GGML_F16 ? 1
                  : p->type == SN_GGML_Q8_0 ? 7 : 32;

    /* head: adapter's score, else the base's score.weight */
    const struct sn_st_tensor *hs = NULL;
    if (ad.st && (rc = sn_exw_adapter_head(&ad, E, &hs, err)))
        goto done;
    if (hs) {
        if ((rc = sn_exw_tensor_f32(hs, &head, err)))
            goto done;
        used++;
    }
    if (!head && (rc = sn_exw_load_f32(wts, dir, "score.weight", 1, E, true, &head, err)))
        goto done;
    if (!head) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no reward head: neither %s has "
                        "score.weight (a Qwen2ForSequenceClassification checkpoint or an "
                        "adapter with a trained head is needed)", dir,
                        p->adapter_dir ? "the base nor the adapter" : "the base (no --adapter)");
        goto done;
    }

    /* metadata */
    const char *gname = p->name ? p->name : sn_exw_last_component(dir, name, sizeof name);
    const char *system = p->system ? p->system : SN_TEMPLATE_SYSTEM;
    rc = sn_gguf_writer_set_str(w, "general.architecture", "qwen2", err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "general.name", gname, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "general.file_type", (uint32_t)file_type, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.context_length", (uint32_t)c.ctx, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.embedding_length", (uint32_t)E, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.block_count", (uint32_t)c.L, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.feed_forward_length", (uint32_t)F, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.attention.head_count", (uint32_t)c.H, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.attention.head_count_kv", (uint32_t)c.Hkv,
                                         err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, "qwen2.rope.freq_base", (float)c.theta, err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, "qwen2.attention.layer_norm_rms_epsilon",
                                         (float)c.eps, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.pooling_type", 3, err); /* LAST */
    if (!rc) rc = sn_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2", err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "tokenizer.ggml.pre", tk.pre, err);
    if (!rc) rc = sn_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens",
                                             (const char *const *)tk.tokens, tk.n, err);
    if (!rc) rc = sn_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", tk.types, tk.n,
                                             err);
    if (!rc) rc = sn_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges",
                                             (const char *const *)tk.merges, tk.n_merges, err);
    if (!rc && tk.bos >= 0)
        rc = sn_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)tk.bos, err);
    if (!rc && tk.eos >= 0)
        rc = sn_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)tk.eos, err);
    if (!rc && tk.pad >= 0)
        rc = sn_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)tk.pad,
                                    err);
    if (!rc) rc = sn_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false, err);
    if (!rc) rc = sn_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "tokenizer.chat_template",
                                         tk.chat_template ? tk.chat_template : chatml_template,
                                         err);
    if (!rc) rc = sn_gguf_writer_set_arr_f32(w, SN_GGUF_KEY_HEAD, head, (size_t)E, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_TEMPLATE, SN_TEMPLATE_ID, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_SYSTEM, system, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, SN_GGUF_KEY_MAX_LEN, max_len, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, SN_GGUF_KEY_HIST_SENT,
                                         p->history_sentences ? p->history_sentences : 2, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, SN_GGUF_KEY_HIST_CHARS,
                                         p->history_chars ? p->history_chars : 300, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_TOK_HASH,
                                         p->tokenizer_hash ? p->tokenizer_hash : tk.hash, err);
    if (!rc) rc = sn_gguf_writer_set_bool(w, SN_GGUF_KEY_TOK_NFC, tk.nfc, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_BASE, sn_exw_last_component(dir, hfn,
                                                                             sizeof hfn), err);
    if (!rc && p->adapter_dir)
        rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_ADAPTER, p->adapter_dir, err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, SN_GGUF_KEY_LORA, ad.st ? (float)ad.scale : 0.0f,
                                         err);
    if (rc)
        goto done;

    /* tensors */
    float *f = NULL;
    if ((rc = sn_exw_load_f32(wts, dir, "model.embed_tokens.weight", c.V, E, false, &f, err)) ||
        (rc = add(w, &bufs, "token_embd.weight", f, E, c.V, p->type, err)))
        goto done;
    for (int64_t l = 0; l < c.L; l++) {
        if (p->progress)
            p->progress(p->progress_user, (uint64_t)l, (uint64_t)c.L);
        for (size_t k = 0; k < SN_EXW_N_LAYER; k++) {
            int64_t d0, d1;   /* HF [d1 = out, d0 = in]; d1 = 0 for vectors */
            sn_exw_layer_dims(sn_exw_layer_map[k].kind, E, Ekv, F, &d0, &d1);
            snprintf(name, sizeof name, "model.layers.%" PRId64 ".%s", l, sn_exw_layer_map[k].hf);
            bool bias = sn_exw_layer_map[k].kind >= 5;
            if ((rc = sn_exw_load_f32(wts, dir, name, d1 ? d1 : d0, d1 ? d0 : 0, bias, &f, err)))
                goto done;
            if (!f)
                continue;  /* a Qwen2 without q/k/v biases (llama.cpp: optional) */
            if (ad.st && d1) {
                char module[512];
                size_t cut = strlen(name) - strlen(".weight");
                snprintf(module, sizeof module, "%.*s", (int)cut, name);
                if ((rc = sn_exw_adapter_merge(&ad, module, f, d1, d0, &used, err))) {
                    sn_free(f);
                    goto done;
                }
            }
            char gg[96];
            snprintf(gg, sizeof gg, "blk.%" PRId64 ".%s", l, sn_exw_layer_map[k].gg);
            if ((rc = add(w, &bufs, gg, f, d0, d1, p->type, err)))
                goto done;
        }
    }
    if (p->progress)
        p->progress(p->progress_user, (uint64_t)c.L, (uint64_t)c.L);
    if ((rc = sn_exw_load_f32(wts, dir, "model.norm.weight", E, 0, false, &f, err)) ||
        (rc = add(w, &bufs, "output_norm.weight", f, E, 0, p->type, err)))
        goto done;
    if (p->head_as_logit) {
        float *o = sn_calloc((size_t)c.V * (size_t)E, sizeof *o);
        if (!o) {
            rc = sn_err_set(err, SN_E_NOMEM, "export: out of memory for output.weight");
            goto done;
        }
        memcpy(o, head, (size_t)E * sizeof *o);
        if ((rc = add(w, &bufs, "output.weight", o, E, c.V, p->type, err)))
            goto done;
    }
    if (ad.st && (rc = sn_exw_adapter_all_used(&ad, used, err)))
        goto done;
    rc = sn_gguf_writer_save(w, out_path, err);
done:
    sn_exw_bufs_free(&bufs);
    sn_free(head);
    sn_gguf_writer_free(w);
    sn_hf_tokenizer_free(&tk);
    sn_exw_sources_close(&s);
    return rc;
}

/* ---- the adapter alone: llama.cpp's LoRA GGUF ---------------------------------------------- */

/* llama.cpp's adapter convention (docs/formats.md#gguf-lora-adapter): `<base tensor>.lora_a` ne {n_in, r} holds PEFT's A [r, in] as is, `.lora_b` ne
** {r, n_out} holds B [out, r] as is, and llama.cpp adds user_scale · alpha / r · B (A x) with
** r = lora_b.ne[0]. PEFT's rsLoRA scale alpha / sqrt(r) is folded in: alpha' = alpha · sqrt(r).
**
** The head rides along as a rank-1 pair on output.weight: lora_a = (h_adapter - h_base) /
** alpha' (ne {E, 1}), lora_b = e_0 (ne {1, V}), so alpha' / 1 · B A adds h_adapter - h_base to
** row 0 of output.weight and nothing elsewhere. Over a base GGUF exported with --head-as-logit
** from the same base directory (row 0 = h_base), llama.cpp's logit 0 is then the adapted
** reward (h_base = 0 when the base has no score.weight). The full head is also stored under
** sentinel.score.weight. */
int sn_export_adapter_gguf(const struct sn_export_params *p, const char *out_path,
                           struct sn_err *err)
{
    struct sn_exw_sources s;
    struct sn_exw_bufs bufs = {0};
    struct sn_gguf_writer *w = NULL;
    float *head = NULL, *hbase = NULL;
    size_t used = 0;
    char name[512], gg[128], hfn[256];
    if (!out_path)
        return sn_err_set(err, SN_E_ARG, "export: an output path is needed");
    int rc = sn_exw_sources_open(p, true, false, &s, err);
    if (!rc)
        rc = sn_gguf_writer_create(&w, err);
    if (rc)
        goto done;
    const int64_t E = s.c.E;
    const double alpha = s.ad.scale * s.ad.r;   /* llama.cpp: scale = alpha / r */
    const struct sn_st_tensor *hs = NULL;
    if ((rc = sn_exw_adapter_head(&s.ad, E, &hs, err)) ||
        (rc = sn_exw_load_f32(s.wts, p->base_dir, "score.weight", 1, E, true, &hbase, err)))
        goto done;
    if (hs) {
        if ((rc = sn_exw_tensor_f32(hs, &head, err)))
            goto done;
        used++;
    }
    if (!head && !hbase) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no reward head: neither the adapter nor the "
                        "base has score.weight", s.ad.path);
        goto done;
    }
    if (hs && !(alpha > 0)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: lora_alpha must be positive to carry the head "
                        "as a LoRA pair (alpha = %g)", s.ad.path, alpha);
        goto done;
    }
    const char *gname = p->name ? p->name : sn_exw_last_component(p->adapter_dir, name, sizeof name);
    rc = sn_gguf_writer_set_str(w, "general.architecture", "qwen2", err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "general.type", "adapter", err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "general.name", gname, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "adapter.type", "lora", err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, "adapter.lora.alpha", (float)alpha, err);
    if (!rc) rc = sn_gguf_writer_set_arr_f32(w, SN_GGUF_KEY_HEAD, head ? head : hbase,
                                             (size_t)E, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_BASE, sn_exw_last_component(p->base_dir, hfn,
                                                                             sizeof hfn), err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_ADAPTER, p->adapter_dir, err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, SN_GGUF_KEY_LORA, (float)s.ad.scale, err);
    if (rc)
        goto done;
    for (int64_t l = 0; l < s.c.L; l++)
        for (size_t k = 0; k < SN_EXW_N_LAYER; k++) {
            int64_t d0, d1;
            const struct sn_st_tensor *A, *B;
            if ((rc = sn_exw_layer_pair(&s, l, k, &d0, &d1, &A, &B, err)))
                goto done;
            if (!A)
                continue;
            float *fa, *fb;
            if ((rc = sn_exw_tensor_f32(A, &fa, err)))
                goto done;
            snprintf(gg, sizeof gg, "blk.%" PRId64 ".%s.lora_a", l, sn_exw_layer_map[k].gg);
            if ((rc = add(w, &bufs, gg, fa, d0, s.ad.r, p->type, err)))   /* ne {in, r} */
                goto done;
            if ((rc = sn_exw_tensor_f32(B, &fb, err)))
                goto done;
            snprintf(gg, sizeof gg, "blk.%" PRId64 ".%s.lora_b", l, sn_exw_layer_map[k].gg);
            if ((rc = add(w, &bufs, gg, fb, s.ad.r, d1, p->type, err)))   /* ne {r, out} */
                goto done;
            used += 2;
        }
    if (hs) {   /* the head pair, in f32: its values are small after the division by alpha */
        float *a = sn_malloc((size_t)E * sizeof *a), *b = sn_calloc((size_t)s.c.V, sizeof *b);
        if (!a || !b) {
            sn_free(a);
            sn_free(b);
            rc = sn_err_set(err, SN_E_NOMEM, "export: out of memory");
            goto done;
        }
        for (int64_t i = 0; i < E; i++)
            a[i] = (float)(((double)head[i] - (hbase ? hbase[i] : 0.0)) / alpha);
        b[0] = 1.0f;
        if ((rc = add(w, &bufs, "output.weight.lora_a", a, E, 1, SN_GGML_F32, err))) {
            sn_free(b);
            goto done;
        }
        if ((rc = add(w, &bufs, "output.weight.lora_b", b, 1, s.c.V, SN_GGML_F32, err)))
            goto done;
    }
    if ((rc = sn_exw_adapter_all_used(&s.ad, used, err)))
        goto done;
    rc = sn_gguf_writer_save(w, out_path, err);
done:
    sn_exw_bufs_free(&bufs);
    sn_free(head);
    sn_free(hbase);
    sn_gguf_writer_free(w);
    sn_exw_sources_close(&s);
    return rc;
}
