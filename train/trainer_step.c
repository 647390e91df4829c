/* train/trainer_step.c: one optimizer step's forward and backward (its tuples in micro-batches,
** the loss of docs/design.md §4 through loss/, gradients accumulated and summed over the ranks)
** and the evaluation of a split without gradients.
**
** Determinism (what makes a resumed run bit-identical to an uninterrupted one on the CPU with a
** fixed thread count): the data order of epoch e is a permutation drawn from
** sn_seed_derive(seed, "epoch", e), and step s reads positions [s·G, (s+1)·G) of its epoch
** (G = micro_batch × grad_accum, the last partial batch of an epoch is dropped), so the data
** cursor is a function of the step; the LoRA-dropout generator is reseeded before every
** micro-batch from sn_seed_derive(seed, "dropout", s·grad_accum + k), so no random state has to
** travel in a checkpoint beyond the step (docs/formats.md, "Training output directory"). */
#include "train/trainer_internal.h"

#include "loss/loss.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---- the step ------------------------------------------------------------------------------- */

/* Host metrics of n tuples' rewards. */
static int host_stats(const double *ch, const double *rej, const double *ref, const bool *hr,
                      size_t n, double alpha, double center, struct sn_train_stats *st,
                      struct sn_err *err)
{
    struct sn_loss_result L;
    int rc = sn_loss_host(ch, rej, ref, hr, n, alpha, &L, err);
    if (rc)
        return rc;
    double c = 0, mn = INFINITY, mx = -INFINITY, sum = 0;
    for (size_t i = 0; i < n; i++) {
        c += (ch[i] + rej[i]) * (ch[i] + rej[i]);
        sum += ch[i] + rej[i];
        mn = fmin(mn, fmin(ch[i], rej[i]));
        mx = fmax(mx, fmax(ch[i], rej[i]));
    }
    st->loss = L.loss_value + (n ? center * c / (double)n : 0.0);
    st->loss_pref = L.pref;
    st->loss_align = L.align;
    st->accuracy = L.acc_pref;
    st->align_accuracy = L.acc_align;
    st->margin = L.margin_mean;
    st->mean_reward = n ? sum / (2.0 * (double)n) : NAN;
    st->min_reward = mn;
    st->max_reward = mx;
    st->n = (int64_t)n;
    return SN_OK;
}

/* Rewards (2b + k) of the built rows, in the order [chosen; rejected; reference]. */
static int forward_rows(struct sn_trainer *t, struct sn_tensor **r, struct sn_err *err)
{
    struct sn_rows *R = &t->rows;
    if (R->packed) {
        struct sn_model_batch b = {R->pids, NULL, 1, R->T};
        struct sn_model_packed pk = {R->spans, R->pos, R->readout, 2 * R->b + R->k};
        return sn_model_forward_packed(t->m, &b, &pk, r, NULL, err);
    }
    struct sn_model_batch b = {R->ids, R->mask, 2 * R->b + R->k, R->T};
    return sn_model_forward(t->m, &b, r, NULL, err);
}

/* loss = w_p · L_pref + w_a · L_align + w_c · mean((r_ch + r_rej)²), backward. */
static int micro_backward(struct sn_trainer *t, struct sn_tensor *r, double w_p, double w_a,
                          double w_c, struct sn_err *err)
{
    struct sn_rows *R = &t->rows;
    struct sn_tensor *rc_ = NULL, *rr = NULL, *rf = NULL, *rcs = NULL, *idx = NULL;
    struct sn_tensor *tot = NULL, *tmp = NULL, *s = NULL, *sq = NULL, *cm = NULL;
    struct sn_loss_result Lp = {0}, La = {0};
    int rc = sn_aten_narrow(r, 0, 0, R->b, &rc_, err);
    if (!rc)
        rc = sn_aten_narrow(r, 0, R->b, R->b, &rr, err);
    if (!rc)
        rc = sn_loss_compute(rc_, rr, NULL, NULL, 0.0, &Lp, err);
    if (!rc)
        rc = sn_aten_mul_scalar(Lp.loss, w_p, &tot, err);
    if (!rc && R->k > 0 && w_a > 0) {
        int64_t sh[1] = {R->k};
        rc = sn_aten_narrow(r, 0, 2 * R->b, R->k, &rf, err);
        if (!rc)
            rc = sn_aten_from_host(R->ref_of, SN_DTYPE_I64, sh, 1, SN_DTYPE_I64,
                                   sn_tensor_device(r), &idx, err);
        if (!rc)
            rc = sn_aten_index_select(rc_, 0, idx, &rcs, err);
        if (!rc)
            rc = sn_loss_compute(rcs, rf, NULL, NULL, 0.0, &La, err);
        if (!rc)
            rc = sn_aten_mul_scalar(La.loss, w_a, &tmp, err);
        if (!rc) {
            struct sn_tensor *x = NULL;
            rc = sn_aten_add(tot, tmp, &x, err);
            sn_tensor_free(tot);
            tot = x;
        }
    }
    if (!rc && w_c > 0) {
        rc = sn_aten_add(rc_, rr, &s, err);
        if (!rc)
            rc = sn_aten_mul(s, s, &sq, err);
        if (!rc)
            rc = sn_aten_mean_all(sq, &cm, err);
        if (!rc) {
            struct sn_tensor *x = NULL, *y = NULL;
            rc = sn_aten_mul_scalar(cm, w_c, &y, err);
            if (!rc)
                rc = sn_aten_add(tot, y, &x, err);
            sn_tensor_free(y);
            sn_tensor_free(tot);
            tot = x;
        }
    }
    if (!rc)
        rc = sn_aten_backward(tot, NULL, false, err);
    sn_loss_result_free(&Lp);
    sn_loss_result_free(&La);
    sn_tensor_free(rc_);
    sn_tensor_free(rr);
    sn_tensor_free(rf);
    sn_tensor_free(rcs);
    sn_tensor_free(idx);
    sn_tensor_free(tot);
    sn_tensor_free(tmp);
    sn_tensor_free(s);
    sn_tensor_free(sq);
    sn_tensor_free(cm);
    return rc;
}

static int rewards_host(struct sn_tensor *r, double *out, int64_t n, struct sn_err *err)
{
    struct sn_tensor *d = NULL;
    int rc = sn_aten_detach(r, &d, err);
    if (!rc)
        rc = sn_aten_to_host(d, out, SN_DTYPE_F64, (size_t)n, err);
    sn_tensor_free(d);
    return rc;
}

int sn_trainer_reduce_host(struct sn_trainer *t, double *buf, size_t n, struct sn_err *err)
{
    if (t->world <= 1)
        return SN_OK;
    struct sn_tensor *x = NULL;
    int64_t shape[1] = {(int64_t)n};
    int rc = sn_aten_from_host(buf, SN_DTYPE_F64, shape, 1, SN_DTYPE_F64, t->dev, &x, err);
    if (!rc)
        rc = sn_aten_dist_all_reduce(t->dist, x, SN_REDUCE_SUM, err);
    if (!rc)
        rc = sn_aten_to_host(x, buf, SN_DTYPE_F64, n, err);
    sn_tensor_free(x);
    return rc;
}

/* Each rank's gradient is already weighted by its share of the global step, so the sum is the
** global gradient. */
int sn_trainer_reduce_grads(struct sn_trainer *t, struct sn_err *err)
{
    if (t->world <= 1)
        return SN_OK;
    struct sn_tensor **g = sn_calloc(t->n_params + 1, sizeof *g);
    int rc = g ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < t->n_params && !rc; i++) {
        rc = sn_aten_grad(t->params[i].t, &g[i], err);
        if (!rc && !g[i]) { /* untouched on this rank: contribute zeros */
            int64_t shape[8];
            int nd = sn_tensor_shape(t->params[i].t, shape, 8);
            struct sn_tensor *z = NULL;
            rc = sn_aten_zeros(shape, nd, sn_tensor_dtype(t->params[i].t),
                               sn_tensor_device(t->params[i].t), &z, err);
            if (!rc)
                rc = sn_aten_set_grad(t->params[i].t, z, err);
            sn_tensor_free(z);
            if (!rc)
                rc = sn_aten_grad(t->params[i].t, &g[i], err);
        }
    }
    if (!rc)
        rc = sn_aten_dist_all_reduce_many(t->dist, g, t->n_params, SN_REDUCE_SUM, err);
    for (size_t i = 0; g && i < t->n_params; i++)
        sn_tensor_free(g[i]);
    sn_free(g);
    return rc ? sn_err_wrap(err, "all-reduce of the gradients") : SN_OK;
}

/* The step's G tuples into tu (this rank's share sorted by length when bucketing) and, when
** the alignment term is on, how many of them have a reference (*n_ref). */
static int step_plan(struct sn_trainer *t, size_t *tu, bool with_ref, int64_t *n_ref,
                     struct sn_err *err)
{
    int64_t mb = t->p.micro_batch, G = t->G, L = mb * t->p.grad_accum;
    int64_t off = (int64_t)t->rank * L;
    int rc = SN_OK;
    for (int64_t k = 0; k < G / mb && !rc; k++)
        rc = sn_trainer_step_tuples(t, t->step, k, tu + k * mb, err);
    if (!rc && t->p.length_bucketing)
        rc = sn_trainer_sort_by_length(t, tu + off, L, with_ref, err);
    for (int64_t i = 0; i < G && !rc && with_ref; i++) {
        struct sn_tset *s = &t->data[SN_SPLIT_TRAIN];
        struct sn_tuple_view v;
        rc = sn_shard_reader_get(s->r[s->shard[tu[i]]], s->local[tu[i]], &v, err);
        *n_ref += !rc && v.n_ids[SN_FIELD_REFERENCE] > 0;
    }
    return rc;
}

int sn_trainer_seed_dropout(struct sn_trainer *t, int64_t k, struct sn_err *err)
{
    uint64_t stream = (uint64_t)((t->step * t->p.grad_accum + k) * t->world + t->rank);
    return sn_aten_gen_seed(t->m->gen, sn_seed_derive(t->p.seed, "dropout", stream), err);
}

/* Micro-batch k of the step on the rows already built: the dropout stream reseeded, forward,
** the loss weighted by the micro-batch's share of the step, backward; its rewards (2b + k,
** [chosen; rejected; reference]) into rbuf. */
static int micro_step(struct sn_trainer *t, int64_t k, int64_t n_ref, double *rbuf,
                      struct sn_err *err)
{
    int64_t mb = t->p.micro_batch, G = t->G;
    int rc = sn_trainer_seed_dropout(t, k, err);
    struct sn_tensor *r = NULL;
    if (!rc)
        rc = forward_rows(t, &r, err);
    /* loss_compute's terms are means over this micro-batch (b tuples, k references) */
    double w_p = (double)mb / (double)G;
    double w_a = n_ref ? t->p.alpha / (double)n_ref * (double)t->rows.k : 0.0;
    double w_c = t->p.center_rewards * (double)mb / (double)G;
    if (!rc)
        rc = micro_backward(t, r, w_p, w_a, w_c, err);
    sn_model_release_forward_state(t->m);
    if (!rc)
        rc = rewards_host(r, rbuf, 2 * t->rows.b + t->rows.k, err);
    sn_tensor_free(r);
    return rc;
}

int sn_trainer_reward_accumulate(struct sn_trainer *t, struct sn_train_stats *st,
                                 struct sn_err *err)
{
    /* G tuples per step over all ranks; this rank takes the contiguous chunk
    ** [rank·mb·A, (rank+1)·mb·A) of them in A micro-batches of mb. */
    int64_t mb = t->p.micro_batch, A = t->p.grad_accum, G = t->G, L = mb * A;
    int64_t off = (int64_t)t->rank * L;
    size_t *tu = sn_malloc((size_t)G * sizeof *tu);
    /* [ch (G), rej (G), ref (G), has_ref (G), tokens, stop]: summed over the ranks */
    size_t nbuf = 4 * (size_t)G + 2;
    double *buf = sn_calloc(nbuf, sizeof *buf);
    double *ch = buf, *rej = buf + G, *ref = buf + 2 * G, *hrd = buf + 3 * G;
    bool *hr = sn_calloc((size_t)G, sizeof *hr);
    double *rbuf = sn_malloc((size_t)(3 * mb) * sizeof *rbuf);
    int rc = SN_OK;
    double t0 = sn_now(), wait = 0;
    memset(st, 0, sizeof *st);
    if (!tu || !buf || !hr || !rbuf) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto done;
    }
    bool with_ref = t->p.alpha > 0;
    int64_t max_pos = sn_model_get_config(t->m)->max_position_embeddings;
    /* the alignment term's weights need the step's count of references first */
    int64_t n_ref = 0;
    rc = step_plan(t, tu, with_ref, &n_ref, err);
    for (size_t i = 0; i < t->n_params; i++)
        sn_aten_zero_grad(t->params[i].t);
    int64_t tokens = 0;
    for (int64_t k = 0; k < A && !rc; k++) {
        int64_t at = off + k * mb; /* this micro-batch's first slot in the step */
        double w0 = sn_now();
        rc = sn_rows_build(&t->rows, &t->data[SN_SPLIT_TRAIN], tu + at, mb, with_ref, max_pos,
                           t->p.batching, err);
        wait += sn_now() - w0;
        if (rc)
            break;
        tokens += t->rows.tokens;
        rc = micro_step(t, k, n_ref, rbuf, err);
        for (int64_t i = 0; !rc && i < mb; i++) {
            ch[at + i] = rbuf[i];
            rej[at + i] = rbuf[mb + i];
            hrd[at + i] = t->rows.has_ref[i];
        }
        for (int64_t j = 0; !rc && j < t->rows.k; j++)
            ref[at + t->rows.ref_of[j]] = rbuf[2 * mb + j];
    }
    buf[4 * G] = (double)tokens;
    buf[4 * G + 1] = t->stop_requested ? 1.0 : 0.0;
    /* every rank takes part in the collectives even after a local failure would be better;
    ** a failing rank returns here and the others time out (aten's store timeout) */
    if (!rc)
        rc = sn_trainer_reduce_host(t, buf, nbuf, err);
    if (!rc)
        rc = sn_trainer_reduce_grads(t, err);
    for (int64_t i = 0; i < G; i++)
        hr[i] = hrd[i] > 0.5;
    if (!rc)
        rc = host_stats(ch, rej, with_ref ? ref : NULL, with_ref ? hr : NULL, (size_t)G,
                        t->p.alpha, t->p.center_rewards, st, err);
    st->num_tokens = (int64_t)buf[4 * G];
    t->stop_all = buf[4 * G + 1] > 0.5;
    st->data_wait = wait;
    st->step_time = sn_now() - t0;
    if (!rc && !isfinite(st->loss)) {
        char ids[1024];
        sn_trainer_tuple_ids(t, tu, G, ids, sizeof ids);
        rc = sn_err_set(err, SN_E_BACKEND, "step %" PRId64 ": the loss is %g (tuples %s)",
                        t->step + 1, st->loss, ids);
    }
    if (rc && err->code != SN_E_BACKEND)
        sn_err_wrap(err, "step %" PRId64, t->step + 1);
done:
    sn_free(tu);
    sn_free(buf);
    sn_free(hr);
    sn_free(rbuf);
    return rc;
}

/* ---- evaluation ----------------------------------------------------------------------------- */

int sn_trainer_evaluate(struct sn_trainer *t, int split, struct sn_train_stats *st,
                        struct sn_err *err)
{
    memset(st, 0, sizeof *st);
    if (split < 0 || split >= SN_SPLIT_COUNT)
        return sn_err_set(err, SN_E_ARG, "evaluate: bad split %d", split);
    struct sn_tset *s = &t->data[split];
    size_t n = s->n;
    if (!n)
        return SN_OK;
    int64_t eb = t->p.eval_batch;
    double *ch = sn_malloc(n * 3 * sizeof *ch), *rej = ch + n, *ref = ch + 2 * n;
    bool *hr = sn_calloc(n, sizeof *hr);
    size_t *tu = sn_malloc((size_t)eb * sizeof *tu);
    float *rb = sn_malloc((size_t)(3 * eb) * sizeof *rb);
    int rc = SN_OK;
    bool with_ref = t->p.alpha > 0;
    if (!ch || !hr || !tu || !rb)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    bool was_training = t->m->training;
    sn_model_set_training(t->m, false);
    int64_t max_pos = sn_model_get_config(t->m)->max_position_embeddings;
    for (size_t i0 = 0; i0 < n && !rc; i0 += (size_t)eb) {
        int64_t b = (int64_t)(n - i0 < (size_t)eb ? n - i0 : (size_t)eb);
        for (int64_t i = 0; i < b; i++)
            tu[i] = i0 + (size_t)i;
        rc = sn_rows_build(&t->rows, s, tu, b, with_ref, max_pos, t->p.batching, err);
        if (rc)
            break;
        bool g = sn_aten_no_grad_enter();
        struct sn_tensor *r = NULL;
        rc = forward_rows(t, &r, err);
        if (!rc)
            rc = sn_aten_to_host(r, rb, SN_DTYPE_F32, (size_t)(2 * b + t->rows.k), err);
        sn_tensor_free(r);
        sn_aten_no_grad_exit(g);
        for (int64_t i = 0; !rc && i < b; i++) {
            ch[i0 + i] = rb[i];
            rej[i0 + i] = rb[b + i];
            hr[i0 + i] = t->rows.has_ref[i];
            ref[i0 + i] = 0.0;
        }
        for (int64_t j = 0; !rc && j < t->rows.k; j++)
            ref[i0 + t->rows.ref_of[j]] = rb[2 * b + j];
    }
    sn_model_set_training(t->m, was_training);
    if (!rc)
        rc = host_stats(ch, rej, with_ref ? ref : NULL, with_ref ? hr : NULL, n, t->p.alpha,
                        t->p.center_rewards, st, err);
    st->step = t->step;
    st->epoch = (double)t->step / (double)t->per_epoch;
    sn_free(ch);
    sn_free(hr);
    sn_free(tu);
    sn_free(rb);
    return rc ? sn_err_wrap(err, "evaluating the %s split", sn_split_name((enum sn_split)split))
              : SN_OK;
}
