/* tests/test_train_recipe.c: each stage's recipe decoder without libtorch (train/recipe.h,
** export/write_recipe.h, eval/recipe.h): the Hugging Face names of the train section set exactly what
** their sentinel keys set, both names of one setting or a name sentinel cannot honour are
** refused with the reason, unknown keys get the nearest one; wrong types and ranges are named;
** and the checkpoint choice of a training output directory (adapter or full, best or last)
** from fixture directories. docs/train.md "Hugging Face names", docs/run.md. */
#include "eval/recipe.h"
#include "export/write_recipe.h"
#include "train/recipe.h"
#include "testutil.h"

#include <inttypes.h>
#include <sys/stat.h>

/* Every field of p as text, so that two decodings compare whole. */
static void fingerprint(const struct sn_train_params *p, char *buf, size_t n)
{
    snprintf(buf, n,
             "base=%s mode=%d lora=%d/%.17g/%.17g/%u/%d adamw=%.17g/%.17g/%.17g/%.17g "
             "decay_all=%d sched=%d/%.17g/%" PRId64 "/%.17g warmup_ratio=%.17g epochs=%" PRId64
             " max_steps=%" PRId64 " mb=%" PRId64 " ga=%" PRId64 " clip=%.17g alpha=%.17g "
             "center=%.17g seed=%" PRIu64 " dtype=%d gc=%d device=%s dist=%s threads=%d "
             "eval=%" PRId64 "/%" PRId64 " save=%" PRId64 " keep=%" PRId64 " log=%" PRId64
             " best=%s/%d tok=%s init=%s batching=%d lb=%d",
             p->base, (int)p->mode, p->lora.r, p->lora.alpha, p->lora.dropout, p->lora.targets,
             (int)p->lora.use_rslora, p->adamw.beta1, p->adamw.beta2, p->adamw.eps,
             p->adamw.weight_decay, (int)p->decay_all, (int)p->sched.kind, p->sched.lr,
             p->sched.warmup_steps, p->sched.min_ratio, p->warmup_ratio, p->epochs,
             p->max_steps, p->micro_batch, p->grad_accum, p->max_grad_norm, p->alpha,
             p->center_rewards, p->seed, (int)p->dtype, (int)p->grad_checkpoint, p->device,
             p->dist_backend, p->threads, p->eval_every, p->eval_batch, p->save_every,
             p->keep_last, p->log_every, p->best_metric, (int)p->best_greater,
             p->tokenizer ? p->tokenizer : "-", p->init_adapter ? p->init_adapter : "-",
             (int)p->batching, (int)p->length_bucketing);
}

/* Decodes {"train": <train_json>} into *p (from defaults); returns the status, err filled. */
static int decode(const char *train_json, struct sn_train_params *p, cJSON **keep,
                  struct sn_err *err)
{
    char text[2048];
    snprintf(text, sizeof text, "{\"train\": %s}", train_json);
    *p = sn_train_default_params();
    *keep = NULL;
    sn_err_clear(err);
    int rc = sn_json_parse(text, strlen(text), "r.json", keep, err);
    return rc ? rc : sn_train_params_from_recipe(*keep, p, err);
}

/* The Hugging Face spelling and the sentinel spelling decode to the same parameters. */
static void same(const char *hf, const char *ours)
{
    struct sn_train_params a, b;
    struct sn_err err = {0};
    cJSON *ja = NULL, *jb = NULL;
    char fa[2048], fb[2048];
    int ra = decode(hf, &a, &ja, &err);
    CHECK_MSG(ra == SN_OK, "%s: %s", hf, err.msg);
    int rb = decode(ours, &b, &jb, &err);
    CHECK_MSG(rb == SN_OK, "%s: %s", ours, err.msg);
    fingerprint(&a, fa, sizeof fa);
    fingerprint(&b, fb, sizeof fb);
    CHECK_MSG(ra || rb || !strcmp(fa, fb), "%s vs %s:\n  %s\n  %s", hf, ours, fa, fb);
    /* and the HF value is not the default, so the test would see a dropped alias */
    struct sn_train_params d = sn_train_default_params();
    char fd[2048];
    fingerprint(&d, fd, sizeof fd);
    CHECK_MSG(strcmp(fa, fd) != 0, "%s decodes to the defaults", hf);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
}

/* Decoding fails with SN_E_ARG and a message holding want. */
static void refused(const char *train_json, const char *want)
{
    struct sn_train_params p;
    struct sn_err err = {0};
    cJSON *j = NULL;
    int rc = decode(train_json, &p, &j, &err);
    CHECK_MSG(rc == SN_E_ARG && strstr(err.msg, want), "%s: rc %d, msg '%s', want '%s'",
              train_json, rc, err.msg, want);
    cJSON_Delete(j);
}

static void test_aliases(void)
{
    same("{\"learning_rate\": 1e-4}", "{\"lr\": 1e-4}");
    same("{\"per_device_train_batch_size\": 4}", "{\"micro_batch\": 4}");
    same("{\"gradient_accumulation_steps\": 3}", "{\"grad_accum\": 3}");
    same("{\"num_train_epochs\": 7}", "{\"epochs\": 7}");
    same("{\"num_train_epochs\": 2.0}", "{\"epochs\": 2}");
    same("{\"max_steps\": -1, \"learning_rate\": 1e-4}", "{\"max_steps\": 0, \"lr\": 1e-4}");
    same("{\"lr_scheduler_type\": \"linear\"}", "{\"schedule\": \"linear\"}");
    same("{\"lr_scheduler_type\": \"constant_with_warmup\"}", "{\"schedule\": \"constant\"}");
    same("{\"lr_scheduler_type\": \"constant\"}",
         "{\"schedule\": \"constant\", \"warmup_steps\": 0}");
    same("{\"lr_scheduler_type\": \"cosine_with_min_lr\", "
         "\"lr_scheduler_kwargs\": {\"min_lr_rate\": 0.1}}", "{\"min_lr_ratio\": 0.1}");
    same("{\"learning_rate\": 0.5, \"lr_scheduler_type\": \"cosine_with_min_lr\", "
         "\"lr_scheduler_kwargs\": {\"min_lr\": 0.125}}", "{\"lr\": 0.5, \"min_lr_ratio\": 0.25}");
    same("{\"save_steps\": 50}", "{\"save_every\": 50}");
    same("{\"save_total_limit\": 5}", "{\"keep_last\": 4}"); /* HF keeps the best besides */
    same("{\"save_total_limit\": 1}", "{\"keep_last\": 1}");
    same("{\"save_total_limit\": null}", "{\"keep_last\": 0}");
    same("{\"eval_steps\": 25}", "{\"eval_every\": 25}");
    same("{\"logging_steps\": 10}", "{\"log_every\": 10}");
    same("{\"per_device_eval_batch_size\": 32}", "{\"eval_batch\": 32}");
    same("{\"ddp_backend\": \"gloo\"}", "{\"dist_backend\": \"gloo\"}");
    same("{\"bf16\": true}", "{\"dtype\": \"bfloat16\"}");
    same("{\"bf16\": true, \"fp16\": false}", "{\"dtype\": \"bf16\"}");
    same("{\"gradient_checkpointing\": true}", "{\"grad_checkpoint\": true}");
    same("{\"adam_beta1\": 0.8, \"adam_beta2\": 0.99, \"adam_epsilon\": 1e-6}",
         "{\"beta1\": 0.8, \"beta2\": 0.99, \"eps\": 1e-6}");
    same("{\"center_rewards_coefficient\": 0.01}", "{\"center_rewards\": 0.01}");
    same("{\"metric_for_best_model\": \"loss\", \"greater_is_better\": false}",
         "{\"best_metric\": \"eval_loss\"}");
    same("{\"metric_for_best_model\": \"eval_margin\", \"optim\": \"adamw_torch\"}",
         "{\"best_metric\": \"eval_margin\"}");
    same("{\"lora\": {\"lora_alpha\": 32, \"lora_dropout\": 0.1}}",
         "{\"lora\": {\"alpha\": 32, \"dropout\": 0.1}}");

    /* through --set, as a user types it */
    struct sn_err err = {0};
    const char *path = sn_test_path(sn_test_dir("train_recipe_set"), "r.json");
    sn_test_write_file(path, "{\"train\": {\"epochs\": 2}}");
    const char *hf[] = {"train.learning_rate=1e-4", "train.bf16=true"};
    const char *ours[] = {"train.lr=1e-4", "train.dtype=bfloat16"};
    cJSON *a = NULL, *b = NULL;
    CHECK(sn_recipe_load(path, hf, 2, &a, &err) == SN_OK);
    CHECK(sn_recipe_load(path, ours, 2, &b, &err) == SN_OK);
    struct sn_train_params pa = sn_train_default_params(), pb = sn_train_default_params();
    CHECK(sn_train_params_from_recipe(a, &pa, &err) == SN_OK);
    CHECK(sn_train_params_from_recipe(b, &pb, &err) == SN_OK);
    char fa[2048], fb[2048];
    fingerprint(&pa, fa, sizeof fa);
    fingerprint(&pb, fb, sizeof fb);
    CHECK_STR(fa, fb);
    CHECK(pa.sched.lr == 1e-4 && pa.dtype == SN_DTYPE_BF16);
    /* what `sentinel run --check` prints for them */
    struct sn_buf out = {0};
    CHECK(sn_train_recipe_aliases(a, &pa, &out, &err) == SN_OK);
    CHECK_MSG(out.data && strstr(out.data, "train.learning_rate = 0.0001  ->  train.lr = 0.0001") &&
                  strstr(out.data, "train.bf16 = true  ->  train.dtype = \"bfloat16\""),
              "%s", out.data ? out.data : "(nothing)");
    sn_buf_free(&out);
    CHECK(sn_train_recipe_aliases(b, &pb, &out, &err) == SN_OK && out.len == 0);
    sn_buf_free(&out);
    cJSON_Delete(a);
    cJSON_Delete(b);

    /* a --set replaces its setting whatever name the file used; both on the command line is
    ** still two names of one setting */
    sn_test_write_file(path, "{\"train\": {\"lr\": 5e-4, \"dtype\": \"float32\", "
                             "\"save_total_limit\": 2, \"epochs\": 2}}");
    const char *over[] = {"train.learning_rate=1e-4", "train.bf16=true", "train.keep_last=7"};
    CHECK(sn_recipe_load(path, over, 3, &a, &err) == SN_OK);
    sn_train_recipe_sets_win(a, over, 3);
    pa = sn_train_default_params();
    CHECK_MSG(sn_train_params_from_recipe(a, &pa, &err) == SN_OK, "%s", err.msg);
    CHECK(pa.sched.lr == 1e-4 && pa.dtype == SN_DTYPE_BF16 && pa.keep_last == 7 &&
          pa.epochs == 2);
    cJSON_Delete(a);
    const char *twice[] = {"train.learning_rate=1e-4", "train.lr=1e-4"};
    CHECK(sn_recipe_load(path, twice, 2, &a, &err) == SN_OK);
    sn_train_recipe_sets_win(a, twice, 2);
    pa = sn_train_default_params();
    CHECK(sn_train_params_from_recipe(a, &pa, &err) == SN_E_ARG && strstr(err.msg, "one setting"));
    cJSON_Delete(a);
}

static void test_refusals(void)
{
    /* both names of one setting */
    refused("{\"lr\": 1e-4, \"learning_rate\": 1e-4}", "train.lr and train.learning_rate are "
            "one setting");
    refused("{\"keep_last\": 2, \"save_total_limit\": 3}", "one setting");
    refused("{\"dtype\": \"float32\", \"bf16\": true}", "one setting");
    refused("{\"schedule\": \"cosine\", \"lr_scheduler_type\": \"linear\"}", "one setting");
    refused("{\"lora\": {\"alpha\": 8, \"lora_alpha\": 8}}", "keep one");
    /* names and values sentinel cannot honour, with the reason */
    refused("{\"fp16\": true}", "loss scaling");
    refused("{\"lr_scheduler_type\": \"polynomial\"}", "not supported: polynomial decay");
    refused("{\"lr_scheduler_type\": \"reduce_lr_on_plateau\"}", "never of the evaluation");
    refused("{\"lr_scheduler_type\": \"cosin\"}", "expected linear, cosine");
    refused("{\"lr_scheduler_type\": \"constant\", \"warmup_steps\": 10}",
            "use \"constant_with_warmup\"");
    refused("{\"lr_scheduler_type\": \"cosine_with_min_lr\"}", "needs lr_scheduler_kwargs");
    refused("{\"lr_scheduler_kwargs\": {\"min_lr_rate\": 0.1}}", "only with lr_scheduler_type");
    refused("{\"lr_scheduler_type\": \"cosine_with_min_lr\", \"lr_scheduler_kwargs\": "
            "{\"min_lr\": 1e-6}}", "needs the peak learning rate");
    refused("{\"num_train_epochs\": 2.5}", "whole epochs");
    refused("{\"max_length\": 512}", "build.max_len");
    refused("{\"eval_strategy\": \"steps\"}", "train.eval_every");
    refused("{\"load_best_model_at_end\": true}", "always keeps the best checkpoint");
    refused("{\"output_dir\": \"x\"}", "train.out");
    refused("{\"optim\": \"sgd\"}", "torch's AdamW");
    refused("{\"metric_for_best_model\": \"f1\"}", "expected accuracy, loss");
    refused("{\"metric_for_best_model\": \"loss\", \"greater_is_better\": true}", "disagrees");
    /* unknown keys: the nearest sentinel key, or the HF name with its sentinel key */
    refused("{\"micro_bach\": 2}", "unknown key 'train.micro_bach' (did you mean "
            "'micro_batch'?)");
    refused("{\"learning_rat\": 2}", "did you mean 'learning_rate', the Hugging Face name of "
            "train.lr?");
    refused("{\"zzzzzzzzzzzzzz\": 2}", "unknown key 'train.zzzzzzzzzzzzzz'");
    refused("{\"lora\": {\"rr\": 8}}", "unknown key 'train.lora.rr' (did you mean 'r'?)");
    /* types and ranges, naming the key as written */
    refused("{\"lr\": \"fast\"}", "train.lr: expected a number");
    refused("{\"learning_rate\": \"fast\"}", "train.learning_rate: expected a number");
    refused("{\"micro_batch\": 0}", "train.micro_batch = 0 (expected >= 1)");
    refused("{\"per_device_train_batch_size\": 0}", "train.per_device_train_batch_size = 0");
    refused("{\"beta1\": 1.5}", "expected in [0, 1)");
    refused("{\"best_metric\": \"eval_f1\"}", "train.best_metric = \"eval_f1\"");
    refused("{\"dist_backend\": \"mpi\"}",
            "train.dist_backend = \"mpi\" (expected auto, gloo or nccl)");
    refused("{\"ddp_backend\": \"ccl\"}", "train.dist_backend = \"ccl\"");
    refused("{\"warmup_ratio\": 1.5}", "train.warmup_ratio = 1.5");
    refused("{\"bf16\": \"yes\"}", "train.bf16: expected true or false");
    refused("{\"mode\": \"half\"}", "train.mode = \"half\"");
}

static void test_full_rule(void)
{
    struct sn_train_params p = sn_train_default_params();
    CHECK(sn_train_is_full(&p)); /* tiny */
    p.base = "small";
    CHECK(sn_train_is_full(&p));
    p.base = "/models/qwen";
    CHECK(!sn_train_is_full(&p));
    p.mode = SN_TRAIN_FULL;
    CHECK(sn_train_is_full(&p));
    p.base = "tiny";
    p.mode = SN_TRAIN_LORA;
    CHECK(!sn_train_is_full(&p));
    CHECK(sn_train_base_is_seeded("tiny") && !sn_train_base_is_seeded("tiny2") &&
          !sn_train_base_is_seeded(NULL));
}

static int decode_section(const char *json, int (*fn)(const cJSON *, void *, struct sn_err *),
                          void *p, struct sn_err *err)
{
    cJSON *j = NULL;
    sn_err_clear(err);
    int rc = sn_json_parse(json, strlen(json), "r.json", &j, err);
    if (!rc)
        rc = fn(j, p, err);
    cJSON_Delete(j);
    return rc;
}

static int export_fn(const cJSON *r, void *p, struct sn_err *err)
{
    return sn_export_params_from_recipe(r, p, err);
}

static int eval_fn(const cJSON *r, void *p, struct sn_err *err)
{
    struct sn_eval_recipe *e = p;
    int rc = sn_eval_params_from_recipe(r, e, err);
    e->dataset = e->experiments = e->sets = NULL; /* borrowed from the deleted tree */
    return rc;
}

#define SECTION_FAILS(fn, p, json, want)                                                     \
    do {                                                                                     \
        int rc_ = decode_section(json, fn, p, &err);                                         \
        CHECK_MSG(rc_ == SN_E_ARG && strstr(err.msg, want), "%s: rc %d, '%s', want '%s'",    \
                  json, rc_, err.msg, want);                                                 \
    } while (0)

static void test_export_eval(void)
{
    struct sn_err err = {0};
    struct sn_export_recipe x;
    CHECK(decode_section("{\"export\": {\"max_len\": 2048}}", export_fn, &x, &err) == SN_OK &&
          x.max_len == 2048);
    CHECK(decode_section("{}", export_fn, &x, &err) == SN_OK && x.max_len == 0);
    SECTION_FAILS(export_fn, &x, "{\"export\": {\"max_lenn\": 1}}",
                  "unknown key 'export.max_lenn' (did you mean 'max_len'?)");
    SECTION_FAILS(export_fn, &x, "{\"export\": {\"max_len\": \"long\"}}",
                  "export.max_len: expected an integer");
    SECTION_FAILS(export_fn, &x, "{\"export\": {\"max_len\": 0}}", "export.max_len = 0");

    struct sn_eval_recipe e;
    const char *ok = "{\"eval\": {\"dataset\": {\"kind\": \"x\"}, \"experiments\": [{}], "
                     "\"k\": 2, \"bootstrap\": 0, \"seed\": 7, \"baselines\": \"random,ngram\", "
                     "\"defended\": false, \"defended_limit\": 3, \"gen_tokens_per_s\": 40, "
                     "\"allow_overlap\": true}}";
    CHECK_MSG(decode_section(ok, eval_fn, &e, &err) == SN_OK, "%s", err.msg);
    CHECK(e.present && !e.imported && e.has_k && e.k == 2 && e.has_bootstrap &&
          e.bootstrap == 0 && e.seed == 7 && !e.defended && e.defended_limit == 3 &&
          e.gen_tokens_per_s == 40 && e.allow_overlap);
    CHECK(decode_section("{}", eval_fn, &e, &err) == SN_OK && !e.present && e.defended);
    SECTION_FAILS(eval_fn, &e, "{\"eval\": {\"bootstrp\": 1}}",
                  "unknown key 'eval.bootstrp' (did you mean 'bootstrap'?)");
    SECTION_FAILS(eval_fn, &e, "{\"eval\": {\"k\": 0}}", "eval.k = 0 (expected 1 to");
    SECTION_FAILS(eval_fn, &e, "{\"eval\": {\"defended\": \"yes\"}}", "eval.defended");
    SECTION_FAILS(eval_fn, &e, "{\"eval\": {\"baselines\": \"random,foo\"}}",
                  "'foo' is not a baseline");
    SECTION_FAILS(eval_fn, &e, "{\"eval\": {\"baselines\": \"random,random\"}}", "twice");
    SECTION_FAILS(eval_fn, &e, "{\"eval\": {\"gen_tokens_per_s\": -1}}",
                  "eval.gen_tokens_per_s = -1");
    SECTION_FAILS(eval_fn, &e, "{\"eval\": {\"k\": 1}}", "needs eval.dataset");
    /* the import shape: its own keys, and sets that name import sets */
    const char *imp = "{\"import\": {\"sets\": [{\"name\": \"a\"}]}, "
                      "\"eval\": {\"sets\": [\"a\"]}}";
    CHECK_MSG(decode_section(imp, eval_fn, &e, &err) == SN_OK && e.imported, "%s", err.msg);
    SECTION_FAILS(eval_fn, &e, "{\"import\": {\"sets\": [{\"name\": \"a\"}]}, "
                  "\"eval\": {\"sets\": [\"b\"]}}", "'b' is not the name of an import set");
    SECTION_FAILS(eval_fn, &e, "{\"import\": {}, \"eval\": {\"sets\": [\"a\"], "
                  "\"defended\": true}}", "unknown key 'eval.defended'");
}

/* ---- the checkpoint choice ---------------------------------------------------------------- */

static void mk(const char *dir, const char *name, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (text) {
        sn_test_write_file(p, text);
    } else {
        CHECK(mkdir(p, 0755) == 0);
    }
}

static void adapter(const char *dir, const char *name, const char *base)
{
    char a[1024], cfg[1200];
    mk(dir, name, NULL);
    snprintf(a, sizeof a, "%s/%s", dir, name);
    snprintf(cfg, sizeof cfg, "{\"peft_type\": \"LORA\", \"base_model_name_or_path\": \"%s\"}",
             base);
    mk(a, "adapter_config.json", cfg);
    mk(a, "adapter_model.safetensors", "x");
}

static void full(const char *dir, const char *name)
{
    char a[1024];
    mk(dir, name, NULL);
    snprintf(a, sizeof a, "%s/%s", dir, name);
    mk(a, "config.json", "{}");
    mk(a, "model.safetensors", "x");
}

static void pick_fails(const char *path, const char *want)
{
    struct sn_ckpt_choice c;
    struct sn_err err = {0};
    int rc = sn_train_checkpoint_pick(path, SN_CKPT_BEST, &c, &err);
    CHECK_MSG(rc != SN_OK && strstr(err.msg, want), "%s: rc %d '%s', want '%s'", path, rc,
              err.msg, want);
}

static void test_checkpoint_pick(void)
{
    const char *root = sn_test_dir("train_recipe_ckpt");
    char run[1024], path[1100], want[1200];
    struct sn_ckpt_choice c;
    struct sn_err err = {0};

    /* a LoRA run: best checkpoint-2, last checkpoint-4, base/ kept beside them */
    snprintf(run, sizeof run, "%s/lora", root);
    mk(root, "lora", NULL);
    mk(run, "base", NULL);
    adapter(run, "checkpoint-2", "/elsewhere/base");
    adapter(run, "checkpoint-4", "/elsewhere/base");
    mk(run, "latest", "checkpoint-4\n");
    mk(run, "final_metrics.json", "{\"step\": 4, \"checkpoint\": \"checkpoint-4\", "
       "\"best_checkpoint\": \"checkpoint-2\"}");
    CHECK_MSG(sn_train_checkpoint_pick(run, SN_CKPT_BEST, &c, &err) == SN_OK, "%s", err.msg);
    snprintf(want, sizeof want, "%s/checkpoint-2", run);
    CHECK_STR(c.dir, want);
    snprintf(want, sizeof want, "%s/base", run);
    CHECK_STR(c.base, want);
    CHECK(c.kind == SN_CKPT_ADAPTER && c.best);
    CHECK(sn_train_checkpoint_pick(run, SN_CKPT_LAST, &c, &err) == SN_OK);
    snprintf(want, sizeof want, "%s/checkpoint-4", run);
    CHECK_STR(c.dir, want);
    CHECK(c.kind == SN_CKPT_ADAPTER && !c.best);
    /* a checkpoint directory given directly: as it is, its base from adapter_config.json */
    snprintf(path, sizeof path, "%s/checkpoint-4", run);
    CHECK(sn_train_checkpoint_pick(path, SN_CKPT_BEST, &c, &err) == SN_OK);
    CHECK_STR(c.dir, path);
    CHECK_STR(c.base, "/elsewhere/base");
    CHECK(c.kind == SN_CKPT_ADAPTER && !c.best);

    /* a full run without final_metrics.json: the best is in the last trainer_state.json as
    ** transformers writes it (a path), else the last checkpoint */
    snprintf(run, sizeof run, "%s/full", root);
    mk(root, "full", NULL);
    full(run, "checkpoint-3");
    full(run, "checkpoint-6");
    mk(run, "latest", "checkpoint-6\n");
    CHECK(sn_train_checkpoint_pick(run, SN_CKPT_BEST, &c, &err) == SN_OK);
    snprintf(want, sizeof want, "%s/checkpoint-6", run);
    CHECK_STR(c.dir, want);
    CHECK_STR(c.base, want);
    CHECK(c.kind == SN_CKPT_FULL && !c.best);
    snprintf(path, sizeof path, "%s/checkpoint-6/trainer_state.json", run);
    sn_test_write_file(path, "{\"best_model_checkpoint\": \"runs/x/checkpoint-3\"}");
    CHECK(sn_train_checkpoint_pick(run, SN_CKPT_BEST, &c, &err) == SN_OK);
    snprintf(want, sizeof want, "%s/checkpoint-3", run);
    CHECK_STR(c.dir, want);
    CHECK(c.kind == SN_CKPT_FULL && c.best);
    /* a recorded best that is gone does not count: the next record, then the last one */
    snprintf(path, sizeof path, "%s/final_metrics.json", run);
    sn_test_write_file(path, "{\"best_checkpoint\": \"checkpoint-9\"}");
    CHECK(sn_train_checkpoint_pick(run, SN_CKPT_BEST, &c, &err) == SN_OK);
    snprintf(want, sizeof want, "%s/checkpoint-3", run);
    CHECK_STR(c.dir, want);
    snprintf(path, sizeof path, "%s/checkpoint-6/sentinel_state.json", run);
    sn_test_write_file(path, "{\"best_checkpoint\": \"checkpoint-6\"}");
    CHECK(sn_train_checkpoint_pick(run, SN_CKPT_BEST, &c, &err) == SN_OK && c.best);
    snprintf(want, sizeof want, "%s/checkpoint-6", run);
    CHECK_STR(c.dir, want);
    snprintf(path, sizeof path, "%s/checkpoint-6/sentinel_state.json", run);
    sn_test_write_file(path, "{\"best_checkpoint\": \"checkpoint-8\"}");
    snprintf(path, sizeof path, "%s/checkpoint-6/trainer_state.json", run);
    sn_test_write_file(path, "{\"best_model_checkpoint\": null}");
    CHECK(sn_train_checkpoint_pick(run, SN_CKPT_BEST, &c, &err) == SN_OK && !c.best);
    CHECK_STR(c.dir, want);

    /* what is not a checkpoint */
    snprintf(path, sizeof path, "%s/empty", root);
    mk(root, "empty", NULL);
    pick_fails(path, "neither a PEFT adapter");
    snprintf(path, sizeof path, "%s/nolatest", root);
    mk(root, "nolatest", NULL);
    mk(path, "train_settings.json", "{}");
    pick_fails(path, "without a checkpoint");
    snprintf(path, sizeof path, "%s/escape", root);
    mk(root, "escape", NULL);
    mk(path, "latest", "../lora/checkpoint-2\n");
    pick_fails(path, "expected one checkpoint name");
    snprintf(path, sizeof path, "%s/halfadapter", root);
    mk(root, "halfadapter", NULL);
    mk(path, "adapter_config.json", "{\"base_model_name_or_path\": \"b\"}");
    pick_fails(path, "without adapter_model.safetensors");
    snprintf(path, sizeof path, "%s/nobase", root);
    adapter(root, "nobase", "");
    pick_fails(path, "no base_model_name_or_path");
    pick_fails("/nonexistent/run", "not a directory");
}

int main(void)
{
    test_aliases();
    test_refusals();
    test_full_rule();
    test_export_eval();
    test_checkpoint_pick();
    return sn_test_done();
}
