/* train/trainer_batches.c: the data the trainer reads and in which order: the shards of each
** split (struct sn_tset), the permutation of each epoch and the tuples of a step (data order:
** docs/formats.md, "Training output directory"; length bucketing: docs/train.md), and the rows
** of one forward, padded, packed or with a shared prefix (docs/train.md, "Packed and
** shared-prefix batches"). */
#include "train/trainer_internal.h"

#include <inttypes.h>
#include <string.h>

/* ---- the shards of a split ------------------------------------------------------------------ */

void sn_tset_free(struct sn_tset *s)
{
    for (size_t i = 0; i < s->n_r; i++) {
        sn_shard_reader_close(s->r[i]);
        sn_free(s->name[i]);
    }
    sn_free(s->r);
    sn_free(s->name);
    sn_free(s->shard);
    sn_free(s->local);
    memset(s, 0, sizeof *s);
}


static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Opens the shards of one split; *hash (in/out) is the tokenizer hash every shard must carry
** (empty = take the first shard's). */
int sn_tset_open(struct sn_tset *s, const struct sn_manifest *man, enum sn_split split,
                 char hash[65], int64_t *vocab, struct sn_err *err)
{
    char **paths = NULL;
    size_t n = 0;
    memset(s, 0, sizeof *s);
    int rc = sn_manifest_paths(man, split, &paths, &n, err);
    if (rc)
        return rc;
    s->r = sn_calloc(n + 1, sizeof *s->r);
    s->name = sn_calloc(n + 1, sizeof *s->name);
    if (!s->r || !s->name) {
        sn_paths_free(paths, n);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    size_t total = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        struct sn_shard_reader_params rp = sn_shard_reader_default_params();
        rp.tokenizer_hash = hash[0] ? hash : NULL;
        rc = sn_shard_reader_open(paths[i], &rp, &s->r[i], err);
        if (rc) {
            sn_err_wrap(err, "%s", paths[i]);
            break;
        }
        s->n_r = i + 1;
        s->name[i] = sn_strdup(base_name(paths[i]));
        const struct sn_shard_info *info = sn_shard_reader_info(s->r[i]);
        if (!hash[0] && info->tokenizer_hash)
            snprintf(hash, 65, "%s", info->tokenizer_hash);
        if (info->vocab_size > *vocab)
            *vocab = info->vocab_size;
        total += sn_shard_reader_count(s->r[i]);
    }
    sn_paths_free(paths, n);
    if (rc)
        return rc;
    if (total > UINT32_MAX)
        return sn_err_set(err, SN_E_ARG, "%s split: %zu tuples (at most 2^32)",
                          sn_split_name(split), total);
    s->shard = sn_calloc(total + 1, sizeof *s->shard);
    s->local = sn_calloc(total + 1, sizeof *s->local);
    if (!s->shard || !s->local)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < s->n_r; i++)
        for (size_t j = 0; j < sn_shard_reader_count(s->r[i]); j++) {
            s->shard[s->n] = (uint32_t)i;
            s->local[s->n] = (uint32_t)j;
            s->n++;
        }
    return SN_OK;
}

/* ---- the rows of a forward ------------------------------------------------------------------ */

/* Grows the packed arrays to T tokens. */
static int rows_reserve_packed(struct sn_rows *R, size_t T, struct sn_err *err)
{
    if (T <= R->pcap)
        return SN_OK;
    int32_t *s = sn_realloc(R->spans, 3 * T * sizeof *s);
    if (s)
        R->spans = s;
    int32_t *p = s ? sn_realloc(R->pos, T * sizeof *p) : NULL;
    if (p)
        R->pos = p;
    int32_t *i = p ? sn_realloc(R->pids, T * sizeof *i) : NULL;
    if (i)
        R->pids = i;
    if (!s || !p || !i)
        return sn_err_set(err, SN_E_NOMEM, "batch: out of memory");
    R->pcap = T;
    return SN_OK;
}

/* Appends len tokens as one segment at R->T: positions p0.., attending causally to themselves
** and to the prefix [lo, hi) (none when lo == hi). Returns the segment's last token. */
static int64_t rows_put(struct sn_rows *R, const int32_t *ids, size_t len, int32_t p0, int64_t lo,
                        int64_t hi)
{
    int64_t o = R->T;
    for (size_t j = 0; j < len; j++) {
        int64_t t = o + (int64_t)j;
        R->pids[t] = ids[j];
        R->pos[t] = p0 + (int32_t)j;
        R->spans[3 * t] = (int32_t)o;
        R->spans[3 * t + 1] = (int32_t)lo;
        R->spans[3 * t + 2] = (int32_t)hi;
    }
    R->T = o + (int64_t)len;
    return R->T - 1;
}

/* Shared-prefix scoring: the longest common token prefix of a tuple's scored sequences (the
** template may keep different amounts of history per field, so this, not the context text,
** is what is shared), kept one token short of the shortest so every sequence keeps a token
** of its own to read its reward at. */
static size_t shared_prefix(const struct sn_tuple_view *v, bool with_ref)
{
    int nf = with_ref ? 3 : 2;
    size_t n = v->n_ids[SN_FIELD_CHOSEN];
    for (int f = 1; f < nf; f++)
        if (v->n_ids[SN_FIELD_CHOSEN + f] < n)
            n = v->n_ids[SN_FIELD_CHOSEN + f];
    size_t p = 0;
    while (p + 1 < n) {
        int32_t x = v->ids[SN_FIELD_CHOSEN][p];
        int f;
        for (f = 1; f < nf && v->ids[SN_FIELD_CHOSEN + f][p] == x; f++)
            ;
        if (f < nf)
            break;
        p++;
    }
    return p;
}


/* Packed rows (B = 1) of the b tuples v with k references: every sequence a segment of its
** own (packed), or per tuple the common prefix once and the three rests after it
** (shared_prefix). */
static int rows_build_packed(struct sn_rows *R, const struct sn_tuple_view *v, int64_t b,
                             int64_t k, enum sn_batching mode, struct sn_err *err)
{
    size_t total = 0;
    for (int64_t i = 0; i < b; i++)
        total += v[i].n_ids[SN_FIELD_CHOSEN] + v[i].n_ids[SN_FIELD_REJECTED] +
                 (R->has_ref[i] ? v[i].n_ids[SN_FIELD_REFERENCE] : 0);
    if (total > INT32_MAX)
        return sn_err_set(err, SN_E_ARG, "micro-batch of %zu tokens (at most 2^31)", total);
    int rc = rows_reserve_packed(R, total, err);
    if (rc)
        return rc;
    R->T = 0;
    if (mode == SN_BATCH_PACKED) {
        for (int64_t r = 0; r < 2 * b + k; r++) {
            int64_t i = r < b ? r : r < 2 * b ? r - b : R->ref_of[r - 2 * b];
            int f = r < b ? SN_FIELD_CHOSEN : r < 2 * b ? SN_FIELD_REJECTED
                                                      : SN_FIELD_REFERENCE;
            R->readout[r] = rows_put(R, v[i].ids[f], v[i].n_ids[f], 0, 0, 0);
        }
    } else {
        /* per tuple: [common prefix | chosen rest | rejected rest | reference rest] */
        int64_t j = 0;
        for (int64_t i = 0; i < b; i++) {
            size_t p = shared_prefix(&v[i], R->has_ref[i]);
            int64_t lo = R->T;
            if (p)
                rows_put(R, v[i].ids[SN_FIELD_CHOSEN], p, 0, 0, 0);
            int64_t hi = R->T;
            for (int f = SN_FIELD_CHOSEN; f <= SN_FIELD_REFERENCE; f++) {
                if (f == SN_FIELD_REFERENCE && !R->has_ref[i])
                    continue;
                int64_t r = f == SN_FIELD_CHOSEN ? i : f == SN_FIELD_REJECTED ? b + i
                                                                           : 2 * b + j++;
                R->readout[r] = rows_put(R, v[i].ids[f] + p, v[i].n_ids[f] - p,
                                         (int32_t)p, lo, hi);
            }
        }
    }
    R->tokens = R->T;
    return SN_OK;
}

/* Padded rows: 2b + k rows of T tokens, one sequence each, right-padded with mask 0. */
static int rows_build_padded(struct sn_rows *R, const struct sn_tuple_view *v, int64_t b,
                             int64_t k, int64_t T, struct sn_err *err)
{
    int64_t rows = 2 * b + k;
    size_t need = (size_t)rows * (size_t)T;
    if (need > R->cap) {
        int32_t *a = sn_realloc(R->ids, need * sizeof *a);
        if (a)
            R->ids = a;
        int32_t *m = a ? sn_realloc(R->mask, need * sizeof *m) : NULL;
        if (m)
            R->mask = m;
        if (!a || !m)
            return sn_err_set(err, SN_E_NOMEM, "batch: out of memory");
        R->cap = need;
    }
    memset(R->ids, 0, need * sizeof *R->ids);
    memset(R->mask, 0, need * sizeof *R->mask);
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = r < b ? r : r < 2 * b ? r - b : R->ref_of[r - 2 * b];
        int f = r < b ? SN_FIELD_CHOSEN : r < 2 * b ? SN_FIELD_REJECTED : SN_FIELD_REFERENCE;
        size_t len = v[i].n_ids[f];
        memcpy(R->ids + r * T, v[i].ids[f], len * sizeof(int32_t));
        for (size_t j = 0; j < len; j++)
            R->mask[r * T + (int64_t)j] = 1;
        R->tokens += (int64_t)len;
    }
    R->T = T;
    return SN_OK;
}

int sn_rows_build(struct sn_rows *R, struct sn_tset *s, const size_t *tuples, int64_t b,
                  bool with_ref, int64_t max_pos, enum sn_batching mode, struct sn_err *err)
{
    struct sn_tuple_view v[4096];
    if (b > 4096)
        return sn_err_set(err, SN_E_ARG, "micro-batch %" PRId64 " > 4096", b);
    int64_t T = 1, k = 0;
    R->tokens = 0;
    for (int64_t i = 0; i < b; i++) {
        size_t t = tuples[i];
        int rc = sn_shard_reader_get(s->r[s->shard[t]], s->local[t], &v[i], err);
        if (rc)
            return sn_err_wrap(err, "%s#%u", s->name[s->shard[t]], s->local[t]);
        for (int f = SN_FIELD_CHOSEN; f <= SN_FIELD_REFERENCE; f++) {
            size_t len = v[i].n_ids[f];
            if (f != SN_FIELD_REFERENCE && !len)
                return sn_err_set(err, SN_E_FORMAT, "%s#%u: empty %s sequence",
                                  s->name[s->shard[t]], s->local[t],
                                  sn_field_name((enum sn_field)f));
            if ((int64_t)len > max_pos)
                return sn_err_set(err, SN_E_FORMAT, "%s#%u: the %s sequence has %zu tokens, "
                                  "more than the model's context (%" PRId64 "); rebuild the "
                                  "shards with a smaller max_len", s->name[s->shard[t]],
                                  s->local[t], sn_field_name((enum sn_field)f), len, max_pos);
            if (f == SN_FIELD_REFERENCE && !with_ref)
                continue;
            if ((int64_t)len > T)
                T = (int64_t)len;
        }
        R->has_ref[i] = with_ref && v[i].n_ids[SN_FIELD_REFERENCE] > 0;
        if (R->has_ref[i])
            R->ref_of[k++] = i;
    }
    R->b = b;
    R->k = k;
    R->packed = mode != SN_BATCH_PADDED;
    if (R->packed)
        return rows_build_packed(R, v, b, k, mode, err);
    return rows_build_padded(R, v, b, k, T, err);
}

void sn_rows_free(struct sn_rows *R)
{
    sn_free(R->ids);
    sn_free(R->mask);
    sn_free(R->spans);
    sn_free(R->pids);
    sn_free(R->pos);
}

/* ---- the data order ------------------------------------------------------------------------- */

size_t sn_trainer_n_items(const struct sn_trainer *t)
{
    return t->lm ? t->n_lm : t->data[SN_SPLIT_TRAIN].n;
}

/* Tuple indices (into the train set) of step s, micro-batch k of the global step (ranks take
** consecutive micro-batches: rank r has k in [r·A, (r+1)·A)). */
int sn_trainer_step_tuples(struct sn_trainer *t, int64_t s, int64_t k, size_t *out,
                           struct sn_err *err)
{
    int64_t epoch = s / t->per_epoch, pos = (s % t->per_epoch) * t->G + k * t->p.micro_batch;
    size_t n = sn_trainer_n_items(t);
    if (epoch != t->perm_epoch) {
        if (!t->perm)
            t->perm = sn_malloc(n * sizeof *t->perm);
        if (!t->perm)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            t->perm[i] = i;
        struct sn_rng rng;
        sn_rng_seed(&rng, sn_seed_derive(t->p.seed, "epoch", (uint64_t)epoch));
        sn_rng_shuffle(&rng, t->perm, n, sizeof *t->perm);
        t->perm_epoch = epoch;
    }
    for (int64_t i = 0; i < t->p.micro_batch; i++)
        out[i] = t->perm[pos + i];
    return SN_OK;
}

void sn_trainer_tuple_ids(struct sn_trainer *t, const size_t *tuples, int64_t n, char *buf,
                          size_t cap)
{
    struct sn_tset *s = &t->data[SN_SPLIT_TRAIN];
    size_t used = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < n; i++) {
        int k = snprintf(buf + used, cap - used, "%s%s#%u", i ? ", " : "",
                         s->name[s->shard[tuples[i]]], s->local[tuples[i]]);
        if (k < 0 || (size_t)k >= cap - used)
            break;
        used += (size_t)k;
    }
}

/* Length bucketing: this rank's tuples of the step, longest first (stable), so each
** micro-batch holds similar lengths. The step's gradient does not depend on how its tuples
** are split into micro-batches (every tuple has the same weight), only the padding does. */
int sn_trainer_sort_by_length(struct sn_trainer *t, size_t *tu, int64_t n, bool with_ref,
                              struct sn_err *err)
{
    struct sn_tset *s = &t->data[SN_SPLIT_TRAIN];
    size_t *len = sn_malloc((size_t)n * sizeof *len);
    if (!len)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        struct sn_tuple_view v;
        int rc = sn_shard_reader_get(s->r[s->shard[tu[i]]], s->local[tu[i]], &v, err);
        if (rc) {
            sn_free(len);
            return sn_err_wrap(err, "%s#%u", s->name[s->shard[tu[i]]], s->local[tu[i]]);
        }
        size_t m = v.n_ids[SN_FIELD_CHOSEN];
        if (v.n_ids[SN_FIELD_REJECTED] > m)
            m = v.n_ids[SN_FIELD_REJECTED];
        if (with_ref && v.n_ids[SN_FIELD_REFERENCE] > m)
            m = v.n_ids[SN_FIELD_REFERENCE];
        len[i] = m;
    }
    for (int64_t i = 1; i < n; i++) /* insertion sort: stable, n is a step's tuples */
        for (int64_t j = i; j > 0 && len[j - 1] < len[j]; j--) {
            size_t a = len[j], b = tu[j];
            len[j] = len[j - 1];
            tu[j] = tu[j - 1];
            len[j - 1] = a;
            tu[j - 1] = b;
        }
    sn_free(len);
    return SN_OK;
}
