/* cli/cmd_inspect_model.c: `sentinel inspect` of what training writes (docs/train.md, layouts
** in docs/formats.md):
**   - a safetensors file: its metadata, every tensor (dtype, shape) and the parameter count;
**   - a checkpoint directory (sentinel_state.json, or trainer_state.json of a checkpoint written
**     before sentinel.trainer_state/2): step, epoch, data cursor, the best checkpoint so far,
**     the model it holds (a PEFT LoRA adapter, or a full Hugging Face model directory), and its
**     files, whose SHA-256 --verify checks against that state file;
**   - a training output directory (train_settings.json, latest): the run's settings, its
**     checkpoints with latest and best, the last logged step and the final metrics;
**   - a Hugging Face model or PEFT adapter directory written by anything else: its config and
**     tensors.
** Everything is read as untrusted input: a missing or malformed file is an error naming it. */
#include "cli/cmd_inspect_model.h"
#include "cli/cli.h"
#include "hf/hf.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static bool has(const char *dir, const char *name)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
        return false;
    return sn_path_exists(p);
}

/* dir/name parsed as JSON; NULL (err set) when missing or malformed. */
static cJSON *load_json(const char *dir, const char *name, struct sn_err *err)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) {
        sn_err_set(err, SN_E_ARG, "%s/%s: path too long", dir, name);
        return NULL;
    }
    cJSON *j = NULL;
    if (sn_json_load(p, &j, err))
        return NULL;
    return j;
}

static double num(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* ---- safetensors ------------------------------------------------------------------------- */

/* Parameter count and bytes of a safetensors file; optionally the tensor list as JSON. */
static int st_summary(const char *path, uint64_t *params, uint64_t *bytes, size_t *count,
                      cJSON *tensors, bool print, struct sn_err *err)
{
    struct sn_st_file *f = NULL;
    int rc = sn_st_open(path, &f, err);
    if (rc)
        return rc;
    *params = *bytes = 0;
    *count = sn_st_count(f);
    for (size_t i = 0; i < *count; i++) {
        const struct sn_st_tensor *t = sn_st_get(f, i);
        *params += t->n_elements;
        *bytes += t->nbytes;
        char shape[160];
        int k = snprintf(shape, sizeof shape, "[");
        for (int d = 0; d < t->n_dims && k > 0 && (size_t)k < sizeof shape; d++)
            k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%" PRId64, d ? ", " : "",
                          t->shape[d]);
        if (k > 0 && (size_t)k < sizeof shape)
            snprintf(shape + k, sizeof shape - (size_t)k, "]");
        if (print)
            printf("  %-52s %-5s %s\n", t->name, sn_st_dtype_name(t->dtype), shape);
        if (tensors) {
            cJSON *x = cJSON_CreateObject(), *sh = cJSON_CreateArray();
            cJSON_AddStringToObject(x, "name", t->name);
            cJSON_AddStringToObject(x, "dtype", sn_st_dtype_name(t->dtype));
            for (int d = 0; d < t->n_dims; d++)
                cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->shape[d]));
            cJSON_AddItemToObject(x, "shape", sh);
            cJSON_AddItemToArray(tensors, x);
        }
    }
    sn_st_close(f);
    return SN_OK;
}

static int print_json(cJSON *j)
{
    char *txt = cJSON_Print(j);
    if (txt)
        printf("%s\n", txt);
    free(txt);
    cJSON_Delete(j);
    return txt ? SN_EXIT_OK : SN_EXIT_FAIL;
}

int sn_inspect_safetensors(const char *path, bool json)
{
    struct sn_err err = {0};
    struct sn_st_file *f = NULL;
    if (sn_st_open(path, &f, &err))
        return sn_cli_fail("inspect", &err);
    sn_st_close(f);
    uint64_t params = 0, bytes = 0;
    size_t n = 0;
    cJSON *j = json ? cJSON_CreateObject() : NULL, *ts = json ? cJSON_CreateArray() : NULL;
    if (!json)
        printf("%s: safetensors\ntensors:\n", path);
    if (st_summary(path, &params, &bytes, &n, ts, !json, &err)) {
        cJSON_Delete(j);
        cJSON_Delete(ts);
        return sn_cli_fail("inspect", &err);
    }
    if (!json) {
        printf("%zu tensors, %" PRIu64 " parameters (%.1f MB of data)\n", n, params,
               (double)bytes / 1e6);
        return SN_EXIT_OK;
    }
    cJSON_AddStringToObject(j, "file", path);
    cJSON_AddStringToObject(j, "kind", "safetensors");
    cJSON_AddNumberToObject(j, "n_tensors", (double)n);
    cJSON_AddNumberToObject(j, "n_params", (double)params);
    cJSON_AddItemToObject(j, "tensors", ts);
    return print_json(j);
}

/* ---- model directories -------------------------------------------------------------------- */

/* One line on the model a directory holds: a PEFT adapter or an HF model. */
static int describe_model(const char *dir, cJSON *out, struct sn_err *err)
{
    char p[4096];
    uint64_t params = 0, bytes = 0;
    size_t n = 0;
    if (has(dir, "adapter_config.json")) {
        cJSON *ac = load_json(dir, "adapter_config.json", err);
        if (!ac)
            return err->code;
        snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
        int rc = st_summary(p, &params, &bytes, &n, NULL, false, err);
        if (!rc) {
            double r = num(ac, "r", 0), alpha = num(ac, "lora_alpha", 0);
            char targets[512] = "";
            const cJSON *t;
            cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(ac, "target_modules"))
                if (cJSON_IsString(t) && strlen(targets) + strlen(t->valuestring) + 2 <
                                             sizeof targets)
                    snprintf(targets + strlen(targets), sizeof targets - strlen(targets),
                             "%s%s", targets[0] ? "," : "", t->valuestring);
            if (!out)
                printf("model:       PEFT %s adapter (r %g, alpha %g, scale %g, dropout %g; "
                       "targets %s) over base %s\n             %" PRIu64 " parameters in %zu "
                       "tensors of adapter_model.safetensors\n", str(ac, "peft_type", "?"), r,
                       alpha, r > 0 ? alpha / r : 0, num(ac, "lora_dropout", 0), targets,
                       str(ac, "base_model_name_or_path", "?"), params, n);
            else {
                cJSON_AddStringToObject(out, "model", "peft_adapter");
                cJSON_AddItemToObject(out, "adapter_config", cJSON_Duplicate(ac, true));
                cJSON_AddNumberToObject(out, "n_params", (double)params);
            }
        }
        cJSON_Delete(ac);
        return rc;
    }
    if (has(dir, "config.json")) {
        cJSON *c = load_json(dir, "config.json", err);
        if (!c)
            return err->code;
        int rc = SN_OK;
        const char *weights = has(dir, "model.safetensors") ? "model.safetensors" : NULL;
        if (weights) {
            snprintf(p, sizeof p, "%s/%s", dir, weights);
            rc = st_summary(p, &params, &bytes, &n, NULL, false, err);
        }
        const cJSON *arch = cJSON_GetObjectItemCaseSensitive(c, "architectures");
        const char *a = cJSON_IsArray(arch) && cJSON_IsString(cJSON_GetArrayItem(arch, 0))
                            ? cJSON_GetArrayItem(arch, 0)->valuestring : "?";
        if (!rc && !out) {
            printf("model:       %s (%s), hidden %g, %g layers, %g/%g heads, intermediate %g, "
                   "vocab %g, %s\n", a, str(c, "model_type", "?"), num(c, "hidden_size", 0),
                   num(c, "num_hidden_layers", 0), num(c, "num_attention_heads", 0),
                   num(c, "num_key_value_heads", 0), num(c, "intermediate_size", 0),
                   num(c, "vocab_size", 0), str(c, "torch_dtype", "?"));
            if (weights)
                printf("             %" PRIu64 " parameters in %zu tensors of %s (%.1f MB)\n",
                       params, n, weights, (double)bytes / 1e6);
            else
                printf("             weights: %s\n", has(dir, "model.safetensors.index.json")
                                                         ? "sharded (model.safetensors.index.json)"
                                                         : "none found");
        } else if (!rc) {
            cJSON_AddStringToObject(out, "model", "hf_model");
            cJSON_AddItemToObject(out, "config", cJSON_Duplicate(c, true));
            if (weights)
                cJSON_AddNumberToObject(out, "n_params", (double)params);
        }
        cJSON_Delete(c);
        return rc;
    }
    return sn_err_set(err, SN_E_ARG, "%s: neither adapter_config.json nor config.json", dir);
}

/* Our state file in a checkpoint directory: sentinel_state.json, or for a checkpoint written
** before sentinel.trainer_state/2 trainer_state.json (docs/formats.md, "Checkpoint"). */
static const char *state_file(const char *dir)
{
    return has(dir, "sentinel_state.json") ? "sentinel_state.json" : "trainer_state.json";
}

/* A checkpoint directory: our state file plus the model files it lists. */
static int inspect_checkpoint(const char *dir, bool json, bool verify, struct sn_err *err)
{
    const char *sf = state_file(dir);
    cJSON *st = load_json(dir, sf, err);
    if (!st)
        return err->code;
    cJSON *j = json ? cJSON_CreateObject() : NULL;
    if (!json)
        printf("%s: checkpoint, step %g of %g (epoch %.3f)\n", dir, num(st, "global_step", 0),
               num(st, "total_steps", 0), num(st, "epoch", 0));
    int rc = describe_model(dir, j, err);
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(st, "data_cursor");
    if (!rc && !json) {
        printf("data:        epoch %g, position %g; %g tokens seen\n", num(cur, "epoch", 0),
               num(cur, "position", 0), num(st, "num_tokens", 0));
        if (str(st, "best_checkpoint", NULL))
            printf("best so far: %s by %s = %.6g\n", str(st, "best_checkpoint", "?"),
                   str(st, "best_metric", "?"), num(st, "best_value", 0));
    }
    /* the files and their recorded SHA-256 */
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(st, "files"), *f;
    if (!cJSON_IsObject(files))
        files = NULL; /* a damaged state file: no file list to show or check */
    size_t n_files = 0, n_bad = 0;
    cJSON *checked = json ? cJSON_CreateObject() : NULL;
    cJSON_ArrayForEach(f, files) {
        n_files++;
        if (rc || !verify)
            continue;
        if (!cJSON_IsString(f) || strlen(f->valuestring) != 64 || strchr(f->string, '/')) {
            n_bad++;
            fprintf(stderr, "sentinel inspect: ERROR: %s/%s: files.%s is not a SHA-256 of a "
                    "file in the directory\n", dir, sf, f->string);
            continue;
        }
        char p[4096], hex[65];
        snprintf(p, sizeof p, "%s/%s", dir, f->string);
        struct sn_err ferr = {0};
        bool ok = !sn_sha256_file(p, hex, &ferr) && !strcmp(hex, f->valuestring);
        if (!ok) {
            n_bad++;
            fprintf(stderr, "sentinel inspect: ERROR: %s: %s%s\n", p,
                    ferr.code ? ferr.msg : "SHA-256 differs from the one in ",
                    ferr.code ? "" : sf);
        }
        if (checked)
            cJSON_AddBoolToObject(checked, f->string, ok);
    }
    if (!rc && !json) {
        printf("files:      ");
        cJSON_ArrayForEach(f, files)
            printf(" %s", f->string);
        if (verify)
            printf("\n             %zu of %zu match the SHA-256 in %s\n",
                   n_files - n_bad, n_files, sf);
        else
            printf("\n             (SHA-256 recorded in %s; --verify checks them)\n", sf);
    }
    if (!rc && json) {
        cJSON_AddStringToObject(j, "dir", dir);
        cJSON_AddStringToObject(j, "kind", "checkpoint");
        cJSON_AddItemToObject(j, "state", cJSON_Duplicate(st, true));
        if (verify) {
            cJSON_AddItemToObject(j, "verified", checked);
            checked = NULL;
        }
    }
    cJSON_Delete(checked);
    cJSON_Delete(st);
    if (rc) {
        cJSON_Delete(j);
        return rc;
    }
    if (json && print_json(j))
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (n_bad)
        return sn_err_set(err, SN_E_FORMAT, "%s: %zu of %zu files do not match their SHA-256",
                          dir, n_bad, n_files);
    if (verify && !n_files)
        return sn_err_set(err, SN_E_FORMAT, "%s/%s: no \"files\" object of "
                          "SHA-256s to verify against", dir, sf);
    return SN_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A training output directory: settings, checkpoints, latest, best, the last step. */
static int inspect_run(const char *dir, bool json, bool verify, struct sn_err *err)
{
    cJSON *s = has(dir, "train_settings.json") ? load_json(dir, "train_settings.json", err)
                                               : cJSON_CreateObject();
    if (!s)
        return err->code;
    /* checkpoint-N directories, by step */
    int64_t steps[4096];
    size_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && n < 4096) {
        char *end = NULL;
        if (!strncmp(e->d_name, "checkpoint-", 11)) {
            long long v = strtoll(e->d_name + 11, &end, 10);
            if (end && !*end && v >= 0)
                steps[n++] = v;
        }
    }
    if (d)
        closedir(d);
    qsort(steps, n, sizeof *steps, cmp_i64);
    char latest[256] = "", p[4096];
    snprintf(p, sizeof p, "%s/latest", dir);
    FILE *lf = fopen(p, "r");
    if (lf) {
        if (!fgets(latest, sizeof latest, lf))
            latest[0] = '\0';
        fclose(lf);
        latest[strcspn(latest, "\r\n")] = '\0';
    }
    /* the last metrics line of a training step */
    cJSON *last = NULL;
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    FILE *mf = fopen(p, "r");
    if (mf) {
        char line[65536];
        while (fgets(line, sizeof line, mf)) {
            cJSON *x = cJSON_Parse(line);
            if (x && cJSON_GetObjectItemCaseSensitive(x, "loss")) {
                cJSON_Delete(last);
                last = x;
            } else {
                cJSON_Delete(x);
            }
        }
        fclose(mf);
    }
    cJSON *fin = has(dir, "final_metrics.json") ? load_json(dir, "final_metrics.json", err)
                                                : NULL;
    sn_err_clear(err); /* a missing or unreadable final_metrics.json: the run is unfinished */
    if (fin && !cJSON_IsObject(fin)) {
        cJSON_Delete(fin);
        fin = NULL;
    }
    cJSON *best = NULL;
    if (latest[0]) {
        snprintf(p, sizeof p, "%s/%s", dir, latest);
        best = load_json(p, state_file(p), err);
        sn_err_clear(err);
    }
    int rc = SN_OK;
    if (json) {
        cJSON *j = cJSON_CreateObject(), *cks = cJSON_CreateArray();
        cJSON_AddStringToObject(j, "dir", dir);
        cJSON_AddStringToObject(j, "kind", "training_run");
        cJSON_AddItemToObject(j, "settings", s);
        s = NULL;
        for (size_t i = 0; i < n; i++) {
            snprintf(p, sizeof p, "checkpoint-%" PRId64, steps[i]);
            cJSON_AddItemToArray(cks, cJSON_CreateString(p));
        }
        cJSON_AddItemToObject(j, "checkpoints", cks);
        cJSON_AddStringToObject(j, "latest", latest);
        if (best && str(best, "best_checkpoint", NULL))
            cJSON_AddStringToObject(j, "best", str(best, "best_checkpoint", ""));
        if (last) {
            cJSON_AddItemToObject(j, "last_step", last);
            last = NULL;
        }
        if (fin) {
            cJSON_AddItemToObject(j, "final_metrics", fin);
            fin = NULL;
        }
        if (print_json(j))
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    } else {
        printf("%s: training run\n", dir);
        bool lm = !strcmp(str(s, "objective", "reward"), "lm");
        printf("settings:    %sbase %s, mode %s, lr %g (%s, warmup %g), %g steps, micro-batch "
               "%g x grad_accum %g x %g process(es), %s%s%s\n",
               lm ? "objective lm (docs/train.md \"Domain-adaptive pretraining\"), " : "",
               str(s, "base", "?"), str(s, "mode", "?"), num(s, "lr", 0), str(s, "schedule", "?"),
               num(s, "warmup_steps", 0), num(s, "total_steps", 0), num(s, "micro_batch", 0),
               num(s, "grad_accum", 0), num(s, "world_size", 1), str(s, "dtype", "?"),
               str(s, "batching", NULL) ? ", batching " : "", str(s, "batching", ""));
        printf("shards:      %s (tokenizer sha256 %s)\n", str(s, "shards", "?"),
               str(s, "tokenizer_hash", "?"));
        printf("checkpoints:");
        for (size_t i = 0; i < n; i++) {
            snprintf(p, sizeof p, "checkpoint-%" PRId64, steps[i]);
            const char *b = best ? str(best, "best_checkpoint", "") : "";
            printf(" %s%s", p, !strcmp(p, latest) && !strcmp(p, b) ? " (latest, best)"
                               : !strcmp(p, latest) ? " (latest)"
                               : !strcmp(p, b) ? " (best)" : "");
        }
        printf("%s\n", n ? "" : " none");
        if (last && lm)
            printf("last step:   %g: loss %.4g, perplexity %.4g, learning_rate %.3g\n",
                   num(last, "step", 0), num(last, "loss", 0), num(last, "perplexity", 0),
                   num(last, "learning_rate", 0));
        else if (last)
            printf("last step:   %g: loss %.4g, accuracy %.4g, margin %.4g, learning_rate %.3g\n",
                   num(last, "step", 0), num(last, "loss", 0), num(last, "accuracy", 0),
                   num(last, "margin", 0), num(last, "learning_rate", 0));
        if (fin) {
            /* held-out splits: validation, test, ood (docs/train.md) */
            const cJSON *v;
            int k = 0;
            cJSON_ArrayForEach(v, fin) {
                if (!cJSON_IsObject(v))
                    continue;
                printf("%s %-10s accuracy %.4g, align_accuracy %.4g, loss %.4g, margin %.4g "
                       "(%g tuples)\n", k++ ? "            " : "final:      ", v->string,
                       num(v, "accuracy", 0), num(v, "align_accuracy", 0), num(v, "loss", 0),
                       num(v, "margin", 0), num(v, "samples", 0));
            }
            if (!k)
                printf("final:       step %g, no held-out split\n", num(fin, "step", 0));
        } else {
            printf("final:       not written yet (the run has not finished)\n");
        }
    }
    cJSON_Delete(s);
    cJSON_Delete(last);
    cJSON_Delete(fin);
    cJSON_Delete(best);
    if (!rc && verify && latest[0]) {
        snprintf(p, sizeof p, "%s/%s", dir, latest);
        if (!json)
            printf("\n");
        rc = inspect_checkpoint(p, json, true, err);
    }
    return rc;
}

int sn_inspect_model_dir(const char *dir, bool json, bool verify)
{
    struct sn_err err = {0};
    int rc;
    if (has(dir, "sentinel_state.json") || has(dir, "trainer_state.json"))
        rc = inspect_checkpoint(dir, json, verify, &err);
    else if (has(dir, "train_settings.json") || has(dir, "latest"))
        rc = inspect_run(dir, json, verify, &err);
    else {
        cJSON *j = json ? cJSON_CreateObject() : NULL;
        if (!json)
            printf("%s: %s directory\n", dir, has(dir, "adapter_config.json")
                                                  ? "PEFT adapter" : "Hugging Face model");
        rc = describe_model(dir, j, &err);
        if (json && !rc) {
            cJSON_AddStringToObject(j, "dir", dir);
            cJSON_AddStringToObject(j, "kind", "model_dir");
            rc = print_json(j) ? sn_err_set(&err, SN_E_NOMEM, "out of memory") : SN_OK;
        } else {
            cJSON_Delete(j);
        }
    }
    return rc ? sn_cli_fail("inspect", &err) : SN_EXIT_OK;
}
