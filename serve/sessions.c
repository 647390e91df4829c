/* serve/sessions.c: debate sessions of `sentinel serve` (serve/serve_internal.h; docs/agents.md
** "Debate sessions"): Algorithm 1 server side. A session holds one sentinel (defense/defense.h)
** per agent that runs the defense; each posted round is scored by every sentinel (the
** messages of the other agents: a complete topology), then appended, in the order posted, to
** every sentinel's history, which is the context of the next round: the context `sentinel
** eval` replays and the tuple builder trained on (context/context.h). */
#include "serve/serve_internal.h"
#include "context/context.h"
#include "defense/defense.h"
#include "export/export.h"

#include <pthread.h>
#include <string.h>

#define ID_LEN 24 /* hex digits of a session id (96 bits) */

struct sn_serve_session {
    char     id[ID_LEN + 1];
    uint64_t sentinels;                               /* bit j: agent j runs Algorithm 1 */
    struct sn_sentinel *sn[SN_SENTINEL_MAX_AGENTS];
    int      k, rule;
    uint64_t seed;
    int      next_round;
    enum sn_task task;                                /* for answer extraction */
    size_t   n_options;
    bool     has_kind;                                /* question given: extraction works */
    double   last_used;
    bool     busy;                                    /* a round is running */
    uint64_t bl[SN_SENTINEL_MAX_AGENTS];              /* blacklists as of the last finished
                                                      ** round: what GET shows, under the
                                                      ** table's mutex, while a round runs */
    struct sn_serve_session *next;
};

struct sn_serve_sessions {
    struct sn_serve_sessions_params p;
    pthread_mutex_t mu;
    struct sn_serve_session *head;
    size_t n;
    struct sn_rng rng;
};

static void session_free(struct sn_serve_session *s)
{
    if (!s)
        return;
    for (int j = 0; j < SN_SENTINEL_MAX_AGENTS; j++)
        sn_sentinel_free(s->sn[j]);
    sn_free(s);
}

int sn_serve_sessions_create(const struct sn_serve_sessions_params *p,
                             struct sn_serve_sessions **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_serve_sessions *t = sn_calloc(1, sizeof *t);
    if (!t)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    t->p = *p;
    pthread_mutex_init(&t->mu, NULL);
    sn_rng_seed(&t->rng, p->seed);
    *out = t;
    return SN_OK;
}

void sn_serve_sessions_free(struct sn_serve_sessions *t)
{
    if (!t)
        return;
    while (t->head) {
        struct sn_serve_session *s = t->head;
        t->head = s->next;
        session_free(s);
    }
    pthread_mutex_destroy(&t->mu);
    sn_free(t);
}

/* drops sessions unused for ttl_s (never one whose round is running); caller holds mu */
static void expire(struct sn_serve_sessions *t, double now)
{
    struct sn_serve_session **pp = &t->head;
    while (*pp) {
        struct sn_serve_session *s = *pp;
        if (!s->busy && now - s->last_used > t->p.ttl_s) {
            *pp = s->next;
            session_free(s);
            t->n--;
        } else {
            pp = &s->next;
        }
    }
}

static struct sn_serve_session *find(struct sn_serve_sessions *t, const char *id)
{
    for (struct sn_serve_session *s = t->head; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

size_t sn_serve_sessions_live(struct sn_serve_sessions *t)
{
    pthread_mutex_lock(&t->mu);
    size_t n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}

static int blacklist_json(struct sn_buf *b, uint64_t bl, struct sn_err *err)
{
    int rc = sn_buf_puts(b, "[", err);
    bool first = true;
    for (int j = 0; j < SN_SENTINEL_MAX_AGENTS && !rc; j++)
        if ((bl >> j) & 1) {
            rc = sn_buf_printf(b, err, "%s%d", first ? "" : ",", j);
            first = false;
        }
    return rc ? rc : sn_buf_puts(b, "]", err);
}

/* agents excluded at the agent level, as `sentinel eval` counts them (docs/eval.md): more than
** half of the other sentinels have them on their blacklists */
static uint64_t excluded_agents(const struct sn_serve_session *s, const uint64_t *bl)
{
    uint64_t out = 0;
    for (int j = 0; j < SN_SENTINEL_MAX_AGENTS; j++) {
        int votes = 0, eligible = 0;
        for (int q = 0; q < SN_SENTINEL_MAX_AGENTS; q++) {
            if (q == j || !s->sn[q])
                continue;
            eligible++;
            votes += (int)((bl[q] >> j) & 1);
        }
        if (eligible && 2 * votes > eligible)
            out |= 1ULL << j;
    }
    return out;
}

/* the session's state: id, next round, and each sentinel's blacklist */
static int state_json(const struct sn_serve_session *s, double ttl, struct sn_buf *b,
                      struct sn_err *err)
{
    int rc = sn_buf_printf(b, err, "{\"id\":\"%s\",\"round\":%d,\"k\":%d,\"rule\":\"%s\","
                           "\"expires_in_s\":%.0f,\"sentinels\":[", s->id, s->next_round, s->k,
                           sn_defense_rule_name((enum sn_defense_rule)s->rule), ttl);
    bool first = true;
    for (int q = 0; q < SN_SENTINEL_MAX_AGENTS && !rc; q++) {
        if (!s->sn[q])
            continue;
        rc = sn_buf_printf(b, err, "%s{\"agent\":%d,\"blacklist\":", first ? "" : ",", q);
        first = false;
        if (!rc)
            rc = blacklist_json(b, s->bl[q], err);
        if (!rc)
            rc = sn_buf_puts(b, "}", err);
    }
    if (!rc)
        rc = sn_buf_puts(b, "],\"excluded\":", err);
    if (!rc)
        rc = blacklist_json(b, excluded_agents(s, s->bl), err);
    return rc ? rc : sn_buf_puts(b, "}", err);
}

int sn_serve_session_new(struct sn_serve_sessions *t, const struct sn_serve_req *req,
                         struct sn_buf *reply, int *status, struct sn_err *err)
{
    struct sn_serve_session *s = sn_calloc(1, sizeof *s);
    struct sn_buf task = {0};
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    s->sentinels = req->sentinels;
    s->k = req->k;
    s->rule = req->rule;
    s->seed = req->seed;
    int rc = SN_OK;
    if (req->task) {
        rc = sn_buf_puts(&task, req->task, err);
    } else {
        s->has_kind = true;
        s->task = req->n_options ? SN_TASK_MC : SN_TASK_NUMERIC;
        s->n_options = req->n_options;
        rc = sn_context_task_text(s->task, req->question, req->options, req->n_options, &task,
                                  err);
    }
    for (int j = 0; j < SN_SENTINEL_MAX_AGENTS && !rc; j++) {
        if (!((s->sentinels >> j) & 1))
            continue;
        struct sn_sentinel_params sp = sn_sentinel_default_params();
        sp.self = j;
        sp.k = req->k;
        sp.rule = (enum sn_defense_rule)req->rule;
        sp.tie_seed = req->seed;
        sp.history_sentences = t->p.history_sentences;
        sp.history_chars = t->p.history_chars;
        rc = sn_sentinel_create(&sp, task.data ? task.data : "", &s->sn[j], err);
    }
    sn_buf_free(&task);
    if (rc) {
        session_free(s);
        *status = 400;
        return rc;
    }
    pthread_mutex_lock(&t->mu);
    double now = sn_now();
    expire(t, now);
    if (t->n >= (size_t)t->p.max_sessions) {
        pthread_mutex_unlock(&t->mu);
        session_free(s);
        *status = 429;
        return sn_err_set(err, SN_E_ARG, "too many debate sessions (%d live, the server's "
                          "--max-sessions); DELETE finished ones or wait for idle ones to expire "
                          "(after %.0f s)", t->p.max_sessions, t->p.ttl_s);
    }
    do {
        uint64_t a = sn_rng_u64(&t->rng), b = sn_rng_u64(&t->rng);
        snprintf(s->id, sizeof s->id, "%016llx%08llx", (unsigned long long)a,
                 (unsigned long long)(b & 0xffffffffULL));
    } while (find(t, s->id));
    s->last_used = now;
    s->next = t->head;
    t->head = s;
    t->n++;
    rc = state_json(s, t->p.ttl_s, reply, err);
    pthread_mutex_unlock(&t->mu);
    *status = 201;
    return rc;
}

int sn_serve_session_acquire(struct sn_serve_sessions *t, const char *id,
                             struct sn_serve_session **out, int *status, struct sn_err *err)
{
    *out = NULL;
    pthread_mutex_lock(&t->mu);
    expire(t, sn_now());
    struct sn_serve_session *s = find(t, id);
    int rc = SN_OK;
    if (!s) {
        *status = 404;
        rc = sn_err_set(err, SN_E_ARG, "no debate session '%.40s' (unknown, deleted or expired "
                        "after %.0f s unused)", id, t->p.ttl_s);
    } else if (s->busy) {
        *status = 409;
        rc = sn_err_set(err, SN_E_ARG, "debate session '%s' is running a round; post rounds "
                        "one at a time", id);
    } else {
        s->busy = true;
        *out = s;
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void sn_serve_session_release(struct sn_serve_sessions *t, struct sn_serve_session *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&t->mu);
    for (int q = 0; q < SN_SENTINEL_MAX_AGENTS; q++)
        s->bl[q] = sn_sentinel_blacklist(s->sn[q]);
    s->busy = false;
    s->last_used = sn_now();
    pthread_mutex_unlock(&t->mu);
}

int sn_serve_session_get(struct sn_serve_sessions *t, const char *id, struct sn_buf *reply,
                         int *status, struct sn_err *err)
{
    pthread_mutex_lock(&t->mu);
    double now = sn_now();
    expire(t, now);
    struct sn_serve_session *s = find(t, id);
    int rc;
    if (!s) {
        *status = 404;
        rc = sn_err_set(err, SN_E_ARG, "no debate session '%.40s' (unknown, deleted or expired "
                        "after %.0f s unused)", id, t->p.ttl_s);
    } else {
        /* the blacklists as of the last finished round (s->bl), even while one runs */
        *status = 200;
        s->last_used = now;
        rc = state_json(s, t->p.ttl_s, reply, err);
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

int sn_serve_session_delete(struct sn_serve_sessions *t, const char *id, int *status,
                            struct sn_err *err)
{
    pthread_mutex_lock(&t->mu);
    int rc = SN_OK;
    struct sn_serve_session **pp = &t->head;
    while (*pp && strcmp((*pp)->id, id) != 0)
        pp = &(*pp)->next;
    if (!*pp) {
        *status = 404;
        rc = sn_err_set(err, SN_E_ARG, "no debate session '%.40s'", id);
    } else if ((*pp)->busy) {
        *status = 409;
        rc = sn_err_set(err, SN_E_ARG, "debate session '%s' is running a round", id);
    } else {
        struct sn_serve_session *s = *pp;
        *pp = s->next;
        session_free(s);
        t->n--;
        *status = 204;
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

/* the runtime detector as the sentinels' scorer (defense/defense.h) */
static int det_score(void *d, const char *task, const char *const *hist, size_t n_hist,
                     const char *const *resp, size_t n, float *out, struct sn_err *err)
{
    return sn_detector_score_prompt(d, task, hist, n_hist, resp, n, out, err);
}

int sn_serve_session_round(struct sn_serve_session *s, struct sn_detector *d,
                           const struct sn_serve_req *req, struct sn_buf *reply, int *status,
                           struct sn_err *err)
{
    struct sn_sentinel_scorer scorer = {det_score, d};
    int round = req->round < 0 ? s->next_round : req->round;
    if (round != s->next_round) {
        *status = 409;
        return sn_err_set(err, SN_E_ARG, "round %d posted, but session '%s' expects round %d "
                          "(rounds are posted in order, from 0)", round, s->id, s->next_round);
    }
    size_t n = req->n;
    char (*ans)[SN_ANSWER_MAX] = sn_calloc(n + 1, sizeof *ans);
    struct sn_sentinel_msg *msgs = sn_calloc(n + 1, sizeof *msgs);
    struct sn_sentinel_msg *recv = sn_calloc(n + 1, sizeof *recv);
    float *sc = sn_calloc(n + 1, sizeof *sc);
    bool *ex = sn_calloc(n + 1, sizeof *ex);
    int rc = ans && msgs && recv && sc && ex ? SN_OK
                                             : sn_err_set(err, SN_E_NOMEM, "out of memory");
    /* answers: as given; null = none parsed; absent = extracted (docs/agents.md) */
    for (size_t i = 0; i < n && !rc; i++) {
        const char *a = req->answers[i];
        if (!a && s->has_kind && sn_extract_answer(req->texts[i], s->task, s->n_options, ans[i]))
            a = ans[i];
        msgs[i] = (struct sn_sentinel_msg){req->agents[i], req->texts[i], a && *a ? a : NULL};
    }
    /* every sentinel's new blacklist is computed first and swapped in only when all rounds
    ** succeeded, so a failure leaves the session as it was (the round can be posted again) */
    uint64_t before[SN_SENTINEL_MAX_AGENTS] = {0};
    size_t   hist[SN_SENTINEL_MAX_AGENTS] = {0};
    for (int q = 0; q < SN_SENTINEL_MAX_AGENTS; q++) {
        before[q] = sn_sentinel_blacklist(s->sn[q]);
        hist[q] = sn_sentinel_n_history(s->sn[q]);
    }
    if (!rc)
        rc = sn_buf_printf(reply, err, "{\"id\":\"%s\",\"round\":%d,\"sentinels\":[", s->id,
                           round);
    bool first = true;
    for (int q = 0; q < SN_SENTINEL_MAX_AGENTS && !rc; q++) {
        if (!s->sn[q])
            continue;
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (msgs[i].agent != q)
                recv[m++] = msgs[i];
        uint64_t added = 0;
        if (m)
            rc = sn_sentinel_round(s->sn[q], &scorer, round, recv, m, sc, ex, &added, err);
        if (!rc)
            rc = sn_buf_printf(reply, err, "%s{\"agent\":%d,\"scores\":[", first ? "" : ",", q);
        first = false;
        for (size_t i = 0; i < m && !rc; i++)
            rc = sn_buf_printf(reply, err, "%s{\"agent\":%d,\"score\":%.9g,\"excluded\":%s}",
                               i ? "," : "", recv[i].agent, (double)sc[i],
                               ex[i] ? "true" : "false");
        if (!rc)
            rc = sn_buf_puts(reply, "],\"added\":", err);
        if (!rc)
            rc = blacklist_json(reply, added, err);
        if (!rc)
            rc = sn_buf_puts(reply, ",\"blacklist\":", err);
        if (!rc)
            rc = blacklist_json(reply, sn_sentinel_blacklist(s->sn[q]), err);
        if (!rc)
            rc = sn_buf_puts(reply, "}", err);
    }
    /* the round joins every sentinel's history (the context of the next round) */
    for (int q = 0; q < SN_SENTINEL_MAX_AGENTS && !rc; q++)
        for (size_t i = 0; s->sn[q] && i < n && !rc; i++)
            rc = sn_sentinel_add_history(s->sn[q], (size_t)round, &msgs[i], err);
    if (!rc)
        rc = sn_buf_puts(reply, "],\"excluded\":", err);
    if (!rc)
    {
        uint64_t now[SN_SENTINEL_MAX_AGENTS];
        for (int q = 0; q < SN_SENTINEL_MAX_AGENTS; q++)
            now[q] = sn_sentinel_blacklist(s->sn[q]);
        if (!rc)
            rc = blacklist_json(reply, excluded_agents(s, now), err);
    }
    if (!rc)
        rc = sn_buf_puts(reply, "}", err);
    if (rc) {
        *status = err->code == SN_E_NOMEM ? 503 : 500;
        for (int q = 0; q < SN_SENTINEL_MAX_AGENTS; q++)
            if (s->sn[q])
                sn_sentinel_rewind(s->sn[q], before[q], hist[q]);
    } else {
        s->next_round = round + 1;
        *status = 200;
    }
    sn_free(ans);
    sn_free(msgs);
    sn_free(recv);
    sn_free(sc);
    sn_free(ex);
    return rc;
}
