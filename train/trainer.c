/* train/trainer.c: `sentinel train` as a library: the trainer object (opened in parts: output
** and device, the shards, the step counts, settings and resume, the base model and its
** parameter groups), its stop request, and the loop (steps, logging, evaluation, checkpoints,
** final metrics). The other parts of the trainer are listed in train/trainer_internal.h.
** Keys and defaults: docs/train.md; checkpoint and metrics layouts: docs/formats.md
** ("Training output directory"). The loss is DESIGN's (docs/design.md §4), through loss/. */
#include "train/trainer_internal.h"

#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- the trainer object --------------------------------------------------------------------- */

int64_t sn_trainer_step(const struct sn_trainer *t) { return t->step; }
int64_t sn_trainer_total_steps(const struct sn_trainer *t) { return t->total; }
struct sn_model *sn_trainer_model(struct sn_trainer *t) { return t->m; }

void sn_trainer_params(struct sn_trainer *t, const struct sn_param **p, const bool **decay,
                       size_t *n)
{
    *p = t->params;
    *decay = t->decay;
    *n = t->n_params;
}

void sn_trainer_request_stop(struct sn_trainer *t)
{
    if (t)
        t->stop_requested = 1; /* a signal handler calls this: one store, nothing else */
}

void sn_trainer_free(struct sn_trainer *t)
{
    if (!t)
        return;
    for (int i = 0; i < SN_SPLIT_COUNT; i++)
        sn_tset_free(&t->data[i]);
    sn_manifest_free(t->man);
    sn_adamw_free(t->opt[0]);
    sn_adamw_free(t->opt[1]);
    sn_free(t->group[0]);
    sn_free(t->group[1]);
    sn_free(t->params);
    sn_free(t->decay);
    sn_model_free(t->m);
    sn_aten_dist_free(t->dist);
    sn_free(t->perm);
    sn_rows_free(&t->rows);
    sn_trainer_lm_free(t);
    sn_free(t->out);
    sn_free(t->shards);
    sn_free(t->tokenizer);
    cJSON_Delete(t->settings);
    sn_trainer_tb_close(t);
    sn_free(t);
}

/* ---- the base model ------------------------------------------------------------------------- */

/* A saved model names its pad id (docs/formats.md#model-directory): the tokenizer's
** <|endoftext|> (the pad token of Qwen2 chat data), else its <|im_end|>, else the last id. */
static int set_pad_from_tokenizer(struct sn_model *m, const char *tokenizer_path,
                                  struct sn_err *err)
{
    int64_t pad = -1;
    if (tokenizer_path) {
        struct sn_tokenizer *tok = NULL;
        int rc = sn_tokenizer_open(tokenizer_path, &tok, err);
        if (rc)
            return rc;
        pad = sn_tokenizer_token_id(tok, "<|endoftext|>");
        if (pad < 0)
            pad = sn_tokenizer_token_id(tok, "<|im_end|>");
        sn_tokenizer_free(tok);
    }
    if (pad < 0)
        pad = (int64_t)sn_model_get_config(m)->vocab_size - 1;
    return sn_model_set_pad_token_id(m, pad, err);
}

/* A base that is a sentinel checkpoint (an lm run's, typically) must come from shards of this
** run's tokenizer: its sentinel_state.json records the shards' vocabulary and tokenizer hash
** (docs/train.md "Domain-adaptive pretraining (objective lm)"). Other bases: the vocabulary
** check of make_base alone. */
static int check_base_checkpoint(struct sn_trainer *t, struct sn_err *err)
{
    char p[PATH_MAX];
    cJSON *st = NULL;
    if (sn_train_path_join(p, sizeof p, t->p.base, "sentinel_state.json", err) ||
        !sn_train_exists(p))
        return SN_OK;
    int rc = sn_json_load(p, &st, err);
    if (rc)
        return sn_err_wrap(err, "train.base");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(st, "shards_vocab_size");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(st, "tokenizer_hash");
    int64_t mv = sn_model_get_config(t->m)->vocab_size;
    if (cJSON_IsNumber(v) && (int64_t)v->valuedouble != t->vocab)
        rc = sn_err_set(err, SN_E_ARG, "train.base %s: a checkpoint trained on shards of "
                        "vocabulary %" PRId64 " (its model: %" PRId64 " rows), these shards' is "
                        "%" PRId64 ": it was trained with another tokenizer", t->p.base,
                        (int64_t)v->valuedouble, mv, t->vocab);
    else if (cJSON_IsString(h) && t->tok_hash[0] && strcmp(h->valuestring, t->tok_hash))
        rc = sn_err_set(err, SN_E_ARG, "train.base %s: a checkpoint trained on shards of "
                        "tokenizer %.12s..., these shards' is %.12s...: it was trained with "
                        "another tokenizer", t->p.base, h->valuestring, t->tok_hash);
    cJSON_Delete(st);
    return rc;
}

/* t->m: the full weights of resume_dir (full mode), the seeded init, or the HF base (given a
** head when it has none); in LoRA mode the adapters attached and loaded from resume_dir or
** train.init_adapter. Left in training mode. */
static int make_base(struct sn_trainer *t, const char *resume_dir, struct sn_err *err)
{
    struct sn_model_params mp = sn_model_default_params();
    mp.keep_lm_head = t->lm; /* an untied base's LM head trains with the rest */
    /* bf16: f32 master weights (and so f32 gradients, optimizer state and checkpoints),
    ** bf16 GEMMs in the forward and backward */
    mp.dtype = t->p.dtype == SN_DTYPE_BF16 ? SN_DTYPE_F32 : t->p.dtype;
    mp.autocast = t->p.dtype == SN_DTYPE_BF16 ? SN_DTYPE_BF16 : SN_DTYPE_F32;
    mp.seed = t->p.seed;
    mp.device = t->dev;
    mp.grad_checkpoint = t->p.grad_checkpoint;
    bool seeded = sn_train_base_is_seeded(t->p.base);
    int rc;
    if (t->full && resume_dir) {
        rc = sn_model_open_hf(resume_dir, &mp, &t->m, err);
    } else if (seeded) {
        struct sn_model_config c = sn_model_config_seeded(t->p.base, t->vocab);
        if (t->p.dtype == SN_DTYPE_F64)
            snprintf(c.torch_dtype, sizeof c.torch_dtype, "float32");
        rc = sn_model_create(&c, &mp, &t->m, err);
        if (!rc)
            rc = set_pad_from_tokenizer(t->m, t->tokenizer, err);
    } else {
        rc = sn_model_open_hf(t->p.base, &mp, &t->m, err);
        /* full fine-tuning writes its checkpoints in f32 (a bf16 base would round each save) */
        if (!rc && t->full)
            snprintf(t->m->cfg.torch_dtype, sizeof t->m->cfg.torch_dtype, "float32");
        if (!rc && !sn_model_has_head(t->m) && !t->lm)
            rc = sn_model_init_head(t->m, 0.02, sn_seed_derive(t->p.seed, "head", 0), err);
        if (!rc)
            rc = check_base_checkpoint(t, err);
        if (!rc && sn_model_get_config(t->m)->vocab_size < t->vocab)
            rc = sn_err_set(err, SN_E_ARG, "%s: vocabulary %" PRId64 " is smaller than the "
                            "shards' (%" PRId64 "): the shards were built with another "
                            "tokenizer", t->p.base, sn_model_get_config(t->m)->vocab_size,
                            t->vocab);
    }
    if (rc)
        return rc;
    if (t->lm) {
        /* the LM head is the embedding unless an untied base brought its own (train/train.h
        ** sn_model_forward_lm): a seeded base's checkpoint says so in config.json */
        if (seeded && !(t->full && resume_dir))
            t->m->cfg.tie_word_embeddings = true;
        sn_model_drop_head(t->m); /* the reward run initialises its own */
    }
    if (!t->full) {
        rc = sn_model_lora_attach(t->m, &t->p.lora, err);
        if (!rc && resume_dir)
            rc = sn_model_adapter_load(t->m, resume_dir, err);
        else if (!rc && t->p.init_adapter)
            rc = sn_model_adapter_load(t->m, t->p.init_adapter, err);
    }
    sn_model_set_training(t->m, true);
    return rc;
}

/* Writes out/base (seeded init) once: config.json, model.safetensors, tokenizer.json. */
static int write_seeded_base(struct sn_trainer *t, struct sn_err *err)
{
    char p[PATH_MAX];
    int rc = sn_train_path_join(p, sizeof p, t->out, "base", err);
    if (rc)
        return rc;
    struct sn_model_params mp = sn_model_default_params();
    mp.seed = t->p.seed;
    struct sn_model_config c = sn_model_config_seeded(t->p.base, t->vocab);
    struct sn_model *m = NULL;
    rc = sn_model_create(&c, &mp, &m, err);
    if (!rc)
        rc = set_pad_from_tokenizer(m, t->tokenizer, err);
    if (!rc)
        rc = sn_model_save_hf(m, p, err);
    sn_model_free(m);
    char q[PATH_MAX];
    if (!rc && t->tokenizer &&
        !(rc = sn_train_path_join(q, sizeof q, p, "tokenizer.json", err)))
        rc = sn_train_copy_file(t->tokenizer, q, err);
    return rc ? sn_err_wrap(err, "writing the seeded base %s", p) : SN_OK;
}

/* train.device: "cpu", "cuda:N", or "cuda", which under a launcher means the process's own
** GPU, cuda:LOCAL_RANK (SLURM_LOCALID under srun), as torchrun's convention is; when a process
** sees a single GPU (srun --gpus-per-task=1 binds one to each task), that one. */
static int resolve_device(const char *name, struct sn_device *dev, struct sn_err *err)
{
    int rc = sn_aten_device_parse(name ? name : "cpu", dev, err);
    if (rc)
        return sn_err_wrap(err, "train.device");
    if (dev->type == SN_DEVICE_CUDA && !strcmp(name, "cuda")) {
        const char *lr = getenv("LOCAL_RANK") ? getenv("LOCAL_RANK") : getenv("SLURM_LOCALID");
        int n = sn_aten_cuda_device_count();
        if (lr && *lr) {
            char *end = NULL;
            long v = strtol(lr, &end, 10);
            if (*end || v < 0)
                return sn_err_set(err, SN_E_ARG, "train.device cuda: local rank '%s' is not a "
                                  "number", lr);
            if (n > 1 && v >= n)
                return sn_err_set(err, SN_E_ARG, "train.device cuda: local rank %ld but only %d "
                                  "CUDA device(s) on this node", v, n);
            dev->index = n > 1 ? (int)v : 0; /* one visible GPU: Slurm bound it to us */
        }
    }
    return SN_OK;
}


/* ---- open, in parts ------------------------------------------------------------------------- */

static bool seeded_base(const char *base)
{
    return sn_train_base_is_seeded(base);
}

/* train.base naming a training output directory (an lm run's, typically) means its last
** checkpoint, which must be a model directory (docs/train.md "Domain-adaptive pretraining
** (objective lm)"). */
static int resolve_run_base(struct sn_trainer *t, struct sn_err *err)
{
    char p[PATH_MAX];
    int k = snprintf(p, sizeof p, "%s/train_settings.json", t->p.base);
    if (sn_train_base_is_seeded(t->p.base) || k < 0 || (size_t)k >= sizeof p ||
        !sn_train_exists(p))
        return SN_OK; /* a model directory (a long path fails where it is opened) */
    struct sn_ckpt_choice ck;
    int rc = sn_train_checkpoint_pick(t->p.base, SN_CKPT_LAST, &ck, err);
    if (rc)
        return sn_err_wrap(err, "train.base");
    if (ck.kind != SN_CKPT_FULL)
        return sn_err_set(err, SN_E_ARG, "train.base %s: its last checkpoint %s is a LoRA "
                          "adapter, not a model directory; give the model it applies to, and "
                          "the adapter as train.init_adapter", t->p.base, ck.dir);
    snprintf(t->base_dir, sizeof t->base_dir, "%s", ck.dir);
    t->p.base = t->base_dir;
    return SN_OK;
}

/* The output directory (created), the absolute paths of out and shards, the mode and its
** default learning rate, the thread count and the device. */
static int open_out_and_device(struct sn_trainer *t, const char *shards, const char *out,
                               struct sn_err *err)
{
    const struct sn_train_params *p = &t->p;
    char rp[PATH_MAX];
    int rc = sn_mkdirs(out, err);
    if (!rc) {
        t->out = sn_strdup(realpath(out, rp) ? rp : out);
        t->shards = sn_strdup(realpath(shards, rp) ? rp : shards);
        if (!t->out || !t->shards)
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    t->lm = p->objective == SN_OBJECTIVE_LM;
    t->full = sn_train_is_full(p); /* the lm objective trains every weight */
    if (!t->p.sched.lr)
        t->p.sched.lr = t->full ? 1e-3 : 5e-6;
    if (p->threads > 0)
        sn_aten_set_num_threads(p->threads);
    if (!rc)
        rc = resolve_device(p->device, &t->dev, err);
    if (!rc)
        rc = resolve_run_base(t, err);
    return rc;
}

/* The tokenizer (train.tokenizer, else the HF base's tokenizer.json) and its SHA-256. */
static int open_tokenizer(struct sn_trainer *t, struct sn_err *err)
{
    const struct sn_train_params *p = &t->p;
    char rp[PATH_MAX], path[PATH_MAX];
    int rc = SN_OK;
    if (p->tokenizer) {
        t->tokenizer = sn_strdup(realpath(p->tokenizer, rp) ? rp : p->tokenizer);
        rc = sn_sha256_file(p->tokenizer, t->tok_hash, err);
    } else if (!seeded_base(p->base)) {
        if (!(rc = sn_train_path_join(path, sizeof path, p->base, "tokenizer.json", err)) &&
            sn_train_exists(path)) {
            t->tokenizer = sn_strdup(realpath(path, rp) ? rp : path);
            rc = sn_sha256_file(path, t->tok_hash, err);
        }
    }
    return rc;
}

/* The shards: a complete build whose every shard carries the tokenizer's hash (or, without a
** tokenizer, the first shard's), and a train split that is not empty. */
static int open_shards(struct sn_trainer *t, const char *shards, struct sn_err *err)
{
    bool seeded = seeded_base(t->p.base);
    int rc = sn_manifest_load(shards, &t->man, err);
    if (!rc && !t->man->complete)
        rc = sn_err_set(err, SN_E_ARG, "%s: the build is not complete (re-run `sentinel build` "
                        "to finish it)", shards);
    if (!rc)
        rc = open_tokenizer(t, err);
    char shard_hash[65] = "";
    snprintf(shard_hash, sizeof shard_hash, "%s", t->tok_hash);
    for (int s = 0; s < SN_SPLIT_COUNT && !rc; s++) {
        /* the lm objective reads the train split alone: held-out text never reaches it */
        if (t->lm && s != SN_SPLIT_TRAIN)
            continue;
        rc = sn_tset_open(&t->data[s], t->man, (enum sn_split)s, shard_hash, &t->vocab, err);
        if (rc && t->tok_hash[0] && strstr(err->msg, "tokenizer"))
            sn_err_wrap(err, "the tokenizer %s (SHA-256 %.12s...) is not the one the shards "
                        "were built with", t->tokenizer, t->tok_hash);
    }
    if (!rc && !t->tok_hash[0])
        snprintf(t->tok_hash, sizeof t->tok_hash, "%s", shard_hash);
    if (!rc && seeded && !t->tokenizer)
        SN_WARN("train: no tokenizer given (train.tokenizer or --tokenizer): the base and the "
                "checkpoints will lack tokenizer.json");
    if (!rc && t->data[SN_SPLIT_TRAIN].n == 0)
        rc = sn_err_set(err, SN_E_ARG, "%s: no training tuples (the train split is empty)",
                        shards);
    if (!rc && t->lm)
        rc = sn_trainer_lm_open(t, err);
    if (!rc && t->lm && (t->p.batching != SN_BATCH_PADDED || t->p.length_bucketing))
        SN_WARN("train: objective lm pads its rows: train.batching and train.length_bucketing "
                "are for the reward objective");
    return rc;
}

/* The process group (torchrun / Slurm environment, else a world of 1; docs/train.md), the
** tuples per step G, the steps per epoch and in all, and the warmup. */
static int open_steps(struct sn_trainer *t, struct sn_err *err)
{
    const struct sn_train_params *p = &t->p;
    struct sn_dist_params dp = sn_dist_default_params();
    dp.device = t->dev;
    int rc = sn_aten_dist_backend_parse(p->dist_backend ? p->dist_backend : "auto", &dp.backend,
                                        err);
    if (rc)
        return sn_err_wrap(err, "train.dist_backend");
    rc = sn_aten_dist_init_env(&dp, &t->dist, err);
    if (!rc) {
        t->rank = sn_aten_dist_rank(t->dist);
        t->world = sn_aten_dist_world_size(t->dist);
        char dn[32];
        if (t->rank == 0 && strcmp(sn_aten_dist_backend(t->dist), "none"))
            SN_INFO("train: %d process(es), c10d backend %s on %s", t->world,
                    sn_aten_dist_backend(t->dist), sn_aten_device_name(t->dev, dn, sizeof dn));
    }
    if (t->world < 1)
        t->world = 1;
    t->G = p->micro_batch * p->grad_accum * t->world;
    if (!rc && p->micro_batch > 1024)
        rc = sn_err_set(err, SN_E_ARG, "train.micro_batch = %" PRId64 " (at most 1024)",
                        p->micro_batch);
    if (!rc && (p->eval_batch < 1 || p->eval_batch > 1024 || p->micro_batch < 1 ||
                p->grad_accum < 1))
        rc = sn_err_set(err, SN_E_ARG, "train.eval_batch must be 1..1024, micro_batch and "
                        "grad_accum >= 1");
    if (!rc) {
        t->per_epoch = (int64_t)sn_trainer_n_items(t) / t->G;
        if (!t->per_epoch)
            rc = sn_err_set(err, SN_E_ARG, "only %zu training %s: fewer than one optimizer "
                            "step (micro_batch %" PRId64 " x grad_accum %" PRId64 " x %d "
                            "processes)", sn_trainer_n_items(t), t->lm ? "sequences" : "tuples",
                            p->micro_batch, p->grad_accum, t->world);
    }
    if (!rc) {
        t->total = p->max_steps ? p->max_steps : p->epochs * t->per_epoch;
        t->p.sched.total_steps = t->total;
        if (p->warmup_ratio > 0)
            t->p.sched.warmup_steps = (int64_t)ceil(p->warmup_ratio * (double)t->total);
        else if (p->sched.warmup_steps < 0)
            t->p.sched.warmup_steps = t->total / 10 < 1000 ? t->total / 10 : 1000;
    }
    return rc;
}

/* Where adapter_config.json points: out/base for a seeded init, else the HF base. */
static int open_base_path(struct sn_trainer *t, struct sn_err *err)
{
    if (seeded_base(t->p.base))
        return sn_train_path_join(t->base_path, sizeof t->base_path, t->out, "base", err);
    if (!realpath(t->p.base, t->base_path))
        return sn_err_set(err, SN_E_IO, "train.base '%s': %s", t->p.base, strerror(errno));
    return SN_OK;
}

/* Rank 0 writes what a new run starts with: train_settings.json (at settings_path) and out/base
** (the seeded init once, or a link to the HF base). */
static int open_out_files(struct sn_trainer *t, const char *settings_path, struct sn_err *err)
{
    int rc = SN_OK;
    if (t->rank == 0 && !sn_train_exists(settings_path))
        rc = sn_json_save(settings_path, t->settings, err);
    if (!rc && t->rank != 0) {
        /* rank 0 alone writes in out/ */
    } else if (!rc && seeded_base(t->p.base)) {
        char b[PATH_MAX];
        rc = sn_train_path_join(b, sizeof b, t->base_path, "config.json", err);
        if (!rc && !sn_train_exists(b))
            rc = write_seeded_base(t, err);
    } else if (!rc) {
        /* out/base names the HF base the run started from */
        char b[PATH_MAX];
        snprintf(b, sizeof b, "%s/base", t->out);
        unlink(b);
        if (symlink(t->base_path, b))
            SN_WARN("train: cannot link %s -> %s: %s", b, t->base_path, strerror(errno));
    }
    return rc;
}

int sn_trainer_open(const struct sn_train_params *p, const char *shards, const char *out,
                    bool restart, struct sn_trainer **tout, struct sn_err *err)
{
    *tout = NULL;
    struct sn_trainer *t = sn_calloc(1, sizeof *t);
    if (!t)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    t->p = *p;
    t->perm_epoch = -1;
    t->last_saved = -1;
    char path[PATH_MAX], resume_dir[PATH_MAX] = "";
    cJSON *state = NULL;
    int rc = open_out_and_device(t, shards, out, err);
    if (!rc)
        rc = open_shards(t, shards, err);
    if (!rc)
        rc = open_steps(t, err);
    if (!rc)
        rc = open_base_path(t, err);
    if (!rc)
        rc = sn_trainer_settings_init(t, err);
    if (!rc)
        rc = sn_train_path_join(path, sizeof path, t->out, "train_settings.json", err);
    if (!rc && restart && t->rank == 0)
        sn_trainer_restart_wipe(t);
    if (!rc)
        rc = sn_aten_dist_barrier(t->dist, err); /* rank 0's restart is done before the search */
    if (!rc && !restart && sn_train_exists(path))
        rc = sn_trainer_find_resume(t, path, resume_dir, &state, err);
    if (!rc)
        rc = open_out_files(t, path, err);
    if (!rc)
        rc = make_base(t, resume_dir[0] ? resume_dir : NULL, err);
    if (!rc)
        rc = sn_trainer_setup_params(t, err);
    if (!rc && resume_dir[0])
        rc = sn_trainer_resume_from(t, resume_dir, state, err);
    else if (!rc && !restart && t->rank == 0)
        rc = sn_trainer_trim_metrics(t, -1, err); /* no checkpoint: the run starts over */
    if (!rc)
        rc = sn_aten_dist_barrier(t->dist, err);
    cJSON_Delete(state);
    if (rc) {
        sn_trainer_free(t);
        return rc;
    }
    *tout = t;
    return SN_OK;
}

/* ---- the loop ------------------------------------------------------------------------------- */

int sn_trainer_accumulate(struct sn_trainer *t, struct sn_train_stats *st, struct sn_err *err)
{
    return t->lm ? sn_trainer_lm_accumulate(t, st, err)
                 : sn_trainer_reward_accumulate(t, st, err);
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return NAN;
    return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

static double metric_of(const struct sn_train_stats *s, const char *name)
{
    const char *k = !strncmp(name, "eval_", 5) ? name + 5 : name;
    if (!strcmp(k, "accuracy"))
        return s->accuracy;
    if (!strcmp(k, "loss"))
        return s->loss;
    if (!strcmp(k, "margin"))
        return s->margin;
    if (!strcmp(k, "align_accuracy"))
        return s->align_accuracy;
    return NAN;
}

static int run_eval(struct sn_trainer *t, struct sn_train_stats *ev, bool *better,
                    struct sn_err *err)
{
    *better = false;
    memset(ev, 0, sizeof *ev);
    if (t->rank != 0)
        return SN_OK; /* evaluation only feeds rank 0's logs and checkpoints */
    int rc = sn_trainer_evaluate(t, SN_SPLIT_VALIDATION, ev, err);
    if (rc || !ev->n)
        return rc;
    cJSON *o = sn_trainer_stats_json(ev, "eval_", false);
    rc = o ? sn_trainer_log_line(t, o, err) : sn_err_set(err, SN_E_NOMEM, "out of memory");
    cJSON_Delete(o);
    double v = metric_of(ev, t->p.best_metric);
    if (isfinite(v) && (!t->best_name[0] || (t->p.best_greater ? v > t->best_value
                                                               : v < t->best_value))) {
        *better = true;
        t->best_value = v;
    }
    return rc;
}


/* One optimizer step: forward and backward, clip and AdamW at the schedule's rate (*lr), then
** the step counts and st's figures of the step. */
static int take_step(struct sn_trainer *t, struct sn_train_stats *st, double *lr,
                     struct sn_err *err)
{
    int rc = sn_trainer_accumulate(t, st, err);
    *lr = sn_lr_at(&t->p.sched, t->step);
    if (!rc) {
        double t1 = sn_now();
        rc = sn_trainer_update(t, *lr, &st->grad_norm, err);
        st->step_time += sn_now() - t1;
        if (rc && err->code == SN_E_BACKEND)
            sn_err_wrap(err, "step %" PRId64, t->step + 1);
    }
    if (rc)
        return rc;
    t->step++;
    t->tokens_seen += st->num_tokens;
    st->step = t->step;
    st->epoch = (double)t->step / (double)t->per_epoch;
    st->learning_rate = *lr;
    st->tokens_per_s = st->step_time > 0 ? (double)st->num_tokens / st->step_time : 0;
    st->num_tokens = t->tokens_seen;
    st->peak_rss_mb = peak_rss_mb();
    return SN_OK;
}

/* The step's metrics.jsonl line (every log_every steps and the last) and the progress bar. */
static int log_step(struct sn_trainer *t, const struct sn_train_stats *st, double lr,
                    struct sn_progress *bar, struct sn_err *err)
{
    int rc = SN_OK;
    if (t->step % t->p.log_every == 0 || t->step == t->total) {
        cJSON *o = sn_trainer_stats_json(st, "", true);
        rc = o ? sn_trainer_log_line(t, o, err) : sn_err_set(err, SN_E_NOMEM, "out of memory");
        cJSON_Delete(o);
    }
    if (bar) {
        char extra[160];
        if (st->lm)
            snprintf(extra, sizeof extra, "loss %.4f  ppl %.2f  lr %.2e  tok/s %.0f", st->loss,
                     st->perplexity, lr, st->tokens_per_s);
        else
            snprintf(extra, sizeof extra, "loss %.4f  acc %.3f  lr %.2e  tok/s %.0f", st->loss,
                     st->accuracy, lr, st->tokens_per_s);
        sn_progress_update(bar, (uint64_t)t->step, extra);
    }
    return rc;
}

/* After a step: the evaluation when due (*evaluated), a checkpoint when due, when the
** evaluation is the best so far or when asked to stop; SN_E_CANCELLED once that last one is
** written. */
static int end_step(struct sn_trainer *t, struct sn_train_stats *ev, bool *evaluated,
                    struct sn_err *err)
{
    int rc = SN_OK;
    bool better = false, save = false;
    if (t->p.eval_every > 0 && t->step % t->p.eval_every == 0) {
        rc = run_eval(t, ev, &better, err);
        *evaluated = true;
    }
    if (!rc && better) {
        snprintf(t->best_name, sizeof t->best_name, "checkpoint-%" PRId64, t->step);
        save = true;
    }
    if (t->p.save_every > 0 && t->step % t->p.save_every == 0)
        save = true;
    if (t->stop_all)
        save = true;
    if (!rc && save)
        rc = sn_trainer_write_checkpoint(t, err);
    if (!rc && t->stop_all)
        rc = sn_err_set(err, SN_E_CANCELLED, "interrupted: checkpoint-%" PRId64 " written; "
                        "re-run the same command to resume", t->step);
    return rc;
}

/* out/final_metrics.json: the last step and checkpoint, the best one, and the held-out splits
** evaluated with the final weights (rank 0). */
static int write_final_metrics(struct sn_trainer *t, struct sn_err *err)
{
    int rc = SN_OK;
    struct sn_train_stats te;
    cJSON *fm = cJSON_CreateObject();
    cJSON_AddNumberToObject(fm, "step", (double)t->step);
    char nm[64];
    snprintf(nm, sizeof nm, "checkpoint-%" PRId64, t->step);
    cJSON_AddStringToObject(fm, "checkpoint", nm);
    if (t->best_name[0])
        cJSON_AddStringToObject(fm, "best_checkpoint", t->best_name);
    for (int sp = SN_SPLIT_VALIDATION; sp <= SN_SPLIT_TEST && !rc && t->rank == 0; sp++) {
        rc = sn_trainer_evaluate(t, sp, &te, err);
        if (!rc && te.n)
            cJSON_AddItemToObject(fm, sn_split_name((enum sn_split)sp),
                                  sn_trainer_stats_json(&te, "", false));
    }
    char p[PATH_MAX];
    if (!rc && t->rank == 0 &&
        !(rc = sn_train_path_join(p, sizeof p, t->out, "final_metrics.json", err)))
        rc = sn_json_save(p, fm, err);
    cJSON_Delete(fm);
    return rc;
}

int sn_trainer_run(struct sn_trainer *t, struct sn_err *err)
{
    struct sn_progress *bar = NULL;
    struct sn_progress_params pp = sn_progress_default_params();
    pp.label = "train";
    pp.unit = "steps";
    pp.total = (uint64_t)t->total;
    pp.force_mode = t->rank == 0 ? t->p.progress_mode : 3;
    pp.initial = (uint64_t)t->step; /* a resumed run: the rate and ETA of this run's steps */
    if (sn_progress_create(&pp, &bar, err)) {
        sn_err_clear(err);
        bar = NULL;
    }
    if (isnan(metric_of(&(struct sn_train_stats){0}, t->p.best_metric)) &&
        strcmp(t->p.best_metric, "eval_align_accuracy"))
        return sn_err_set(err, SN_E_ARG, "train.best_metric = \"%s\" (expected eval_accuracy, "
                          "eval_loss, eval_margin or eval_align_accuracy)", t->p.best_metric);
    int rc = SN_OK;
    struct sn_train_stats st, ev;
    bool evaluated = false;
    bool was_done = t->step >= t->total;
    while (t->step < t->total && !rc) {
        double lr = 0.0;
        rc = take_step(t, &st, &lr, err);
        if (rc)
            break;
        rc = log_step(t, &st, lr, bar, err);
        if (!rc && t->p.on_step)
            t->p.on_step(t->p.user, t->step);
        /* one process stops at this step; ranks agree through the next step's all-reduce */
        if (t->world <= 1 && t->stop_requested)
            t->stop_all = true;
        evaluated = false;
        if (!rc)
            rc = end_step(t, &ev, &evaluated, err);
    }
    if (!rc && !evaluated && !was_done && t->data[SN_SPLIT_VALIDATION].n) {
        bool better = false;
        rc = run_eval(t, &ev, &better, err);
        if (!rc && better)
            snprintf(t->best_name, sizeof t->best_name, "checkpoint-%" PRId64, t->step);
    }
    if (!rc && t->last_saved != t->step)
        rc = sn_trainer_write_checkpoint(t, err);
    if (!rc)
        rc = write_final_metrics(t, err);
    if (bar) {
        char sum[160];
        snprintf(sum, sizeof sum, "%" PRId64 " steps", t->step);
        sn_progress_finish(bar, rc ? NULL : sum);
    }
    return rc;
}
