/* hf/hf.h: the Hugging Face and PEFT files sentinel reads and writes, one parser per format
** (docs/design.md §3; layouts: docs/formats.md#model-directory, #adapter-checkpoint,
** #safetensors, #tokenizerjson). train/ (the trainer's model directories and adapters) and the
** writer part of export/ (`sentinel export`) both read these files through this module; the
** runtime detector (libsentinel_detector) reads GGUF only and never links it.
**
**   config.json                   struct sn_model_config: sn_model_config_parse/_load/_check
**   *.safetensors                 hf/safetensors.h (sn_st_*: reader and atomic writer)
**   model.safetensors.index.json  sn_hf_weights_open: model.safetensors or every shard of the
**                                 index's weight_map
**   adapter_config.json           struct sn_hf_adapter_config: sn_hf_adapter_config_load
**   tokenizer.json                sn_hf_tokenizer_load: the vocabulary as GGUF arrays, read
**                                 through tokenizer/ (its one tokenizer.json parser)
**
** Direction: hf uses common (cJSON) and tokenizer (the tokenizer.json parser and the
** vocabulary arrays of tokenizer/tokenizer.h); tokenizer never uses hf, so the runtime detector
** still loads its tokenizer from GGUF metadata without this module.
**
** Every file is untrusted (docs/design.md §7): errors name the file and the key, tensor or
** entry at fault. Ownership: every _open/_load has a _close/_free that accepts NULL. */
#ifndef SN_HF_H
#define SN_HF_H
#include "common/common.h"
#include "hf/safetensors.h"

/* ---- config.json (hf/config.c) ------------------------------------------------------------ */

struct sn_model_config {
    int64_t hidden_size;
    int64_t intermediate_size;
    int64_t num_hidden_layers;
    int64_t num_attention_heads;
    int64_t num_key_value_heads;
    int64_t vocab_size;
    int64_t max_position_embeddings;
    double  rms_norm_eps;
    double  rope_theta;
    bool    tie_word_embeddings;
    int64_t pad_token_id;        /* -1 when absent */
    char    torch_dtype[16];     /* "float32", "bfloat16" or "float16": the on-disk dtype */
};

/* head_dim = hidden_size / num_attention_heads. */
int64_t sn_model_config_head_dim(const struct sn_model_config *c);
/* Checks every field and their consistency (heads divide hidden, KV heads divide heads, even
** head_dim, each size within the bounds below, ...). Errors name the file (name) and the
** field. Bounds: hidden_size <= 65536, intermediate_size <= 2^18, num_hidden_layers <= 512,
** num_attention_heads and num_key_value_heads <= 4096, vocab_size and max_position_embeddings
** <= 2^24 (far above any Qwen2 checkpoint; they keep every product of sizes in range). */
int sn_model_config_check(const struct sn_model_config *c, const char *name, struct sn_err *err);
/* Parses a HF config.json object. Required: hidden_size, intermediate_size, num_hidden_layers,
** num_attention_heads, num_key_value_heads, rms_norm_eps, rope_theta, max_position_embeddings,
** vocab_size; rope_theta may instead sit in rope_parameters (current transformers), whose
** rope_type must be "default"; num_key_value_heads null means num_attention_heads. Optional:
** tie_word_embeddings (false), torch_dtype or dtype ("float32"), pad_token_id, head_dim (must
** equal hidden_size / num_attention_heads), model_type (must be "qwen2" if present),
** hidden_act ("silu"), rope_scaling (null or rope_type "default"), use_sliding_window (must be
** false). Then sn_model_config_check. */
int sn_model_config_parse(const cJSON *json, const char *name, struct sn_model_config *c,
                          struct sn_err *err);
int sn_model_config_load(const char *path, struct sn_model_config *c, struct sn_err *err);
/* A config.json object (Qwen2ForSequenceClassification, num_labels 1); caller cJSON_Deletes. */
int sn_model_config_to_json(const struct sn_model_config *c, cJSON **out, struct sn_err *err);

/* ---- weights: model.safetensors or the index's shards (hf/weights.c) ----------------------- */

/* The safetensors files of a model directory: model.safetensors when present, else every shard
** model.safetensors.index.json's weight_map names. The index is checked: weight_map is a
** non-empty object whose values are plain file names in the same directory (no '/', not "."
** or ".."), at most SN_HF_MAX_SHARDS distinct ones, and each entry's tensor is in the shard it
** names; a tensor name in two shards is ambiguous and refused. */
#define SN_HF_MAX_SHARDS 1024
struct sn_hf_weights;
int    sn_hf_weights_open(const char *dir, struct sn_hf_weights **out, struct sn_err *err);
void   sn_hf_weights_close(struct sn_hf_weights *w);                /* NULL is fine */
size_t sn_hf_weights_n_files(const struct sn_hf_weights *w);
const struct sn_st_file *sn_hf_weights_file(const struct sn_hf_weights *w, size_t i);
/* The tensor of that name in any of the files (borrowed until close), or NULL; marks it used. */
const struct sn_st_tensor *sn_hf_weights_find(struct sn_hf_weights *w, const char *name);
/* Whether tensor j of file i was returned by sn_hf_weights_find. */
bool   sn_hf_weights_used(const struct sn_hf_weights *w, size_t i, size_t j);

/* ---- adapter_config.json, PEFT's LoraConfig (hf/peft.c) ------------------------------------ */

/* The projections a LoRA may target, in lora/'s order (enum sn_lora_target). */
#define SN_HF_LORA_TARGETS 7
const char *sn_hf_lora_target_name(int t);   /* "q_proj", ... "down_proj"; NULL out of range */

struct sn_hf_adapter_config {
    int      r;            /* 1..65536 */
    double   alpha;        /* lora_alpha > 0 */
    double   dropout;      /* lora_dropout in [0, 1) */
    bool     use_rslora;   /* scale alpha / sqrt(r) instead of alpha / r */
    double   scale;        /* alpha / r, or alpha / sqrt(r) with use_rslora */
    unsigned targets;      /* bit t: sn_hf_lora_target_name(t) is adapted */
    bool     has_score;    /* "score" in modules_to_save */
    bool     need_head;    /* task_type is not SEQ_CLS (TRL's recipe): the file must carry the
                           ** trained head base_model.model.score.weight */
};
/* Parses an adapter_config.json object (path names it in messages). peft_type "LORA";
** task_type SEQ_CLS, CAUSAL_LM or absent; r, lora_alpha, target_modules (a list, or
** "all-linear") required; bias "none"; rank_pattern and alpha_pattern empty;
** layers_to_transform null; every LoraConfig field that changes what the adapter computes and
** is not implemented (DoRA, fan_in_fan_out, lora_bias, QA-LoRA, aLoRA, layer replication,
** parameter targets, an init_lora_weights that rewrites the base) is refused by name. */
int sn_hf_adapter_config_parse(const cJSON *json, const char *path,
                               struct sn_hf_adapter_config *c, struct sn_err *err);
/* dir/adapter_config.json, parsed. */
int sn_hf_adapter_config_load(const char *dir, struct sn_hf_adapter_config *c,
                              struct sn_err *err);

/* ---- tokenizer.json as GGUF arrays (hf/vocab.c) -------------------------------------------- */

/* A base directory's tokenizer for the GGUF writer: the arrays of tokenizer/tokenizer.h
** (sn_tokenizer_to_arrays) over the model's vocab_size ids, the ids llama.cpp's tokenizer.ggml
** keys carry, and the chat template. */
struct sn_hf_tokenizer {
    char    **tokens;        /* n (= the model's vocab_size) strings, holes "[PAD<id>]" */
    int32_t  *types;         /* enum sn_token_type */
    size_t    n;
    char    **merges;        /* "a b" by rank */
    size_t    n_merges;
    const char *pre;         /* "qwen2" or "gpt2" (static) */
    bool      nfc;
    int32_t   bos, eos, pad; /* added <|endoftext|> (bos, pad) and <|im_end|> (eos); -1 */
    char     *chat_template; /* tokenizer_config.json's chat_template, or NULL */
    char      hash[65];      /* SHA-256 of tokenizer.json (what `sentinel build` records) */
};
/* Loads dir/tokenizer.json (tokenizer/'s checks, sn_tokenizer_open) for a model of n_vocab ids:
** a tokenizer with ids at or past n_vocab, or whose pre-tokenizer llama.cpp has no name for
** (neither Qwen2's split nor GPT-2's), is refused. */
int  sn_hf_tokenizer_load(const char *dir, int64_t n_vocab, struct sn_hf_tokenizer *out,
                          struct sn_err *err);
void sn_hf_tokenizer_free(struct sn_hf_tokenizer *t);

#endif /* SN_HF_H */
