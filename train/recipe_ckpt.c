/* train/recipe_ckpt.c: which checkpoint of a training output directory the stages after
** training take, and what it holds, decided from the files on disk (train/recipe.h;
** docs/formats.md "Training output directory", "Checkpoint"). `sentinel run`, export, score
** and eval all ask here, so that "adapter or full model" and "best or last" have one answer. */
#include "train/recipe.h"

#include <string.h>

static bool has(const char *dir, const char *name)
{
    char p[4096];
    struct sn_err e = {0};
    return !sn_path_fmt(p, sizeof p, &e, "%s/%s", dir, name) && sn_path_exists(p);
}

/* The checkpoint name a file records: its last path component (final_metrics.json holds a
** name, a Hugging Face trainer_state.json a path), refused when it could leave the directory. */
static bool ckpt_name(const char *v, char *out, size_t n)
{
    const char *slash = strrchr(v, '/');
    const char *name = slash ? slash + 1 : v;
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) >= n)
        return false;
    memcpy(out, name, strlen(name) + 1);
    return true;
}

/* The best checkpoint recorded, into name ("" when none is): dir/final_metrics.json's, else
** that of the checkpoint `latest` names, in sentinel_state.json (best_checkpoint) or in
** transformers' trainer_state.json (best_model_checkpoint, a path). A name whose directory is
** gone does not count. */
static void best_name(const char *dir, const char *latest, char *name, size_t n)
{
    static const char *const keys[] = {"best_checkpoint", "best_model_checkpoint"};
    static const char *const files[] = {"final_metrics.json", "sentinel_state.json",
                                        "trainer_state.json"};
    char p[4096];
    struct sn_err e = {0};
    name[0] = '\0';
    for (int f = 0; f < 3 && !name[0]; f++) {
        cJSON *j = NULL;
        int rc = f ? (latest[0] ? sn_path_fmt(p, sizeof p, &e, "%s/%s/%s", dir, latest, files[f])
                                : SN_E_ARG)
                   : sn_path_fmt(p, sizeof p, &e, "%s/%s", dir, files[f]);
        if (rc || !sn_path_exists(p) || sn_json_load(p, &j, &e))
            continue;
        for (int i = 0; i < 2 && !name[0]; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
            char cand[256];
            size_t cap = n < sizeof cand ? n : sizeof cand;
            if (cJSON_IsString(v) && ckpt_name(v->valuestring, cand, cap) &&
                !sn_path_fmt(p, sizeof p, &e, "%s/%s", dir, cand) && sn_path_is_dir(p))
                memcpy(name, cand, strlen(cand) + 1);
        }
        cJSON_Delete(j);
    }
}

/* The one line of dir/latest ("checkpoint-N"), or "" when there is none. */
static int latest_name(const char *dir, char *name, size_t n, struct sn_err *err)
{
    char p[4096], *txt = NULL;
    size_t len = 0;
    name[0] = '\0';
    int rc = sn_path_fmt(p, sizeof p, err, "%s/latest", dir);
    if (rc || !sn_path_exists(p))
        return rc;
    if ((rc = sn_file_read(p, 4096, &txt, &len, err)))
        return rc;
    while (len && (txt[len - 1] == '\n' || txt[len - 1] == '\r' || txt[len - 1] == ' '))
        txt[--len] = '\0';
    if (!ckpt_name(txt, name, n) || strchr(txt, '/'))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: expected one checkpoint name such as "
                        "checkpoint-100", p);
    sn_free(txt);
    return rc;
}

int sn_train_checkpoint_pick(const char *path, enum sn_ckpt_which which,
                             struct sn_ckpt_choice *out, struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    if (!sn_path_is_dir(path))
        return sn_err_set(err, SN_E_ARG, "%s: not a directory (expected a training output "
                          "directory or a checkpoint)", path);
    bool run = has(path, "latest") || has(path, "final_metrics.json") ||
               has(path, "train_settings.json");
    int rc;
    if (run) {
        char last[256], best[256] = "";
        if ((rc = latest_name(path, last, sizeof last, err)))
            return rc;
        if (which == SN_CKPT_BEST)
            best_name(path, last, best, sizeof best);
        const char *name = best[0] ? best : last;
        if (!name[0])
            return sn_err_set(err, SN_E_ARG, "%s: a training directory without a checkpoint "
                              "(no `latest` yet: run or resume `sentinel train`)", path);
        out->best = best[0] != '\0';
        if ((rc = sn_path_fmt(out->dir, sizeof out->dir, err, "%s/%s", path, name)))
            return rc;
        if (!sn_path_is_dir(out->dir))
            return sn_err_set(err, SN_E_ARG, "%s: the checkpoint %s is missing", path, name);
    } else if ((rc = sn_path_fmt(out->dir, sizeof out->dir, err, "%s", path))) {
        return rc;
    }
    if (has(out->dir, "adapter_config.json")) {
        if (!has(out->dir, "adapter_model.safetensors"))
            return sn_err_set(err, SN_E_ARG, "%s: adapter_config.json without "
                              "adapter_model.safetensors", out->dir);
        out->kind = SN_CKPT_ADAPTER;
        /* the base a training directory keeps (the seeded init, or a link to the HF base)
        ** travels with it; else the base adapter_config.json names */
        if (run && has(path, "base"))
            return sn_path_fmt(out->base, sizeof out->base, err, "%s/base", path);
        char p[4096];
        cJSON *ac = NULL;
        if ((rc = sn_path_fmt(p, sizeof p, err, "%s/adapter_config.json", out->dir)) ||
            (rc = sn_json_load(p, &ac, err)))
            return rc;
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(ac, "base_model_name_or_path");
        if (!cJSON_IsString(b) || !b->valuestring[0])
            rc = sn_err_set(err, SN_E_FORMAT, "%s: no base_model_name_or_path (the base model "
                            "directory the adapter applies to)", p);
        else
            rc = sn_path_fmt(out->base, sizeof out->base, err, "%s", b->valuestring);
        cJSON_Delete(ac);
        return rc;
    }
    if (has(out->dir, "config.json") &&
        (has(out->dir, "model.safetensors") || has(out->dir, "model.safetensors.index.json"))) {
        out->kind = SN_CKPT_FULL;
        return sn_path_fmt(out->base, sizeof out->base, err, "%s", out->dir);
    }
    return sn_err_set(err, SN_E_ARG, "%s: neither a PEFT adapter (adapter_config.json, "
                      "adapter_model.safetensors) nor a model directory (config.json, "
                      "model.safetensors)", out->dir);
}
