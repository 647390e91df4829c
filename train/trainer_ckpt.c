/* train/trainer_ckpt.c: what the trainer keeps on disk and reads back: the settings whose
** equality allows a resume, checkpoints (weights or adapter, AdamW moments, HF's
** trainer_state.json, sentinel_state.json with every file's SHA-256) written to a temporary
** directory and renamed, the search for the newest checkpoint that verifies and the exact
** resume from it, and metrics.jsonl. Layouts: docs/formats.md ("Training output directory");
** resume rules: docs/train.md.
**
** Exact resume: the data order and the dropout streams are functions of the seed and the step
** (trainer_batches.c, trainer_step.c), so a checkpoint stores no random state beyond the step.
** In f32 runs parameters and AdamW moments are stored exactly (full-mode weights are written as
** float32 whatever the base's torch_dtype; adapters are F32); float64 runs (numerical checks)
** store f64 moments but f32 weights, so their resume is not bit-exact. */
#include "train/trainer_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Our state moved to sentinel_state.json at /2 so that trainer_state.json can be exactly
** transformers' TrainerState (docs/formats.md, "Checkpoint"); /1 checkpoints (ours in
** trainer_state.json) still resume. */
#define STATE_SCHEMA    "sentinel.trainer_state/2"
#define STATE_SCHEMA_V1 "sentinel.trainer_state/1"
#define STATE_FILE      "sentinel_state.json"
#define HF_STATE_FILE   "trainer_state.json"
#define SETTINGS_SCHEMA "sentinel.train_settings/1"

/* ---- files ---------------------------------------------------------------------------------- */

int sn_train_path_join(char *buf, size_t n, const char *a, const char *b, struct sn_err *err)
{
    int k = snprintf(buf, n, "%s/%s", a, b);
    if (k < 0 || (size_t)k >= n)
        return sn_err_set(err, SN_E_ARG, "path too long: %s/%s", a, b);
    return SN_OK;
}

bool sn_train_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int sn_train_copy_file(const char *from, const char *to, struct sn_err *err)
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

/* ---- settings ------------------------------------------------------------------------------- */

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
    cJSON_AddStringToObject(s, "schedule", sn_train_sched_name(p->sched.kind));
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
        cJSON_AddStringToObject(s, "batching", sn_batching_name(p->batching));
    if (p->length_bucketing)
        cJSON_AddBoolToObject(s, "length_bucketing", true);
    if (t->lm)
        cJSON_AddStringToObject(s, "objective", "lm");
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

int sn_trainer_settings_init(struct sn_trainer *t, struct sn_err *err)
{
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
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    return SN_OK;
}

/* ---- checkpoints ---------------------------------------------------------------------------- */

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

/* Verifies a checkpoint directory against the SHA-256s in its sentinel_state.json (or, for a
** checkpoint written before /2, its trainer_state.json); *state (caller deletes) on success. */
static int verify_checkpoint(const char *dir, cJSON **state, struct sn_err *err)
{
    char p[PATH_MAX];
    *state = NULL;
    int rc = sn_train_path_join(p, sizeof p, dir, STATE_FILE, err);
    const char *want = STATE_SCHEMA, *state_name = STATE_FILE;
    if (!rc && !sn_train_exists(p)) {
        want = STATE_SCHEMA_V1;
        state_name = HF_STATE_FILE;
        rc = sn_train_path_join(p, sizeof p, dir, HF_STATE_FILE, err);
    }
    cJSON *s = NULL;
    if (!rc)
        rc = sn_json_load(p, &s, err);
    if (rc)
        return rc;
    const cJSON *sch = cJSON_GetObjectItemCaseSensitive(s, "schema");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(s, "files");
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(s, "global_step");
    if (!cJSON_IsString(sch) || strcmp(sch->valuestring, want) ||
        !cJSON_IsObject(files) || !cJSON_IsNumber(gs))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: not a %s document", p, want);
    const cJSON *e;
    if (!rc)
        cJSON_ArrayForEach(e, files) {
            char hex[65];
            if (!cJSON_IsString(e) || strchr(e->string, '/')) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: bad entry '%s' in files", p, e->string);
                break;
            }
            if ((rc = sn_train_path_join(p, sizeof p, dir, e->string, err)) ||
                (rc = sn_sha256_file(p, hex, err)))
                break;
            if (strcmp(hex, e->valuestring)) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: SHA-256 %s, %s records %s (corrupt or "
                                "partial checkpoint)", p, hex, state_name, e->valuestring);
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

/* The metrics.jsonl objects of steps <= step, in order, as an array (HF's log_history: the
** same keys, since metrics.jsonl uses RewardTrainer's names; docs/formats.md "metrics.jsonl").
** Lines that do not parse (a partial last line) are left out. */
static int log_history(const struct sn_trainer *t, cJSON *arr, struct sn_err *err)
{
    char p[PATH_MAX];
    int rc = sn_train_path_join(p, sizeof p, t->out, "metrics.jsonl", err);
    if (rc || !sn_train_exists(p))
        return rc;
    char *buf = NULL;
    size_t len = 0;
    if ((rc = sn_file_read(p, (size_t)1 << 31, &buf, &len, err)))
        return rc;
    for (char *line = buf; line < buf + len;) {
        char *nl = memchr(line, '\n', (size_t)(buf + len - line));
        if (!nl)
            break;
        cJSON *o = cJSON_ParseWithLength(line, (size_t)(nl - line));
        const cJSON *s = o ? cJSON_GetObjectItemCaseSensitive(o, "step") : NULL;
        if (cJSON_IsNumber(s) && s->valuedouble <= (double)t->step)
            cJSON_AddItemToArray(arr, o);
        else
            cJSON_Delete(o);
        line = nl + 1;
    }
    sn_free(buf);
    return SN_OK;
}

/* trainer_state.json: exactly the fields of transformers' TrainerState (trainer_callback.py),
** whose load_from_json passes every key to the dataclass and so refuses any other; values we
** do not have take the dataclass's defaults. docs/formats.md "Checkpoint" lists the mapping. */
static int save_hf_state(struct sn_trainer *t, const char *tmp, struct sn_err *err)
{
    char p[PATH_MAX];
    cJSON *st = cJSON_CreateObject();
    if (!st)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    cJSON_AddNumberToObject(st, "epoch", (double)t->step / (double)t->per_epoch);
    cJSON_AddNumberToObject(st, "global_step", (double)t->step);
    cJSON_AddNumberToObject(st, "max_steps", (double)t->total);
    cJSON_AddNumberToObject(st, "logging_steps", (double)t->p.log_every);
    cJSON_AddNumberToObject(st, "eval_steps", (double)(t->p.eval_every > 0 ? t->p.eval_every
                                                                              : t->total));
    cJSON_AddNumberToObject(st, "save_steps", (double)(t->p.save_every > 0 ? t->p.save_every
                                                                              : t->total));
    cJSON_AddNumberToObject(st, "train_batch_size", (double)t->p.micro_batch);
    cJSON_AddNumberToObject(st, "num_train_epochs",
                            ceil((double)t->total / (double)t->per_epoch));
    cJSON_AddNumberToObject(st, "num_input_tokens_seen", (double)t->tokens_seen);
    cJSON_AddNumberToObject(st, "total_flos", 0);
    cJSON *lh = cJSON_AddArrayToObject(st, "log_history");
    int rc = lh ? log_history(t, lh, err) : sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (t->best_name[0]) {
        cJSON_AddNumberToObject(st, "best_metric", t->best_value);
        cJSON_AddNumberToObject(st, "best_global_step",
                                (double)strtoll(t->best_name + 11, NULL, 10));
        if (!rc && !(rc = sn_train_path_join(p, sizeof p, t->out, t->best_name, err)))
            cJSON_AddStringToObject(st, "best_model_checkpoint", p);
    } else {
        cJSON_AddNullToObject(st, "best_metric");
        cJSON_AddNullToObject(st, "best_global_step");
        cJSON_AddNullToObject(st, "best_model_checkpoint");
    }
    cJSON_AddBoolToObject(st, "is_local_process_zero", t->rank == 0);
    cJSON_AddBoolToObject(st, "is_world_process_zero", t->rank == 0);
    cJSON_AddBoolToObject(st, "is_hyper_param_search", false);
    cJSON_AddNullToObject(st, "trial_name");
    cJSON_AddNullToObject(st, "trial_params");
    cJSON_AddObjectToObject(st, "stateful_callbacks");
    if (!rc && !(rc = sn_train_path_join(p, sizeof p, tmp, HF_STATE_FILE, err)))
        rc = sn_json_save(p, st, err);
    cJSON_Delete(st);
    return rc;
}

/* sentinel_state.json of the checkpoint being written in tmp: the step, the data cursor, the
** seed, the best checkpoint so far and the SHA-256 of each of its files (trainer_state.json,
** written first, included). */
static int save_state(struct sn_trainer *t, const char *tmp, struct sn_err *err)
{
    static const char *const files_full[] = {"config.json", "model.safetensors",
                                             "tokenizer.json", "optimizer.safetensors",
                                             HF_STATE_FILE, NULL};
    static const char *const files_lora[] = {"adapter_config.json",
                                             "adapter_model.safetensors",
                                             "optimizer.safetensors", HF_STATE_FILE, NULL};
    char p[PATH_MAX];
    int rc = SN_OK;
    cJSON *st = cJSON_CreateObject();
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
    /* what a run starting from this checkpoint must match (trainer.c check_base_checkpoint) */
    cJSON_AddNumberToObject(st, "shards_vocab_size", (double)t->vocab);
    cJSON_AddStringToObject(st, "tokenizer_hash", t->tok_hash);
    cJSON_AddStringToObject(st, "objective", sn_train_objective_name(t->p.objective));
    if (t->lm) {
        /* the shards the lm objective read: the train split's alone (docs/train.md
        ** "Domain-adaptive pretraining (objective lm)") */
        cJSON *in = cJSON_AddObjectToObject(st, "inputs");
        cJSON_AddStringToObject(in, "split", sn_split_name(SN_SPLIT_TRAIN));
        cJSON *sh = cJSON_AddArrayToObject(in, "shards");
        for (size_t i = 0; sh && i < t->data[SN_SPLIT_TRAIN].n_r; i++)
            cJSON_AddItemToArray(sh, cJSON_CreateString(t->data[SN_SPLIT_TRAIN].name[i]));
        cJSON_AddNumberToObject(in, "sequences", (double)t->n_lm);
    }
    if (t->best_name[0]) {
        cJSON_AddStringToObject(st, "best_checkpoint", t->best_name);
        cJSON_AddStringToObject(st, "best_metric", t->p.best_metric);
        cJSON_AddNumberToObject(st, "best_value", t->best_value);
    }
    const char *const *fl = t->full ? files_full : files_lora;
    for (int i = 0; fl[i] && !rc; i++) {
        char hex[65];
        if ((rc = sn_train_path_join(p, sizeof p, tmp, fl[i], err)))
            break;
        if (!sn_train_exists(p))
            continue; /* tokenizer.json when no tokenizer is known */
        rc = sn_sha256_file(p, hex, err);
        if (!rc)
            cJSON_AddStringToObject(files, fl[i], hex);
    }
    if (!rc && !(rc = sn_train_path_join(p, sizeof p, tmp, STATE_FILE, err)))
        rc = sn_json_save(p, st, err);
    cJSON_Delete(st);
    return rc;
}

/* Keeps the last keep_last checkpoints, the best and the one just written; removes the rest. */
static void prune_checkpoints(struct sn_trainer *t, struct sn_err *err)
{
    char p[PATH_MAX];
    int64_t steps[4096];
    size_t n = list_checkpoints(t->out, steps, 4096);
    for (size_t i = 0; t->p.keep_last > 0 && i < n; i++) {
        if ((int64_t)i < t->p.keep_last)
            continue;
        char nm[64];
        snprintf(nm, sizeof nm, "checkpoint-%" PRId64, steps[i]);
        if (!strcmp(nm, t->best_name) || steps[i] == t->step)
            continue;
        if (!sn_train_path_join(p, sizeof p, t->out, nm, err))
            remove_flat_dir(p);
    }
}

/* Writes out/checkpoint-<step> (rank 0): the files in out/.tmp-checkpoint-<step>, fsynced,
** renamed into place, then out/latest names it. */
int sn_trainer_write_checkpoint(struct sn_trainer *t, struct sn_err *err)
{
    if (t->rank != 0) { /* every rank holds the same state; rank 0 writes it */
        t->last_saved = t->step;
        return SN_OK;
    }
    char name[64], tmp[PATH_MAX], dst[PATH_MAX], p[PATH_MAX];
    snprintf(name, sizeof name, "checkpoint-%" PRId64, t->step);
    int rc = sn_train_path_join(dst, sizeof dst, t->out, name, err);
    if (!rc) {
        int k = snprintf(tmp, sizeof tmp, "%s/.tmp-%s", t->out, name);
        if (k < 0 || (size_t)k >= sizeof tmp)
            rc = sn_err_set(err, SN_E_ARG, "path too long: %s", t->out);
    }
    if (rc)
        return rc;
    remove_flat_dir(tmp);
    rc = sn_mkdirs(tmp, err);
    if (!rc) {
        if (t->full) {
            rc = sn_model_save_hf(t->m, tmp, err);
            if (!rc && t->tokenizer &&
                !(rc = sn_train_path_join(p, sizeof p, tmp, "tokenizer.json", err)))
                rc = sn_train_copy_file(t->tokenizer, p, err);
        } else {
            rc = sn_model_adapter_save(t->m, tmp, t->base_path, err);
        }
    }
    if (!rc && !(rc = sn_train_path_join(p, sizeof p, tmp, "optimizer.safetensors", err)))
        rc = save_optimizer(t, p, err);
    if (!rc)
        rc = save_hf_state(t, tmp, err);
    if (!rc)
        rc = save_state(t, tmp, err);
    if (!rc)
        rc = sn_fsync_path(tmp, err);
    if (!rc) {
        remove_flat_dir(dst); /* a re-run writing the same step again */
        rc = sn_rename_durable(tmp, dst, err);
    }
    if (!rc) {
        char line[80];
        int k = snprintf(line, sizeof line, "%s\n", name);
        rc = sn_train_path_join(p, sizeof p, t->out, "latest", err);
        if (!rc)
            rc = sn_atomic_write(p, line, (size_t)k, err);
    }
    if (rc) {
        remove_flat_dir(tmp);
        return sn_err_wrap(err, "checkpoint %s", name);
    }
    t->last_saved = t->step;
    prune_checkpoints(t, err);
    return SN_OK;
}

/* ---- resume --------------------------------------------------------------------------------- */

void sn_trainer_restart_wipe(struct sn_trainer *t)
{
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

int sn_trainer_find_resume(struct sn_trainer *t, const char *settings_path, char *resume_dir,
                           cJSON **state, struct sn_err *err)
{
    cJSON *old = NULL;
    char *diff = NULL;
    int rc = sn_json_load(settings_path, &old, err);
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
    if (!rc && !sn_train_path_join(latest, sizeof latest, t->out, "latest", err) &&
        sn_train_exists(latest) && !sn_file_read(latest, 256, &lbuf, &llen, err)) {
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
        if (verify_checkpoint(d, state, &e2)) {
            SN_WARN("train: %s; using the previous checkpoint", e2.msg);
            continue;
        }
        snprintf(resume_dir, PATH_MAX, "%s", d);
        break;
    }
    cJSON_Delete(old);
    sn_free(diff);
    return rc;
}

int sn_trainer_resume_from(struct sn_trainer *t, const char *resume_dir, const cJSON *state,
                           struct sn_err *err)
{
    char o[PATH_MAX];
    snprintf(o, sizeof o, "%s/optimizer.safetensors", resume_dir);
    int rc = load_optimizer(t, o, err);
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
        rc = sn_trainer_trim_metrics(t, t->step, err);
    if (rc)
        sn_err_wrap(err, "resuming from %s", resume_dir);
    else
        SN_INFO("train: resuming from %s (step %" PRId64 ")", resume_dir, t->step);
    return rc;
}

/* ---- metrics.jsonl -------------------------------------------------------------------------- */

static void put_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

int sn_trainer_log_line(struct sn_trainer *t, const cJSON *o, struct sn_err *err)
{
    if (t->rank != 0)
        return SN_OK;
    char p[PATH_MAX];
    int rc = sn_train_path_join(p, sizeof p, t->out, "metrics.jsonl", err);
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
    return sn_trainer_tb_log(t, o, err);
}

/* Drops metrics lines of steps after `step` (a resumed run rewrites them). */
int sn_trainer_trim_metrics(struct sn_trainer *t, int64_t step, struct sn_err *err)
{
    char p[PATH_MAX];
    int rc = sn_train_path_join(p, sizeof p, t->out, "metrics.jsonl", err);
    if (rc || !sn_train_exists(p))
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

cJSON *sn_trainer_stats_json(const struct sn_train_stats *s, const char *prefix, bool train)
{
    cJSON *o = cJSON_CreateObject();
    char k[64];
#define PUT(name, v)                                                                         \
    do {                                                                                     \
        snprintf(k, sizeof k, "%s%s", prefix, name);                                         \
        put_num(o, k, (v));                                                                  \
    } while (0)
    PUT("loss", s->loss);
    if (s->lm)
        PUT("perplexity", s->perplexity);
    else {
        PUT("loss_pref", s->loss_pref);
        PUT("loss_align", s->loss_align);
        PUT("accuracy", s->accuracy);
        PUT("align_accuracy", s->align_accuracy);
        PUT("margin", s->margin);
        PUT("mean_reward", s->mean_reward);
        PUT("min_reward", s->min_reward);
        PUT("max_reward", s->max_reward);
    }
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
