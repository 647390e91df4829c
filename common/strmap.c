/* common/strmap.c: the open-addressing hash map from byte strings to size_t (common.h). */
#include "common/common.h"

#include <string.h>

static size_t strmap_home(const void *key, size_t len, size_t cap)
{
    return (size_t)sn_hash64(key, len) & (cap - 1);
}

static struct sn_strmap_slot *strmap_lookup(const struct sn_strmap *m, const void *key,
                                            size_t len)
{
    if (!m->cap)
        return NULL;
    size_t i = strmap_home(key, len, m->cap);
    while (m->slots[i].key) {
        if (m->slots[i].len == len && !memcmp(m->slots[i].key, key, len))
            return &m->slots[i];
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

size_t *sn_strmap_find(const struct sn_strmap *m, const void *key, size_t len)
{
    struct sn_strmap_slot *s = strmap_lookup(m, key, len);
    return s ? &s->val : NULL;
}

bool sn_strmap_has(const struct sn_strmap *m, const void *key, size_t len)
{
    return strmap_lookup(m, key, len) != NULL;
}

static int strmap_grow(struct sn_strmap *m, struct sn_err *err)
{
    size_t nc = m->cap ? m->cap * 2 : 64;
    struct sn_strmap_slot *ns = sn_calloc(nc, sizeof *ns);
    if (!ns)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        size_t j = strmap_home(m->slots[i].key, m->slots[i].len, nc);
        while (ns[j].key)
            j = (j + 1) & (nc - 1);
        ns[j] = m->slots[i];
    }
    sn_free(m->slots);
    m->slots = ns;
    m->cap = nc;
    return SN_OK;
}

int sn_strmap_put(struct sn_strmap *m, const void *key, size_t len, size_t val, bool *added,
                  struct sn_err *err)
{
    if (added)
        *added = false;
    if (strmap_lookup(m, key, len))
        return SN_OK;
    if ((m->n + 1) * 2 > m->cap) {
        int rc = strmap_grow(m, err);
        if (rc)
            return rc;
    }
    size_t i = strmap_home(key, len, m->cap);
    while (m->slots[i].key)
        i = (i + 1) & (m->cap - 1);
    char *k = sn_malloc(len + 1);
    if (!k)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (len)
        memcpy(k, key, len);
    k[len] = '\0';
    m->slots[i] = (struct sn_strmap_slot){k, len, val};
    m->n++;
    if (added)
        *added = true;
    return SN_OK;
}

void sn_strmap_free(struct sn_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        sn_free(m->slots[i].key);
    sn_free(m->slots);
    memset(m, 0, sizeof *m);
}
