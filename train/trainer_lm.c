/* train/trainer_lm.c: the lm objective (docs/train.md "Domain-adaptive pretraining (objective
** lm)"): causal language modelling on the text of the train split before a reward run.
**
** What it reads: the chosen and rejected sequences (context ⊕ response, as the reward stage
** scores them) of the train split's tuples, each distinct sequence once. The held-out splits
** are never opened in this mode (trainer.c, open_shards), so no validation or test text can
** reach the loss; the checkpoint's sentinel_state.json lists the shards read ("inputs").
**
** The step: the data order permutes the sequences exactly as the reward objective permutes
** tuples (trainer_batches.c), micro_batch sequences per forward, right-padded; the loss is the
** next-token cross-entropy (loss/loss.h sn_loss_lm) averaged over every predicted token of the
** step (over all ranks), each micro-batch weighted by its share of those tokens, so the
** accumulated gradient does not depend on how the step is split into micro-batches. */
#include "train/trainer_internal.h"

#include "loss/loss.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void sn_trainer_lm_free(struct sn_trainer *t)
{
    sn_free(t->lm_seq);
    sn_free(t->lm_at); /* one block with lm_tgt, lm_ids and lm_mask (lm_reserve) */
}

static int seq_view(struct sn_trainer *t, const struct sn_lm_seq *q, const int32_t **ids,
                    size_t *n, struct sn_err *err)
{
    struct sn_tset *s = &t->data[SN_SPLIT_TRAIN];
    struct sn_tuple_view v;
    int rc = sn_shard_reader_get(s->r[s->shard[q->tuple]], s->local[q->tuple], &v, err);
    if (rc)
        return sn_err_wrap(err, "%s#%u", s->name[s->shard[q->tuple]], s->local[q->tuple]);
    *ids = v.ids[q->field];
    *n = v.n_ids[q->field];
    return SN_OK;
}

int sn_trainer_lm_open(struct sn_trainer *t, struct sn_err *err)
{
    struct sn_tset *s = &t->data[SN_SPLIT_TRAIN];
    size_t cap = 2 * s->n, slots = 16;
    while (slots < 2 * cap)
        slots *= 2;
    /* open addressing on the sequences' hashes: index + 1 of the first sequence seen */
    uint32_t *tab = sn_calloc(slots, sizeof *tab);
    uint64_t *hash = sn_calloc(cap + 1, sizeof *hash);
    t->lm_seq = sn_calloc(cap + 1, sizeof *t->lm_seq);
    t->n_lm = 0;
    int rc = tab && hash && t->lm_seq ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
    size_t dup = 0;
    for (size_t k = 0; k < s->n && !rc; k++)
        for (int f = SN_FIELD_CHOSEN; f <= SN_FIELD_REJECTED && !rc; f++) {
            struct sn_lm_seq q = {(uint32_t)k, (uint8_t)f};
            const int32_t *ids;
            size_t n;
            if ((rc = seq_view(t, &q, &ids, &n, err)))
                break;
            if (n < 2)
                continue; /* predicts nothing */
            uint64_t h = sn_hash64(ids, n * sizeof *ids);
            size_t at = (size_t)h & (slots - 1);
            bool seen = false;
            for (; tab[at] && !seen && !rc; at = (at + 1) & (slots - 1)) {
                const struct sn_lm_seq *o = &t->lm_seq[tab[at] - 1];
                const int32_t *oids;
                size_t on;
                if (hash[tab[at] - 1] != h)
                    continue;
                rc = seq_view(t, o, &oids, &on, err);
                seen = !rc && on == n && !memcmp(oids, ids, n * sizeof *ids);
            }
            if (rc)
                break;
            if (seen) {
                dup++;
                continue;
            }
            hash[t->n_lm] = h;
            t->lm_seq[t->n_lm++] = q;
            tab[at] = (uint32_t)t->n_lm;
        }
    sn_free(tab);
    sn_free(hash);
    if (!rc && !t->n_lm)
        rc = sn_err_set(err, SN_E_ARG, "train.objective lm: the train split has no sequence of "
                        "2 or more tokens");
    if (!rc)
        SN_INFO("train: objective lm on %zu sequences of the train split (%zu duplicates "
                "left out)", t->n_lm, dup);
    return rc;
}

/* Grows the row buffers to n tokens: one block, the int64 arrays first (aligned), then the
** int32 ones. */
static int lm_reserve(struct sn_trainer *t, size_t n, struct sn_err *err)
{
    if (n <= t->lm_cap)
        return SN_OK;
    size_t per = 2 * sizeof(int64_t) + 2 * sizeof(int32_t);
    int64_t *b = sn_realloc(t->lm_at, n * per);
    if (!b)
        return sn_err_set(err, SN_E_NOMEM, "batch: out of memory");
    t->lm_at = b;
    t->lm_tgt = b + n;
    t->lm_ids = (int32_t *)(b + 2 * n);
    t->lm_mask = t->lm_ids + n;
    t->lm_cap = n;
    return SN_OK;
}

/* The padded rows of sequences sq[0..b), and the tokens that predict (*n_pred of them, flat
** indices into the rows) with their targets, the next token of the same sequence. */
static int lm_rows(struct sn_trainer *t, const size_t *sq, int64_t b, int64_t *T_out,
                   int64_t *n_pred, int64_t *tokens, struct sn_err *err)
{
    int64_t T = 1, max_pos = sn_model_get_config(t->m)->max_position_embeddings;
    const int32_t *ids[1024];
    size_t len[1024];
    for (int64_t i = 0; i < b; i++) {
        int rc = seq_view(t, &t->lm_seq[sq[i]], &ids[i], &len[i], err);
        if (rc)
            return rc;
        if ((int64_t)len[i] > max_pos) {
            const struct sn_lm_seq *q = &t->lm_seq[sq[i]];
            struct sn_tset *s = &t->data[SN_SPLIT_TRAIN];
            return sn_err_set(err, SN_E_FORMAT, "%s#%u: the %s sequence has %zu tokens, more "
                              "than the model's context (%" PRId64 "); rebuild the shards with "
                              "a smaller max_len", s->name[s->shard[q->tuple]],
                              s->local[q->tuple], sn_field_name((enum sn_field)q->field), len[i],
                              max_pos);
        }
        T = (int64_t)len[i] > T ? (int64_t)len[i] : T;
    }
    size_t need = (size_t)b * (size_t)T;
    int rc = lm_reserve(t, need, err);
    if (rc)
        return rc;
    memset(t->lm_ids, 0, need * sizeof *t->lm_ids);
    memset(t->lm_mask, 0, need * sizeof *t->lm_mask);
    int64_t np = 0, tok = 0;
    for (int64_t r = 0; r < b; r++) {
        memcpy(t->lm_ids + r * T, ids[r], len[r] * sizeof *ids[r]);
        for (size_t j = 0; j < len[r]; j++)
            t->lm_mask[r * T + (int64_t)j] = 1;
        for (size_t j = 0; j + 1 < len[r]; j++) {
            t->lm_at[np] = r * T + (int64_t)j;
            t->lm_tgt[np++] = ids[r][j + 1];
        }
        tok += (int64_t)len[r];
    }
    *T_out = T;
    *n_pred = np;
    *tokens = tok;
    return SN_OK;
}

/* Predicted tokens of the step's G sequences (every rank reads the same step plan). */
static int step_predicted(struct sn_trainer *t, const size_t *sq, int64_t G, int64_t *out,
                          struct sn_err *err)
{
    *out = 0;
    for (int64_t i = 0; i < G; i++) {
        const int32_t *ids;
        size_t n;
        int rc = seq_view(t, &t->lm_seq[sq[i]], &ids, &n, err);
        if (rc)
            return rc;
        *out += (int64_t)n - 1;
    }
    return SN_OK;
}

/* Micro-batch k on the rows lm_rows built: forward, the loss weighted by its share w of the
** step's predicted tokens, backward; *sum += the micro-batch's summed cross-entropy. */
static int lm_micro(struct sn_trainer *t, int64_t k, int64_t b, int64_t T, int64_t n_pred,
                    double w, double *sum, struct sn_err *err)
{
    int rc = sn_trainer_seed_dropout(t, k, err);
    struct sn_tensor *logits = NULL, *loss = NULL, *scaled = NULL;
    struct sn_model_batch mb = {t->lm_ids, t->lm_mask, b, T};
    double v = 0;
    if (!rc)
        rc = sn_model_forward_lm(t->m, &mb, t->lm_at, n_pred, &logits, err);
    if (!rc)
        rc = sn_loss_lm(logits, t->lm_tgt, n_pred, &loss, &v, err);
    if (!rc)
        rc = sn_aten_mul_scalar(loss, w, &scaled, err);
    if (!rc)
        rc = sn_aten_backward(scaled, NULL, false, err);
    sn_model_release_forward_state(t->m);
    *sum += v * (double)n_pred;
    sn_tensor_free(logits);
    sn_tensor_free(loss);
    sn_tensor_free(scaled);
    return rc;
}

int sn_trainer_lm_accumulate(struct sn_trainer *t, struct sn_train_stats *st,
                             struct sn_err *err)
{
    int64_t mb = t->p.micro_batch, A = t->p.grad_accum, G = t->G, L = mb * A;
    int64_t off = (int64_t)t->rank * L;
    size_t *sq = sn_malloc((size_t)G * sizeof *sq);
    double buf[3] = {0, 0, 0}; /* [cross-entropy sum, tokens, stop]: summed over the ranks */
    double t0 = sn_now(), wait = 0;
    memset(st, 0, sizeof *st);
    st->lm = true;
    int rc = sq ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (int64_t k = 0; k < G / mb && !rc; k++)
        rc = sn_trainer_step_tuples(t, t->step, k, sq + k * mb, err);
    int64_t n_step = 0;
    if (!rc)
        rc = step_predicted(t, sq, G, &n_step, err);
    for (size_t i = 0; i < t->n_params; i++)
        sn_aten_zero_grad(t->params[i].t);
    for (int64_t k = 0; k < A && !rc; k++) {
        int64_t T = 0, n_pred = 0, tokens = 0;
        double w0 = sn_now();
        rc = lm_rows(t, sq + off + k * mb, mb, &T, &n_pred, &tokens, err);
        wait += sn_now() - w0;
        if (!rc && n_pred > 0)
            rc = lm_micro(t, k, mb, T, n_pred, (double)n_pred / (double)n_step, &buf[0], err);
        buf[1] += (double)tokens;
    }
    buf[2] = t->stop_requested ? 1.0 : 0.0;
    if (!rc)
        rc = sn_trainer_reduce_host(t, buf, 3, err);
    if (!rc)
        rc = sn_trainer_reduce_grads(t, err);
    st->loss = n_step ? buf[0] / (double)n_step : NAN;
    st->perplexity = exp(st->loss);
    st->num_tokens = (int64_t)buf[1];
    st->n = G;
    t->stop_all = buf[2] > 0.5;
    st->data_wait = wait;
    st->step_time = sn_now() - t0;
    if (!rc && !isfinite(st->loss)) {
        char ids[1024] = "";
        size_t used = 0;
        struct sn_tset *s = &t->data[SN_SPLIT_TRAIN];
        for (int64_t i = 0; i < G && used + 64 < sizeof ids; i++) {
            const struct sn_lm_seq *q = &t->lm_seq[sq[i]];
            int n = snprintf(ids + used, sizeof ids - used, "%s%s#%u.%s", i ? ", " : "",
                             s->name[s->shard[q->tuple]], s->local[q->tuple],
                             sn_field_name((enum sn_field)q->field));
            if (n > 0)
                used += (size_t)n;
        }
        rc = sn_err_set(err, SN_E_BACKEND, "step %" PRId64 ": the loss is %g (sequences %s)",
                        t->step + 1, st->loss, ids);
    }
    if (rc && err->code != SN_E_BACKEND)
        sn_err_wrap(err, "step %" PRId64, t->step + 1);
    sn_free(sq);
    return rc;
}
