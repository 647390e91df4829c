/* train/recipe_hf.c: the Hugging Face names of the recipe's `train` section (docs/train.md
** "Hugging Face names"). Users who train reward models with transformers' Trainer and TRL's
** RewardTrainer write TrainingArguments / RewardConfig names; each one sentinel can honour sets
** its sentinel key (as is, or with its value translated), each one it cannot is refused with the
** reason and the key to use instead, and giving both names of one setting is an error, so a
** recipe never says two things about one setting. Defaults stay sentinel's. */
#include "train/recipe_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum hf_map {
    HF_SAME,  /* the value as it is */
    HF_VALUE, /* translated by sn_train_hf_apply */
};

static const struct hf_alias {
    const char *hf;    /* transformers' TrainingArguments or TRL's RewardConfig name */
    const char *key;   /* the sentinel key it sets */
    enum hf_map map;
    bool        twice; /* giving it and `key` together is an error */
} aliases[] = {
    {"learning_rate", "lr", HF_SAME, true},
    {"per_device_train_batch_size", "micro_batch", HF_SAME, true},
    {"gradient_accumulation_steps", "grad_accum", HF_SAME, true},
    {"num_train_epochs", "epochs", HF_VALUE, true},
    {"lr_scheduler_type", "schedule", HF_VALUE, true},
    {"lr_scheduler_kwargs", "min_lr_ratio", HF_VALUE, true},
    {"save_steps", "save_every", HF_SAME, true},
    {"save_total_limit", "keep_last", HF_VALUE, true},
    {"eval_steps", "eval_every", HF_SAME, true},
    {"logging_steps", "log_every", HF_SAME, true},
    {"per_device_eval_batch_size", "eval_batch", HF_SAME, true},
    {"bf16", "dtype", HF_VALUE, true},
    {"ddp_backend", "dist_backend", HF_SAME, true},
    {"fp16", "dtype", HF_VALUE, true},
    {"gradient_checkpointing", "grad_checkpoint", HF_SAME, true},
    {"adam_beta1", "beta1", HF_SAME, true},
    {"adam_beta2", "beta2", HF_SAME, true},
    {"adam_epsilon", "eps", HF_SAME, true},
    {"center_rewards_coefficient", "center_rewards", HF_SAME, true},
    {"metric_for_best_model", "best_metric", HF_VALUE, true},
    /* checked against the direction train.best_metric implies, so both may be given */
    {"greater_is_better", "best_metric", HF_VALUE, false},
    {"optim", "beta1", HF_VALUE, false}, /* only torch's AdamW, which sentinel runs */
};

/* Names sentinel cannot honour, each with the reason and what to use instead. */
static const struct {
    const char *hf, *why;
} refused[] = {
    {"max_length", "sequences are cut to length when the shards are built: set build.max_len "
                   "(build.max_length is accepted as its Hugging Face name)"},
    {"eval_strategy", "sentinel evaluates the validation split every train.eval_every steps "
                      "(0 = only at the end)"},
    {"evaluation_strategy", "sentinel evaluates the validation split every train.eval_every "
                            "steps (0 = only at the end)"},
    {"save_strategy", "sentinel writes a checkpoint every train.save_every steps (0 = only at "
                      "the end)"},
    {"logging_strategy", "sentinel logs a metrics.jsonl line every train.log_every steps"},
    {"load_best_model_at_end", "sentinel always keeps the best checkpoint by train.best_metric "
                               "(final_metrics.json names it; `sentinel run` exports it)"},
    {"output_dir", "give `sentinel train -o DIR` or train.out (`sentinel run` trains into "
                   "OUT/train)"},
    {"logging_dir", "the metrics are metrics.jsonl of the training output directory, and with "
                    "train.report_to = \"tensorboard\" its runs/ (fixed names)"},
    {"resume_from_checkpoint", "a re-run with the same settings resumes from the training "
                               "directory's `latest` by itself (`sentinel train --restart` "
                               "starts over)"},
    {"overwrite_output_dir", "a re-run resumes; `sentinel train --restart` starts over"},
    {"disable_dropout", "the base model has no dropout; LoRA's is train.lora.dropout"},
    {"per_gpu_train_batch_size", "transformers' deprecated name: use "
                                 "per_device_train_batch_size or train.micro_batch"},
    {"group_by_length", "train.length_bucketing sorts each step's tuples by length instead "
                        "(the step's gradient unchanged)"},
    {"use_cpu", "set train.device: \"cpu\", \"cuda\" or \"cuda:N\""},
    {"no_cuda", "set train.device: \"cpu\", \"cuda\" or \"cuda:N\""},
    {"local_rank", "torchrun's LOCAL_RANK is read from the environment with train.device = "
                   "\"cuda\" (docs/train.md \"GPUs\")"},
    {"deepspeed", "no DeepSpeed: data parallelism runs under torchrun or srun (docs/train.md "
                  "\"Data parallelism\")"},
    {"fsdp", "no FSDP: data parallelism runs under torchrun or srun (docs/train.md \"Data "
             "parallelism\")"},
    {"tf32", "no TF32 switch: train.dtype = \"bfloat16\" gives reduced-precision matrix "
             "products"},
    {"torch_compile", "sentinel's model runs through its own libtorch C API, without "
                      "torch.compile"},
    {"push_to_hub", "sentinel uploads nothing: `sentinel export --peft DIR` writes a PEFT "
                    "adapter directory to push"},
    {"dataloader_num_workers", "the shards are read in the training process itself"},
    {"remove_unused_columns", "shards hold only the tokenized tuple fields"},
    {"dataset_num_proc", "tokenization happens in `sentinel build` (the build section)"},
    {"warmup_stable_decay", "not a schedule sentinel has (train.schedule: constant, linear, "
                            "cosine)"},
};

static const struct hf_alias *alias_of(const char *name)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(aliases[i].hf, name))
            return &aliases[i];
    return NULL;
}

const char *sn_train_hf_name(const cJSON *sec, const char *key)
{
    if (!sec || cJSON_HasObjectItem(sec, key))
        return key;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (aliases[i].map == HF_SAME && !strcmp(aliases[i].key, key) &&
            cJSON_HasObjectItem(sec, aliases[i].hf))
            return aliases[i].hf;
    return key;
}

/* The nearest of keys, the aliases and the refused names to an unknown key. */
static int unknown_key(const char *name, const char *const *keys, struct sn_err *err)
{
    const char *best = NULL, *of = NULL;
    size_t best_d = (size_t)-1;
    for (const char *const *k = keys; *k; k++) {
        size_t d = sn_edit_distance(name, *k);
        if (d < best_d) {
            best_d = d;
            best = *k;
            of = NULL;
        }
    }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        size_t d = sn_edit_distance(name, aliases[i].hf);
        if (d < best_d) {
            best_d = d;
            best = aliases[i].hf;
            of = aliases[i].key;
        }
    }
    if (best && best_d <= 3 + strlen(name) / 3) {
        if (of)
            return sn_err_set(err, SN_E_ARG, "recipe: unknown key 'train.%s' (did you mean "
                              "'%s', the Hugging Face name of train.%s?)", name, best, of);
        return sn_err_set(err, SN_E_ARG, "recipe: unknown key 'train.%s' (did you mean '%s'?)",
                          name, best);
    }
    return sn_err_set(err, SN_E_ARG, "recipe: unknown key 'train.%s' (the keys: docs/train.md "
                      "\"The `train` section\")", name);
}

int sn_train_hf_check(const cJSON *sec, const char *const *keys, struct sn_err *err)
{
    for (const cJSON *c = sec->child; c; c = c->next) {
        const char *const *k;
        for (k = keys; *k && strcmp(*k, c->string); k++)
            ;
        if (*k) {
            for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
                if (aliases[i].twice && !strcmp(aliases[i].key, *k) &&
                    cJSON_HasObjectItem(sec, aliases[i].hf))
                    return sn_err_set(err, SN_E_ARG, "recipe: train.%s and train.%s are one "
                                      "setting (%s is its Hugging Face name): keep one",
                                      *k, aliases[i].hf, aliases[i].hf);
            continue;
        }
        if (alias_of(c->string))
            continue;
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
            if (!strcmp(refused[i].hf, c->string))
                return sn_err_set(err, SN_E_ARG, "recipe: train.%s (a Hugging Face name) is not "
                                  "supported: %s", c->string, refused[i].why);
        return unknown_key(c->string, keys, err);
    }
    return SN_OK;
}

/* An integral JSON number of at least min, else SN_E_ARG naming train.<name>. */
static int whole(const cJSON *v, const char *name, double min, const char *frac_why,
                 int64_t *out, struct sn_err *err)
{
    if (!cJSON_IsNumber(v))
        return sn_err_set(err, SN_E_ARG, "train.%s: expected a number", name);
    if (v->valuedouble != floor(v->valuedouble))
        return sn_err_set(err, SN_E_ARG, "recipe: train.%s = %g: %s", name, v->valuedouble,
                          frac_why);
    if (!(v->valuedouble >= min) || v->valuedouble > 9.007199254740992e15)
        return sn_err_set(err, SN_E_ARG, "recipe: train.%s = %g (expected >= %g)", name,
                          v->valuedouble, min);
    *out = (int64_t)v->valuedouble;
    return SN_OK;
}

static int bool_of(const cJSON *v, const char *name, bool *out, struct sn_err *err)
{
    if (!cJSON_IsBool(v))
        return sn_err_set(err, SN_E_ARG, "train.%s: expected true or false", name);
    *out = cJSON_IsTrue(v);
    return SN_OK;
}

/* lr_scheduler_type (transformers' SchedulerType values) into p->sched.kind; "constant" is
** transformers' schedule without warmup, so a warmup given with it is refused. */
static int apply_scheduler(const cJSON *sec, const cJSON *v, struct sn_train_params *p,
                           bool *needs_min, struct sn_err *err)
{
    static const struct {
        const char *hf;
        int kind; /* enum sn_lr_kind, or -1: refused */
        const char *why;
    } map[] = {
        {"linear", SN_LR_LINEAR, NULL},
        {"cosine", SN_LR_COSINE, NULL},
        {"cosine_with_min_lr", SN_LR_COSINE, NULL},
        {"constant", SN_LR_CONSTANT, NULL},
        {"constant_with_warmup", SN_LR_CONSTANT, NULL},
        {"cosine_with_restarts", -1, "cosine restarts (num_cycles) are not implemented"},
        {"polynomial", -1, "polynomial decay (power, lr_end) is not implemented"},
        {"inverse_sqrt", -1, "the inverse square root decay is not implemented"},
        {"reduce_lr_on_plateau", -1, "sentinel's schedule is a function of the step, never of "
                                     "the evaluation (exact resume depends on it)"},
        {"warmup_stable_decay", -1, "the warmup-stable-decay schedule is not implemented"},
        {"cosine_warmup_with_min_lr", -1, "use cosine_with_min_lr (sentinel's warmup is always "
                                          "linear)"},
    };
    if (!cJSON_IsString(v))
        return sn_err_set(err, SN_E_ARG, "train.lr_scheduler_type: expected a string");
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strcmp(map[i].hf, v->valuestring))
            continue;
        if (map[i].kind < 0)
            return sn_err_set(err, SN_E_ARG, "recipe: train.lr_scheduler_type = \"%s\" is not "
                              "supported: %s; sentinel has linear, cosine, cosine_with_min_lr, "
                              "constant and constant_with_warmup (train.schedule)",
                              v->valuestring, map[i].why);
        p->sched.kind = (enum sn_lr_kind)map[i].kind;
        *needs_min = !strcmp(map[i].hf, "cosine_with_min_lr");
        if (!strcmp(map[i].hf, "constant")) {
            const cJSON *ws = cJSON_GetObjectItemCaseSensitive(sec, "warmup_steps");
            const cJSON *wr = cJSON_GetObjectItemCaseSensitive(sec, "warmup_ratio");
            if ((cJSON_IsNumber(ws) && ws->valuedouble > 0) ||
                (cJSON_IsNumber(wr) && wr->valuedouble > 0))
                return sn_err_set(err, SN_E_ARG, "recipe: train.lr_scheduler_type = "
                                  "\"constant\" has no warmup in transformers, yet a warmup is "
                                  "given: use \"constant_with_warmup\"");
            p->sched.warmup_steps = 0;
            p->warmup_ratio = 0.0;
        }
        return SN_OK;
    }
    return sn_err_set(err, SN_E_ARG, "recipe: train.lr_scheduler_type = \"%s\" (expected linear, "
                      "cosine, cosine_with_min_lr, constant or constant_with_warmup)",
                      v->valuestring);
}

/* lr_scheduler_kwargs of cosine_with_min_lr: min_lr_rate (the floor as a fraction of the
** peak: train.min_lr_ratio) or min_lr (an absolute floor, divided by an explicit lr). */
static int apply_kwargs(const cJSON *kw, struct sn_train_params *p, bool needs_min,
                        bool lr_given, struct sn_err *err)
{
    if (!kw) {
        if (needs_min && !p->sched.min_ratio)
            return sn_err_set(err, SN_E_ARG, "recipe: train.lr_scheduler_type = "
                              "\"cosine_with_min_lr\" needs lr_scheduler_kwargs {\"min_lr_rate\": "
                              "x} (or train.min_lr_ratio), as transformers does");
        return SN_OK;
    }
    if (!needs_min)
        return sn_err_set(err, SN_E_ARG, "recipe: train.lr_scheduler_kwargs is read only with "
                          "lr_scheduler_type = \"cosine_with_min_lr\"");
    if (!cJSON_IsObject(kw))
        return sn_err_set(err, SN_E_ARG, "train.lr_scheduler_kwargs: expected an object");
    const cJSON *rate = NULL, *abs_lr = NULL;
    for (const cJSON *c = kw->child; c; c = c->next) {
        if (!strcmp(c->string, "min_lr_rate"))
            rate = c;
        else if (!strcmp(c->string, "min_lr"))
            abs_lr = c;
        else
            return sn_err_set(err, SN_E_ARG, "recipe: train.lr_scheduler_kwargs.%s is not "
                              "supported (min_lr_rate or min_lr)", c->string);
    }
    if (!rate == !abs_lr)
        return sn_err_set(err, SN_E_ARG, "recipe: train.lr_scheduler_kwargs: give one of "
                          "min_lr_rate and min_lr");
    const cJSON *v = rate ? rate : abs_lr;
    if (!cJSON_IsNumber(v))
        return sn_err_set(err, SN_E_ARG, "train.lr_scheduler_kwargs.%s: expected a number",
                          v->string);
    if (rate) {
        p->sched.min_ratio = v->valuedouble;
        return SN_OK;
    }
    if (!lr_given || !(p->sched.lr > 0.0))
        return sn_err_set(err, SN_E_ARG, "recipe: train.lr_scheduler_kwargs.min_lr needs the "
                          "peak learning rate given (learning_rate or train.lr; sentinel's "
                          "default depends on the mode): or give min_lr_rate");
    p->sched.min_ratio = v->valuedouble / p->sched.lr;
    return SN_OK;
}

/* metric_for_best_model: transformers prefixes "eval_" when the name lacks it. */
static int apply_metric(const cJSON *v, struct sn_train_params *p, struct sn_err *err)
{
    static const char *const names[] = {"eval_accuracy", "eval_loss", "eval_margin",
                                        "eval_align_accuracy"};
    if (!cJSON_IsString(v))
        return sn_err_set(err, SN_E_ARG, "train.metric_for_best_model: expected a string");
    const char *m = v->valuestring;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(m, names[i]) || !strcmp(m, names[i] + 5)) {
            p->best_metric = names[i];
            return SN_OK;
        }
    return sn_err_set(err, SN_E_ARG, "recipe: train.metric_for_best_model = \"%s\" (expected "
                      "accuracy, loss, margin or align_accuracy, with or without eval_)", m);
}

int sn_train_hf_apply(const cJSON *sec, struct sn_train_params *p, struct sn_err *err)
{
    const cJSON *v;
    bool needs_min = false, b = false;
    int64_t n;
    int rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(sec, "num_train_epochs"))) {
        if ((rc = whole(v, "num_train_epochs", 1, "sentinel trains whole epochs (give "
                        "train.max_steps to stop inside one)", &n, err)))
            return rc;
        p->epochs = n;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(sec, "save_total_limit"))) {
        /* transformers keeps the best checkpoint besides the save_total_limit - 1 newest (both
        ** the newest and the best when the limit is 1); null or <= 0 keeps every one. sentinel
        ** always keeps the best besides train.keep_last newest (0 = all). */
        if (cJSON_IsNull(v)) {
            p->keep_last = 0;
        } else {
            if ((rc = whole(v, "save_total_limit", -9e15, "expected a whole number of "
                            "checkpoints", &n, err)))
                return rc;
            p->keep_last = n <= 0 ? 0 : n == 1 ? 1 : n - 1;
        }
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(sec, "lr_scheduler_type")) &&
        (rc = apply_scheduler(sec, v, p, &needs_min, err)))
        return rc;
    bool lr_given = cJSON_HasObjectItem(sec, sn_train_hf_name(sec, "lr"));
    if ((rc = apply_kwargs(cJSON_GetObjectItemCaseSensitive(sec, "lr_scheduler_kwargs"), p,
                           needs_min, lr_given, err)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(sec, "fp16"))) {
        if ((rc = bool_of(v, "fp16", &b, err)))
            return rc;
        if (b)
            return sn_err_set(err, SN_E_ARG, "recipe: train.fp16 = true is not supported: "
                              "float16 training needs loss scaling, which sentinel does not do; "
                              "use bf16: true (train.dtype = \"bfloat16\")");
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(sec, "bf16"))) {
        if ((rc = bool_of(v, "bf16", &b, err)))
            return rc;
        if (b)
            p->dtype = SN_DTYPE_BF16;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(sec, "metric_for_best_model")) &&
        (rc = apply_metric(v, p, err)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(sec, "greater_is_better"))) {
        if ((rc = bool_of(v, "greater_is_better", &b, err)))
            return rc;
        bool derived = !strstr(p->best_metric, "loss");
        if (b != derived)
            return sn_err_set(err, SN_E_ARG, "recipe: train.greater_is_better = %s disagrees "
                              "with %s, for which %s is better (sentinel derives the direction "
                              "from the metric)", b ? "true" : "false", p->best_metric,
                              derived ? "higher" : "lower");
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(sec, "optim"))) {
        if (!cJSON_IsString(v))
            return sn_err_set(err, SN_E_ARG, "train.optim: expected a string");
        if (strcmp(v->valuestring, "adamw_torch") && strcmp(v->valuestring, "adamw_torch_fused"))
            return sn_err_set(err, SN_E_ARG, "recipe: train.optim = \"%s\" is not supported: "
                              "sentinel's optimizer is torch's AdamW (\"adamw_torch\"; its "
                              "settings train.beta1, beta2, eps, weight_decay)", v->valuestring);
    }
    return SN_OK;
}

/* The value p holds for a sentinel key of the alias table, as text. */
static void value_text(const struct sn_train_params *p, const char *key, char *buf, size_t n)
{
    static const char *const dtypes[] = {"float32", "float64", "bfloat16"};
    static const char *const scheds[] = {"constant", "linear", "cosine"}; /* enum sn_lr_kind */
    if (!strcmp(key, "lr"))
        snprintf(buf, n, "%g", p->sched.lr);
    else if (!strcmp(key, "micro_batch"))
        snprintf(buf, n, "%" PRId64, p->micro_batch);
    else if (!strcmp(key, "grad_accum"))
        snprintf(buf, n, "%" PRId64, p->grad_accum);
    else if (!strcmp(key, "epochs"))
        snprintf(buf, n, "%" PRId64, p->epochs);
    else if (!strcmp(key, "schedule"))
        snprintf(buf, n, "\"%s\", warmup_steps %" PRId64 "%s",
                 (unsigned)p->sched.kind < 3 ? scheds[p->sched.kind] : "?",
                 p->sched.warmup_steps,
                 p->sched.warmup_steps < 0 ? " (sentinel's default: min(1000, 10% of the steps))"
                                           : "");
    else if (!strcmp(key, "min_lr_ratio"))
        snprintf(buf, n, "%g", p->sched.min_ratio);
    else if (!strcmp(key, "save_every"))
        snprintf(buf, n, "%" PRId64, p->save_every);
    else if (!strcmp(key, "keep_last"))
        snprintf(buf, n, "%" PRId64 " (and the best)", p->keep_last);
    else if (!strcmp(key, "eval_every"))
        snprintf(buf, n, "%" PRId64, p->eval_every);
    else if (!strcmp(key, "log_every"))
        snprintf(buf, n, "%" PRId64, p->log_every);
    else if (!strcmp(key, "eval_batch"))
        snprintf(buf, n, "%" PRId64, p->eval_batch);
    else if (!strcmp(key, "dtype"))
        snprintf(buf, n, "\"%s\"", (unsigned)p->dtype < 3 ? dtypes[p->dtype] : "?");
    else if (!strcmp(key, "grad_checkpoint"))
        snprintf(buf, n, "%s", p->grad_checkpoint ? "true" : "false");
    else if (!strcmp(key, "beta1"))
        snprintf(buf, n, "%g", p->adamw.beta1);
    else if (!strcmp(key, "beta2"))
        snprintf(buf, n, "%g", p->adamw.beta2);
    else if (!strcmp(key, "eps"))
        snprintf(buf, n, "%g", p->adamw.eps);
    else if (!strcmp(key, "center_rewards"))
        snprintf(buf, n, "%g", p->center_rewards);
    else if (!strcmp(key, "best_metric"))
        snprintf(buf, n, "\"%s\" (%s is better)", p->best_metric,
                 p->best_greater ? "higher" : "lower");
    else
        snprintf(buf, n, "?");
}

int sn_train_recipe_aliases(const cJSON *recipe, const struct sn_train_params *p,
                            struct sn_buf *b, struct sn_err *err)
{
    const cJSON *sec = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "train") : NULL;
    if (!cJSON_IsObject(sec))
        return SN_OK;
    for (const cJSON *c = sec->child; c; c = c->next) {
        const struct hf_alias *a = alias_of(c->string);
        if (!a)
            continue;
        char *given = cJSON_PrintUnformatted(c);
        char val[160];
        if (!strcmp(a->hf, "optim"))
            snprintf(val, sizeof val, "torch's AdamW (beta1 %g, beta2 %g, eps %g)",
                     p->adamw.beta1, p->adamw.beta2, p->adamw.eps);
        else
            value_text(p, a->key, val, sizeof val);
        int rc = sn_buf_printf(b, err, "  train.%s = %s  ->  train.%s = %s\n", a->hf,
                               given ? given : "?", !strcmp(a->hf, "optim") ? "(optimizer)"
                                                                           : a->key, val);
        cJSON_free(given);
        if (rc)
            return rc;
    }
    return SN_OK;
}

/* The setting a name of the train section stands for: itself for a sentinel key, the key of a
** Hugging Face name that may not be given beside it, else NULL. */
static const char *setting_of(const char *name, const char *const *keys)
{
    for (const char *const *k = keys; *k; k++)
        if (!strcmp(*k, name))
            return *k;
    const struct hf_alias *a = alias_of(name);
    return a && a->twice ? a->key : NULL;
}

/* Whether one of sets[0..n) assigns train.<name> ("train.<name>=..."). */
static bool set_names(const char *const *sets, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (!strncmp(sets[i], "train.", 6) && !strncmp(sets[i] + 6, name, len) &&
            sets[i][6 + len] == '=')
            return true;
    return false;
}

void sn_train_hf_sets_win(cJSON *recipe, const char *const *keys, const char *const *sets,
                          size_t n)
{
    cJSON *sec = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "train") : NULL;
    if (!cJSON_IsObject(sec))
        return;
    for (cJSON *c = sec->child, *next; c; c = next) {
        next = c->next;
        const char *k = setting_of(c->string, keys);
        if (!k || set_names(sets, n, c->string))
            continue;
        /* c came from the file: drop it when a --set gives its setting under another name */
        bool other = set_names(sets, n, k) && strcmp(k, c->string);
        for (size_t i = 0; !other && i < sizeof aliases / sizeof aliases[0]; i++)
            other = aliases[i].twice && !strcmp(aliases[i].key, k) &&
                    strcmp(aliases[i].hf, c->string) && set_names(sets, n, aliases[i].hf);
        if (other)
            cJSON_DeleteItemFromObjectCaseSensitive(sec, c->string);
    }
}
