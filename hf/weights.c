/* hf/weights.c: the safetensors files of a Hugging Face model directory (hf/hf.h):
** model.safetensors, or the shards model.safetensors.index.json lists
** (docs/formats.md#model-directory). The one reader of the index: the trainer and `sentinel
** export` open weights through here, so both refuse the same malformed indexes. */
#include "hf/hf.h"

#include <stdio.h>
#include <string.h>

struct sn_hf_weights {
    struct sn_st_file **files;
    size_t              n_files;
    bool               *used;   /* per tensor, flattened over files */
    size_t             *base;   /* first flat index per file */
};

void sn_hf_weights_close(struct sn_hf_weights *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_files; i++)
        sn_st_close(w->files[i]);
    sn_free(w->files);
    sn_free(w->used);
    sn_free(w->base);
    sn_free(w);
}

static int open_files(struct sn_hf_weights *w, const char *dir, char **names, size_t n,
                      struct sn_err *err)
{
    w->files = sn_calloc(n, sizeof *w->files);
    w->base = sn_calloc(n + 1, sizeof *w->base);
    if (!w->files || !w->base)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", dir);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        int rc = sn_path_join(path, sizeof path, dir, names[i], err);
        if (!rc)
            rc = sn_st_open(path, &w->files[i], err);
        if (rc)
            return rc;
        w->n_files++;
        w->base[i] = total;
        total += sn_st_count(w->files[i]);
    }
    w->base[n] = total;
    w->used = sn_calloc(total + 1, sizeof *w->used);
    if (!w->used)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", dir);
    /* the same tensor name in two shards is ambiguous */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < sn_st_count(w->files[i]); j++)
            for (size_t k = i + 1; k < n; k++)
                if (sn_st_find(w->files[k], sn_st_get(w->files[i], j)->name))
                    return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s' appears in both %s "
                                      "and %s", dir, sn_st_get(w->files[i], j)->name,
                                      sn_st_path(w->files[i]), sn_st_path(w->files[k]));
    return SN_OK;
}

/* The shards of model.safetensors.index.json (path) in w. */
static int open_index(struct sn_hf_weights *w, const char *dir, const char *path,
                      struct sn_err *err)
{
    cJSON *j = NULL;
    int rc = sn_json_load(path, &j, err);
    if (rc)
        return rc;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
    char **names = NULL;
    size_t n = 0;
    if (!cJSON_IsObject(map)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: missing object 'weight_map'", path);
        goto done;
    }
    names = sn_calloc(SN_HF_MAX_SHARDS, sizeof *names);
    if (!names) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (const cJSON *e = map->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0] || strchr(e->valuestring, '/') ||
            !strcmp(e->valuestring, "..") || !strcmp(e->valuestring, ".")) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: weight_map['%s'] must be a file name in the "
                            "same directory", path, e->string);
            goto done;
        }
        size_t k = 0;
        while (k < n && strcmp(names[k], e->valuestring))
            k++;
        if (k == n) {
            if (n == SN_HF_MAX_SHARDS) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: more than %d shards", path,
                                SN_HF_MAX_SHARDS);
                goto done;
            }
            names[n++] = e->valuestring; /* borrowed from j */
        }
    }
    if (n == 0) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: empty weight_map", path);
        goto done;
    }
    rc = open_files(w, dir, names, n, err);
    /* every mapping must point at the shard that really holds the tensor */
    for (const cJSON *e = map->child; !rc && e; e = e->next) {
        size_t k = 0;
        while (k < n && strcmp(names[k], e->valuestring))
            k++;
        if (!sn_st_find(w->files[k], e->string))
            rc = sn_err_set(err, SN_E_FORMAT, "%s: weight_map says '%s' is in %s, but it is not",
                            path, e->string, e->valuestring);
    }
done:
    sn_free(names);
    cJSON_Delete(j);
    return rc;
}

int sn_hf_weights_open(const char *dir, struct sn_hf_weights **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_hf_weights *w = sn_calloc(1, sizeof *w);
    if (!w)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", dir);
    char path[4096];
    int rc = sn_path_join(path, sizeof path, dir, "model.safetensors", err);
    if (!rc && sn_path_exists(path)) {
        char *one = "model.safetensors";
        rc = open_files(w, dir, &one, 1, err);
    } else if (!rc) {
        rc = sn_path_join(path, sizeof path, dir, "model.safetensors.index.json", err);
        if (!rc && !sn_path_exists(path))
            rc = sn_err_set(err, SN_E_IO, "%s: no model.safetensors or "
                            "model.safetensors.index.json (a Hugging Face model directory with "
                            "safetensors weights is needed)", dir);
        if (!rc)
            rc = open_index(w, dir, path, err);
    }
    if (rc) {
        sn_hf_weights_close(w);
        return rc;
    }
    *out = w;
    return SN_OK;
}

size_t sn_hf_weights_n_files(const struct sn_hf_weights *w) { return w->n_files; }

const struct sn_st_file *sn_hf_weights_file(const struct sn_hf_weights *w, size_t i)
{
    return i < w->n_files ? w->files[i] : NULL;
}

const struct sn_st_tensor *sn_hf_weights_find(struct sn_hf_weights *w, const char *name)
{
    for (size_t i = 0; i < w->n_files; i++) {
        const struct sn_st_tensor *t = sn_st_find(w->files[i], name);
        if (t) {
            w->used[w->base[i] + (size_t)(t - sn_st_get(w->files[i], 0))] = true;
            return t;
        }
    }
    return NULL;
}

bool sn_hf_weights_used(const struct sn_hf_weights *w, size_t i, size_t j)
{
    return i < w->n_files && j < sn_st_count(w->files[i]) && w->used[w->base[i] + j];
}
