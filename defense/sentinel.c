/* defense/sentinel.c: one agent's Algorithm 1 (defense/defense.h; SentinelNet paper, section
** 4.3, Algorithm 1 lines 4-10; docs/agents.md "The sentinel"). The context is rendered by
** context/ from the task and the history entries, and handed to the scorer in those parts (the
** detector's sn_detector_score_prompt puts the entries in its template's history, so a
** sequence too long for the model drops the oldest entries first, as in training and in
** `sentinel eval`). */
#include "defense/defense.h"
#include "context/context.h"
#include "tokenizer/template.h"

#include <string.h>

struct sn_sentinel {
    struct sn_sentinel_params p;
    char         *task;
    struct sn_buf entries;   /* history entries end to end, NUL-separated */
    size_t       *off;       /* entry i starts at entries.data + off[i] */
    size_t        n_hist, cap_hist;
    const char  **hist;      /* scratch: pointers into entries, rebuilt per call */
    uint64_t      blacklist;
};

struct sn_sentinel_params sn_sentinel_default_params(void)
{
    struct sn_sentinel_params p;
    memset(&p, 0, sizeof p);
    p.k = 1;
    p.rule = SN_DEFENSE_RULE_ALL;
    return p;
}

int sn_sentinel_create(const struct sn_sentinel_params *p, const char *task,
                       struct sn_sentinel **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_sentinel_params q = p ? *p : sn_sentinel_default_params();
    if (q.self < 0 || q.self >= SN_SENTINEL_MAX_AGENTS)
        return sn_err_set(err, SN_E_ARG, "sentinel: self %d is not an agent id (0..%d)",
                          q.self, SN_SENTINEL_MAX_AGENTS - 1);
    if (q.k < 1 || q.k >= SN_SENTINEL_MAX_AGENTS)
        return sn_err_set(err, SN_E_ARG, "sentinel: k = %d (expected 1..%d)", q.k,
                          SN_SENTINEL_MAX_AGENTS - 1);
    if ((unsigned)q.rule >= SN_DEFENSE_RULE_COUNT)
        return sn_err_set(err, SN_E_ARG, "sentinel: unknown rule %d", (int)q.rule);
    struct sn_sentinel *s = sn_calloc(1, sizeof *s);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "sentinel: out of memory");
    s->p = q;
    s->task = sn_strdup(task ? task : "");
    if (!s->task) {
        sn_sentinel_free(s);
        return sn_err_set(err, SN_E_NOMEM, "sentinel: out of memory");
    }
    *out = s;
    return SN_OK;
}

void sn_sentinel_free(struct sn_sentinel *s)
{
    if (!s)
        return;
    sn_free(s->task);
    sn_buf_free(&s->entries);
    sn_free(s->off);
    sn_free(s->hist);
    sn_free(s);
}

int sn_sentinel_add_history(struct sn_sentinel *s, size_t round,
                            const struct sn_sentinel_msg *m, struct sn_err *err)
{
    if (s->n_hist == s->cap_hist) {
        size_t cap = s->cap_hist ? 2 * s->cap_hist : 16;
        size_t *off = sn_realloc(s->off, cap * sizeof *off);
        if (!off)
            return sn_err_set(err, SN_E_NOMEM, "sentinel: out of memory");
        s->off = off;
        const char **h = sn_realloc(s->hist, cap * sizeof *h);
        if (!h)
            return sn_err_set(err, SN_E_NOMEM, "sentinel: out of memory");
        s->hist = h;
        s->cap_hist = cap;
    }
    struct sn_context_params cp = sn_context_default_params();
    if (s->p.history_sentences)
        cp.history_sentences = s->p.history_sentences;
    if (s->p.history_chars)
        cp.history_chars = s->p.history_chars;
    size_t at = s->entries.len;
    int rc = sn_context_history_entry(round, m->agent, m->answer, m->text ? m->text : "", &cp,
                                      &s->entries, err);
    if (!rc)
        rc = sn_buf_append(&s->entries, "", 1, err);
    if (rc) {
        s->entries.len = at; /* the history is unchanged on failure */
        return rc;
    }
    s->off[s->n_hist++] = at;
    return SN_OK;
}

/* hist[i] = entry i (the buffer may have moved since the last call) */
static const char *const *history(struct sn_sentinel *s)
{
    for (size_t i = 0; i < s->n_hist; i++)
        s->hist[i] = s->entries.data + s->off[i];
    return s->hist;
}

int sn_sentinel_update(struct sn_sentinel *s, int round, const int *sender, const float *score,
                       size_t n, uint64_t *added, struct sn_err *err)
{
    double sc[SN_SENTINEL_MAX_AGENTS];
    int    snd[SN_SENTINEL_MAX_AGENTS];
    if (n > SN_SENTINEL_MAX_AGENTS)
        return sn_err_set(err, SN_E_ARG, "sentinel: %zu messages in one round (at most %d, "
                          "one per agent)", n, SN_SENTINEL_MAX_AGENTS);
    for (size_t i = 0; i < n; i++) {
        if (sender[i] < 0 || sender[i] >= SN_SENTINEL_MAX_AGENTS)
            return sn_err_set(err, SN_E_ARG, "sentinel: message %zu: agent %d is not an agent "
                              "id (0..%d)", i, sender[i], SN_SENTINEL_MAX_AGENTS - 1);
        sc[i] = score[i];
        snd[i] = sender[i];
    }
    if (round < 0)
        return sn_err_set(err, SN_E_ARG, "sentinel: round %d < 0", round);
    uint64_t rs = sn_defense_round_seed(s->p.tie_seed, s->p.self, round);
    uint64_t before = s->blacklist;
    /* B_t as `sentinel eval` takes it: under rule all the candidates do not depend on the list
    ** (the bottom-k of an empty one); under unlisted, what the step adds */
    uint64_t bt = s->p.rule == SN_DEFENSE_RULE_ALL
                      ? sn_defense_bottom_k(0, snd, sc, n, s->p.k, s->p.rule, rs)
                      : sn_defense_bottom_k(before, snd, sc, n, s->p.k, s->p.rule, rs) & ~before;
    s->blacklist = before | bt;
    if (added)
        *added = bt;
    return SN_OK;
}

int sn_sentinel_round(struct sn_sentinel *s, const struct sn_sentinel_scorer *sc, int round,
                      const struct sn_sentinel_msg *msgs, size_t n, float *scores,
                      bool *excluded, uint64_t *added, struct sn_err *err)
{
    int sender[SN_SENTINEL_MAX_AGENTS];
    const char *text[SN_SENTINEL_MAX_AGENTS];
    if (added)
        *added = 0;
    if (n > SN_SENTINEL_MAX_AGENTS)
        return sn_err_set(err, SN_E_ARG, "sentinel: %zu messages in one round (at most %d, "
                          "one per agent)", n, SN_SENTINEL_MAX_AGENTS);
    for (size_t i = 0; i < n; i++) {
        sender[i] = msgs[i].agent;
        text[i] = msgs[i].text ? msgs[i].text : "";
    }
    int rc = sc->score(sc->ctx, s->task, history(s), s->n_hist, text, n, scores, err);
    if (rc)
        return sn_err_wrap(err, "sentinel %d, round %d", s->p.self, round);
    if ((rc = sn_sentinel_update(s, round, sender, scores, n, added, err)))
        return rc;
    for (size_t i = 0; excluded && i < n; i++)
        excluded[i] = sn_sentinel_excludes(s, msgs[i].agent);
    return SN_OK;
}

uint64_t sn_sentinel_blacklist(const struct sn_sentinel *s) { return s ? s->blacklist : 0; }

bool sn_sentinel_excludes(const struct sn_sentinel *s, int agent)
{
    return s && agent >= 0 && agent < SN_SENTINEL_MAX_AGENTS && ((s->blacklist >> agent) & 1);
}

size_t sn_sentinel_n_history(const struct sn_sentinel *s) { return s ? s->n_hist : 0; }

int sn_sentinel_context(const struct sn_sentinel *s, struct sn_buf *out, struct sn_err *err)
{
    const char **h = sn_calloc(s->n_hist + 1, sizeof *h);
    if (!h)
        return sn_err_set(err, SN_E_NOMEM, "sentinel: out of memory");
    for (size_t i = 0; i < s->n_hist; i++)
        h[i] = s->entries.data + s->off[i];
    struct sn_prompt pr = {NULL, s->task, h, s->n_hist};
    int rc = sn_template_context(&pr, out, err);
    sn_free(h);
    return rc;
}

void sn_sentinel_rewind(struct sn_sentinel *s, uint64_t blacklist, size_t n_history)
{
    if (!s)
        return;
    s->blacklist = blacklist;
    if (n_history < s->n_hist) {
        s->entries.len = s->off[n_history];
        s->n_hist = n_history;
    }
}
