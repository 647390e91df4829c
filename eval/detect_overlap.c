/* eval/detect_overlap.c: which items a shard set trained on (docs/eval.md "Leakage"), so that
** `sentinel eval` can refuse debates on items the detector or the n-gram baseline saw. */
#include "eval/detect_internal.h"

#include "shard/shard.h"

int sn_detect_item_key(const char *dataset, const char *item_id, struct sn_buf *out,
                       struct sn_err *err)
{
    /* unit separator: neither field holds control characters in practice, and a collision
    ** would need one to end with it */
    return sn_buf_printf(out, err, "%s\x1f%s", dataset ? dataset : "", item_id ? item_id : "");
}

struct train_items {
    struct sn_strmap *items;
    struct sn_buf key;
};

static int add_item(void *ctx, struct sn_shard_reader *r, size_t i, struct sn_err *err)
{
    struct train_items *c = ctx;
    struct sn_tuple_meta m;
    bool added;
    sn_buf_reset(&c->key);
    int rc = sn_shard_reader_meta(r, i, &m, err);
    if (!rc)
        rc = sn_detect_item_key(m.dataset, m.item_id, &c->key, err);
    if (!rc)
        rc = sn_strmap_put(c->items, c->key.data, c->key.len, 0, &added, err);
    return rc;
}

int sn_detect_train_items(const char *shards_dir, struct sn_strmap *items, struct sn_err *err)
{
    struct train_items c = {.items = items};
    int rc = sn_detect_each_train_tuple(shards_dir, NULL, add_item, &c, err);
    sn_buf_free(&c.key);
    return rc;
}
