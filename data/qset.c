/* data/qset.c: what a question set owns (data/data.h): a task's name, one question's
** strings, the set's deep-copying append and its free, the shuffle of a multiple-choice
** item's options. Below the loader (question.c) and the
** readers it calls (datasets.c, synthetic.c), which all append through sn_qset_push. */
#include "data/data_internal.h"

#include <string.h>

void sn_mc_shuffle_options(struct sn_rng *rng, const char *opts[4], char gold[2])
{
    const char *answer = opts[0];
    sn_rng_shuffle(rng, opts, 4, sizeof opts[0]);
    int k = 0;
    for (int j = 0; j < 4; j++)
        if (opts[j] == answer)
            k = j;
    gold[0] = (char)('A' + k);
    gold[1] = '\0';
}

const char *sn_task_name(enum sn_task t) { return t == SN_TASK_MC ? "mc" : "numeric"; }

void sn_question_clear(struct sn_question *q)
{
    if (!q)
        return;
    sn_free(q->id);
    sn_free(q->dataset);
    sn_free(q->subject);
    sn_free(q->question);
    for (size_t i = 0; i < q->n_options; i++)
        sn_free(q->options[i]);
    sn_free(q->options);
    sn_free(q->gold);
    sn_free(q->gold_explanation);
    memset(q, 0, sizeof *q);
}

void sn_qset_free(struct sn_qset *qs)
{
    if (!qs)
        return;
    for (size_t i = 0; i < qs->n; i++)
        sn_question_clear(&qs->items[i]);
    sn_free(qs->items);
    sn_free(qs);
}

/* Deep copy of q appended to qs. */
int sn_qset_push(struct sn_qset *qs, const struct sn_question *q, struct sn_err *err)
{
    if (q->n_options > SN_OPTIONS_MAX)
        return sn_err_set(err, SN_E_FORMAT, "%s: %zu options (at most %d supported)",
                          q->id ? q->id : "item", q->n_options, SN_OPTIONS_MAX);
    if ((qs->n & (qs->n - 1)) == 0) { /* grow at powers of two */
        size_t cap = qs->n ? qs->n * 2 : 16, bytes;
        if (!sn_mul_ok(cap, sizeof *qs->items, &bytes))
            return sn_err_set(err, SN_E_NOMEM, "question set too large");
        struct sn_question *p = sn_realloc(qs->items, bytes);
        if (!p)
            return sn_err_set(err, SN_E_NOMEM, "out of memory adding questions");
        qs->items = p;
    }
    struct sn_question *d = &qs->items[qs->n];
    memset(d, 0, sizeof *d);
    d->task = q->task;
    d->id = sn_strdup(q->id ? q->id : "");
    d->dataset = sn_strdup(q->dataset ? q->dataset : "");
    d->subject = q->subject ? sn_strdup(q->subject) : NULL;
    d->question = sn_strdup(q->question ? q->question : "");
    d->gold = sn_strdup(q->gold ? q->gold : "");
    d->gold_explanation = q->gold_explanation ? sn_strdup(q->gold_explanation) : NULL;
    bool ok = d->id && d->dataset && d->question && d->gold && (!q->subject || d->subject) &&
              (!q->gold_explanation || d->gold_explanation);
    if (ok && q->n_options) {
        d->options = sn_calloc(q->n_options, sizeof *d->options);
        ok = d->options != NULL;
        if (ok) {
            d->n_options = q->n_options;
            for (size_t i = 0; i < q->n_options && ok; i++) {
                d->options[i] = sn_strdup(q->options[i]);
                ok = d->options[i] != NULL;
            }
        }
    }
    if (!ok) {
        sn_question_clear(d);
        return sn_err_set(err, SN_E_NOMEM, "out of memory adding questions");
    }
    qs->n++;
    return SN_OK;
}
