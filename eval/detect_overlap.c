/* eval/detect_overlap.c: which items a shard set trained on (docs/eval.md "Leakage"), so that
** `sentinel eval` can refuse debates on items the detector or the n-gram baseline saw. */
#include "eval/detect.h"

#include "data/shard.h"

int sn_detect_item_key(const char *dataset, const char *item_id, struct sn_buf *out,
                       struct sn_err *err)
{
    /* unit separator: neither field holds control characters in practice, and a collision
    ** would need one to end with it */
    return sn_buf_printf(out, err, "%s\x1f%s", dataset ? dataset : "", item_id ? item_id : "");
}

int sn_detect_train_items(const char *shards_dir, struct sn_strmap *items, struct sn_err *err)
{
    struct sn_manifest *man = NULL;
    char **paths = NULL;
    size_t n_paths = 0;
    struct sn_buf key = {0};
    int rc = sn_manifest_load(shards_dir, &man, err);
    if (!rc)
        rc = sn_manifest_paths(man, SN_SPLIT_TRAIN, &paths, &n_paths, err);
    for (size_t s = 0; !rc && s < n_paths; s++) {
        struct sn_shard_reader *r = NULL;
        if ((rc = sn_shard_reader_open(paths[s], NULL, &r, err)))
            break;
        size_t n = sn_shard_reader_count(r);
        for (size_t i = 0; !rc && i < n; i++) {
            struct sn_tuple_meta m;
            bool added;
            sn_buf_reset(&key);
            rc = sn_shard_reader_meta(r, i, &m, err);
            if (!rc)
                rc = sn_detect_item_key(m.dataset, m.item_id, &key, err);
            if (!rc)
                rc = sn_strmap_put(items, key.data, key.len, 0, &added, err);
        }
        sn_shard_reader_close(r);
    }
    sn_buf_free(&key);
    sn_paths_free(paths, n_paths);
    sn_manifest_free(man);
    return rc;
}
