/* shard/shard_iter.c: batches over a list of shards, shuffled per epoch, read ahead by a
** prefetch thread (shard/shard.h). */
#include "shard/shard_internal.h"

#include <pthread.h>
#include <string.h>

struct slot {
    struct sn_shard_batch b;
    int32_t  *ids[SN_FIELD_COUNT];
    size_t    n_ids[SN_FIELD_COUNT], cap_ids[SN_FIELD_COUNT];
    int64_t  *off[SN_FIELD_COUNT];
    size_t    cap_off[SN_FIELD_COUNT];
    uint64_t *index;
    size_t    cap_index;
};

struct sn_shard_iter {
    char   **paths;
    size_t   n_paths;
    uint64_t *base;                /* (n_paths) global index of each shard's first tuple */
    uint64_t total;
    struct sn_shard_iter_params p;
    char    *tok_hash, *template_id;
    struct slot *slots;
    size_t   n_slots, prod, cons, filled;
    bool     holding, done, stop, started;
    int      thread_rc;
    struct sn_err thread_err;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
};

struct sn_shard_iter_params sn_shard_iter_default_params(void)
{
    struct sn_shard_iter_params p;
    memset(&p, 0, sizeof p);
    p.batch_size = 8;
    p.prefetch = 4;
    return p;
}

static void slot_reset(struct slot *s)
{
    s->b.n = 0;
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++)
        s->n_ids[f] = 0;
}

static int slot_append(struct slot *s, const struct sn_shard_reader *r, size_t i, uint64_t gi,
                       struct sn_err *err)
{
    size_t n = s->b.n;
    int rc = sn_shard_grow((void **)&s->index, &s->cap_index, n + 1, sizeof(uint64_t), err);
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT && !rc; f++) {
        size_t len = (size_t)(r->off[f][i + 1] - r->off[f][i]);
        rc = sn_shard_grow((void **)&s->off[f], &s->cap_off[f], n + 2, sizeof(int64_t), err);
        if (!rc)
            rc = sn_shard_grow((void **)&s->ids[f], &s->cap_ids[f], s->n_ids[f] + len + 1,
                      sizeof(int32_t), err);
        if (rc)
            break;
        memcpy(s->ids[f] + s->n_ids[f], r->ids[f] + r->off[f][i], len * sizeof(int32_t));
        s->off[f][0] = 0;
        s->n_ids[f] += len;
        s->off[f][n + 1] = (int64_t)s->n_ids[f];
    }
    if (rc)
        return rc;
    s->index[n] = gi;
    s->b.n = n + 1;
    return SN_OK;
}

/* Waits for a free slot; returns NULL when the consumer is closing. */
static struct slot *acquire(struct sn_shard_iter *it)
{
    pthread_mutex_lock(&it->mu);
    while (it->filled == it->n_slots && !it->stop)
        pthread_cond_wait(&it->cv, &it->mu);
    struct slot *s = it->stop ? NULL : &it->slots[it->prod];
    pthread_mutex_unlock(&it->mu);
    if (s)
        slot_reset(s);
    return s;
}

static void publish(struct sn_shard_iter *it, struct slot *s)
{
    for (int f = 0; f < SN_FIELD_COUNT; f++) {
        s->b.ids[f] = f == SN_FIELD_CONTEXT ? NULL : s->ids[f];
        s->b.offsets[f] = f == SN_FIELD_CONTEXT ? NULL : s->off[f];
    }
    s->b.index = s->index;
    pthread_mutex_lock(&it->mu);
    it->prod = (it->prod + 1) % it->n_slots;
    it->filled++;
    pthread_cond_broadcast(&it->cv);
    pthread_mutex_unlock(&it->mu);
}

static void *producer(void *arg)
{
    struct sn_shard_iter *it = arg;
    struct sn_err err = {0};
    struct sn_rng rng;
    size_t *order = sn_malloc((it->n_paths ? it->n_paths : 1) * sizeof *order);
    size_t *perm = NULL, cap_perm = 0;
    int rc = order ? SN_OK : sn_err_set(&err, SN_E_NOMEM, "shard iterator: out of memory");
    struct slot *s = NULL;
    sn_h5_quiet();
    sn_rng_seed(&rng, it->p.seed);
    for (size_t k = 0; k < it->n_paths && !rc; k++)
        order[k] = k;
    if (!rc && it->p.shuffle)
        sn_rng_shuffle(&rng, order, it->n_paths, sizeof *order);
    if (!rc)
        s = acquire(it);
    for (size_t k = 0; k < it->n_paths && !rc && s; k++) {
        struct sn_shard_reader *r = NULL;
        struct sn_shard_reader_params rp = it->p.expect;
        rp.tokenizer_hash = it->tok_hash;
        rp.template_id = it->template_id;
        rc = sn_shard_reader_open(it->paths[order[k]], &rp, &r, &err);
        if (!rc && r->count != (size_t)(it->base[order[k] + 1] - it->base[order[k]]))
            rc = sn_err_set(&err, SN_E_FORMAT, "%s: changed while being read", r->path);
        if (!rc)
            rc = sn_shard_grow((void **)&perm, &cap_perm, r->count + 1, sizeof *perm, &err);
        if (!rc) {
            for (size_t i = 0; i < r->count; i++)
                perm[i] = i;
            if (it->p.shuffle)
                sn_rng_shuffle(&rng, perm, r->count, sizeof *perm);
        }
        for (size_t j = 0; !rc && s && j < r->count; j++) {
            rc = slot_append(s, r, perm[j], it->base[order[k]] + perm[j], &err);
            if (!rc && s->b.n == it->p.batch_size) {
                publish(it, s);
                s = acquire(it);
            }
        }
        sn_shard_reader_close(r);
    }
    if (!rc && s && s->b.n > 0 && !it->p.drop_last)
        publish(it, s);
    sn_free(order);
    sn_free(perm);
    pthread_mutex_lock(&it->mu);
    it->done = true;
    it->thread_rc = rc;
    it->thread_err = err;
    pthread_cond_broadcast(&it->cv);
    pthread_mutex_unlock(&it->mu);
    return NULL;
}

void sn_shard_iter_close(struct sn_shard_iter *it)
{
    if (!it)
        return;
    if (it->started) {
        pthread_mutex_lock(&it->mu);
        it->stop = true;
        pthread_cond_broadcast(&it->cv);
        pthread_mutex_unlock(&it->mu);
        pthread_join(it->th, NULL);
        pthread_mutex_destroy(&it->mu);
        pthread_cond_destroy(&it->cv);
    }
    for (size_t k = 0; k < it->n_slots; k++) {
        struct slot *s = &it->slots[k];
        for (int f = 0; f < SN_FIELD_COUNT; f++) {
            sn_free(s->ids[f]);
            sn_free(s->off[f]);
        }
        sn_free(s->index);
    }
    sn_free(it->slots);
    if (it->paths)
        sn_paths_free(it->paths, it->n_paths);
    sn_free(it->base);
    sn_free(it->tok_hash);
    sn_free(it->template_id);
    sn_free(it);
}

int sn_shard_iter_open(const char *const *paths, size_t n_paths,
                       const struct sn_shard_iter_params *params, struct sn_shard_iter **out,
                       struct sn_err *err)
{
    *out = NULL;
    struct sn_shard_iter *it = sn_calloc(1, sizeof *it);
    if (!it)
        return sn_err_set(err, SN_E_NOMEM, "shard iterator: out of memory");
    it->p = params ? *params : sn_shard_iter_default_params();
    if (!it->p.batch_size)
        it->p.batch_size = 8;
    if (!it->p.prefetch)
        it->p.prefetch = 4;
    it->n_slots = it->p.prefetch + 1; /* + the one the consumer holds */
    it->slots = sn_calloc(it->n_slots, sizeof *it->slots);
    it->paths = sn_calloc(n_paths ? n_paths : 1, sizeof *it->paths);
    it->base = sn_calloc(n_paths + 1, sizeof *it->base);
    int rc = (it->slots && it->paths && it->base) ? SN_OK
             : sn_err_set(err, SN_E_NOMEM, "shard iterator: out of memory");
    for (size_t k = 0; k < n_paths && !rc; k++) {
        it->paths[k] = sn_strdup(paths[k]);
        it->n_paths = k + 1;
        if (!it->paths[k])
            rc = sn_err_set(err, SN_E_NOMEM, "shard iterator: out of memory");
    }
    /* Identity of every shard up front: a foreign one is refused here, by name. All shards
    ** must agree with each other (the first fixes tokenizer and template when params don't). */
    for (size_t k = 0; k < n_paths && !rc; k++) {
        struct sn_shard_reader *r = NULL;
        struct sn_shard_reader_params rp = it->p.expect;
        if (it->tok_hash)
            rp.tokenizer_hash = it->tok_hash;
        if (it->template_id)
            rp.template_id = it->template_id;
        rc = sn_shard_reader_open_ex(paths[k], &rp, false, &r, err);
        if (rc)
            break;
        it->base[k + 1] = it->base[k] + r->count;
        if (!it->tok_hash) {
            it->tok_hash = sn_strdup(r->tok_hash);
            it->template_id = sn_strdup(r->template_id);
            if (!it->tok_hash || !it->template_id)
                rc = sn_err_set(err, SN_E_NOMEM, "shard iterator: out of memory");
        }
        sn_shard_reader_close(r);
    }
    if (!rc) {
        it->total = it->base[n_paths];
        pthread_mutex_init(&it->mu, NULL);
        pthread_cond_init(&it->cv, NULL);
        if (pthread_create(&it->th, NULL, producer, it) != 0) {
            pthread_mutex_destroy(&it->mu);
            pthread_cond_destroy(&it->cv);
            rc = sn_err_set(err, SN_E_IO, "shard iterator: cannot start the prefetch thread");
        } else {
            it->started = true;
        }
    }
    if (rc) {
        sn_shard_iter_close(it);
        return rc;
    }
    *out = it;
    return SN_OK;
}

uint64_t sn_shard_iter_total(const struct sn_shard_iter *it)
{
    return it->total;
}

int sn_shard_iter_next(struct sn_shard_iter *it, const struct sn_shard_batch **batch,
                       struct sn_err *err)
{
    *batch = NULL;
    pthread_mutex_lock(&it->mu);
    if (it->holding) {
        it->cons = (it->cons + 1) % it->n_slots;
        it->filled--;
        it->holding = false;
        pthread_cond_broadcast(&it->cv);
    }
    while (it->filled == 0 && !it->done)
        pthread_cond_wait(&it->cv, &it->mu);
    int rc = SN_OK;
    if (it->filled > 0) {
        *batch = &it->slots[it->cons].b;
        it->holding = true;
    } else if (it->thread_rc) {
        rc = sn_err_set(err, it->thread_rc, "%s", it->thread_err.msg);
    }
    pthread_mutex_unlock(&it->mu);
    return rc;
}
