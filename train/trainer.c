/* train/trainer.c: `sentinel train` as a library: the recipe's `train` section, the data order,
** the optimizer step (gradient accumulation, clipping, AdamW in two weight-decay groups, the
** learning-rate schedule), evaluation, metrics.jsonl, checkpoints with exact resume.
** Keys and defaults: docs/train.md; checkpoint and metrics layouts: docs/formats.md
** ("Training output directory"). The loss is DESIGN's (docs/design.md §4), through loss/.
**
** Determinism (what makes a resumed run bit-identical to an uninterrupted one on the CPU with a
** fixed thread count): the data order of epoch e is a permutation drawn from
** sn_seed_derive(seed, "epoch", e), and step s reads positions [s·G, (s+1)·G) of its epoch
** (G = micro_batch × grad_accum, the last partial batch of an epoch is dropped), so the data
** cursor is a function of the step; the LoRA-dropout generator is reseeded before every
** micro-batch from sn_seed_derive(seed, "dropout", s·grad_accum + k), so no random state has to
** travel in a checkpoint beyond the step. In f32 runs parameters and AdamW moments are stored
** exactly (full-mode weights are written as float32 whatever the base's torch_dtype; adapters are
** F32); float64 runs (numerical checks) store f64 moments but f32 weights, so their resume is not
** bit-exact. */
#include "train/train.h"
#include "train/train_internal.h"

#include "data/shard.h"
#include "loss/loss.h"
#include "tokenizer/tokenizer.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_SCHEMA    "sentinel.trainer_state/1"
#define SETTINGS_SCHEMA "sentinel.train_settings/1"

static volatile sig_atomic_t stop_requested;

void sn_train_request_stop(void) { stop_requested = 1; }

/* ---- schedules and parameter groups ------------------------------------------------------- */

double sn_lr_at(const struct sn_lr_schedule *s, int64_t step)
{
    if (step < s->warmup_steps)
        return s->lr * (double)step / (double)(s->warmup_steps > 0 ? s->warmup_steps : 1);
    int64_t span = s->total_steps - s->warmup_steps;
    double p = (double)(step - s->warmup_steps) / (double)(span > 1 ? span : 1);
    if (p > 1.0)
        p = 1.0;
    switch (s->kind) {
    case SN_LR_LINEAR:
        return s->lr * fmax(0.0, 1.0 - p);
    case SN_LR_COSINE:
        return s->lr * (s->min_ratio + (1.0 - s->min_ratio) * 0.5 * (1.0 + cos(M_PI * p)));
    default:
        return s->lr;
    }
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

bool sn_train_default_decay(const char *name)
{
    /* transformers' Trainer.get_decay_parameter_names: no decay for biases and norm layers;
    ** we also leave the reward head alone unless asked (a scalar read-out). */
    if (ends_with(name, ".bias") || ends_with(name, "norm.weight") ||
        ends_with(name, "layernorm.weight") || ends_with(name, "score.weight"))
        return false;
    return true;
}

/* ---- params --------------------------------------------------------------------------------- */

struct sn_train_params sn_train_default_params(void)
{
    struct sn_train_params p;
    memset(&p, 0, sizeof p);
    p.base = "tiny";
    p.mode = SN_TRAIN_MODE_DEFAULT;
    p.lora = sn_lora_default_config();
    p.lora.r = 64;          /* paper (docs/design.md §4) */
    p.lora.alpha = 128;
    p.lora.dropout = 0.05;
    p.lora.targets = SN_LORA_ALL_TARGETS;
    p.adamw = sn_adamw_default_params();
    p.adamw.weight_decay = 0.0; /* transformers' TrainingArguments default */
    p.sched.kind = SN_LR_COSINE;
    p.sched.lr = 0.0;       /* 0 = by mode: 5e-6 (lora, the paper) or 1e-3 (full) */
    p.sched.warmup_steps = -1; /* -1 = min(1000, 10% of the steps) */
    p.epochs = 5;
    p.micro_batch = 8;
    p.grad_accum = 2;
    p.max_grad_norm = 1.0;
    p.alpha = 1.0;
    p.seed = 42;
    p.dtype = SN_DTYPE_F32;
    p.device = "cpu";
    p.eval_every = 100;
    p.eval_batch = 16;
    p.save_every = 100;
    p.keep_last = 3;
    p.log_every = 1;
    p.best_metric = "eval_accuracy";
    p.best_greater = true;
    return p;
}

static const char *const train_keys[] = {
    "base", "mode", "lora", "lr", "beta1", "beta2", "eps", "weight_decay", "weight_decay_all",
    "schedule", "warmup_steps", "warmup_ratio", "min_lr_ratio", "epochs", "max_steps",
    "micro_batch", "grad_accum", "max_grad_norm", "alpha", "center_rewards", "seed", "dtype",
    "grad_checkpoint", "device", "threads", "eval_every", "eval_batch", "save_every", "keep_last",
    "log_every", "best_metric", "tokenizer", "init_adapter", "shards", "out", "batching",
    "length_bucketing", NULL};
static const char *const lora_keys[] = {"r", "alpha", "dropout", "target_modules", NULL};
static const char *const sched_names[SN_LR_KIND_COUNT] = {"constant", "linear", "cosine"};
static const char *const batching_names[] = {"padded", "packed", "shared_prefix"};
_Static_assert(sizeof batching_names / sizeof batching_names[0] == SN_BATCH_COUNT,
               "batching names out of sync");

const char *sn_batching_name(enum sn_batching b)
{
    return (unsigned)b < SN_BATCH_COUNT ? batching_names[b] : "?";
}

static int get_pos(const cJSON *sec, const char *key, int64_t min, int64_t *v,
                   struct sn_err *err)
{
    int rc = sn_json_get_int(sec, "train", key, *v, v, err);
    if (!rc && *v < min)
        rc = sn_err_set(err, SN_E_ARG, "recipe: train.%s = %" PRId64 " (expected >= %" PRId64
                        ")", key, *v, min);
    return rc;
}

int sn_train_params_from_recipe(const cJSON *recipe, struct sn_train_params *p,
                                struct sn_err *err)
{
    const cJSON *sec = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "train") : NULL;
    if (!sec)
        return SN_OK;
    if (!cJSON_IsObject(sec))
        return sn_err_set(err, SN_E_ARG, "recipe: 'train' must be an object");
    int rc = sn_recipe_check_keys(sec, "train", train_keys, err);
    if (rc)
        return rc;
    const char *mode = NULL, *sched = sched_names[p->sched.kind], *dtype = NULL;
    const char *batching = batching_names[p->batching];
    int64_t seed = (int64_t)p->seed, threads = p->threads;
    if ((rc = sn_json_get_string(sec, "train", "base", p->base, &p->base, err)) ||
        (rc = sn_json_get_string(sec, "train", "mode", NULL, &mode, err)) ||
        (rc = sn_json_get_double(sec, "train", "lr", p->sched.lr, &p->sched.lr, err)) ||
        (rc = sn_json_get_double(sec, "train", "beta1", p->adamw.beta1, &p->adamw.beta1, err)) ||
        (rc = sn_json_get_double(sec, "train", "beta2", p->adamw.beta2, &p->adamw.beta2, err)) ||
        (rc = sn_json_get_double(sec, "train", "eps", p->adamw.eps, &p->adamw.eps, err)) ||
        (rc = sn_json_get_double(sec, "train", "weight_decay", p->adamw.weight_decay,
                                 &p->adamw.weight_decay, err)) ||
        (rc = sn_json_get_bool(sec, "train", "weight_decay_all", p->decay_all, &p->decay_all,
                               err)) ||
        (rc = sn_json_get_string(sec, "train", "schedule", sched, &sched, err)) ||
        (rc = sn_json_get_int(sec, "train", "warmup_steps", p->sched.warmup_steps,
                              &p->sched.warmup_steps, err)) ||
        (rc = sn_json_get_double(sec, "train", "warmup_ratio", p->warmup_ratio,
                                 &p->warmup_ratio, err)) ||
        (rc = sn_json_get_double(sec, "train", "min_lr_ratio", p->sched.min_ratio,
                                 &p->sched.min_ratio, err)) ||
        (rc = get_pos(sec, "epochs", 1, &p->epochs, err)) ||
        (rc = get_pos(sec, "max_steps", 0, &p->max_steps, err)) ||
        (rc = get_pos(sec, "micro_batch", 1, &p->micro_batch, err)) ||
        (rc = get_pos(sec, "grad_accum", 1, &p->grad_accum, err)) ||
        (rc = sn_json_get_double(sec, "train", "max_grad_norm", p->max_grad_norm,
                                 &p->max_grad_norm, err)) ||
        (rc = sn_json_get_double(sec, "train", "alpha", p->alpha, &p->alpha, err)) ||
        (rc = sn_json_get_double(sec, "train", "center_rewards", p->center_rewards,
                                 &p->center_rewards, err)) ||
        (rc = sn_json_get_int(sec, "train", "seed", seed, &seed, err)) ||
        (rc = sn_json_get_string(sec, "train", "dtype", NULL, &dtype, err)) ||
        (rc = sn_json_get_bool(sec, "train", "grad_checkpoint", p->grad_checkpoint,
                               &p->grad_checkpoint, err)) ||
        (rc = sn_json_get_string(sec, "train", "device", p->device, &p->device, err)) ||
        (rc = get_pos(sec, "threads", 0, &threads, err)) ||
        (rc = get_pos(sec, "eval_every", 0, &p->eval_every, err)) ||
        (rc = get_pos(sec, "eval_batch", 1, &p->eval_batch, err)) ||
        (p->eval_batch > 1024 &&
         (rc = sn_err_set(err, SN_E_ARG, "recipe: train.eval_batch = %" PRId64 " (at most "
                          "1024)", p->eval_batch))) ||
        (rc = get_pos(sec, "save_every", 0, &p->save_every, err)) ||
        (rc = get_pos(sec, "keep_last", 0, &p->keep_last, err)) ||
        (rc = get_pos(sec, "log_every", 1, &p->log_every, err)) ||
        (rc = sn_json_get_string(sec, "train", "best_metric", p->best_metric, &p->best_metric,
                                 err)) ||
        (rc = sn_json_get_string(sec, "train", "tokenizer", p->tokenizer, &p->tokenizer, err)) ||
        (rc = sn_json_get_string(sec, "train", "init_adapter", p->init_adapter,
                                 &p->init_adapter, err)) ||
        (rc = sn_json_get_string(sec, "train", "batching", batching, &batching, err)) ||
        (rc = sn_json_get_bool(sec, "train", "length_bucketing", p->length_bucketing,
                               &p->length_bucketing, err)))
        return rc;
    {
        int b, best = 0;
        size_t best_d = (size_t)-1;
        for (b = 0; b < SN_BATCH_COUNT && strcmp(batching, batching_names[b]); b++) {
            size_t d = sn_edit_distance(batching, batching_names[b]);
            if (d < best_d) {
                best_d = d;
                best = b;
            }
        }
        if (b == SN_BATCH_COUNT)
            return sn_err_set(err, SN_E_ARG, "recipe: train.batching = \"%s\" (did you mean "
                              "\"%s\"? expected padded, packed or shared_prefix)", batching,
                              batching_names[best]);
        p->batching = (enum sn_batching)b;
    }
    p->seed = (uint64_t)seed;
    p->threads = (int)threads;
    if (mode) {
        if (!strcmp(mode, "full"))
            p->mode = SN_TRAIN_FULL;
        else if (!strcmp(mode, "lora"))
            p->mode = SN_TRAIN_LORA;
        else
            return sn_err_set(err, SN_E_ARG, "recipe: train.mode = \"%s\" (expected \"full\" or "
                              "\"lora\")", mode);
    }
    int k;
    for (k = 0; k < SN_LR_KIND_COUNT && strcmp(sched, sched_names[k]); k++)
        ;
    if (k == SN_LR_KIND_COUNT)
        return sn_err_set(err, SN_E_ARG, "recipe: train.schedule = \"%s\" (expected constant, "
                          "linear or cosine)", sched);
    p->sched.kind = (enum sn_lr_kind)k;
    if (dtype) {
        if (!strcmp(dtype, "float32") || !strcmp(dtype, "f32"))
            p->dtype = SN_DTYPE_F32;
        else if (!strcmp(dtype, "float64") || !strcmp(dtype, "f64"))
            p->dtype = SN_DTYPE_F64;
        else if (!strcmp(dtype, "bfloat16") || !strcmp(dtype, "bf16"))
            p->dtype = SN_DTYPE_BF16;
        else
            return sn_err_set(err, SN_E_ARG, "recipe: train.dtype = \"%s\" (expected float32, "
                              "bfloat16 or float64)", dtype);
    }
    if (!(p->sched.min_ratio >= 0.0 && p->sched.min_ratio <= 1.0))
        return sn_err_set(err, SN_E_ARG, "recipe: train.min_lr_ratio = %g (expected 0..1)",
                          p->sched.min_ratio);
    if (!(p->warmup_ratio >= 0.0 && p->warmup_ratio < 1.0))
        return sn_err_set(err, SN_E_ARG, "recipe: train.warmup_ratio = %g (expected [0, 1))",
                          p->warmup_ratio);
    if (!(p->alpha >= 0.0) || !(p->center_rewards >= 0.0) || !(p->sched.lr >= 0.0))
        return sn_err_set(err, SN_E_ARG, "recipe: train.alpha, train.center_rewards and "
                          "train.lr must be >= 0");
    p->best_greater = !strstr(p->best_metric, "loss");
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(sec, "lora");
    if (lo) {
        if (!cJSON_IsObject(lo))
            return sn_err_set(err, SN_E_ARG, "recipe: 'train.lora' must be an object");
        if ((rc = sn_recipe_check_keys(lo, "train.lora", lora_keys, err)))
            return rc;
        int64_t r = p->lora.r;
        if ((rc = sn_json_get_int(lo, "train.lora", "r", r, &r, err)) ||
            (rc = sn_json_get_double(lo, "train.lora", "alpha", p->lora.alpha, &p->lora.alpha,
                                     err)) ||
            (rc = sn_json_get_double(lo, "train.lora", "dropout", p->lora.dropout,
                                     &p->lora.dropout, err)))
            return rc;
        if (r < 1 || r > 65536)
            return sn_err_set(err, SN_E_ARG, "recipe: train.lora.r = %" PRId64 " (expected "
                              "1..65536)", r);
        p->lora.r = (int)r;
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(lo, "target_modules");
        if (tm) {
            if (!cJSON_IsArray(tm) || !cJSON_GetArraySize(tm))
                return sn_err_set(err, SN_E_ARG, "recipe: train.lora.target_modules: expected "
                                  "a non-empty list such as [\"q_proj\", \"v_proj\"]");
            p->lora.targets = 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, tm) {
                enum sn_lora_target t;
                if (!cJSON_IsString(e) || !sn_lora_target_parse(e->valuestring, &t))
                    return sn_err_set(err, SN_E_ARG, "recipe: train.lora.target_modules: '%s' "
                                      "is not one of q_proj, k_proj, v_proj, o_proj, gate_proj, "
                                      "up_proj, down_proj",
                                      cJSON_IsString(e) ? e->valuestring : "(not a string)");
                p->lora.targets |= 1u << t;
            }
        }
        if ((rc = sn_lora_config_check(&p->lora, err)))
            return sn_err_wrap(err, "recipe: train.lora");
    }
    return SN_OK;
}

/* ---- the data ------------------------------------------------------------------------------- */

struct tset {
    struct sn_shard_reader **r;
    char                   **name;   /* file names, for messages */
    size_t                   n_r;
    uint32_t                *shard;  /* tuple k -> reader */
    uint32_t                *local;  /* tuple k -> index in its shard */
    size_t                   n;
};

static void tset_free(struct tset *s)
{
    for (size_t i = 0; i < s->n_r; i++) {
        sn_shard_reader_close(s->r[i]);
        sn_free(s->name[i]);
    }
    sn_free(s->r);
    sn_free(s->name);
    sn_free(s->shard);
    sn_free(s->local);
    memset(s, 0, sizeof *s);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Opens the shards of one split; *hash (in/out) is the tokenizer hash every shard must carry
** (empty = take the first shard's). */
static int tset_open(struct tset *s, const struct sn_manifest *man, enum sn_split split,
                     char hash[65], int64_t *vocab, struct sn_err *err)
{
    char **paths = NULL;
    size_t n = 0;
    memset(s, 0, sizeof *s);
    int rc = sn_manifest_paths(man, split, &paths, &n, err);
    if (rc)
        return rc;
    s->r = sn_calloc(n + 1, sizeof *s->r);
    s->name = sn_calloc(n + 1, sizeof *s->name);
    if (!s->r || !s->name) {
        sn_paths_free(paths, n);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    size_t total = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        struct sn_shard_reader_params rp = sn_shard_reader_default_params();
        rp.tokenizer_hash = hash[0] ? hash : NULL;
        rc = sn_shard_reader_open(paths[i], &rp, &s->r[i], err);
        if (rc) {
            sn_err_wrap(err, "%s", paths[i]);
            break;
        }
        s->n_r = i + 1;
        s->name[i] = sn_strdup(base_name(paths[i]));
        const struct sn_shard_info *info = sn_shard_reader_info(s->r[i]);
        if (!hash[0] && info->tokenizer_hash)
            snprintf(hash, 65, "%s", info->tokenizer_hash);
        if (info->vocab_size > *vocab)
            *vocab = info->vocab_size;
        total += sn_shard_reader_count(s->r[i]);
    }
    sn_paths_free(paths, n);
    if (rc)
        return rc;
    if (total > UINT32_MAX)
        return sn_err_set(err, SN_E_ARG, "%s split: %zu tuples (at most 2^32)",
                          sn_split_name(split), total);
    s->shard = sn_calloc(total + 1, sizeof *s->shard);
    s->local = sn_calloc(total + 1, sizeof *s->local);
    if (!s->shard || !s->local)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < s->n_r; i++)
        for (size_t j = 0; j < sn_shard_reader_count(s->r[i]); j++) {
            s->shard[s->n] = (uint32_t)i;
            s->local[s->n] = (uint32_t)j;
            s->n++;
        }
    return SN_OK;
}

/* One forward's sequences [chosen × b; rejected × b; reference × k]: padded, one per row,
** right-padded to T; or packed (B = 1, T = the tokens of the micro-batch; docs/train.md,
** "Packed and shared-prefix batches"), the rewards read out in the same order. */
struct rows {
    int32_t *ids, *mask;
    size_t   cap;
    int64_t  b, k, T;
    bool     has_ref[4096];
    int64_t  ref_of[4096];   /* row of the j-th reference -> its tuple */
    int64_t  tokens;         /* tokens the forward processes (padding excluded) */
    bool     packed;
    int32_t *pids, *spans, *pos; /* packed: (T) ids, (T, 3) attention spans, (T) positions */
    size_t   pcap;
    int64_t  readout[3 * 4096]; /* packed: token of each sequence's reward */
};

/* Grows the packed arrays to T tokens. */
static int rows_reserve_packed(struct rows *R, size_t T, struct sn_err *err)
{
    if (T <= R->pcap)
        return SN_OK;
    int32_t *s = sn_realloc(R->spans, 3 * T * sizeof *s);
    if (s)
        R->spans = s;
    int32_t *p = s ? sn_realloc(R->pos, T * sizeof *p) : NULL;
    if (p)
        R->pos = p;
    int32_t *i = p ? sn_realloc(R->pids, T * sizeof *i) : NULL;
    if (i)
        R->pids = i;
    if (!s || !p || !i)
        return sn_err_set(err, SN_E_NOMEM, "batch: out of memory");
    R->pcap = T;
    return SN_OK;
}

/* Appends len tokens as one segment at R->T: positions p0.., attending causally to themselves
** and to the prefix [lo, hi) (none when lo == hi). Returns the segment's last token. */
static int64_t rows_put(struct rows *R, const int32_t *ids, size_t len, int32_t p0, int64_t lo,
                        int64_t hi)
{
    int64_t o = R->T;
    for (size_t j = 0; j < len; j++) {
        int64_t t = o + (int64_t)j;
        R->pids[t] = ids[j];
        R->pos[t] = p0 + (int32_t)j;
        R->spans[3 * t] = (int32_t)o;
        R->spans[3 * t + 1] = (int32_t)lo;
        R->spans[3 * t + 2] = (int32_t)hi;
    }
    R->T = o + (int64_t)len;
    return R->T - 1;
}

/* Shared-prefix scoring: the longest common token prefix of a tuple's scored sequences (the
** template may keep different amounts of history per field, so this, not the context text,
** is what is shared), kept one token short of the shortest so every sequence keeps a token
** of its own to read its reward at. */
static size_t shared_prefix(const struct sn_tuple_view *v, bool with_ref)
{
    int nf = with_ref ? 3 : 2;
    size_t n = v->n_ids[SN_FIELD_CHOSEN];
    for (int f = 1; f < nf; f++)
        if (v->n_ids[SN_FIELD_CHOSEN + f] < n)
            n = v->n_ids[SN_FIELD_CHOSEN + f];
    size_t p = 0;
    while (p + 1 < n) {
        int32_t x = v->ids[SN_FIELD_CHOSEN][p];
        int f;
        for (f = 1; f < nf && v->ids[SN_FIELD_CHOSEN + f][p] == x; f++)
            ;
        if (f < nf)
            break;
        p++;
    }
    return p;
}

static int rows_build(struct rows *R, struct tset *s, const size_t *tuples, int64_t b,
                      bool with_ref, int64_t max_pos, enum sn_batching mode,
                      struct sn_err *err)
{
    struct sn_tuple_view v[4096];
    if (b > 4096)
        return sn_err_set(err, SN_E_ARG, "micro-batch %" PRId64 " > 4096", b);
    int64_t T = 1, k = 0;
    R->tokens = 0;
    for (int64_t i = 0; i < b; i++) {
        size_t t = tuples[i];
        int rc = sn_shard_reader_get(s->r[s->shard[t]], s->local[t], &v[i], err);
        if (rc)
            return sn_err_wrap(err, "%s#%u", s->name[s->shard[t]], s->local[t]);
        for (int f = SN_FIELD_CHOSEN; f <= SN_FIELD_REFERENCE; f++) {
            size_t len = v[i].n_ids[f];
            if (f != SN_FIELD_REFERENCE && !len)
                return sn_err_set(err, SN_E_FORMAT, "%s#%u: empty %s sequence",
                                  s->name[s->shard[t]], s->local[t],
                                  sn_field_name((enum sn_field)f));
            if ((int64_t)len > max_pos)
                return sn_err_set(err, SN_E_FORMAT, "%s#%u: the %s sequence has %zu tokens, "
                                  "more than the model's context (%" PRId64 "); rebuild the "
                                  "shards with a smaller max_len", s->name[s->shard[t]],
                                  s->local[t], sn_field_name((enum sn_field)f), len, max_pos);
            if (f == SN_FIELD_REFERENCE && !with_ref)
                continue;
            if ((int64_t)len > T)
                T = (int64_t)len;
        }
        R->has_ref[i] = with_ref && v[i].n_ids[SN_FIELD_REFERENCE] > 0;
        if (R->has_ref[i])
            R->ref_of[k++] = i;
    }
    R->b = b;
    R->k = k;
    R->packed = mode != SN_BATCH_PADDED;
    if (R->packed) {
        size_t total = 0;
        for (int64_t i = 0; i < b; i++)
            total += v[i].n_ids[SN_FIELD_CHOSEN] + v[i].n_ids[SN_FIELD_REJECTED] +
                     (R->has_ref[i] ? v[i].n_ids[SN_FIELD_REFERENCE] : 0);
        if (total > INT32_MAX)
            return sn_err_set(err, SN_E_ARG, "micro-batch of %zu tokens (at most 2^31)", total);
        int rc = rows_reserve_packed(R, total, err);
        if (rc)
            return rc;
        R->T = 0;
        if (mode == SN_BATCH_PACKED) {
            for (int64_t r = 0; r < 2 * b + k; r++) {
                int64_t i = r < b ? r : r < 2 * b ? r - b : R->ref_of[r - 2 * b];
                int f = r < b ? SN_FIELD_CHOSEN : r < 2 * b ? SN_FIELD_REJECTED
                                                          : SN_FIELD_REFERENCE;
                R->readout[r] = rows_put(R, v[i].ids[f], v[i].n_ids[f], 0, 0, 0);
            }
        } else {
            /* per tuple: [common prefix | chosen rest | rejected rest | reference rest] */
            int64_t j = 0;
            for (int64_t i = 0; i < b; i++) {
                size_t p = shared_prefix(&v[i], R->has_ref[i]);
                int64_t lo = R->T;
                if (p)
                    rows_put(R, v[i].ids[SN_FIELD_CHOSEN], p, 0, 0, 0);
                int64_t hi = R->T;
                for (int f = SN_FIELD_CHOSEN; f <= SN_FIELD_REFERENCE; f++) {
                    if (f == SN_FIELD_REFERENCE && !R->has_ref[i])
                        continue;
                    int64_t r = f == SN_FIELD_CHOSEN ? i : f == SN_FIELD_REJECTED ? b + i
                                                                               : 2 * b + j++;
                    R->readout[r] = rows_put(R, v[i].ids[f] + p, v[i].n_ids[f] - p,
                                             (int32_t)p, lo, hi);
                }
            }
        }
        R->tokens = R->T;
        return SN_OK;
    }
    int64_t rows = 2 * b + k;
    size_t need = (size_t)rows * (size_t)T;
    if (need > R->cap) {
        int32_t *a = sn_realloc(R->ids, need * sizeof *a);
        if (a)
            R->ids = a;
        int32_t *m = a ? sn_realloc(R->mask, need * sizeof *m) : NULL;
        if (m)
            R->mask = m;
        if (!a || !m)
            return sn_err_set(err, SN_E_NOMEM, "batch: out of memory");
        R->cap = need;
    }
    memset(R->ids, 0, need * sizeof *R->ids);
    memset(R->mask, 0, need * sizeof *R->mask);
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = r < b ? r : r < 2 * b ? r - b : R->ref_of[r - 2 * b];
        int f = r < b ? SN_FIELD_CHOSEN : r < 2 * b ? SN_FIELD_REJECTED : SN_FIELD_REFERENCE;
        size_t len = v[i].n_ids[f];
        memcpy(R->ids + r * T, v[i].ids[f], len * sizeof(int32_t));
        for (size_t j = 0; j < len; j++)
            R->mask[r * T + (int64_t)j] = 1;
        R->tokens += (int64_t)len;
    }
    R->T = T;
    return SN_OK;
}

/* ---- the trainer object --------------------------------------------------------------------- */

struct sn_trainer {
    struct sn_train_params p;
    char              *out, *shards;
    char               base_path[PATH_MAX]; /* what adapter_config.json names */
    char              *tokenizer;           /* resolved tokenizer.json path or NULL */
    char               tok_hash[65];
    struct sn_manifest *man;
    struct tset        data[SN_SPLIT_COUNT];
    int64_t            vocab;
    struct sn_model   *m;
    struct sn_param   *params;
    bool              *decay;
    size_t             n_params;
    struct sn_adamw   *opt[2];              /* [0] decayed, [1] not */
    struct sn_param   *group[2];
    size_t             n_group[2];
    bool               full;
    int64_t            step, total, per_epoch, G;
    size_t            *perm;                /* order of the current epoch */
    int64_t            perm_epoch;
    struct rows        rows;
    int64_t            tokens_seen;
    cJSON             *settings;
    double             best_value;
    char               best_name[64];
    int64_t            last_saved;
    struct sn_device   dev;                 /* train.device, resolved (cuda: LOCAL_RANK) */
    struct sn_dist    *dist;                /* data parallel group (a world of 1 by default) */
    int                rank, world;
    bool               stop_all;            /* some rank was asked to stop */
};

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

void sn_trainer_free(struct sn_trainer *t)
{
    if (!t)
        return;
    for (int i = 0; i < SN_SPLIT_COUNT; i++)
        tset_free(&t->data[i]);
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
    sn_free(t->rows.ids);
    sn_free(t->rows.mask);
    sn_free(t->rows.spans);
    sn_free(t->rows.pids);
    sn_free(t->rows.pos);
    sn_free(t->out);
    sn_free(t->shards);
    sn_free(t->tokenizer);
    cJSON_Delete(t->settings);
    sn_free(t);
}

static int path_join(char *buf, size_t n, const char *a, const char *b, struct sn_err *err)
{
    int k = snprintf(buf, n, "%s/%s", a, b);
    if (k < 0 || (size_t)k >= n)
        return sn_err_set(err, SN_E_ARG, "path too long: %s/%s", a, b);
    return SN_OK;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int copy_file(const char *from, const char *to, struct sn_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = sn_file_read(from, (size_t)1 << 30, &buf, &len, err);
    if (!rc)
        rc = sn_atomic_write(to, buf, len, err);
    sn_free(buf);
    return rc;
}

/* Removes a directory holding only files (our checkpoint directories). */
static int remove_flat_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    char p[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    return rmdir(dir);
}

/* Checkpoint steps present in out (checkpoint-<N> directories), descending. */
static size_t list_checkpoints(const char *out, int64_t *steps, size_t max)
{
    DIR *d = opendir(out);
    size_t n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
        char *end;
        if (strncmp(e->d_name, "checkpoint-", 11))
            continue;
        long long v = strtoll(e->d_name + 11, &end, 10);
        if (*end || end == e->d_name + 11 || v < 0)
            continue;
        steps[n++] = v;
    }
    closedir(d);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && steps[j - 1] < steps[j]; j--) {
            int64_t x = steps[j];
            steps[j] = steps[j - 1];
            steps[j - 1] = x;
        }
    return n;
}

/* The flat settings object whose equality allows a resume. */
static cJSON *make_settings(const struct sn_trainer *t, const char *shards_hash)
{
    const struct sn_train_params *p = &t->p;
    cJSON *s = cJSON_CreateObject();
    char num[32], tg[128] = "";
    if (!s)
        return NULL;
    for (int k = 0; k < SN_LORA_TARGET_COUNT; k++)
        if (p->lora.targets & (1u << k)) {
            if (tg[0])
                strcat(tg, ",");
            strcat(tg, sn_lora_target_name((enum sn_lora_target)k));
        }
    cJSON_AddStringToObject(s, "schema", SETTINGS_SCHEMA);
    cJSON_AddStringToObject(s, "base", t->base_path);
    cJSON_AddStringToObject(s, "mode", t->full ? "full" : "lora");
    if (!t->full) {
        cJSON_AddNumberToObject(s, "lora.r", p->lora.r);
        cJSON_AddNumberToObject(s, "lora.alpha", p->lora.alpha);
        cJSON_AddNumberToObject(s, "lora.dropout", p->lora.dropout);
        cJSON_AddStringToObject(s, "lora.target_modules", tg);
        cJSON_AddStringToObject(s, "init_adapter", p->init_adapter ? p->init_adapter : "");
    }
    cJSON_AddNumberToObject(s, "lr", p->sched.lr);
    cJSON_AddStringToObject(s, "schedule", sched_names[p->sched.kind]);
    cJSON_AddNumberToObject(s, "warmup_steps", (double)p->sched.warmup_steps);
    cJSON_AddNumberToObject(s, "min_lr_ratio", p->sched.min_ratio);
    cJSON_AddNumberToObject(s, "beta1", p->adamw.beta1);
    cJSON_AddNumberToObject(s, "beta2", p->adamw.beta2);
    cJSON_AddNumberToObject(s, "eps", p->adamw.eps);
    cJSON_AddNumberToObject(s, "weight_decay", p->adamw.weight_decay);
    cJSON_AddBoolToObject(s, "weight_decay_all", p->decay_all);
    cJSON_AddNumberToObject(s, "total_steps", (double)t->total);
    cJSON_AddNumberToObject(s, "micro_batch", (double)p->micro_batch);
    cJSON_AddNumberToObject(s, "grad_accum", (double)p->grad_accum);
    cJSON_AddNumberToObject(s, "max_grad_norm", p->max_grad_norm);
    cJSON_AddNumberToObject(s, "alpha", p->alpha);
    cJSON_AddNumberToObject(s, "center_rewards", p->center_rewards);
    snprintf(num, sizeof num, "%" PRIu64, p->seed);
    cJSON_AddStringToObject(s, "seed", num);
    cJSON_AddStringToObject(s, "dtype", sn_dtype_name(p->dtype));
    cJSON_AddBoolToObject(s, "grad_checkpoint", p->grad_checkpoint);
    cJSON_AddStringToObject(s, "shards", t->shards);
    cJSON_AddStringToObject(s, "shards_sha256", shards_hash);
    cJSON_AddStringToObject(s, "tokenizer_hash", t->tok_hash);
    cJSON_AddNumberToObject(s, "world_size", t->world);
    /* recorded when not the default, so runs from before these settings still resume */
    if (p->batching != SN_BATCH_PADDED)
        cJSON_AddStringToObject(s, "batching", batching_names[p->batching]);
    if (p->length_bucketing)
        cJSON_AddBoolToObject(s, "length_bucketing", true);
    return s;
}

/* Names of the keys whose values differ, comma-separated, into buf; false if none. */
static bool settings_diff(const cJSON *a, const cJSON *b, char *buf, size_t n)
{
    buf[0] = '\0';
    size_t used = 0;
    const cJSON *e;
    bool any = false;
    cJSON_ArrayForEach(e, a) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, e->string);
        if (!o || !cJSON_Compare(e, o, true)) {
            char *was = cJSON_PrintUnformatted(o), *now = cJSON_PrintUnformatted(e);
            int k = snprintf(buf + used, n - used, "%s%s (was %s, now %s)", any ? ", " : "",
                             e->string, was ? was : "absent", now ? now : "?");
            free(was);
            free(now);
            if (k > 0 && (size_t)k < n - used)
                used += (size_t)k;
            any = true;
        }
    }
    cJSON_ArrayForEach(e, b) {
        if (!cJSON_GetObjectItemCaseSensitive(a, e->string)) {
            int k = snprintf(buf + used, n - used, "%s%s (no longer set)", any ? ", " : "",
                             e->string);
            if (k > 0 && (size_t)k < n - used)
                used += (size_t)k;
            any = true;
        }
    }
    return any;
}

/* ---- parameters and optimizers ---------------------------------------------------------- */

static int setup_params(struct sn_trainer *t, struct sn_err *err)
{
    int rc = SN_OK;
    sn_free(t->params);
    t->params = NULL;
    if (t->full) {
        struct sn_model_slot *s = NULL;
        size_t n = 0;
        rc = sn_model_slots(t->m, true, &s, &n, err);
        if (rc)
            return rc;
        t->params = sn_calloc(n + 1, sizeof *t->params);
        if (!t->params) {
            sn_free(s);
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        /* names: the HF names live in the model's name cache (freed with it) */
        sn_model_names_free(t->m);
        t->m->names = sn_calloc(n + 1, sizeof *t->m->names);
        if (!t->m->names) {
            sn_free(s);
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        for (size_t i = 0; i < n && !rc; i++) {
            t->m->names[i] = sn_strdup(s[i].name);
            t->m->n_names = i + 1;
            if (!t->m->names[i])
                rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            t->params[i].name = t->m->names[i];
            t->params[i].t = *s[i].dst;
            if (!rc && !sn_aten_requires_grad(*s[i].dst))
                rc = sn_aten_set_requires_grad(*s[i].dst, true, err);
        }
        t->n_params = n;
        sn_free(s);
    } else {
        rc = sn_model_trainable_params(t->m, &t->params, &t->n_params, err);
    }
    if (rc)
        return rc;
    sn_free(t->decay);
    t->decay = sn_calloc(t->n_params + 1, sizeof *t->decay);
    for (int g = 0; g < 2; g++) {
        sn_free(t->group[g]);
        t->group[g] = sn_calloc(t->n_params + 1, sizeof *t->group[g]);
        t->n_group[g] = 0;
    }
    if (!t->decay || !t->group[0] || !t->group[1])
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < t->n_params; i++) {
        /* PEFT names carry a "base_model.model." prefix; the rule reads the tail */
        t->decay[i] = t->p.decay_all || sn_train_default_decay(t->params[i].name);
        int g = t->decay[i] ? 0 : 1;
        t->group[g][t->n_group[g]++] = t->params[i];
    }
    for (int g = 0; g < 2; g++) {
        struct sn_adamw_params hp = t->p.adamw;
        if (g == 1)
            hp.weight_decay = 0.0;
        sn_adamw_free(t->opt[g]);
        t->opt[g] = NULL;
        rc = sn_adamw_create(t->group[g], t->n_group[g], &hp, &t->opt[g], err);
        if (rc)
            return rc;
    }
    return SN_OK;
}

/* ---- checkpoints ------------------------------------------------------------------------ */

static int save_optimizer(struct sn_trainer *t, const char *path, struct sn_err *err)
{
    struct sn_st_writer *w = NULL;
    int rc = sn_st_writer_create(&w, err);
    void **bufs = sn_calloc(2 * t->n_params + 1, sizeof *bufs);
    char (*names)[200] = sn_calloc(2 * t->n_params + 1, sizeof *names);
    size_t nb = 0;
    if (!rc && (!bufs || !names))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    bool f64 = t->p.dtype == SN_DTYPE_F64;
    for (int g = 0; g < 2 && !rc; g++)
        for (size_t i = 0; i < t->n_group[g] && !rc; i++) {
            struct sn_tensor *mv[2];
            sn_adamw_state(t->opt[g], i, &mv[0], &mv[1]);
            for (int j = 0; j < 2 && !rc; j++) {
                int64_t shape[8];
                int nd = sn_tensor_shape(mv[j], shape, 8);
                size_t n = (size_t)sn_tensor_numel(mv[j]);
                bufs[nb] = sn_malloc((n ? n : 1) * (f64 ? 8 : 4));
                if (!bufs[nb]) {
                    rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
                    break;
                }
                snprintf(names[nb], sizeof names[nb], "%s.%s", t->group[g][i].name,
                         j ? "exp_avg_sq" : "exp_avg");
                rc = sn_aten_to_host(mv[j], bufs[nb], f64 ? SN_DTYPE_F64 : SN_DTYPE_F32, n, err);
                if (!rc)
                    rc = sn_st_writer_add(w, names[nb], f64 ? SN_ST_F64 : SN_ST_F32, nd, shape,
                                          bufs[nb], err);
                nb++;
            }
        }
    char num[32];
    snprintf(num, sizeof num, "%" PRId64, sn_adamw_step_count(t->opt[0]));
    if (!rc)
        rc = sn_st_writer_set_metadata(w, "step", num, err);
    if (!rc)
        rc = sn_st_writer_save(w, path, err);
    for (size_t i = 0; i < nb; i++)
        sn_free(bufs[i]);
    sn_free(bufs);
    sn_free(names);
    sn_st_writer_free(w);
    return rc;
}

static int load_optimizer(struct sn_trainer *t, const char *path, struct sn_err *err)
{
    struct sn_st_file *f = NULL;
    int rc = sn_st_open(path, &f, err);
    if (rc)
        return rc;
    const char *step = sn_st_metadata(f, "step");
    char *end = NULL;
    long long st = step ? strtoll(step, &end, 10) : -1;
    if (!step || *end || st < 0)
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no valid 'step' metadata", path);
    for (int g = 0; g < 2 && !rc; g++) {
        for (size_t i = 0; i < t->n_group[g] && !rc; i++) {
            struct sn_tensor *mv[2];
            sn_adamw_state(t->opt[g], i, &mv[0], &mv[1]);
            for (int j = 0; j < 2 && !rc; j++) {
                char nm[200];
                snprintf(nm, sizeof nm, "%s.%s", t->group[g][i].name,
                         j ? "exp_avg_sq" : "exp_avg");
                const struct sn_st_tensor *x = sn_st_find(f, nm);
                int64_t shape[8];
                int nd = sn_tensor_shape(mv[j], shape, 8);
                struct sn_tensor *h = NULL;
                if (!x) {
                    rc = sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s' missing", path, nm);
                    break;
                }
                rc = sn_model_load_tensor(x, path, nd, shape, &t->m->p, &h, err);
                if (!rc) {
                    bool gm = sn_aten_no_grad_enter();
                    rc = sn_aten_copy_(mv[j], h, err);
                    sn_aten_no_grad_exit(gm);
                }
                sn_tensor_free(h);
            }
        }
        if (!rc)
            sn_adamw_set_step_count(t->opt[g], st);
    }
    sn_st_close(f);
    return rc;
}

/* Verifies a checkpoint directory against the SHA-256s in its trainer_state.json; *state
** (caller deletes) on success. */
static int verify_checkpoint(const char *dir, cJSON **state, struct sn_err *err)
{
    char p[PATH_MAX];
    *state = NULL;
    int rc = path_join(p, sizeof p, dir, "trainer_state.json", err);
    cJSON *s = NULL;
    if (!rc)
        rc = sn_json_load(p, &s, err);
    if (rc)
        return rc;
    const cJSON *sch = cJSON_GetObjectItemCaseSensitive(s, "schema");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(s, "files");
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(s, "global_step");
    if (!cJSON_IsString(sch) || strcmp(sch->valuestring, STATE_SCHEMA) ||
        !cJSON_IsObject(files) || !cJSON_IsNumber(gs))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: not a %s document", p, STATE_SCHEMA);
    const cJSON *e;
    if (!rc)
        cJSON_ArrayForEach(e, files) {
            char hex[65];
            if (!cJSON_IsString(e) || strchr(e->string, '/')) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: bad entry '%s' in files", p, e->string);
                break;
            }
            if ((rc = path_join(p, sizeof p, dir, e->string, err)) ||
                (rc = sn_sha256_file(p, hex, err)))
                break;
            if (strcmp(hex, e->valuestring)) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: SHA-256 %s, trainer_state.json records "
                                "%s (corrupt or partial checkpoint)", p, hex, e->valuestring);
                break;
            }
        }
    if (rc) {
        cJSON_Delete(s);
        return rc;
    }
    *state = s;
    return SN_OK;
}

static int write_checkpoint(struct sn_trainer *t, struct sn_err *err)
{
    if (t->rank != 0) { /* every rank holds the same state; rank 0 writes it */
        t->last_saved = t->step;
        return SN_OK;
    }
    char name[64], tmp[PATH_MAX], dst[PATH_MAX], p[PATH_MAX];
    snprintf(name, sizeof name, "checkpoint-%" PRId64, t->step);
    int rc = path_join(dst, sizeof dst, t->out, name, err);
    if (!rc) {
        int k = snprintf(tmp, sizeof tmp, "%s/.tmp-%s", t->out, name);
        if (k < 0 || (size_t)k >= sizeof tmp)
            rc = sn_err_set(err, SN_E_ARG, "path too long: %s", t->out);
    }
    if (rc)
        return rc;
    remove_flat_dir(tmp);
    rc = sn_mkdirs(tmp, err);
    const char *files_full[] = {"config.json", "model.safetensors", "tokenizer.json",
                                "optimizer.safetensors", NULL};
    const char *files_lora[] = {"adapter_config.json", "adapter_model.safetensors",
                                "optimizer.safetensors", NULL};
    if (!rc) {
        if (t->full) {
            rc = sn_model_save_hf(t->m, tmp, err);
            if (!rc && t->tokenizer && !(rc = path_join(p, sizeof p, tmp, "tokenizer.json", err)))
                rc = copy_file(t->tokenizer, p, err);
        } else {
            rc = sn_model_adapter_save(t->m, tmp, t->base_path, err);
        }
    }
    if (!rc && !(rc = path_join(p, sizeof p, tmp, "optimizer.safetensors", err)))
        rc = save_optimizer(t, p, err);
    cJSON *st = NULL;
    if (!rc) {
        st = cJSON_CreateObject();
        cJSON *files = cJSON_CreateObject();
        cJSON_AddItemToObject(st, "files", files);
        cJSON_AddStringToObject(st, "schema", STATE_SCHEMA);
        cJSON_AddNumberToObject(st, "global_step", (double)t->step);
        cJSON_AddNumberToObject(st, "epoch", (double)t->step / (double)t->per_epoch);
        cJSON *cur = cJSON_AddObjectToObject(st, "data_cursor");
        cJSON_AddNumberToObject(cur, "epoch", (double)(t->step / t->per_epoch));
        cJSON_AddNumberToObject(cur, "position", (double)((t->step % t->per_epoch) * t->G));
        cJSON *rng = cJSON_AddObjectToObject(st, "rng");
        char num[32];
        snprintf(num, sizeof num, "%" PRIu64, t->p.seed);
        cJSON_AddStringToObject(rng, "kind", "derived(seed, step)");
        cJSON_AddStringToObject(rng, "seed", num);
        cJSON_AddNumberToObject(st, "num_tokens", (double)t->tokens_seen);
        cJSON_AddNumberToObject(st, "total_steps", (double)t->total);
        if (t->best_name[0]) {
            cJSON_AddStringToObject(st, "best_checkpoint", t->best_name);
            cJSON_AddStringToObject(st, "best_metric", t->p.best_metric);
            cJSON_AddNumberToObject(st, "best_value", t->best_value);
        }
        const char *const *fl = t->full ? files_full : files_lora;
        for (int i = 0; fl[i] && !rc; i++) {
            char hex[65];
            if ((rc = path_join(p, sizeof p, tmp, fl[i], err)))
                break;
            if (!exists(p))
                continue; /* tokenizer.json when no tokenizer is known */
            rc = sn_sha256_file(p, hex, err);
            if (!rc)
                cJSON_AddStringToObject(files, fl[i], hex);
        }
        if (!rc && !(rc = path_join(p, sizeof p, tmp, "trainer_state.json", err)))
            rc = sn_json_save(p, st, err);
    }
    cJSON_Delete(st);
    if (!rc)
        rc = sn_fsync_path(tmp, err);
    if (!rc) {
        remove_flat_dir(dst); /* a re-run writing the same step again */
        rc = sn_rename_durable(tmp, dst, err);
    }
    if (!rc) {
        char line[80];
        int k = snprintf(line, sizeof line, "%s\n", name);
        rc = path_join(p, sizeof p, t->out, "latest", err);
        if (!rc)
            rc = sn_atomic_write(p, line, (size_t)k, err);
    }
    if (rc) {
        remove_flat_dir(tmp);
        return sn_err_wrap(err, "checkpoint %s", name);
    }
    t->last_saved = t->step;
    /* keep the last K and the best */
    int64_t steps[4096];
    size_t n = list_checkpoints(t->out, steps, 4096);
    for (size_t i = 0; t->p.keep_last > 0 && i < n; i++) {
        if ((int64_t)i < t->p.keep_last)
            continue;
        char nm[64];
        snprintf(nm, sizeof nm, "checkpoint-%" PRId64, steps[i]);
        if (!strcmp(nm, t->best_name) || steps[i] == t->step)
            continue;
        if (!path_join(p, sizeof p, t->out, nm, err))
            remove_flat_dir(p);
    }
    return SN_OK;
}

/* ---- metrics.jsonl ---------------------------------------------------------------------- */

static void put_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static int log_line(struct sn_trainer *t, const cJSON *o, struct sn_err *err)
{
    if (t->rank != 0)
        return SN_OK;
    char p[PATH_MAX];
    int rc = path_join(p, sizeof p, t->out, "metrics.jsonl", err);
    if (rc)
        return rc;
    char *s = cJSON_PrintUnformatted(o);
    FILE *f = fopen(p, "a");
    if (!s || !f) {
        free(s);
        if (f)
            fclose(f);
        return sn_err_set(err, SN_E_IO, "%s: %s", p, strerror(errno));
    }
    fprintf(f, "%s\n", s);
    free(s);
    if (fclose(f))
        return sn_err_set(err, SN_E_IO, "%s: %s", p, strerror(errno));
    return SN_OK;
}

/* Drops metrics lines of steps after `step` (a resumed run rewrites them). */
static int trim_metrics(struct sn_trainer *t, int64_t step, struct sn_err *err)
{
    char p[PATH_MAX];
    int rc = path_join(p, sizeof p, t->out, "metrics.jsonl", err);
    if (rc || !exists(p))
        return rc;
    char *buf = NULL;
    size_t len = 0;
    rc = sn_file_read(p, (size_t)1 << 31, &buf, &len, err);
    if (rc)
        return rc;
    struct sn_buf out = {0};
    char *line = buf;
    while (!rc && line < buf + len) {
        char *nl = memchr(line, '\n', (size_t)(buf + len - line));
        if (!nl)
            break; /* a partial last line (killed mid-write) */
        cJSON *o = cJSON_ParseWithLength(line, (size_t)(nl - line));
        const cJSON *s = o ? cJSON_GetObjectItemCaseSensitive(o, "step") : NULL;
        if (cJSON_IsNumber(s) && s->valuedouble <= (double)step)
            rc = sn_buf_append(&out, line, (size_t)(nl - line + 1), err);
        cJSON_Delete(o);
        line = nl + 1;
    }
    if (!rc)
        rc = sn_atomic_write(p, out.len ? out.data : "", out.len, err);
    sn_buf_free(&out);
    sn_free(buf);
    return rc;
}

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

/* ---- open ----------------------------------------------------------------------------------- */

static int make_base(struct sn_trainer *t, const char *resume_dir, struct sn_err *err)
{
    struct sn_model_params mp = sn_model_default_params();
    /* bf16: f32 master weights (and so f32 gradients, optimizer state and checkpoints),
    ** bf16 GEMMs in the forward and backward */
    mp.dtype = t->p.dtype == SN_DTYPE_BF16 ? SN_DTYPE_F32 : t->p.dtype;
    mp.autocast = t->p.dtype == SN_DTYPE_BF16 ? SN_DTYPE_BF16 : SN_DTYPE_F32;
    mp.seed = t->p.seed;
    mp.device = t->dev;
    mp.grad_checkpoint = t->p.grad_checkpoint;
    bool seeded = !strcmp(t->p.base, "tiny") || !strcmp(t->p.base, "small");
    int rc;
    if (t->full && resume_dir) {
        rc = sn_model_open_hf(resume_dir, &mp, &t->m, err);
    } else if (seeded) {
        struct sn_model_config c = !strcmp(t->p.base, "tiny") ? sn_model_config_tiny(t->vocab)
                                                               : sn_model_config_small(t->vocab);
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
        if (!rc && !sn_model_has_head(t->m))
            rc = sn_model_init_head(t->m, 0.02, sn_seed_derive(t->p.seed, "head", 0), err);
        if (!rc && sn_model_get_config(t->m)->vocab_size < t->vocab)
            rc = sn_err_set(err, SN_E_ARG, "%s: vocabulary %" PRId64 " is smaller than the "
                            "shards' (%" PRId64 "): the shards were built with another "
                            "tokenizer", t->p.base, sn_model_get_config(t->m)->vocab_size,
                            t->vocab);
    }
    if (rc)
        return rc;
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
    int rc = path_join(p, sizeof p, t->out, "base", err);
    if (rc)
        return rc;
    struct sn_model_params mp = sn_model_default_params();
    mp.seed = t->p.seed;
    struct sn_model_config c = !strcmp(t->p.base, "tiny") ? sn_model_config_tiny(t->vocab)
                                                           : sn_model_config_small(t->vocab);
    struct sn_model *m = NULL;
    rc = sn_model_create(&c, &mp, &m, err);
    if (!rc)
        rc = set_pad_from_tokenizer(m, t->tokenizer, err);
    if (!rc)
        rc = sn_model_save_hf(m, p, err);
    sn_model_free(m);
    char q[PATH_MAX];
    if (!rc && t->tokenizer && !(rc = path_join(q, sizeof q, p, "tokenizer.json", err)))
        rc = copy_file(t->tokenizer, q, err);
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

int sn_trainer_open(const struct sn_train_params *p, const char *shards, const char *out,
                    bool restart, struct sn_trainer **tout, struct sn_err *err)
{
    *tout = NULL;
    stop_requested = 0;
    struct sn_trainer *t = sn_calloc(1, sizeof *t);
    if (!t)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    t->p = *p;
    t->perm_epoch = -1;
    t->last_saved = -1;
    int rc = sn_mkdirs(out, err);
    char rp[PATH_MAX], path[PATH_MAX];
    char *diff = NULL;
    cJSON *old = NULL, *state = NULL;
    if (!rc) {
        t->out = sn_strdup(realpath(out, rp) ? rp : out);
        t->shards = sn_strdup(realpath(shards, rp) ? rp : shards);
        if (!t->out || !t->shards)
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    bool seeded = !strcmp(p->base, "tiny") || !strcmp(p->base, "small");
    t->full = p->mode == SN_TRAIN_FULL || (p->mode == SN_TRAIN_MODE_DEFAULT && seeded);
    if (!t->p.sched.lr)
        t->p.sched.lr = t->full ? 1e-3 : 5e-6;
    if (p->threads > 0)
        sn_aten_set_num_threads(p->threads);
    if (!rc)
        rc = resolve_device(p->device, &t->dev, err);
    /* the shards */
    if (!rc)
        rc = sn_manifest_load(shards, &t->man, err);
    if (!rc && !t->man->complete)
        rc = sn_err_set(err, SN_E_ARG, "%s: the build is not complete (re-run `sentinel build` "
                        "to finish it)", shards);
    /* tokenizer: its hash must be the shards' */
    if (!rc && p->tokenizer) {
        t->tokenizer = sn_strdup(realpath(p->tokenizer, rp) ? rp : p->tokenizer);
        rc = sn_sha256_file(p->tokenizer, t->tok_hash, err);
    } else if (!rc && !seeded) {
        if (!(rc = path_join(path, sizeof path, p->base, "tokenizer.json", err)) &&
            exists(path)) {
            t->tokenizer = sn_strdup(realpath(path, rp) ? rp : path);
            rc = sn_sha256_file(path, t->tok_hash, err);
        }
    }
    char shard_hash[65] = "";
    snprintf(shard_hash, sizeof shard_hash, "%s", t->tok_hash);
    for (int s = 0; s < SN_SPLIT_COUNT && !rc; s++) {
        rc = tset_open(&t->data[s], t->man, (enum sn_split)s, shard_hash, &t->vocab, err);
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
    /* data parallel: torchrun / Slurm environment, else a world of 1 (docs/train.md) */
    if (!rc) {
        struct sn_dist_params dp = sn_dist_default_params();
        dp.device = t->dev;
        rc = sn_aten_dist_init_env(&dp, &t->dist, err);
        if (!rc) {
            t->rank = sn_aten_dist_rank(t->dist);
            t->world = sn_aten_dist_world_size(t->dist);
        }
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
        t->per_epoch = (int64_t)t->data[SN_SPLIT_TRAIN].n / t->G;
        if (!t->per_epoch)
            rc = sn_err_set(err, SN_E_ARG, "only %zu training tuples: fewer than one optimizer "
                            "step (micro_batch %" PRId64 " x grad_accum %" PRId64 " x %d "
                            "processes)", t->data[SN_SPLIT_TRAIN].n, p->micro_batch,
                            p->grad_accum, t->world);
    }
    if (!rc) {
        t->total = p->max_steps ? p->max_steps : p->epochs * t->per_epoch;
        t->p.sched.total_steps = t->total;
        if (p->warmup_ratio > 0)
            t->p.sched.warmup_steps = (int64_t)ceil(p->warmup_ratio * (double)t->total);
        else if (p->sched.warmup_steps < 0)
            t->p.sched.warmup_steps = t->total / 10 < 1000 ? t->total / 10 : 1000;
    }
    /* where adapter_config.json points */
    if (!rc) {
        if (seeded) {
            rc = path_join(t->base_path, sizeof t->base_path, t->out, "base", err);
        } else if (!realpath(p->base, t->base_path)) {
            rc = sn_err_set(err, SN_E_IO, "train.base '%s': %s", p->base, strerror(errno));
        }
    }
    /* settings and resume */
    if (!rc) {
        struct sn_sha256 h;
        uint8_t dg[32];
        char hex[65];
        sn_sha256_init(&h);
        for (size_t i = 0; i < t->man->n_shards; i++)
            sn_sha256_update(&h, t->man->shards[i].sha256, 64);
        sn_sha256_final(&h, dg);
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", dg[i]);
        t->settings = make_settings(t, hex);
        if (!t->settings)
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    if (!rc)
        rc = path_join(path, sizeof path, t->out, "train_settings.json", err);
    char resume_dir[PATH_MAX] = "";
    if (!rc && restart && t->rank == 0) {
        int64_t steps[4096];
        size_t n = list_checkpoints(t->out, steps, 4096);
        for (size_t i = 0; i < n; i++) {
            char d[PATH_MAX];
            snprintf(d, sizeof d, "%s/checkpoint-%" PRId64, t->out, steps[i]);
            remove_flat_dir(d);
        }
        const char *drop[] = {"latest", "metrics.jsonl", "final_metrics.json",
                              "train_settings.json", NULL};
        for (int i = 0; drop[i]; i++) {
            char d[PATH_MAX];
            snprintf(d, sizeof d, "%s/%s", t->out, drop[i]);
            unlink(d);
        }
    }
    if (!rc)
        rc = sn_aten_dist_barrier(t->dist, err); /* rank 0's restart is done before the search */
    if (!rc && !restart && exists(path)) {
        rc = sn_json_load(path, &old, err);
        if (!rc) {
            diff = sn_malloc(8192);
            if (!diff)
                rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            else if (settings_diff(t->settings, old, diff, 8192))
                rc = sn_err_set(err, SN_E_ARG, "%s holds a run with other settings: %s; use "
                                "--restart to start over (or another -o)", t->out, diff);
        }
        /* the newest checkpoint that verifies */
        int64_t steps[4096];
        size_t n = rc ? 0 : list_checkpoints(t->out, steps, 4096);
        char latest[PATH_MAX], *lbuf = NULL;
        size_t llen = 0;
        int64_t want = -1;
        if (!rc && !path_join(latest, sizeof latest, t->out, "latest", err) && exists(latest) &&
            !sn_file_read(latest, 256, &lbuf, &llen, err)) {
            char *end;
            if (!strncmp(lbuf, "checkpoint-", 11))
                want = strtoll(lbuf + 11, &end, 10);
        }
        sn_free(lbuf);
        if (!rc)
            sn_err_clear(err); /* no readable `latest`: every checkpoint is a candidate */
        for (size_t i = 0; !rc && i < n; i++) {
            if (want >= 0 && steps[i] > want)
                continue; /* newer than latest: written but never published */
            char d[PATH_MAX];
            snprintf(d, sizeof d, "%s/checkpoint-%" PRId64, t->out, steps[i]);
            struct sn_err e2 = {0};
            if (verify_checkpoint(d, &state, &e2)) {
                SN_WARN("train: %s; using the previous checkpoint", e2.msg);
                continue;
            }
            snprintf(resume_dir, sizeof resume_dir, "%s", d);
            break;
        }
    }
    if (!rc && t->rank == 0 && !exists(path))
        rc = sn_json_save(path, t->settings, err);
    if (!rc && t->rank != 0) {
        /* rank 0 alone writes in out/ */
    } else if (!rc && seeded) {
        char b[PATH_MAX];
        rc = path_join(b, sizeof b, t->base_path, "config.json", err);
        if (!rc && !exists(b))
            rc = write_seeded_base(t, err);
    } else if (!rc) {
        /* out/base names the HF base the run started from */
        char b[PATH_MAX];
        snprintf(b, sizeof b, "%s/base", t->out);
        unlink(b);
        if (symlink(t->base_path, b))
            SN_WARN("train: cannot link %s -> %s: %s", b, t->base_path, strerror(errno));
    }
    if (!rc)
        rc = make_base(t, resume_dir[0] ? resume_dir : NULL, err);
    if (!rc)
        rc = setup_params(t, err);
    if (!rc && resume_dir[0]) {
        char o[PATH_MAX];
        snprintf(o, sizeof o, "%s/optimizer.safetensors", resume_dir);
        rc = load_optimizer(t, o, err);
        const cJSON *gs = cJSON_GetObjectItemCaseSensitive(state, "global_step");
        const cJSON *nt = cJSON_GetObjectItemCaseSensitive(state, "num_tokens");
        const cJSON *bn = cJSON_GetObjectItemCaseSensitive(state, "best_checkpoint");
        const cJSON *bv = cJSON_GetObjectItemCaseSensitive(state, "best_value");
        t->step = (int64_t)gs->valuedouble;
        t->last_saved = t->step;
        t->tokens_seen = cJSON_IsNumber(nt) ? (int64_t)nt->valuedouble : 0;
        if (cJSON_IsString(bn) && cJSON_IsNumber(bv)) {
            snprintf(t->best_name, sizeof t->best_name, "%s", bn->valuestring);
            t->best_value = bv->valuedouble;
        }
        if (!rc && t->rank == 0)
            rc = trim_metrics(t, t->step, err);
        if (rc)
            sn_err_wrap(err, "resuming from %s", resume_dir);
        else
            SN_INFO("train: resuming from %s (step %" PRId64 ")", resume_dir, t->step);
    } else if (!rc && !restart && t->rank == 0) {
        rc = trim_metrics(t, -1, err); /* no checkpoint: the run starts over */
    }
    if (!rc)
        rc = sn_aten_dist_barrier(t->dist, err);
    cJSON_Delete(old);
    cJSON_Delete(state);
    sn_free(diff);
    if (rc) {
        sn_trainer_free(t);
        return rc;
    }
    *tout = t;
    return SN_OK;
}

/* ---- the step ------------------------------------------------------------------------------- */

/* Tuple indices (into the train set) of step s, micro-batch k of the global step (ranks take
** consecutive micro-batches: rank r has k in [r·A, (r+1)·A)). */
static int step_tuples(struct sn_trainer *t, int64_t s, int64_t k, size_t *out,
                       struct sn_err *err)
{
    int64_t epoch = s / t->per_epoch, pos = (s % t->per_epoch) * t->G + k * t->p.micro_batch;
    size_t n = t->data[SN_SPLIT_TRAIN].n;
    if (epoch != t->perm_epoch) {
        if (!t->perm)
            t->perm = sn_malloc(n * sizeof *t->perm);
        if (!t->perm)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            t->perm[i] = i;
        struct sn_rng rng;
        sn_rng_seed(&rng, sn_seed_derive(t->p.seed, "epoch", (uint64_t)epoch));
        sn_rng_shuffle(&rng, t->perm, n, sizeof *t->perm);
        t->perm_epoch = epoch;
    }
    for (int64_t i = 0; i < t->p.micro_batch; i++)
        out[i] = t->perm[pos + i];
    return SN_OK;
}

static void tuple_ids(struct sn_trainer *t, const size_t *tuples, int64_t n, char *buf,
                      size_t cap)
{
    struct tset *s = &t->data[SN_SPLIT_TRAIN];
    size_t used = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < n; i++) {
        int k = snprintf(buf + used, cap - used, "%s%s#%u", i ? ", " : "",
                         s->name[s->shard[tuples[i]]], s->local[tuples[i]]);
        if (k < 0 || (size_t)k >= cap - used)
            break;
        used += (size_t)k;
    }
}

/* Host metrics of n tuples' rewards. */
static int host_stats(const double *ch, const double *rej, const double *ref, const bool *hr,
                      size_t n, double alpha, double center, struct sn_train_stats *st,
                      struct sn_err *err)
{
    struct sn_loss_result L;
    int rc = sn_loss_host(ch, rej, ref, hr, n, alpha, &L, err);
    if (rc)
        return rc;
    double c = 0, mn = INFINITY, mx = -INFINITY, sum = 0;
    for (size_t i = 0; i < n; i++) {
        c += (ch[i] + rej[i]) * (ch[i] + rej[i]);
        sum += ch[i] + rej[i];
        mn = fmin(mn, fmin(ch[i], rej[i]));
        mx = fmax(mx, fmax(ch[i], rej[i]));
    }
    st->loss = L.loss_value + (n ? center * c / (double)n : 0.0);
    st->loss_pref = L.pref;
    st->loss_align = L.align;
    st->accuracy = L.acc_pref;
    st->align_accuracy = L.acc_align;
    st->margin = L.margin_mean;
    st->mean_reward = n ? sum / (2.0 * (double)n) : NAN;
    st->min_reward = mn;
    st->max_reward = mx;
    st->n = (int64_t)n;
    return SN_OK;
}

/* Rewards (2b + k) of the built rows, in the order [chosen; rejected; reference]. */
static int forward_rows(struct sn_trainer *t, struct sn_tensor **r, struct sn_err *err)
{
    struct rows *R = &t->rows;
    if (R->packed) {
        struct sn_model_batch b = {R->pids, NULL, 1, R->T};
        struct sn_model_packed pk = {R->spans, R->pos, R->readout, 2 * R->b + R->k};
        return sn_model_forward_packed(t->m, &b, &pk, r, NULL, err);
    }
    struct sn_model_batch b = {R->ids, R->mask, 2 * R->b + R->k, R->T};
    return sn_model_forward(t->m, &b, r, NULL, err);
}

/* loss = w_p · L_pref + w_a · L_align + w_c · mean((r_ch + r_rej)²), backward. */
static int micro_backward(struct sn_trainer *t, struct sn_tensor *r, double w_p, double w_a,
                          double w_c, struct sn_err *err)
{
    struct rows *R = &t->rows;
    struct sn_tensor *rc_ = NULL, *rr = NULL, *rf = NULL, *rcs = NULL, *idx = NULL;
    struct sn_tensor *tot = NULL, *tmp = NULL, *s = NULL, *sq = NULL, *cm = NULL;
    struct sn_loss_result Lp = {0}, La = {0};
    int rc = sn_aten_narrow(r, 0, 0, R->b, &rc_, err);
    if (!rc)
        rc = sn_aten_narrow(r, 0, R->b, R->b, &rr, err);
    if (!rc)
        rc = sn_loss_compute(rc_, rr, NULL, NULL, 0.0, &Lp, err);
    if (!rc)
        rc = sn_aten_mul_scalar(Lp.loss, w_p, &tot, err);
    if (!rc && R->k > 0 && w_a > 0) {
        int64_t sh[1] = {R->k};
        rc = sn_aten_narrow(r, 0, 2 * R->b, R->k, &rf, err);
        if (!rc)
            rc = sn_aten_from_host(R->ref_of, SN_DTYPE_I64, sh, 1, SN_DTYPE_I64,
                                   sn_tensor_device(r), &idx, err);
        if (!rc)
            rc = sn_aten_index_select(rc_, 0, idx, &rcs, err);
        if (!rc)
            rc = sn_loss_compute(rcs, rf, NULL, NULL, 0.0, &La, err);
        if (!rc)
            rc = sn_aten_mul_scalar(La.loss, w_a, &tmp, err);
        if (!rc) {
            struct sn_tensor *x = NULL;
            rc = sn_aten_add(tot, tmp, &x, err);
            sn_tensor_free(tot);
            tot = x;
        }
    }
    if (!rc && w_c > 0) {
        rc = sn_aten_add(rc_, rr, &s, err);
        if (!rc)
            rc = sn_aten_mul(s, s, &sq, err);
        if (!rc)
            rc = sn_aten_mean_all(sq, &cm, err);
        if (!rc) {
            struct sn_tensor *x = NULL, *y = NULL;
            rc = sn_aten_mul_scalar(cm, w_c, &y, err);
            if (!rc)
                rc = sn_aten_add(tot, y, &x, err);
            sn_tensor_free(y);
            sn_tensor_free(tot);
            tot = x;
        }
    }
    if (!rc)
        rc = sn_aten_backward(tot, NULL, false, err);
    sn_loss_result_free(&Lp);
    sn_loss_result_free(&La);
    sn_tensor_free(rc_);
    sn_tensor_free(rr);
    sn_tensor_free(rf);
    sn_tensor_free(rcs);
    sn_tensor_free(idx);
    sn_tensor_free(tot);
    sn_tensor_free(tmp);
    sn_tensor_free(s);
    sn_tensor_free(sq);
    sn_tensor_free(cm);
    return rc;
}

static int rewards_host(struct sn_tensor *r, double *out, int64_t n, struct sn_err *err)
{
    struct sn_tensor *d = NULL;
    int rc = sn_aten_detach(r, &d, err);
    if (!rc)
        rc = sn_aten_to_host(d, out, SN_DTYPE_F64, (size_t)n, err);
    sn_tensor_free(d);
    return rc;
}

/* Sums a host buffer over the ranks (in place; no-op in a world of 1). */
static int reduce_host(struct sn_trainer *t, double *buf, size_t n, struct sn_err *err)
{
    if (t->world <= 1)
        return SN_OK;
    struct sn_tensor *x = NULL;
    int64_t shape[1] = {(int64_t)n};
    int rc = sn_aten_from_host(buf, SN_DTYPE_F64, shape, 1, SN_DTYPE_F64, t->dev, &x, err);
    if (!rc)
        rc = sn_aten_dist_all_reduce(t->dist, x, SN_REDUCE_SUM, err);
    if (!rc)
        rc = sn_aten_to_host(x, buf, SN_DTYPE_F64, n, err);
    sn_tensor_free(x);
    return rc;
}

/* Sums every parameter's gradient over the ranks: each rank's gradient is already weighted
** by its share of the global step, so the sum is the global gradient. */
static int reduce_grads(struct sn_trainer *t, struct sn_err *err)
{
    if (t->world <= 1)
        return SN_OK;
    struct sn_tensor **g = sn_calloc(t->n_params + 1, sizeof *g);
    int rc = g ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < t->n_params && !rc; i++) {
        rc = sn_aten_grad(t->params[i].t, &g[i], err);
        if (!rc && !g[i]) { /* untouched on this rank: contribute zeros */
            int64_t shape[8];
            int nd = sn_tensor_shape(t->params[i].t, shape, 8);
            struct sn_tensor *z = NULL;
            rc = sn_aten_zeros(shape, nd, sn_tensor_dtype(t->params[i].t),
                               sn_tensor_device(t->params[i].t), &z, err);
            if (!rc)
                rc = sn_aten_set_grad(t->params[i].t, z, err);
            sn_tensor_free(z);
            if (!rc)
                rc = sn_aten_grad(t->params[i].t, &g[i], err);
        }
    }
    if (!rc)
        rc = sn_aten_dist_all_reduce_many(t->dist, g, t->n_params, SN_REDUCE_SUM, err);
    for (size_t i = 0; g && i < t->n_params; i++)
        sn_tensor_free(g[i]);
    sn_free(g);
    return rc ? sn_err_wrap(err, "all-reduce of the gradients") : SN_OK;
}

/* Length bucketing: this rank's tuples of the step, longest first (stable), so each
** micro-batch holds similar lengths. The step's gradient does not depend on how its tuples
** are split into micro-batches (every tuple has the same weight), only the padding does. */
static int sort_by_length(struct sn_trainer *t, size_t *tu, int64_t n, bool with_ref,
                          struct sn_err *err)
{
    struct tset *s = &t->data[SN_SPLIT_TRAIN];
    size_t *len = sn_malloc((size_t)n * sizeof *len);
    if (!len)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        struct sn_tuple_view v;
        int rc = sn_shard_reader_get(s->r[s->shard[tu[i]]], s->local[tu[i]], &v, err);
        if (rc) {
            sn_free(len);
            return sn_err_wrap(err, "%s#%u", s->name[s->shard[tu[i]]], s->local[tu[i]]);
        }
        size_t m = v.n_ids[SN_FIELD_CHOSEN];
        if (v.n_ids[SN_FIELD_REJECTED] > m)
            m = v.n_ids[SN_FIELD_REJECTED];
        if (with_ref && v.n_ids[SN_FIELD_REFERENCE] > m)
            m = v.n_ids[SN_FIELD_REFERENCE];
        len[i] = m;
    }
    for (int64_t i = 1; i < n; i++) /* insertion sort: stable, n is a step's tuples */
        for (int64_t j = i; j > 0 && len[j - 1] < len[j]; j--) {
            size_t a = len[j], b = tu[j];
            len[j] = len[j - 1];
            tu[j] = tu[j - 1];
            len[j - 1] = a;
            tu[j - 1] = b;
        }
    sn_free(len);
    return SN_OK;
}

int sn_trainer_accumulate(struct sn_trainer *t, struct sn_train_stats *st, struct sn_err *err)
{
    /* G tuples per step over all ranks; this rank takes the contiguous chunk
    ** [rank·mb·A, (rank+1)·mb·A) of them in A micro-batches of mb. */
    int64_t mb = t->p.micro_batch, A = t->p.grad_accum, G = t->G, L = mb * A;
    int64_t off = (int64_t)t->rank * L;
    size_t *tu = sn_malloc((size_t)G * sizeof *tu);
    /* [ch (G), rej (G), ref (G), has_ref (G), tokens, stop]: summed over the ranks */
    size_t nbuf = 4 * (size_t)G + 2;
    double *buf = sn_calloc(nbuf, sizeof *buf);
    double *ch = buf, *rej = buf + G, *ref = buf + 2 * G, *hrd = buf + 3 * G;
    bool *hr = sn_calloc((size_t)G, sizeof *hr);
    double *rbuf = sn_malloc((size_t)(3 * mb) * sizeof *rbuf);
    int rc = SN_OK;
    double t0 = sn_now(), wait = 0;
    memset(st, 0, sizeof *st);
    if (!tu || !buf || !hr || !rbuf) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto done;
    }
    bool with_ref = t->p.alpha > 0;
    int64_t max_pos = sn_model_get_config(t->m)->max_position_embeddings;
    /* the alignment term's weights need the step's count of references first */
    int64_t n_ref = 0;
    for (int64_t k = 0; k < G / mb && !rc; k++)
        rc = step_tuples(t, t->step, k, tu + k * mb, err);
    if (!rc && t->p.length_bucketing)
        rc = sort_by_length(t, tu + off, L, with_ref, err);
    for (int64_t i = 0; i < G && !rc && with_ref; i++) {
        struct tset *s = &t->data[SN_SPLIT_TRAIN];
        struct sn_tuple_view v;
        rc = sn_shard_reader_get(s->r[s->shard[tu[i]]], s->local[tu[i]], &v, err);
        n_ref += !rc && v.n_ids[SN_FIELD_REFERENCE] > 0;
    }
    for (size_t i = 0; i < t->n_params; i++)
        sn_aten_zero_grad(t->params[i].t);
    int64_t tokens = 0;
    for (int64_t k = 0; k < A && !rc; k++) {
        int64_t at = off + k * mb; /* this micro-batch's first slot in the step */
        double w0 = sn_now();
        rc = rows_build(&t->rows, &t->data[SN_SPLIT_TRAIN], tu + at, mb, with_ref, max_pos,
                        t->p.batching, err);
        wait += sn_now() - w0;
        if (rc)
            break;
        tokens += t->rows.tokens;
        uint64_t stream = (uint64_t)((t->step * A + k) * t->world + t->rank);
        rc = sn_aten_gen_seed(t->m->gen, sn_seed_derive(t->p.seed, "dropout", stream), err);
        struct sn_tensor *r = NULL;
        if (!rc)
            rc = forward_rows(t, &r, err);
        /* loss_compute's terms are means over this micro-batch (b tuples, k references) */
        double w_p = (double)mb / (double)G;
        double w_a = n_ref ? t->p.alpha / (double)n_ref * (double)t->rows.k : 0.0;
        double w_c = t->p.center_rewards * (double)mb / (double)G;
        if (!rc)
            rc = micro_backward(t, r, w_p, w_a, w_c, err);
        sn_model_release_forward_state(t->m);
        if (!rc)
            rc = rewards_host(r, rbuf, 2 * t->rows.b + t->rows.k, err);
        sn_tensor_free(r);
        for (int64_t i = 0; !rc && i < mb; i++) {
            ch[at + i] = rbuf[i];
            rej[at + i] = rbuf[mb + i];
            hrd[at + i] = t->rows.has_ref[i];
        }
        for (int64_t j = 0; !rc && j < t->rows.k; j++)
            ref[at + t->rows.ref_of[j]] = rbuf[2 * mb + j];
    }
    buf[4 * G] = (double)tokens;
    buf[4 * G + 1] = stop_requested ? 1.0 : 0.0;
    /* every rank takes part in the collectives even after a local failure would be better;
    ** a failing rank returns here and the others time out (aten's store timeout) */
    if (!rc)
        rc = reduce_host(t, buf, nbuf, err);
    if (!rc)
        rc = reduce_grads(t, err);
    for (int64_t i = 0; i < G; i++)
        hr[i] = hrd[i] > 0.5;
    if (!rc)
        rc = host_stats(ch, rej, with_ref ? ref : NULL, with_ref ? hr : NULL, (size_t)G,
                        t->p.alpha, t->p.center_rewards, st, err);
    st->num_tokens = (int64_t)buf[4 * G];
    t->stop_all = buf[4 * G + 1] > 0.5;
    st->data_wait = wait;
    st->step_time = sn_now() - t0;
    if (!rc && !isfinite(st->loss)) {
        char ids[1024];
        tuple_ids(t, tu, G, ids, sizeof ids);
        rc = sn_err_set(err, SN_E_BACKEND, "step %" PRId64 ": the loss is %g (tuples %s)",
                        t->step + 1, st->loss, ids);
    }
    if (rc && err->code != SN_E_BACKEND)
        sn_err_wrap(err, "step %" PRId64, t->step + 1);
done:
    sn_free(tu);
    sn_free(buf);
    sn_free(hr);
    sn_free(rbuf);
    return rc;
}

int sn_trainer_update(struct sn_trainer *t, double lr, double *grad_norm, struct sn_err *err)
{
    struct sn_tensor **ts = sn_calloc(t->n_params + 1, sizeof *ts);
    if (!ts)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < t->n_params; i++)
        ts[i] = t->params[i].t;
    double norm = 0;
    int rc = sn_aten_clip_grad_norm(ts, t->n_params, t->p.max_grad_norm, &norm, err);
    sn_free(ts);
    if (grad_norm)
        *grad_norm = norm;
    if (!rc && !isfinite(norm))
        return sn_err_set(err, SN_E_BACKEND, "the gradient norm is %g", norm);
    for (int g = 0; g < 2 && !rc; g++)
        rc = sn_adamw_step(t->opt[g], lr, err);
    return rc;
}

/* ---- evaluation ----------------------------------------------------------------------------- */

int sn_trainer_evaluate(struct sn_trainer *t, int split, struct sn_train_stats *st,
                        struct sn_err *err)
{
    memset(st, 0, sizeof *st);
    if (split < 0 || split >= SN_SPLIT_COUNT)
        return sn_err_set(err, SN_E_ARG, "evaluate: bad split %d", split);
    struct tset *s = &t->data[split];
    size_t n = s->n;
    if (!n)
        return SN_OK;
    int64_t eb = t->p.eval_batch;
    double *ch = sn_malloc(n * 3 * sizeof *ch), *rej = ch + n, *ref = ch + 2 * n;
    bool *hr = sn_calloc(n, sizeof *hr);
    size_t *tu = sn_malloc((size_t)eb * sizeof *tu);
    float *rb = sn_malloc((size_t)(3 * eb) * sizeof *rb);
    int rc = SN_OK;
    bool with_ref = t->p.alpha > 0;
    if (!ch || !hr || !tu || !rb)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    bool was_training = t->m->training;
    sn_model_set_training(t->m, false);
    int64_t max_pos = sn_model_get_config(t->m)->max_position_embeddings;
    for (size_t i0 = 0; i0 < n && !rc; i0 += (size_t)eb) {
        int64_t b = (int64_t)(n - i0 < (size_t)eb ? n - i0 : (size_t)eb);
        for (int64_t i = 0; i < b; i++)
            tu[i] = i0 + (size_t)i;
        rc = rows_build(&t->rows, s, tu, b, with_ref, max_pos, t->p.batching, err);
        if (rc)
            break;
        bool g = sn_aten_no_grad_enter();
        struct sn_tensor *r = NULL;
        rc = forward_rows(t, &r, err);
        if (!rc)
            rc = sn_aten_to_host(r, rb, SN_DTYPE_F32, (size_t)(2 * b + t->rows.k), err);
        sn_tensor_free(r);
        sn_aten_no_grad_exit(g);
        for (int64_t i = 0; !rc && i < b; i++) {
            ch[i0 + i] = rb[i];
            rej[i0 + i] = rb[b + i];
            hr[i0 + i] = t->rows.has_ref[i];
            ref[i0 + i] = 0.0;
        }
        for (int64_t j = 0; !rc && j < t->rows.k; j++)
            ref[i0 + t->rows.ref_of[j]] = rb[2 * b + j];
    }
    sn_model_set_training(t->m, was_training);
    if (!rc)
        rc = host_stats(ch, rej, with_ref ? ref : NULL, with_ref ? hr : NULL, n, t->p.alpha,
                        t->p.center_rewards, st, err);
    st->step = t->step;
    st->epoch = (double)t->step / (double)t->per_epoch;
    sn_free(ch);
    sn_free(hr);
    sn_free(tu);
    sn_free(rb);
    return rc ? sn_err_wrap(err, "evaluating the %s split", sn_split_name((enum sn_split)split))
              : SN_OK;
}

/* ---- the loop ------------------------------------------------------------------------------- */

static cJSON *stats_json(const struct sn_train_stats *s, const char *prefix, bool train)
{
    cJSON *o = cJSON_CreateObject();
    char k[64];
#define PUT(name, v)                                                                         \
    do {                                                                                     \
        snprintf(k, sizeof k, "%s%s", prefix, name);                                         \
        put_num(o, k, (v));                                                                  \
    } while (0)
    PUT("loss", s->loss);
    PUT("loss_pref", s->loss_pref);
    PUT("loss_align", s->loss_align);
    PUT("accuracy", s->accuracy);
    PUT("align_accuracy", s->align_accuracy);
    PUT("margin", s->margin);
    PUT("mean_reward", s->mean_reward);
    PUT("min_reward", s->min_reward);
    PUT("max_reward", s->max_reward);
    if (train) {
        PUT("num_tokens", (double)s->num_tokens);
        PUT("learning_rate", s->learning_rate);
        PUT("grad_norm", s->grad_norm);
        PUT("tokens_per_s", s->tokens_per_s);
        PUT("step_time", s->step_time);
        PUT("data_wait", s->data_wait);
        PUT("peak_rss", s->peak_rss_mb);
    } else {
        PUT("samples", (double)s->n);
    }
#undef PUT
    cJSON_AddNumberToObject(o, "step", (double)s->step);
    cJSON_AddNumberToObject(o, "epoch", s->epoch);
    return o;
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
    cJSON *o = stats_json(ev, "eval_", false);
    rc = o ? log_line(t, o, err) : sn_err_set(err, SN_E_NOMEM, "out of memory");
    cJSON_Delete(o);
    double v = metric_of(ev, t->p.best_metric);
    if (isfinite(v) && (!t->best_name[0] || (t->p.best_greater ? v > t->best_value
                                                               : v < t->best_value))) {
        *better = true;
        t->best_value = v;
    }
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
        rc = sn_trainer_accumulate(t, &st, err);
        double lr = sn_lr_at(&t->p.sched, t->step);
        if (!rc) {
            double t1 = sn_now();
            rc = sn_trainer_update(t, lr, &st.grad_norm, err);
            st.step_time += sn_now() - t1;
            if (rc && err->code == SN_E_BACKEND)
                sn_err_wrap(err, "step %" PRId64, t->step + 1);
        }
        if (rc)
            break;
        t->step++;
        t->tokens_seen += st.num_tokens;
        st.step = t->step;
        st.epoch = (double)t->step / (double)t->per_epoch;
        st.learning_rate = lr;
        st.tokens_per_s = st.step_time > 0 ? (double)st.num_tokens / st.step_time : 0;
        st.num_tokens = t->tokens_seen;
        st.peak_rss_mb = peak_rss_mb();
        if (t->step % t->p.log_every == 0 || t->step == t->total) {
            cJSON *o = stats_json(&st, "", true);
            rc = o ? log_line(t, o, err) : sn_err_set(err, SN_E_NOMEM, "out of memory");
            cJSON_Delete(o);
        }
        if (bar) {
            char extra[160];
            snprintf(extra, sizeof extra, "loss %.4f  acc %.3f  lr %.2e  tok/s %.0f", st.loss,
                     st.accuracy, lr, st.tokens_per_s);
            sn_progress_update(bar, (uint64_t)t->step, extra);
        }
        if (!rc && t->p.on_step)
            t->p.on_step(t->p.user, t->step);
        /* one process stops at this step; ranks agree through the next step's all-reduce */
        if (t->world <= 1 && stop_requested)
            t->stop_all = true;
        bool better = false, save = false;
        evaluated = false;
        if (!rc && t->p.eval_every > 0 && t->step % t->p.eval_every == 0) {
            rc = run_eval(t, &ev, &better, err);
            evaluated = true;
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
            rc = write_checkpoint(t, err);
        if (!rc && t->stop_all) {
            rc = sn_err_set(err, SN_E_CANCELLED, "interrupted: checkpoint-%" PRId64 " written; "
                            "re-run the same command to resume", t->step);
            break;
        }
    }
    if (!rc && !evaluated && !was_done && t->data[SN_SPLIT_VALIDATION].n) {
        bool better = false;
        rc = run_eval(t, &ev, &better, err);
        if (!rc && better)
            snprintf(t->best_name, sizeof t->best_name, "checkpoint-%" PRId64, t->step);
    }
    if (!rc && t->last_saved != t->step)
        rc = write_checkpoint(t, err);
    if (!rc) {
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
                                      stats_json(&te, "", false));
        }
        char p[PATH_MAX];
        if (!rc && t->rank == 0 &&
            !(rc = path_join(p, sizeof p, t->out, "final_metrics.json", err)))
            rc = sn_json_save(p, fm, err);
        cJSON_Delete(fm);
    }
    if (bar) {
        char sum[160];
        snprintf(sum, sizeof sum, "%" PRId64 " steps", t->step);
        sn_progress_finish(bar, rc ? NULL : sum);
    }
    return rc;
}
