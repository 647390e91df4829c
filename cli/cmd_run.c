/* cli/cmd_run.c: `sentinel run RECIPE` (docs/design.md §1, docs/run.md): simulate -> build ->
** train -> export -> eval as stages of one output directory. A recipe with an `import` section
** instead of `simulate` starts from published debate logs (`sentinel import`, one trajectory file
** per named set) and its eval stage replays the sets named in `eval.sets` (docs/run.md,
** "Imported debates"). Each stage runs as a child
** `sentinel <stage> ...` (the same executable, so train reaches sentinel-torch through the
** usual hand-over) with the recipe and the --set overrides. A stage's key is the SHA-256 of its
** recipe section(s) after the overrides and of the key of the stage before it; OUT/run.json
** (written atomically) records each stage's key and state. A stage is skipped when it is
** "done" with the same key; run again from scratch (its outputs removed) when the key changed;
** resumed (outputs kept: the stages resume themselves) when it is "running" with the same key,
** i.e. after a kill. Every stage after one that ran runs again from scratch. */
#include "cli/cli.h"
#include "cli/recipe_check.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ST_SIMULATE, ST_BUILD, ST_TRAIN, ST_EXPORT, ST_EVAL, N_STAGES };
static const char *const stage_names[N_STAGES] = {"simulate", "build", "train", "export", "eval"};

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel run RECIPE [-o OUT] [--from STAGE] [--to STAGE] [--force] [--check]\n"
"                          [--set K=V]...\n"
"\n"
"Runs the whole pipeline of a recipe in one output directory (the recipe's out_dir, or -o):\n"
"  simulate  OUT/trajectories/   debates of the `simulate` section, or\n"
"  import    OUT/trajectories/   (a recipe with an `import` section instead) `sentinel import`\n"
"                                of each of import.sets to <name>.jsonl.gz\n"
"  build     OUT/shards/         tuples (tokenizer: build.tokenizer, else the demo tokenizer\n"
"                                written to OUT/tokenizer.json; with a `tokenize` section,\n"
"                                `sentinel tokenize train` on the import sets not in\n"
"                                eval.sets first: OUT/tokenize/tokenizer.json)\n"
"  train     OUT/train/          the `train` section (docs/train.md)\n"
"  export    OUT/detector.gguf   the best checkpoint (full mode) or its adapter on the base\n"
"  eval      OUT/eval/           fresh debates of the `eval` section (its `dataset` and\n"
"                                `experiments` replace simulate's), replayed with the baselines\n"
"                                and the detector: report.txt, report.json, items.csv, and\n"
"                                the defended debates (arms/); after an import, the imported\n"
"                                sets named in eval.sets are replayed instead\n"
"Every section of the recipe (after --set) is checked by its stage's own decoder before any\n"
"stage runs: an unknown key (with the nearest valid one), a wrong type or an out-of-range\n"
"value fails at once with exit 2 and nothing written. The train section also takes the\n"
"Hugging Face TrainingArguments / TRL RewardConfig names (docs/train.md).\n"
"Each stage is skipped when OUT/run.json records it done from the same settings (SHA-256 of\n"
"its recipe section(s) and of the stage before it), re-run from scratch when they changed\n"
"(and every stage after it), and resumed after a kill. The run ends with a short summary,\n"
"also saved as OUT/summary.txt (the whole tables: OUT/eval/report.txt).\n"
"\n"
"options:\n"
"  -o, --out DIR        output directory (default: the recipe's out_dir)\n"
"      --from STAGE     run STAGE and every stage after it again, from scratch\n"
"      --to STAGE       stop after STAGE (no summary)\n"
"      --force          run every stage again, from scratch\n"
"      --check          check the recipe and print the Hugging Face names it uses with the\n"
"                       sentinel keys they set; run nothing\n"
"      --set KEY=VALUE  override a recipe key (repeatable; passed to every stage)\n"
"  -h, --help           this help\n"
"\n"
"Recipe keys of the `eval` section: dataset, experiments (as in simulate), k, baselines,\n"
"bootstrap, seed, defended, defended_limit, gen_tokens_per_s, allow_overlap; with an\n"
"import: sets, k, baselines, bootstrap, seed, allow_overlap\n"
"(docs/run.md).\n"
"Section `import`: format (collab-attack, chatlog), answers, skip_unsupported, skip_bad,\n"
"sets (list of {name, paths, group_model, adv_model}).\n"
"Section `tokenize` (with an import): vocab_size, min_frequency.\n"
"Exit status: 0 ok, 1 a stage failed (re-run to resume), 2 usage or recipe error, 130/143\n"
"a stage stopped by SIGINT/SIGTERM with its state saved (re-run to resume).\n");
}

/* ---- child processes ---------------------------------------------------------------------- */

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static int spawn(char **argv, const char *out_path)
{
    return sn_cli_spawn("run", argv, out_path, &child_pid);
}

struct argv_b {
    char *a[96];
    int n;
};

static void arg(struct argv_b *b, const char *s)
{
    if (b->n < (int)(sizeof b->a / sizeof b->a[0]) - 1)
        b->a[b->n++] = (char *)s;
    b->a[b->n] = NULL;
}

/* ---- the run ------------------------------------------------------------------------------ */

struct run {
    const char *recipe_path;
    char out[PATH_MAX];
    char self[PATH_MAX];
    const char **sets;
    size_t n_sets;
    cJSON *recipe; /* after the overrides */
    struct sn_cli_recipe dec; /* its sections, decoded and checked before any stage runs */
    cJSON *state;  /* run.json */
    char state_path[PATH_MAX + 16];
    char key[N_STAGES][65];
    char p_traj[PATH_MAX + 32], p_shards[PATH_MAX + 32], p_tok[PATH_MAX + 32],
        p_train[PATH_MAX + 32], p_pretrain[PATH_MAX + 32], p_gguf[PATH_MAX + 32],
        p_tokenize[PATH_MAX + 32], p_tok_trained[PATH_MAX + 48], p_tok_inputs[PATH_MAX + 48],
        p_eval[PATH_MAX + 32],
        p_eval_traj[PATH_MAX + 48], p_eval_recipe[PATH_MAX + 48], p_report[PATH_MAX + 48],
        p_report_json[PATH_MAX + 48], p_items[PATH_MAX + 48], p_arms[PATH_MAX + 48];
    const char *tokenizer; /* build.tokenizer, p_tok_trained (section tokenize) or p_tok */
    bool detector_in_eval; /* eval accepted --detector */
    bool import;           /* stage 0 is `import` (the recipe has an import section) */
};

/* Stage 0 is `simulate`, or `import` for a recipe that starts from published debate logs. */
static const char *stage_name(const struct run *r, int s)
{
    return s == ST_SIMULATE && r->import ? "import" : stage_names[s];
}

static const cJSON *section(const struct run *r, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(r->recipe, name);
}

static void stage_key(struct run *r, int s)
{
    struct sn_sha256 h;
    sn_sha256_init(&h);
    sn_sha256_update(&h, stage_name(r, s), strlen(stage_name(r, s)) + 1);
    if (s > 0)
        sn_sha256_update(&h, r->key[s - 1], 64);
    const char *names[3] = {stage_name(r, s), NULL, NULL};
    if (s == ST_EVAL) /* the eval debates use simulate's endpoints and defaults, or the sets */
        names[1] = r->import ? "import" : "simulate";
    if (s == ST_BUILD && r->dec.tokenize.present) /* absent: the keys of older runs stay valid */
        names[1] = "tokenize";
    for (int i = 0; names[i]; i++) {
        const cJSON *sec = section(r, names[i]);
        char *txt = sec ? cJSON_PrintUnformatted(sec) : NULL;
        sn_sha256_update(&h, names[i], strlen(names[i]) + 1);
        if (txt)
            sn_sha256_update(&h, txt, strlen(txt));
        sn_sha256_update(&h, "", 1);
        free(txt);
    }
    if (s == ST_BUILD)
        sn_sha256_update(&h, r->tokenizer, strlen(r->tokenizer) + 1);
    uint8_t d[32];
    sn_sha256_final(&h, d);
    for (int i = 0; i < 32; i++)
        snprintf(r->key[s] + 2 * i, 3, "%02x", d[i]);
}

static cJSON *stage_state(struct run *r, int s)
{
    cJSON *st = cJSON_GetObjectItemCaseSensitive(r->state, "stages");
    return st ? cJSON_GetObjectItemCaseSensitive(st, stage_name(r, s)) : NULL;
}

static int save_state(struct run *r, int s, const char *state)
{
    cJSON *st = cJSON_GetObjectItemCaseSensitive(r->state, "stages");
    if (!st)
        st = cJSON_AddObjectToObject(r->state, "stages");
    cJSON *o = cJSON_CreateObject();
    if (!st || !o) {
        cJSON_Delete(o);
        return SN_EXIT_FAIL;
    }
    cJSON_AddStringToObject(o, "key", r->key[s]);
    cJSON_AddStringToObject(o, "state", state);
    if (cJSON_GetObjectItemCaseSensitive(st, stage_name(r, s)))
        cJSON_ReplaceItemInObjectCaseSensitive(st, stage_name(r, s), o);
    else
        cJSON_AddItemToObject(st, stage_name(r, s), o);
    struct sn_err err = {0};
    if (sn_json_save(r->state_path, r->state, &err))
        return sn_cli_fail("run", &err);
    return SN_EXIT_OK;
}

static void common_args(struct run *r, struct argv_b *b, const char *stage)
{
    arg(b, r->self);
    arg(b, stage);
    arg(b, "--recipe");
    arg(b, r->recipe_path);
    for (size_t i = 0; i < r->n_sets; i++) {
        arg(b, "--set");
        arg(b, r->sets[i]);
    }
}

static const char *str_key(const cJSON *sec, const char *key)
{
    const cJSON *v = sec ? cJSON_GetObjectItemCaseSensitive(sec, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The eval stage's simulate recipe (cli/recipe_check.h), saved as OUT/eval/simulate.json. */
static int write_eval_recipe(struct run *r)
{
    cJSON *root = NULL;
    struct sn_err err = {0};
    int rc = sn_cli_eval_sim_recipe(r->recipe, &root, &err);
    if (!rc)
        rc = sn_json_save(r->p_eval_recipe, root, &err);
    cJSON_Delete(root);
    return rc ? sn_cli_fail("run", &err) : SN_EXIT_OK;
}

/* ---- imported debates (docs/run.md, "Imported debates") ------------------------------------ */

/* The import stage: one `sentinel import FORMAT ... -o OUT/trajectories/<name>.jsonl.gz PATHS`
** per set (the importer writes atomically, so a re-run after a kill simply imports again). */
static int run_import(struct run *r)
{
    const struct sn_import_recipe *im = &r->dec.import; /* checked before any stage ran */
    const cJSON *e;
    struct sn_err err = {0};
    if (sn_mkdirs(r->p_traj, &err))
        return sn_cli_fail("run", &err);
    cJSON_ArrayForEach(e, im->sets) {
        struct argv_b b = {.n = 0};
        char out[PATH_MAX + 128];
        snprintf(out, sizeof out, "%s/%s.jsonl.gz", r->p_traj, str_key(e, "name"));
        arg(&b, r->self);
        arg(&b, "import");
        arg(&b, im->format);
        if (im->answers) {
            arg(&b, "--answers");
            arg(&b, im->answers);
        }
        if (im->skip_unsupported)
            arg(&b, "--skip-unsupported");
        if (im->skip_bad)
            arg(&b, "--skip-bad");
        if (str_key(e, "group_model")) {
            arg(&b, "--group-model");
            arg(&b, str_key(e, "group_model"));
        }
        if (str_key(e, "adv_model")) {
            arg(&b, "--adv-model");
            arg(&b, str_key(e, "adv_model"));
        }
        arg(&b, "--progress");
        arg(&b, "plain");
        arg(&b, "-o");
        arg(&b, out);
        const cJSON *p;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(e, "paths"))
            arg(&b, p->valuestring);
        printf("sentinel run: import set %s -> %s\n", str_key(e, "name"), out);
        int rc = spawn(b.a, NULL);
        if (rc)
            return rc;
    }
    return SN_EXIT_OK;
}

/* The lm stage of train.pretrain_steps into OUT/pretrain (the train section's settings with
** objective lm, full mode, pretrain_steps steps at pretrain_lr); set_base receives
** "train.base=<its last checkpoint>" for the reward stage. */
static int run_pretrain(struct run *r, char *set_base, size_t cap)
{
    struct argv_b b = {.n = 0};
    char steps[64], lr[64];
    common_args(r, &b, "train");
    snprintf(steps, sizeof steps, "train.max_steps=%lld", (long long)r->dec.train.pretrain_steps);
    snprintf(lr, sizeof lr, "train.lr=%.17g", r->dec.train.pretrain_lr);
    const char *sets[] = {"train.objective=lm", "train.mode=full", "train.pretrain_steps=0",
                          steps, r->dec.train.pretrain_lr > 0 ? lr : NULL};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0] && sets[i]; i++) {
        arg(&b, "--set");
        arg(&b, sets[i]);
    }
    arg(&b, "-i");
    arg(&b, r->p_shards);
    arg(&b, "-o");
    arg(&b, r->p_pretrain);
    arg(&b, "--tokenizer");
    arg(&b, r->tokenizer);
    arg(&b, "--progress");
    arg(&b, "plain");
    printf("sentinel run: train.pretrain_steps %lld: objective lm -> %s\n",
           (long long)r->dec.train.pretrain_steps, r->p_pretrain);
    int rc = spawn(b.a, NULL);
    if (rc)
        return rc;
    struct sn_ckpt_choice ck;
    struct sn_err err = {0};
    if (sn_train_checkpoint_pick(r->p_pretrain, SN_CKPT_LAST, &ck, &err))
        return sn_cli_fail("run", &err);
    int k = snprintf(set_base, cap, "train.base=%s", ck.dir);
    return k > 0 && (size_t)k < cap ? SN_EXIT_OK : SN_EXIT_FAIL;
}

/* Section `tokenize` (docs/run.md "Recipe section `tokenize`"), run by the build stage before
** the build: `sentinel tokenize train` on the trajectories of the import sets that eval.sets does
** not name, so no held-out debate reaches the tokenizer. OUT/tokenize/inputs.json records the
** settings and each input's SHA-256; the training is skipped when the tokenizer exists with the
** same record (an import re-run gives byte-identical trajectories). */
static int run_tokenize(struct run *r)
{
    const struct sn_cli_tokenize *t = &r->dec.tokenize;
    static char paths[64][PATH_MAX + 128];
    struct sn_err err = {0};
    struct argv_b b = {.n = 0};
    char vocab[32], minf[32];
    cJSON *rec = cJSON_CreateObject(), *ins = cJSON_CreateArray(), *old = NULL;
    int rc = SN_EXIT_OK, n = 0;
    if (!rec || !ins) {
        cJSON_Delete(rec);
        cJSON_Delete(ins);
        return SN_EXIT_FAIL;
    }
    cJSON_AddStringToObject(rec, "schema", "sentinel.run-tokenize/1");
    cJSON_AddNumberToObject(rec, "vocab_size", (double)t->vocab_size);
    cJSON_AddNumberToObject(rec, "min_frequency", (double)t->min_frequency);
    cJSON_AddItemToObject(rec, "inputs", ins);
    snprintf(vocab, sizeof vocab, "%lld", (long long)t->vocab_size);
    snprintf(minf, sizeof minf, "%lld", (long long)t->min_frequency);
    arg(&b, r->self);
    arg(&b, "tokenize");
    arg(&b, "train");
    arg(&b, "-o");
    arg(&b, r->p_tok_trained);
    arg(&b, "--vocab-size");
    arg(&b, vocab);
    arg(&b, "--min-frequency");
    arg(&b, minf);
    arg(&b, "--progress");
    arg(&b, "plain");
    const cJSON *e;
    cJSON_ArrayForEach(e, r->dec.import.sets) {
        const char *name = str_key(e, "name");
        char hex[65];
        if (!sn_cli_tokenize_reads(&r->dec, name))
            continue;
        if (n == 64) {
            fprintf(stderr, "sentinel run: tokenize: at most 64 training sets\n");
            rc = SN_EXIT_USAGE;
            goto out;
        }
        snprintf(paths[n], sizeof paths[n], "%s/%s.jsonl.gz", r->p_traj, name);
        if (sn_sha256_file(paths[n], hex, &err)) {
            rc = sn_cli_fail("run", &err);
            goto out;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(ins, o);
        cJSON_AddStringToObject(o, "set", name);
        cJSON_AddStringToObject(o, "path", paths[n]);
        cJSON_AddStringToObject(o, "sha256", hex);
        arg(&b, paths[n++]);
    }
    if (sn_path_exists(r->p_tok_trained) && sn_path_exists(r->p_tok_inputs) &&
        !sn_json_load(r->p_tok_inputs, &old, &err) && cJSON_Compare(old, rec, true)) {
        printf("sentinel run: tokenize up to date (skipped): %s\n", r->p_tok_trained);
        goto out;
    }
    err = (struct sn_err){0};
    if (sn_mkdirs(r->p_tokenize, &err)) {
        rc = sn_cli_fail("run", &err);
        goto out;
    }
    unlink(r->p_tok_inputs); /* a kill during the training leaves no record that matches */
    printf("sentinel run: tokenize: %d training set(s) -> %s\n", n, r->p_tok_trained);
    if ((rc = spawn(b.a, NULL)))
        goto out;
    if (sn_json_save(r->p_tok_inputs, rec, &err))
        rc = sn_cli_fail("run", &err);
out:
    cJSON_Delete(old);
    cJSON_Delete(rec);
    return rc;
}

static int run_stage(struct run *r, int s)
{
    struct argv_b b = {.n = 0};
    char num[6][32], ckpt[PATH_MAX + 64];
    int rc;
    const cJSON *bu = section(r, "build");
    switch (s) {
    case ST_SIMULATE:
        if (r->import)
            return run_import(r);
        common_args(r, &b, "simulate");
        arg(&b, "-o");
        arg(&b, r->p_traj);
        arg(&b, "--progress");
        arg(&b, "plain");
        return spawn(b.a, NULL);
    case ST_BUILD:
        if (r->dec.tokenize.present && (rc = run_tokenize(r)))
            return rc;
        if (r->tokenizer == r->p_tok && !sn_path_exists(r->p_tok)) {
            struct argv_b t = {.n = 0};
            arg(&t, r->self);
            arg(&t, "tokenize");
            arg(&t, "--write-demo");
            arg(&t, r->p_tok);
            if ((rc = spawn(t.a, NULL)))
                return rc;
        }
        common_args(r, &b, "build");
        arg(&b, "-i");
        arg(&b, r->p_traj);
        arg(&b, "-o");
        arg(&b, r->p_shards);
        arg(&b, "--tokenizer");
        arg(&b, r->tokenizer);
        arg(&b, "--progress");
        arg(&b, "plain");
        return spawn(b.a, NULL);
    case ST_TRAIN:
        /* train.pretrain_steps: an lm stage first, its last checkpoint the reward run's base
        ** (docs/train.md "Domain-adaptive pretraining (objective lm)") */
        if (r->dec.train.pretrain_steps > 0 && (rc = run_pretrain(r, ckpt, sizeof ckpt)))
            return rc;
        common_args(r, &b, "train");
        if (r->dec.train.pretrain_steps > 0) {
            arg(&b, "--set");
            arg(&b, ckpt);
            if (sn_train_is_full(&r->dec.train)) { /* the base is a directory now */
                arg(&b, "--set");
                arg(&b, "train.mode=full");
            }
        }
        arg(&b, "-i");
        arg(&b, r->p_shards);
        arg(&b, "-o");
        arg(&b, r->p_train);
        arg(&b, "--tokenizer");
        arg(&b, r->tokenizer);
        arg(&b, "--progress");
        arg(&b, "plain");
        return spawn(b.a, NULL);
    case ST_EXPORT: {
        /* the run's best checkpoint, adapter or full model as its files say (train/recipe.h) */
        struct sn_ckpt_choice ck;
        struct sn_err cerr = {0};
        if (sn_train_checkpoint_pick(r->p_train, SN_CKPT_BEST, &ck, &cerr))
            return sn_cli_fail("run", &cerr);
        snprintf(ckpt, sizeof ckpt, "%s", ck.dir);
        static char base[4096];
        snprintf(base, sizeof base, "%s", ck.base);
        arg(&b, r->self);
        arg(&b, "export");
        arg(&b, "--base");
        arg(&b, base);
        if (ck.kind == SN_CKPT_ADAPTER) {
            arg(&b, "--adapter");
            arg(&b, ckpt);
        }
        /* export.max_len: the detector's sequence limit when it must exceed the training
        ** length (held-out debates whose question alone is longer than build.max_len, which
        ** the build skips but eval must score); else build.max_len */
        bool build_len = bu && (cJSON_HasObjectItem(bu, "max_len") ||
                                cJSON_HasObjectItem(bu, "max_length"));
        if (r->dec.export_.max_len || build_len) {
            snprintf(num[0], sizeof num[0], "%zu", r->dec.export_.max_len
                                                        ? (size_t)r->dec.export_.max_len
                                                        : r->dec.build.max_len);
            arg(&b, "--max-len");
            arg(&b, num[0]);
        }
        arg(&b, "-o");
        arg(&b, r->p_gguf);
        printf("sentinel run: export %s -> %s\n", ckpt, r->p_gguf);
        return spawn(b.a, NULL);
    }
    case ST_EVAL: {
        const struct sn_eval_recipe *ep = &r->dec.eval; /* checked before any stage ran */
        struct argv_b e = {.n = 0};
        static char set_paths[16][PATH_MAX + 128];
        if (r->import) {
            /* held-out imported sets; eval's leakage check (--train-shards) refuses any debate
            ** whose item the build put in the train split */
            const cJSON *es = ep->sets, *x;
            int n = 0;
            arg(&e, r->self);
            arg(&e, "eval");
            cJSON_ArrayForEach(x, es) {
                if (n == 16) {
                    fprintf(stderr, "sentinel run: eval.sets: at most 16 sets\n");
                    return SN_EXIT_USAGE;
                }
                snprintf(set_paths[n], sizeof set_paths[n], "%s/%s.jsonl.gz", r->p_traj,
                         x->valuestring);
                arg(&e, "-i");
                arg(&e, set_paths[n++]);
            }
        } else {
            if ((rc = write_eval_recipe(r)))
                return rc;
            arg(&b, r->self);
            arg(&b, "simulate");
            arg(&b, "--recipe");
            arg(&b, r->p_eval_recipe);
            arg(&b, "-o");
            arg(&b, r->p_eval_traj);
            arg(&b, "--progress");
            arg(&b, "plain");
            if ((rc = spawn(b.a, NULL)))
                return rc;
            arg(&e, r->self);
            arg(&e, "eval");
            arg(&e, "-i");
            arg(&e, r->p_eval_traj);
        }
        arg(&e, "--train-shards");
        arg(&e, r->p_shards);
        arg(&e, "--json");
        arg(&e, r->p_report_json);
        arg(&e, "--items");
        arg(&e, r->p_items);
        if (ep->baselines) {
            arg(&e, "--baselines");
            arg(&e, ep->baselines);
        }
        if (ep->has_k) {
            snprintf(num[1], sizeof num[1], "%" PRId64, ep->k);
            arg(&e, "--k");
            arg(&e, num[1]);
        }
        if (ep->has_bootstrap) {
            snprintf(num[2], sizeof num[2], "%" PRId64, ep->bootstrap);
            arg(&e, "--bootstrap");
            arg(&e, num[2]);
        }
        if (ep->has_seed) {
            snprintf(num[3], sizeof num[3], "%" PRIu64, ep->seed);
            arg(&e, "--seed");
            arg(&e, num[3]);
        }
        /* eval refuses debates on questions seen in training (docs/eval.md "Leakage"); a model
        ** hold-out debates the training questions by design, and the `synthetic` generator's
        ** eval sets repeat training questions: with allow_overlap they are evaluated and split
        ** into the groups question=seen and question=unseen */
        if (ep->allow_overlap)
            arg(&e, "--allow-overlap");
        int base_n = e.n;
        arg(&e, "--detector");
        arg(&e, r->p_gguf);
        /* Defended debates (docs/eval.md): the eval experiments run clean, attacked and with
        ** the `sentinel` defense, for accuracy recovery and the scoring overhead. */
        if (!r->import && ep->defended) { /* imported logs cannot be re-debated */
            arg(&e, "--defended");
            arg(&e, r->p_arms);
            arg(&e, "--recipe");
            arg(&e, r->p_eval_recipe);
            if (ep->defended_limit) {
                snprintf(num[4], sizeof num[4], "%" PRId64, ep->defended_limit);
                arg(&e, "--limit");
                arg(&e, num[4]);
            }
            if (ep->gen_tokens_per_s > 0) {
                snprintf(num[5], sizeof num[5], "%.17g", ep->gen_tokens_per_s);
                arg(&e, "--gen-tokens-per-s");
                arg(&e, num[5]);
            }
        }
        rc = spawn(e.a, r->p_report);
        r->detector_in_eval = rc == SN_EXIT_OK;
        if (rc == SN_EXIT_UNAVAILABLE) {
            printf("sentinel run: this build's `sentinel eval` does not take --detector yet "
                   "(exit 3): the eval report holds the baselines only\n");
            e.n = base_n;
            e.a[e.n] = NULL;
            rc = spawn(e.a, r->p_report);
        }
        return rc;
    }
    }
    return SN_EXIT_FAIL;
}

static void stage_outputs(struct run *r, int s, const char **a, const char **b)
{
    *a = *b = NULL;
    switch (s) {
    case ST_SIMULATE: *a = r->p_traj; break;
    case ST_BUILD: *a = r->p_shards; break;
    case ST_TRAIN: *a = r->p_train; *b = r->p_pretrain; break;
    case ST_EXPORT: *a = r->p_gguf; break;
    case ST_EVAL: *a = r->p_eval; break;
    }
}

/* The summary block that ends eval's report.txt (docs/eval.md "Report"), appended to b without
** its "== summary" header line: the headline figures of the group all (balanced accuracy, AUROC,
** tie-neutral task accuracy; last round and pooled) of the detector, the oracle and the best
** baseline, eval's sentences on where the detector beats the best baseline and where it does
** not, and the defended debates' recovery. Copied, not re-derived, so the run's summary and the
** report cannot disagree. A report without the block (an older eval) gets one line saying so. */
static int eval_summary(struct sn_buf *b, const char *path, struct sn_err *err)
{
    char *txt = NULL;
    size_t len = 0;
    struct sn_err rerr = {0};
    if (sn_file_read(path, 0, &txt, &len, &rerr))
        return sn_buf_printf(b, err, "  (no eval report: %s)\n", rerr.msg);
    int rc = SN_OK;
    bool in_summary = false, any = false;
    for (char *line = txt, *next; !rc && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!strncmp(line, "== ", 3)) {
            in_summary = !strncmp(line, "== summary", 10);
            continue;
        }
        if (in_summary && *line) {
            rc = sn_buf_printf(b, err, "%s\n", line);
            any = true;
        }
    }
    sn_free(txt);
    if (!rc && !any)
        rc = sn_buf_printf(b, err, "  (%s has no summary block: its tables are the figures)\n",
                           path);
    return rc;
}

/* What the run prints at the end (docs/run.md "Summary"), at most about 25 lines: where the
** outputs are, the trainer's held-out pairwise accuracy, and eval's summary block. The same
** text is saved as OUT/summary.txt (atomically) when a stage ran or the file is missing, so a
** run that did nothing touches no file; scripts/readme_example.py reads it for README.md. */
static int summary(struct run *r, int n_ran)
{
    char path[PATH_MAX + 64], ckpt[PATH_MAX + 64] = "", sum_path[PATH_MAX + 32];
    struct sn_err err = {0};
    struct sn_buf b = {0};
    cJSON *fm = NULL;
    int rc = SN_OK;
#define OUT(...) do { if (!rc) rc = sn_buf_printf(&b, &err, __VA_ARGS__); } while (0)
    snprintf(path, sizeof path, "%s/final_metrics.json", r->p_train);
    snprintf(sum_path, sizeof sum_path, "%s/summary.txt", r->out);
    if (sn_json_load(path, &fm, &err))
        fm = NULL;
    struct sn_ckpt_choice ck; /* the checkpoint the export stage took (train/recipe.h) */
    bool have_ck = !sn_train_checkpoint_pick(r->p_train, SN_CKPT_BEST, &ck, &err);
    if (have_ck)
        snprintf(ckpt, sizeof ckpt, "%s", ck.dir);
    err = (struct sn_err){0};
    OUT("== sentinel run: summary (this text: %s)\n", sum_path);
    OUT("  detector      %s\n", r->p_gguf);
    OUT("  checkpoint    %s%s\n", ckpt[0] ? ckpt : r->p_train,
        !have_ck ? "" : ck.kind == SN_CKPT_FULL ? " (full-mode model directory)"
                                                : " (PEFT adapter)");
    OUT("  metrics       %s/metrics.jsonl, %s\n", r->p_train, path);
    OUT("  eval report   %s (every table: per round, per group, defended debates), %s\n",
        r->p_report, r->p_report_json);
    if (sn_path_exists(r->p_items))
        OUT("  eval items    %s (one row per scored message and ranker)\n", r->p_items);
    const cJSON *stp = fm ? cJSON_GetObjectItemCaseSensitive(fm, "step") : NULL;
    double step = cJSON_IsNumber(stp) ? stp->valuedouble : -1;
    const char *split_by = str_key(section(r, "build"), "split_by");
    if (fm && (!split_by || !strcmp(split_by, "item")))
        OUT("  (held-out splits are by question: no validation or test item was trained on; "
            "docs/formats.md#shard)\n");
    else if (fm)
        OUT("  (held-out splits hold out whole values of build.split_by = %s: none of them "
            "was trained on; docs/formats.md#shard)\n", split_by);
    for (int i = 0; fm && i < 2; i++) {
        const char *split = i ? "test" : "validation";
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(fm, split);
        const cJSON *acc = o ? cJSON_GetObjectItemCaseSensitive(o, "accuracy") : NULL;
        const cJSON *al = o ? cJSON_GetObjectItemCaseSensitive(o, "align_accuracy") : NULL;
        if (cJSON_IsNumber(acc))
            OUT("  held-out pairwise accuracy, %s split (final weights, step %.0f): chosen over "
                "rejected %.3f", split, step, acc->valuedouble);
        if (cJSON_IsNumber(acc) && cJSON_IsNumber(al))
            OUT(", chosen over reference %.3f", al->valuedouble);
        if (cJSON_IsNumber(acc))
            OUT("\n");
    }
    cJSON_Delete(fm);
    OUT("\n== eval: %s, group all (eval's summary; the whole table: %s)\n",
        r->import ? "the imported sets of eval.sets, held out of training"
        : r->dec.eval.allow_overlap
            ? "fresh debates on items never trained on (eval.allow_overlap: their questions "
              "may repeat training's; report.txt's question=seen and question=unseen groups)"
            : "fresh debates on items never trained on", r->p_report);
    if (!rc)
        rc = eval_summary(&b, r->p_report, &err);
    const cJSON *sev = cJSON_GetObjectItemCaseSensitive(r->state, "eval_detector");
    if (!cJSON_IsTrue(sev))
        OUT("\nsentinel run: the detector is NOT in the eval figures above: this build's "
            "`sentinel eval` does not take --detector yet (exit 3). Its held-out pairwise "
            "accuracy is the trainer's figure above.\n");
#undef OUT
    if (!rc) {
        printf("\n%s", b.data);
        if (n_ran || !sn_path_exists(sum_path))
            rc = sn_atomic_write(sum_path, b.data, b.len, &err);
    }
    sn_buf_free(&b);
    return rc ? sn_cli_fail("run", &err) : SN_OK;
}

int sn_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},  {"from", required_argument, NULL, 'F'},
        {"force", no_argument, NULL, 'f'},      {"set", required_argument, NULL, 's'},
        {"to", required_argument, NULL, 'T'},   {"check", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0}};
    struct run r = {0};
    const char *out = NULL;
    int from = N_STAGES, to = N_STAGES - 1;
    bool check_only = false;
    r.sets = calloc((size_t)argc + 1, sizeof *r.sets);
    if (!r.sets)
        return SN_EXIT_FAIL;
    optind = 1;
    opterr = 0;
    int rc = SN_EXIT_OK;
    for (;;) {
        int c = getopt_long(argc, argv, "ho:", opts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'o': out = optarg; break;
        case 'f': from = 0; break;
        case 'C': check_only = true; break;
        case 's': r.sets[r.n_sets++] = optarg; break;
        case 'T':
        case 'F': {
            int i = 0;
            while (i < N_STAGES && strcmp(optarg, stage_names[i]))
                i++;
            if (!strcmp(optarg, "import")) /* stage 0 of a recipe with an import section */
                i = ST_SIMULATE;
            if (i == N_STAGES) {
                free(r.sets);
                return sn_cli_usage_error("run", "%s: unknown stage '%s' (simulate or "
                                          "import, build, train, export, eval)", c == 'T' ? "--to" : "--from",
                                          optarg);
            }
            if (c == 'T')
                to = i;
            else if (i < from)
                from = i;
            break;
        }
        case 'h': usage(stdout); free(r.sets); return SN_EXIT_OK;
        default:
            free(r.sets);
            return sn_cli_bad_option("run", argv[optind - 1], opts);
        }
    }
    if (optind + 1 != argc) {
        free(r.sets);
        return sn_cli_usage_error("run", optind < argc ? "one RECIPE expected" : "RECIPE missing");
    }
    r.recipe_path = argv[optind];
    struct sn_err err = {0};
    if (sn_recipe_load(r.recipe_path, r.sets, r.n_sets, &r.recipe, &err)) {
        free(r.sets);
        return sn_cli_recipe_fail("run", r.recipe_path, &err);
    }
    /* a --set of a setting wins over the file's key, whichever of its names either uses */
    sn_train_recipe_sets_win(r.recipe, r.sets, r.n_sets);
    sn_build_recipe_sets_win(r.recipe, r.sets, r.n_sets);
    /* every section, each by its own stage's decoder, before any stage runs or any file is
    ** written: a typo fails now, not after an hour of simulation and training */
    r.import = section(&r, "import") != NULL;
    if (sn_cli_recipe_check(r.recipe_path, r.recipe, to == ST_EVAL, &r.dec, &err)) {
        rc = sn_cli_recipe_fail("run", r.recipe_path, &err);
        goto done;
    }
    if (to == ST_EVAL && !r.dec.eval.present) {
        rc = sn_cli_usage_error("run", "%s: no `eval` section: the eval stage needs one "
                                "(docs/run.md \"Recipe section `eval`\"), or stop earlier with "
                                "--to export", r.recipe_path);
        goto done;
    }
    if (check_only) {
        char stages[128];
        int n_st = 0;
        for (int st = 0; st <= to; st++)
            n_st += snprintf(stages + n_st, sizeof stages - (size_t)n_st, "%s%s", st ? ", " : "",
                             stage_name(&r, st));
        rc = sn_cli_recipe_describe("run", r.recipe_path, r.recipe, &r.dec, stages);
        goto done;
    }
    if (!out)
        out = str_key(r.recipe, "out_dir");
    if (!out) {
        rc = sn_cli_usage_error("run", "no output directory: give -o OUT or the recipe's out_dir");
        goto done;
    }
    ssize_t n = readlink("/proc/self/exe", r.self, sizeof r.self - 1);
    if (n <= 0) {
        fprintf(stderr, "sentinel run: cannot find this executable: %s\n", strerror(errno));
        rc = SN_EXIT_FAIL;
        goto done;
    }
    r.self[n] = '\0';
    {
        /* an output directory too long for the system is named so before any stage runs (the
        ** paths below add at most 32 bytes to it; each stage checks its own outputs) */
        struct sn_err perr = {0};
        if (sn_path_fmt(r.out, sizeof r.out, &perr, "%s", out) ||
            sn_path_fmt(r.state_path, sizeof r.state_path, &perr, "%s/run.json", r.out)) {
            rc = sn_cli_fail("run", &perr);
            goto done;
        }
    }
    snprintf(r.p_traj, sizeof r.p_traj, "%s/trajectories", r.out);
    snprintf(r.p_shards, sizeof r.p_shards, "%s/shards", r.out);
    snprintf(r.p_tok, sizeof r.p_tok, "%s/tokenizer.json", r.out);
    snprintf(r.p_train, sizeof r.p_train, "%s/train", r.out);
    snprintf(r.p_pretrain, sizeof r.p_pretrain, "%s/pretrain", r.out);
    snprintf(r.p_tokenize, sizeof r.p_tokenize, "%s/tokenize", r.out);
    snprintf(r.p_tok_trained, sizeof r.p_tok_trained, "%s/tokenizer.json", r.p_tokenize);
    snprintf(r.p_tok_inputs, sizeof r.p_tok_inputs, "%s/inputs.json", r.p_tokenize);
    snprintf(r.p_gguf, sizeof r.p_gguf, "%s/detector.gguf", r.out);
    snprintf(r.p_eval, sizeof r.p_eval, "%s/eval", r.out);
    snprintf(r.p_arms, sizeof r.p_arms, "%s/eval/arms", r.out);
    snprintf(r.p_eval_traj, sizeof r.p_eval_traj, "%s/eval/trajectories", r.out);
    snprintf(r.p_eval_recipe, sizeof r.p_eval_recipe, "%s/eval/simulate.json", r.out);
    snprintf(r.p_report, sizeof r.p_report, "%s/eval/report.txt", r.out);
    snprintf(r.p_report_json, sizeof r.p_report_json, "%s/eval/report.json", r.out);
    snprintf(r.p_items, sizeof r.p_items, "%s/eval/items.csv", r.out);
    r.tokenizer = r.dec.build_r.tokenizer;
    if (r.dec.tokenize.present) /* build.tokenizer is refused with it (cli/recipe_check.c) */
        r.tokenizer = r.p_tok_trained;
    if (!r.tokenizer)
        r.tokenizer = r.p_tok;
    if (sn_mkdirs(r.out, &err)) {
        rc = sn_cli_fail("run", &err);
        goto done;
    }
    if (sn_path_exists(r.state_path)) {
        if (sn_json_load(r.state_path, &r.state, &err)) {
            rc = sn_cli_fail("run", &err);
            goto done;
        }
    } else {
        r.state = cJSON_CreateObject();
        cJSON_AddStringToObject(r.state, "schema", "sentinel.run/1");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(r.state, "recipe");
    cJSON_AddStringToObject(r.state, "recipe", r.recipe_path);

    signal(SIGINT, forward_signal);
    signal(SIGTERM, forward_signal);
    bool upstream_ran = false;
    int n_ran = 0;
    for (int s = 0; s <= to && !rc; s++) {
        stage_key(&r, s);
        const cJSON *st = stage_state(&r, s);
        const char *key = str_key(st, "key"), *state = str_key(st, "state");
        bool same = key && !strcmp(key, r.key[s]);
        bool forced = s >= from || upstream_ran;
        if (same && state && !strcmp(state, "done") && !forced) {
            printf("sentinel run: %-8s up to date (skipped)\n", stage_name(&r, s));
            continue;
        }
        const char *o1, *o2;
        stage_outputs(&r, s, &o1, &o2);
        const char *why;
        if (same && state && !strcmp(state, "running") && !forced) {
            why = "resuming after an interrupted run";
        } else {
            why = !st ? "first run" : forced ? (s >= from ? "asked to re-run" : "an earlier "
                  "stage re-ran") : "settings or inputs changed";
            if (sn_cli_remove_tree("run", o1) || (o2 && sn_cli_remove_tree("run", o2))) {
                rc = SN_EXIT_FAIL;
                break;
            }
            if (s == ST_BUILD && r.tokenizer == r.p_tok)
                unlink(r.p_tok);
            if (s == ST_EVAL)
                cJSON_DeleteItemFromObjectCaseSensitive(r.state, "eval_detector");
        }
        printf("\n== sentinel run: %s (%s)\n", stage_name(&r, s), why);
        if (!n_ran) { /* the old summary describes outputs this run is about to replace */
            char sum_path[PATH_MAX + 32];
            snprintf(sum_path, sizeof sum_path, "%s/summary.txt", r.out);
            unlink(sum_path);
        }
        if ((rc = save_state(&r, s, "running")))
            break;
        if (s == ST_EVAL && sn_mkdirs(r.p_eval, &err)) {
            rc = sn_cli_fail("run", &err);
            break;
        }
        int st_rc = run_stage(&r, s);
        if (st_rc == SN_EXIT_SIGNAL_BASE + SIGINT || st_rc == SN_EXIT_SIGNAL_BASE + SIGTERM) {
            /* the stage stopped on our signal after saving its state (a SIGKILL is a failure) */
            fprintf(stderr, "sentinel run: stage %s interrupted (exit %d); re-run `sentinel run "
                            "%s` to resume\n", stage_name(&r, s), st_rc, r.recipe_path);
            rc = st_rc;
            break;
        }
        if (st_rc) { /* a usage or recipe error needs a fix first, not a re-run */
            if (st_rc == SN_EXIT_USAGE)
                fprintf(stderr, "sentinel run: stage %s refused its settings (exit 2); fix the "
                                "recipe or --set named above\n", stage_name(&r, s));
            else
                fprintf(stderr, "sentinel run: stage %s failed (exit %d); re-run `sentinel run "
                                "%s` to resume\n", stage_name(&r, s), st_rc, r.recipe_path);
            rc = st_rc == SN_EXIT_USAGE ? SN_EXIT_USAGE : SN_EXIT_FAIL;
            break;
        }
        if (s == ST_EVAL) {
            cJSON_DeleteItemFromObjectCaseSensitive(r.state, "eval_detector");
            cJSON_AddBoolToObject(r.state, "eval_detector", r.detector_in_eval);
        }
        if ((rc = save_state(&r, s, "done")))
            break;
        upstream_ran = true;
        n_ran++;
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (!rc && to < N_STAGES - 1) {
        printf("sentinel run: stopped after %s (--to)\n", stage_name(&r, to));
    } else if (!rc) {
        if (!n_ran)
            printf("sentinel run: nothing to do: every stage is up to date in %s\n", r.out);
        rc = summary(&r, n_ran);
        char html[PATH_MAX + 32];
        snprintf(html, sizeof html, "%s/report.html", r.out);
        /* the figures (docs/run.md, "Report"), redrawn when a stage ran: a missing Python or
        ** matplotlib is said (stderr), never a failed run; stdout still ends with the summary */
        if (!rc && (n_ran || !sn_path_exists(html))) {
            char *args[] = {r.self, "report", r.out, NULL};
            int st = spawn(args, "/dev/null");
            if (st)
                fprintf(stderr, "sentinel run: no figures (sentinel report exited %d); the run's "
                                "results are complete\n", st);
        }
    }
done:
    sn_cli_recipe_free(&r.dec);
    cJSON_Delete(r.recipe);
    cJSON_Delete(r.state);
    free(r.sets);
    return rc;
}
