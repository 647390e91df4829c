/* train/recipe.c: the recipe's `train` section into struct sn_train_params (train/recipe.h):
** defaults, the known keys, each value's type and range, the enums named by strings (mode,
** schedule, dtype, batching) and the `lora` subsection; the Hugging Face names come from
** train/recipe_hf.c. No libtorch: `sentinel run` checks the section with it before any stage
** runs. Keys and defaults: docs/train.md "The `train` section". */
#include "train/recipe_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

struct sn_adamw_params sn_adamw_default_params(void)
{
    struct sn_adamw_params p = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    return p;
}

bool sn_train_base_is_seeded(const char *base)
{
    return base && (!strcmp(base, "tiny") || !strcmp(base, "mini") || !strcmp(base, "small"));
}

bool sn_train_is_full(const struct sn_train_params *p)
{
    return p->mode == SN_TRAIN_FULL || p->objective == SN_OBJECTIVE_LM ||
           (p->mode == SN_TRAIN_MODE_DEFAULT && sn_train_base_is_seeded(p->base));
}

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
    p.dist_backend = "auto";
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
    "base", "objective", "pretrain_steps", "pretrain_lr", "mode", "lora", "lr", "beta1",
    "beta2", "eps", "weight_decay", "weight_decay_all",
    "schedule", "warmup_steps", "warmup_ratio", "min_lr_ratio", "epochs", "max_steps",
    "micro_batch", "grad_accum", "max_grad_norm", "alpha", "center_rewards", "seed", "dtype",
    "grad_checkpoint", "device", "dist_backend", "threads", "eval_every", "eval_batch",
    "save_every", "keep_last", "log_every", "best_metric", "tokenizer", "init_adapter", "shards",
    "out", "batching", "length_bucketing", "report_to", NULL};
/* PEFT's LoraConfig names lora_alpha and lora_dropout are accepted for alpha and dropout. */
static const char *const lora_keys[] = {"r", "alpha", "dropout", "target_modules", "lora_alpha",
                                        "lora_dropout", NULL};
static const char *const best_metrics[] = {"eval_accuracy", "eval_loss", "eval_margin",
                                           "eval_align_accuracy", NULL};
static const char *const sched_names[SN_LR_KIND_COUNT] = {"constant", "linear", "cosine"};
static const char *const batching_names[] = {"padded", "packed", "shared_prefix"};
_Static_assert(sizeof batching_names / sizeof batching_names[0] == SN_BATCH_COUNT,
               "batching names out of sync");

const char *sn_train_sched_name(enum sn_lr_kind k)
{
    return (unsigned)k < SN_LR_KIND_COUNT ? sched_names[k] : "?";
}

const char *sn_train_objective_name(enum sn_train_objective o)
{
    return o == SN_OBJECTIVE_LM ? "lm" : "reward";
}

const char *sn_batching_name(enum sn_batching b)
{
    return (unsigned)b < SN_BATCH_COUNT ? batching_names[b] : "?";
}

/* The section's keys are read under the name the recipe uses: the sentinel key or its
** Hugging Face name (train/recipe_hf.c), so that a message names what the user wrote. */
#define K(key) sn_train_hf_name(sec, key)

static int get_pos(const cJSON *sec, const char *key, int64_t min, int64_t *v,
                   struct sn_err *err)
{
    const char *name = K(key);
    int rc = sn_json_get_int(sec, "train", name, *v, v, err);
    if (!rc && *v < min)
        rc = sn_err_set(err, SN_E_ARG, "recipe: train.%s = %" PRId64 " (expected >= %" PRId64
                        ")", name, *v, min);
    return rc;
}


/* The values read as strings or through a wider type, before they are decoded and checked. */
struct train_raw {
    const char *objective, *mode, *sched, *dtype, *batching;
    int64_t     seed, threads;
};

static int get_d(const cJSON *sec, const char *key, double *v, struct sn_err *err)
{
    return sn_json_get_double(sec, "train", K(key), *v, v, err);
}

static int get_b(const cJSON *sec, const char *key, bool *v, struct sn_err *err)
{
    return sn_json_get_bool(sec, "train", K(key), *v, v, err);
}

static int get_s(const cJSON *sec, const char *key, const char **v, struct sn_err *err)
{
    return sn_json_get_string(sec, "train", K(key), *v, v, err);
}

/* Reads every scalar key of the section (absent = the value already in p). */
static int read_scalars(const cJSON *sec, struct sn_train_params *p, struct train_raw *w,
                        struct sn_err *err)
{
    int rc;
    if ((rc = get_s(sec, "base", &p->base, err)) || (rc = get_s(sec, "mode", &w->mode, err)) ||
        (rc = get_s(sec, "objective", &w->objective, err)) ||
        (rc = get_pos(sec, "pretrain_steps", 0, &p->pretrain_steps, err)) ||
        (rc = get_d(sec, "pretrain_lr", &p->pretrain_lr, err)) ||
        (rc = get_d(sec, "lr", &p->sched.lr, err)) ||
        (rc = get_d(sec, "beta1", &p->adamw.beta1, err)) ||
        (rc = get_d(sec, "beta2", &p->adamw.beta2, err)) ||
        (rc = get_d(sec, "eps", &p->adamw.eps, err)) ||
        (rc = get_d(sec, "weight_decay", &p->adamw.weight_decay, err)) ||
        (rc = get_b(sec, "weight_decay_all", &p->decay_all, err)) ||
        (rc = get_s(sec, "schedule", &w->sched, err)) ||
        (rc = get_pos(sec, "warmup_steps", -1, &p->sched.warmup_steps, err)) ||
        (rc = get_d(sec, "warmup_ratio", &p->warmup_ratio, err)) ||
        (rc = get_d(sec, "min_lr_ratio", &p->sched.min_ratio, err)) ||
        (rc = get_pos(sec, "epochs", 1, &p->epochs, err)) ||
        /* -1: transformers' "not set" (train by epochs), which is our 0 */
        (rc = get_pos(sec, "max_steps", -1, &p->max_steps, err)) ||
        (rc = get_pos(sec, "micro_batch", 1, &p->micro_batch, err)) ||
        (rc = get_pos(sec, "grad_accum", 1, &p->grad_accum, err)) ||
        (rc = get_d(sec, "max_grad_norm", &p->max_grad_norm, err)) ||
        (rc = get_d(sec, "alpha", &p->alpha, err)) ||
        (rc = get_d(sec, "center_rewards", &p->center_rewards, err)) ||
        (rc = sn_json_get_int(sec, "train", K("seed"), w->seed, &w->seed, err)) ||
        (rc = get_s(sec, "dtype", &w->dtype, err)) ||
        (rc = get_b(sec, "grad_checkpoint", &p->grad_checkpoint, err)) ||
        (rc = get_s(sec, "device", &p->device, err)) ||
        (rc = get_s(sec, "dist_backend", &p->dist_backend, err)) ||
        (rc = get_pos(sec, "threads", 0, &w->threads, err)) ||
        (rc = get_pos(sec, "eval_every", 0, &p->eval_every, err)) ||
        (rc = get_pos(sec, "eval_batch", 1, &p->eval_batch, err)) ||
        (p->eval_batch > 1024 &&
         (rc = sn_err_set(err, SN_E_ARG, "recipe: train.%s = %" PRId64 " (at most 1024)",
                          K("eval_batch"), p->eval_batch))) ||
        (rc = get_pos(sec, "save_every", 0, &p->save_every, err)) ||
        (rc = get_pos(sec, "keep_last", 0, &p->keep_last, err)) ||
        (rc = get_pos(sec, "log_every", 1, &p->log_every, err)) ||
        (rc = get_s(sec, "best_metric", &p->best_metric, err)) ||
        (rc = get_s(sec, "tokenizer", &p->tokenizer, err)) ||
        (rc = get_s(sec, "init_adapter", &p->init_adapter, err)) ||
        (rc = get_s(sec, "batching", &w->batching, err)) ||
        (rc = get_b(sec, "length_bucketing", &p->length_bucketing, err)))
        return rc;
    if (p->max_steps < 0)
        p->max_steps = 0;
    return SN_OK;
}

/* train.batching by name; an unknown name gets the nearest one suggested. */
static int parse_batching(const char *batching, enum sn_batching *out, struct sn_err *err)
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
    *out = (enum sn_batching)b;
    return SN_OK;
}

/* train.mode, train.schedule and train.dtype by name. */
static int parse_names(const struct train_raw *w, struct sn_train_params *p, struct sn_err *err)
{
    if (w->objective) {
        if (!strcmp(w->objective, "reward"))
            p->objective = SN_OBJECTIVE_REWARD;
        else if (!strcmp(w->objective, "lm"))
            p->objective = SN_OBJECTIVE_LM;
        else
            return sn_err_set(err, SN_E_ARG, "recipe: train.objective = \"%s\" (expected "
                              "\"reward\" or \"lm\")", w->objective);
    }
    if (w->mode) {
        if (!strcmp(w->mode, "full"))
            p->mode = SN_TRAIN_FULL;
        else if (!strcmp(w->mode, "lora"))
            p->mode = SN_TRAIN_LORA;
        else
            return sn_err_set(err, SN_E_ARG, "recipe: train.mode = \"%s\" (expected \"full\" or "
                              "\"lora\")", w->mode);
    }
    int k;
    for (k = 0; k < SN_LR_KIND_COUNT && strcmp(w->sched, sched_names[k]); k++)
        ;
    if (k == SN_LR_KIND_COUNT)
        return sn_err_set(err, SN_E_ARG, "recipe: train.schedule = \"%s\" (expected constant, "
                          "linear or cosine)", w->sched);
    p->sched.kind = (enum sn_lr_kind)k;
    if (w->dtype) {
        if (!strcmp(w->dtype, "float32") || !strcmp(w->dtype, "f32"))
            p->dtype = SN_DTYPE_F32;
        else if (!strcmp(w->dtype, "float64") || !strcmp(w->dtype, "f64"))
            p->dtype = SN_DTYPE_F64;
        else if (!strcmp(w->dtype, "bfloat16") || !strcmp(w->dtype, "bf16"))
            p->dtype = SN_DTYPE_BF16;
        else
            return sn_err_set(err, SN_E_ARG, "recipe: train.dtype = \"%s\" (expected float32, "
                              "bfloat16 or float64)", w->dtype);
    }
    return SN_OK;
}

/* The ranges the JSON readers do not check. */
static int check_ranges(const struct sn_train_params *p, struct sn_err *err)
{
    if (!(p->sched.min_ratio >= 0.0 && p->sched.min_ratio <= 1.0))
        return sn_err_set(err, SN_E_ARG, "recipe: train.min_lr_ratio = %g (expected 0..1)",
                          p->sched.min_ratio);
    if (!(p->warmup_ratio >= 0.0 && p->warmup_ratio < 1.0))
        return sn_err_set(err, SN_E_ARG, "recipe: train.warmup_ratio = %g (expected [0, 1))",
                          p->warmup_ratio);
    if (!(p->alpha >= 0.0) || !(p->center_rewards >= 0.0) || !(p->sched.lr >= 0.0) ||
        !isfinite(p->sched.lr) || !(p->pretrain_lr >= 0.0) || !isfinite(p->pretrain_lr))
        return sn_err_set(err, SN_E_ARG, "recipe: train.alpha, train.center_rewards, "
                          "train.lr and train.pretrain_lr must be >= 0");
    /* the lm objective trains every weight (docs/train.md "Domain-adaptive pretraining") */
    if (p->objective == SN_OBJECTIVE_LM && p->mode == SN_TRAIN_LORA)
        return sn_err_set(err, SN_E_ARG, "recipe: train.objective \"lm\" trains every "
                          "parameter: set train.mode \"full\" (LoRA continued pretraining is "
                          "not implemented; the reward stage after it may still use LoRA)");
    if (p->objective == SN_OBJECTIVE_LM && p->pretrain_steps > 0)
        return sn_err_set(err, SN_E_ARG, "recipe: train.pretrain_steps chains an lm stage "
                          "before a reward run: it needs train.objective \"reward\"");
    if (!(p->adamw.beta1 >= 0.0 && p->adamw.beta1 < 1.0) ||
        !(p->adamw.beta2 >= 0.0 && p->adamw.beta2 < 1.0))
        return sn_err_set(err, SN_E_ARG, "recipe: train.beta1 = %g, train.beta2 = %g (each "
                          "expected in [0, 1))", p->adamw.beta1, p->adamw.beta2);
    if (!(p->adamw.eps > 0.0) || !(p->adamw.weight_decay >= 0.0) || !(p->max_grad_norm >= 0.0))
        return sn_err_set(err, SN_E_ARG, "recipe: train.eps = %g (expected > 0), "
                          "train.weight_decay = %g and train.max_grad_norm = %g (expected >= 0)",
                          p->adamw.eps, p->adamw.weight_decay, p->max_grad_norm);
    size_t i;
    for (i = 0; best_metrics[i] && strcmp(p->best_metric, best_metrics[i]); i++)
        ;
    if (!best_metrics[i])
        return sn_err_set(err, SN_E_ARG, "recipe: train.best_metric = \"%s\" (expected "
                          "eval_accuracy, eval_loss, eval_margin or eval_align_accuracy)",
                          p->best_metric);
    /* checked here, not only when the trainer opens its group, so that `sentinel run --check`
    ** (no libtorch) refuses a misspelt backend */
    enum sn_dist_backend backend;
    struct sn_err ignored = {0};
    if (sn_aten_dist_backend_parse(p->dist_backend, &backend, &ignored))
        return sn_err_set(err, SN_E_ARG, "recipe: train.dist_backend = \"%s\" (expected auto, "
                          "gloo or nccl)", p->dist_backend);
    return SN_OK;
}

/* train.lora (an object, lo) into p->lora. */
static int read_lora(const cJSON *lo, struct sn_train_params *p, struct sn_err *err)
{
    int rc;
    if (!cJSON_IsObject(lo))
        return sn_err_set(err, SN_E_ARG, "recipe: 'train.lora' must be an object");
    if ((rc = sn_recipe_check_keys(lo, "train.lora", lora_keys, err)))
        return rc;
    static const char *const names[2][2] = {{"alpha", "lora_alpha"},
                                             {"dropout", "lora_dropout"}};
    const char *use[2];
    for (int i = 0; i < 2; i++) {
        bool ours = cJSON_HasObjectItem(lo, names[i][0]);
        bool peft = cJSON_HasObjectItem(lo, names[i][1]);
        if (ours && peft)
            return sn_err_set(err, SN_E_ARG, "recipe: train.lora.%s and train.lora.%s are one "
                              "setting (%s is PEFT's name): keep one", names[i][0], names[i][1],
                              names[i][1]);
        use[i] = names[i][peft];
    }
    int64_t r = p->lora.r;
    if ((rc = sn_json_get_int(lo, "train.lora", "r", r, &r, err)) ||
        (rc = sn_json_get_double(lo, "train.lora", use[0], p->lora.alpha, &p->lora.alpha,
                                 err)) ||
        (rc = sn_json_get_double(lo, "train.lora", use[1], p->lora.dropout,
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
    return SN_OK;
}

/* One train.report_to name: "jsonl" (metrics.jsonl only, the default), "tensorboard" (and event
** files), or HF's "none" and "all" (metrics.jsonl is always written: resume and
** trainer_state.json's log_history read it). */
static int report_to_name(const cJSON *e, bool *tb, struct sn_err *err)
{
    static const char *const names[] = {"jsonl", "tensorboard", "none", "all"};
    if (!cJSON_IsString(e))
        return sn_err_set(err, SN_E_ARG, "recipe: train.report_to: expected \"jsonl\", "
                          "\"tensorboard\" or a list of them");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(e->valuestring, names[i])) {
            *tb = *tb || i == 1 || i == 3;
            return SN_OK;
        }
    return sn_err_set(err, SN_E_ARG, "recipe: train.report_to = \"%s\" (expected jsonl, "
                      "tensorboard, none or all; for W&B, `wandb sync` the TensorBoard files)",
                      e->valuestring);
}

/* train.report_to: a name or a list of names (HF's report_to takes both). */
static int read_report_to(const cJSON *v, struct sn_train_params *p, struct sn_err *err)
{
    p->tensorboard = false;
    if (!cJSON_IsArray(v))
        return report_to_name(v, &p->tensorboard, err);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        int rc = report_to_name(e, &p->tensorboard, err);
        if (rc)
            return rc;
    }
    return SN_OK;
}

int sn_train_params_from_recipe(const cJSON *recipe, struct sn_train_params *p,
                                struct sn_err *err)
{
    const cJSON *sec = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "train") : NULL;
    if (!sec)
        return SN_OK;
    if (!cJSON_IsObject(sec))
        return sn_err_set(err, SN_E_ARG, "recipe: 'train' must be an object");
    int rc = sn_train_hf_check(sec, train_keys, err);
    if (rc)
        return rc;
    struct train_raw w = {NULL, NULL, sched_names[p->sched.kind], NULL, batching_names[p->batching],
                          (int64_t)p->seed, p->threads};
    if ((rc = read_scalars(sec, p, &w, err)) ||
        (rc = parse_batching(w.batching, &p->batching, err)))
        return rc;
    p->seed = (uint64_t)w.seed;
    p->threads = (int)w.threads;
    if ((rc = parse_names(&w, p, err)) || (rc = sn_train_hf_apply(sec, p, err)) ||
        (rc = check_ranges(p, err)))
        return rc;
    p->best_greater = !strstr(p->best_metric, "loss");
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(sec, "report_to");
    if (rt && (rc = read_report_to(rt, p, err)))
        return rc;
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(sec, "lora");
    if (lo)
        return read_lora(lo, p, err);
    return SN_OK;
}

void sn_train_recipe_sets_win(cJSON *recipe, const char *const *sets, size_t n)
{
    sn_train_hf_sets_win(recipe, train_keys, sets, n);
}
