/* sim/engine.c: one multi-agent debate (docs/design.md §4 "Debate"; docs/simulate.md
** #visibility), handed to the trajectory writer (data/data.h) as one sentinel.trajectory/1
** line (docs/formats.md "Trajectory").
**
** Visibility (what agent k has in view when it speaks in round t; in-edges from the topology,
** adj[j][k] = 1):
**   simultaneous   t = 0: nothing. t > 0: the round t-1 message of every in-neighbour j.
**   one_by_one     agents speak in id order in one shared stream; k sees the LATEST message
**                  of every in-neighbour j: round t's if j spoke before k in this round
**                  (j < k), else round t-1's (t > 0). Round 0 therefore already sees
**                  earlier speakers.
**   sc_one_by_one  round 0 as simultaneous (independent answers), then one_by_one.
** What is in view is the DELIVERED copy (AITM may have rewritten it), after the defense
** filter. Collaboration adversaries additionally see their fellow adversaries' latest replies
** (marked ally), whatever the topology. An agent always knows its own previous answer.
** Interceptors do not speak. Every backend call gets a seed derived from the debate seed and
** (label, agent, round, candidate), so a debate never depends on thread timing. */
#include "sim/sim.h"
#include "context/context.h"
#include "data/data.h"

#include <stdlib.h>
#include <string.h>

struct delivery {
    char *text; /* NULL = receiver got the original */
    char  answer[SN_ANSWER_MAX];
    bool  parsed;
};

struct msg {
    bool   spoke;
    char  *text;
    char   answer[SN_ANSWER_MAX];
    bool   parsed;
    double latency_ms;
    long   pt, ct;
    char  *draft;    /* self-reflection draft */
    char  *original; /* autoinject: the agent's text before the transform */
    char   injected_target[SN_ANSWER_MAX];
    struct delivery *deliv; /* n entries when some copy was rewritten (AITM) */
    uint64_t blacklist;
    int    n_candidates;
    bool   llm_extracted; /* the answer came from the second-pass extraction call */
    /* what the endpoint said of the reply that became `text` (NULL when it did not say) */
    char  *finish_reason, *served_model, *fingerprint;
    bool   refused;
};

struct debate {
    const struct sn_debate_setup *s;
    const struct sn_experiment *x;
    const struct sn_question *q;
    uint64_t seed;
    int n, T;
    struct sn_attack_plan plan;
    struct sn_defense *defense;
    struct msg *m; /* T * n */
    int pos[SN_SIM_MAX_AGENTS]; /* speaking position within a round (= id order) */
    struct sn_buf options; /* "A) ...\n" lines for the prompts */
    char format[160];
    struct sn_debate_stats *stats;
    struct sn_buf prompt_sys, prompt_user, peers_txt;
};

static struct msg *M(const struct debate *d, int t, int k) { return &d->m[(size_t)t * d->n + k]; }

static struct sn_llm_backend *slot_backend(const struct debate *d, int k)
{
    enum sn_role r = d->plan.role[k];
    return d->s->role_backend[r] ? d->s->role_backend[r] : d->s->backend[k];
}
static const char *slot_model(const struct debate *d, int k)
{
    enum sn_role r = d->plan.role[k];
    if (d->s->role_backend[r])
        return d->s->role_model[r] ? d->s->role_model[r] : "sim";
    return d->s->model ? d->s->model[k] : "sim";
}
static const char *slot_backend_name(const struct debate *d, int k)
{
    enum sn_role r = d->plan.role[k];
    if (d->s->role_backend[r])
        return d->s->role_backend_name[r] ? d->s->role_backend_name[r] : "sim";
    return d->s->backend_name ? d->s->backend_name[k] : "sim";
}

void sn_debate_id(const char *experiment, const char *item_id, int replicate, uint64_t seed,
                  char *out, size_t cap)
{
    struct sn_sha256 h;
    uint8_t dig[32];
    char tail[64];
    sn_sha256_init(&h);
    sn_sha256_update(&h, experiment, strlen(experiment) + 1);
    sn_sha256_update(&h, item_id, strlen(item_id) + 1);
    int n = snprintf(tail, sizeof tail, "%d", replicate);
    sn_sha256_update(&h, tail, (size_t)n + 1);
    n = snprintf(tail, sizeof tail, "%llu", (unsigned long long)seed);
    sn_sha256_update(&h, tail, (size_t)n);
    sn_sha256_final(&h, dig);
    char hex[17];
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", dig[i]);
    snprintf(out, cap, "%s-%s", experiment, hex);
}

uint64_t sn_debate_seed(uint64_t exp_seed, const char *item_id, int replicate)
{
    return sn_seed_derive(sn_seed_derive(exp_seed, item_id, 0), "replicate", (uint64_t)replicate);
}

/* ---- prompts and calls ---- */

static int format_peers(struct debate *d, const struct sn_sim_peer *peers, size_t n,
                        struct sn_err *err)
{
    sn_buf_reset(&d->peers_txt);
    for (size_t i = 0; i < n; i++)
        if (sn_buf_printf(&d->peers_txt, err, "%sAgent %d%s: %s\n", i ? "\n" : "",
                          peers[i].agent, peers[i].ally ? " (your ally)" : "", peers[i].text))
            return err->code;
    if (!n && sn_buf_puts(&d->peers_txt, "(no messages)", err))
        return err->code;
    return SN_OK;
}

/* One backend call for slot k's backend (or the judge), with the prompt rendered from the
** experiment's templates. */
static int call(struct debate *d, struct sn_llm_backend *be, enum sn_prompt_id sys,
                enum sn_prompt_id user, const struct sn_sim_hint *h, const char *label,
                uint64_t index, struct sn_llm_reply *rep, struct sn_err *err)
{
    const struct sn_experiment *x = d->x;
    char agent[16], round[16];
    snprintf(agent, sizeof agent, "%d", h->agent);
    snprintf(round, sizeof round, "%d", h->round);
    int rc = format_peers(d, h->peers, h->n_peers, err);
    if (rc)
        return rc;
    const char *vars[] = {"agent", agent, "question", d->q->question, "options", d->options.data,
                          "format", d->format, "peers", d->peers_txt.data,
                          "own_answer", h->own_prev ? h->own_prev : "(none)",
                          "target", h->target ? h->target : "", "persona",
                          h->persona ? h->persona : "logos", "round", round,
                          "original", h->original_text ? h->original_text : "",
                          "draft", h->own_text ? h->own_text : "", NULL, NULL};
    sn_buf_reset(&d->prompt_sys);
    sn_buf_reset(&d->prompt_user);
    struct sn_chat_msg msgs[2];
    size_t n_msgs = 0;
    if (sys != SN_PROMPT_NONE) {
        if ((rc = sn_prompt_render(&x->prompts, sys, vars, &d->prompt_sys, err)))
            return rc;
        msgs[n_msgs++] = (struct sn_chat_msg){"system", d->prompt_sys.data};
    }
    if ((rc = sn_prompt_render(&x->prompts, user, vars, &d->prompt_user, err)))
        return rc;
    msgs[n_msgs++] = (struct sn_chat_msg){"user", d->prompt_user.data};
    struct sn_llm_request req = {
        .messages = msgs, .n_messages = n_msgs, .model = NULL,
        .temperature = x->temperature, .top_p = x->top_p, .max_tokens = x->max_tokens,
        /* below 2^31: llama-server keeps seeds as uint32, others as int32 or int64 */
        .has_seed = true, .seed = (int64_t)(sn_seed_derive(d->seed, label, index) >> 33),
        .sim_hint = h,
    };
    rc = sn_llm_complete(be, &req, rep, err);
    if (rc)
        return rc;
    d->stats->calls++;
    if (rep->prompt_tokens > 0)
        d->stats->prompt_tokens += (uint64_t)rep->prompt_tokens;
    if (rep->completion_tokens > 0)
        d->stats->completion_tokens += (uint64_t)rep->completion_tokens;
    if (!rep->text) {
        rep->text = sn_strdup("");
        if (!rep->text)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    return SN_OK;
}

/* The reply's text, taken out of it; the rest of the reply is freed. */
static char *steal_text(struct sn_llm_reply *r)
{
    char *t = r->text;
    r->text = NULL;
    sn_llm_reply_free(r);
    return t;
}

/* steal_text for the reply that becomes m->text: its finish_reason, served model, fingerprint
** and refusal flag go with it into the trajectory (docs/formats.md#trajectory). */
static char *take_text(struct msg *m, struct sn_llm_reply *r)
{
    sn_free(m->finish_reason);
    sn_free(m->served_model);
    sn_free(m->fingerprint);
    m->finish_reason = r->finish_reason;
    m->served_model = r->model;
    m->fingerprint = r->system_fingerprint;
    m->refused = r->refused;
    r->finish_reason = r->model = r->system_fingerprint = NULL;
    return steal_text(r);
}

static void account(struct msg *m, const struct sn_llm_reply *r)
{
    m->latency_ms += r->latency_ms;
    m->pt += r->prompt_tokens > 0 ? r->prompt_tokens : 0;
    m->ct += r->completion_tokens > 0 ? r->completion_tokens : 0;
}

/* ---- visibility ---- */

static const char *deliv_text(const struct msg *m, int to)
{
    return m->deliv && m->deliv[to].text ? m->deliv[to].text : m->text;
}
static const char *deliv_answer(const struct msg *m, int to)
{
    if (m->deliv && m->deliv[to].text)
        return m->deliv[to].parsed ? m->deliv[to].answer : NULL;
    return m->parsed ? m->answer : NULL;
}

/* The latest message of j that k may see when speaking in round t (NULL if none). */
static const struct msg *latest(struct debate *d, int j, int k, int t, int *round)
{
    enum sn_strategy st = d->x->strategy;
    bool obo = st == SN_STRAT_ONE_BY_ONE || (st == SN_STRAT_SC_ONE_BY_ONE && t > 0);
    if (t == 0 && !obo)
        return NULL;
    if (obo && d->pos[j] < d->pos[k] && M(d, t, j)->spoke) {
        *round = t;
        return M(d, t, j);
    }
    if (t > 0 && M(d, t - 1, j)->spoke) {
        *round = t - 1;
        return M(d, t - 1, j);
    }
    return NULL;
}


/* What a sentinel sees before round t: the context of context/context.h, the tuple builder's
** (sn_tuples_context: the task and one extractive entry per message of rounds < t in slot order,
** as the trajectory records them), with the scorer's history settings, so the detector sees at
** run time what it saw in training (docs/simulate.md "Defense"). */
static int defense_context(const struct debate *d, int t, struct sn_buf *out, struct sn_err *err)
{
    const struct sn_defense_scorer *sc = &d->x->defense.scorer;
    struct sn_context_params cp = sn_context_default_params();
    if (sc->history_sentences)
        cp.history_sentences = sc->history_sentences;
    if (sc->history_chars)
        cp.history_chars = sc->history_chars;
    struct sn_buf task = {0};
    size_t n = 0;
    struct sn_context_msg *msgs = sn_calloc((size_t)t * (size_t)d->n + 1, sizeof *msgs);
    int rc = msgs ? sn_context_task_text(d->q->task, d->q->question,
                                         (const char *const *)d->q->options, d->q->n_options,
                                         &task, err)
                  : sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (int r = 0; r < t && !rc; r++)
        for (int j = 0; j < d->n; j++) {
            const struct msg *m = M(d, r, j);
            if (m->spoke)
                msgs[n++] = (struct sn_context_msg){(size_t)r, j, m->parsed ? m->answer : NULL,
                                                    m->text};
        }
    if (!rc)
        rc = sn_context_from_msgs(task.data, msgs, n, &cp, out, err);
    sn_free(msgs);
    sn_buf_free(&task);
    return rc;
}

static int build_view(struct debate *d, int k, int t, struct sn_sim_peer *peers, size_t *n_out,
                      struct sn_err *err)
{
    size_t n = 0;
    for (int j = 0; j < d->n; j++) {
        if (j == k || !d->x->topology.adj[j][k])
            continue;
        int r;
        const struct msg *m = latest(d, j, k, t, &r);
        if (!m)
            continue;
        peers[n++] = (struct sn_sim_peer){j, r, deliv_text(m, k), deliv_answer(m, k), false};
    }
    /* defense filter (before allies: allies talk on a private channel) */
    if (n && d->defense) {
        bool keep[SN_SIM_MAX_AGENTS * 2];
        struct sn_buf ctx = {0};
        int rc = defense_context(d, t, &ctx, err);
        if (!rc)
            rc = sn_defense_filter(d->defense, k, t, ctx.data, peers, n, keep, err);
        sn_buf_free(&ctx);
        if (rc)
            return rc;
        size_t w = 0;
        for (size_t i = 0; i < n; i++)
            if (keep[i])
                peers[w++] = peers[i];
        n = w;
    }
    if (d->x->scenario == SN_SCEN_COLLABORATION && d->plan.role[k] == SN_ROLE_ADVERSARY) {
        for (int j = 0; j < d->n; j++) {
            if (j == k || d->plan.role[j] != SN_ROLE_ADVERSARY)
                continue;
            /* allies: latest actual reply before k in the shared order */
            const struct msg *m = NULL;
            int r = t;
            if (j < k && M(d, t, j)->spoke)
                m = M(d, t, j);
            else if (t > 0 && M(d, t - 1, j)->spoke) {
                m = M(d, t - 1, j);
                r = t - 1;
            }
            if (!m)
                continue;
            /* skip if already in view through the topology (same message) */
            bool dup = false;
            for (size_t i = 0; i < n; i++)
                dup = dup || (peers[i].agent == j && peers[i].round == r);
            if (!dup)
                peers[n++] = (struct sn_sim_peer){j, r, m->text, m->parsed ? m->answer : NULL,
                                                  true};
        }
    }
    *n_out = n;
    return SN_OK;
}

/* ---- one turn ---- */

static void parse_into(struct debate *d, const char *text, char *answer, bool *parsed)
{
    *parsed = sn_extract_answer(text, d->q->task, d->q->n_options, answer);
}

/* Adaptive autoinject target: the most supported wrong answer in view, else the plan's. */
static const char *adaptive_target(struct debate *d, const struct sn_sim_peer *peers, size_t n)
{
    const char *best = NULL;
    int best_c = 0;
    for (size_t i = 0; i < n; i++) {
        const char *a = peers[i].answer;
        if (!a || sn_answer_equal(a, d->q->gold, d->q->task))
            continue;
        int c = 0;
        for (size_t j = 0; j < n; j++)
            c += peers[j].answer && strcmp(peers[j].answer, a) == 0;
        if (c > best_c) {
            best_c = c;
            best = a;
        }
    }
    return best ? best : d->plan.target;
}

static int speak(struct debate *d, int k, int t, struct sn_err *err)
{
    const struct sn_experiment *x = d->x;
    struct sn_sim_peer peers[SN_SIM_MAX_AGENTS * 2];
    size_t n_peers = 0;
    int rc = build_view(d, k, t, peers, &n_peers, err);
    if (rc)
        return rc;
    struct msg *me = M(d, t, k);
    const struct msg *prev = t > 0 ? M(d, t - 1, k) : NULL;
    const char *own_prev = prev && prev->spoke && prev->parsed ? prev->answer : NULL;
    bool consensus = own_prev != NULL && n_peers > 0;
    for (size_t i = 0; i < n_peers && consensus; i++)
        if (!peers[i].answer || strcmp(peers[i].answer, own_prev) != 0)
            consensus = false;
    enum sn_role role = d->plan.role[k];
    struct sn_sim_hint h = {
        .magic = SN_SIM_HINT_MAGIC, .call = SN_SIM_CALL_ANSWER, .q = d->q,
        .target = d->plan.target[0] ? d->plan.target : NULL, .role = role,
        .scenario = x->scenario, .persona = d->plan.persona[k], .agent = k, .round = t,
        .n_rounds = d->T, .own_prev = own_prev, .peers = peers, .n_peers = n_peers,
        .reflected = x->self_reflection && t > 0, .consensus_prev = consensus,
        .original_sender = -1,
    };
    me->blacklist = sn_defense_blacklist(d->defense, k);
    struct sn_llm_backend *be = slot_backend(d, k);
    bool attacker = role == SN_ROLE_ADVERSARY && x->scenario != SN_SCEN_AUTOINJECT;
    enum sn_prompt_id sys = !attacker ? SN_PROMPT_SYSTEM_HONEST
                            : x->scenario == SN_SCEN_STYLE_MATCHED ? SN_PROMPT_SYSTEM_STYLE_MATCHED
                                                                   : SN_PROMPT_SYSTEM_ADVERSARY;
    enum sn_prompt_id user = t == 0 ? SN_PROMPT_FIRST_ROUND : SN_PROMPT_DEBATE_ROUND;
    if (t == 0 && n_peers > 0) /* one-by-one round 0 already has messages in view */
        user = SN_PROMPT_DEBATE_ROUND;
    struct sn_llm_reply rep;
    int n_cand = attacker && x->best_of_n > 1 ? x->best_of_n : 1;
    char *best_text = NULL;
    double best_score = -1.0;
    for (int c = 0; c < n_cand; c++) {
        h.candidate = c;
        rc = call(d, be, sys, user, &h, "answer", ((uint64_t)t << 32) | ((uint64_t)k << 8) |
                  (uint64_t)c, &rep, err);
        if (rc)
            return sn_err_wrap(err, "agent %d, round %d", k, t);
        account(me, &rep);
        if (n_cand == 1) {
            best_text = take_text(me, &rep);
            break;
        }
        /* best-of-N: the judge rates each candidate; the most persuasive is sent */
        struct sn_sim_hint sh = h;
        sh.call = SN_SIM_CALL_SCORE;
        sh.original_text = rep.text;
        struct sn_llm_reply sr;
        rc = call(d, d->s->judge, SN_PROMPT_NONE, SN_PROMPT_SCORE, &sh, "score",
                  ((uint64_t)t << 32) | ((uint64_t)k << 8) | (uint64_t)c, &sr, err);
        if (rc) {
            sn_llm_reply_free(&rep);
            return sn_err_wrap(err, "agent %d, round %d, best-of-%d scoring", k, t, n_cand);
        }
        char sc[SN_ANSWER_MAX];
        double v = sn_extract_answer(sr.text, SN_TASK_NUMERIC, 0, sc) ? strtod(sc, NULL) : 0.0;
        sn_llm_reply_free(&sr);
        if (v > best_score) {
            best_score = v;
            sn_free(best_text);
            best_text = take_text(me, &rep);
        }
        sn_llm_reply_free(&rep);
    }
    me->n_candidates = n_cand;
    me->text = best_text;
    me->spoke = true;
    parse_into(d, me->text, me->answer, &me->parsed);
    /* optional self-reflection (round 0): the reflection replaces the draft */
    if (x->self_reflection && t == 0) {
        struct sn_sim_hint rh = h;
        rh.call = SN_SIM_CALL_REFLECT;
        rh.own_text = me->text;
        rc = call(d, be, sys, SN_PROMPT_REFLECT, &rh, "reflect", ((uint64_t)t << 32) | (uint64_t)k,
                  &rep, err);
        if (rc)
            return sn_err_wrap(err, "agent %d, round %d, self-reflection", k, t);
        account(me, &rep);
        me->draft = me->text;
        me->text = take_text(me, &rep);
        parse_into(d, me->text, me->answer, &me->parsed);
    }
    /* autoinject: a faulty agent's message is rewritten with probability injection_rate */
    if (role == SN_ROLE_ADVERSARY && x->scenario == SN_SCEN_AUTOINJECT) {
        struct sn_rng rng;
        sn_rng_seed(&rng, sn_seed_derive(d->seed, "autoinject", ((uint64_t)t << 8) | (uint64_t)k));
        if (sn_rng_uniform(&rng) < x->injection_rate) {
            const char *tgt = x->adaptive ? adaptive_target(d, peers, n_peers) : d->plan.target;
            struct sn_sim_hint ih = h;
            ih.call = SN_SIM_CALL_REWRITE;
            ih.injected = true;
            ih.target = tgt;
            ih.original_text = me->text;
            ih.original_answer = me->parsed ? me->answer : NULL;
            ih.original_sender = k;
            rc = call(d, be, SN_PROMPT_NONE, SN_PROMPT_REWRITE, &ih, "inject",
                      ((uint64_t)t << 32) | (uint64_t)k, &rep, err);
            if (rc)
                return sn_err_wrap(err, "agent %d, round %d, autoinject transform", k, t);
            account(me, &rep);
            snprintf(me->injected_target, sizeof me->injected_target, "%s", tgt);
            me->original = me->text;
            me->text = take_text(me, &rep);
            parse_into(d, me->text, me->answer, &me->parsed);
        }
    }
    /* optional second pass: the endpoint states the answer of a reply the rules could not
    ** parse (recorded as answer_source "llm"; the text itself is unchanged) */
    if (!me->parsed && x->llm_extract) {
        struct sn_sim_hint eh = h;
        eh.call = SN_SIM_CALL_EXTRACT;
        eh.original_text = me->text;
        eh.original_sender = k;
        eh.peers = NULL;
        eh.n_peers = 0;
        rc = call(d, be, SN_PROMPT_NONE, SN_PROMPT_EXTRACT, &eh, "extract",
                  ((uint64_t)t << 32) | (uint64_t)k, &rep, err);
        if (rc)
            return sn_err_wrap(err, "agent %d, round %d, answer extraction", k, t);
        account(me, &rep);
        parse_into(d, rep.text, me->answer, &me->parsed);
        me->llm_extracted = me->parsed;
        sn_llm_reply_free(&rep);
    }
    /* AITM: rewrite the copies on intercepted edges out of k */
    for (int v = 0; v < d->n; v++) {
        if (!d->plan.intercepted[k][v] || !x->topology.adj[k][v])
            continue;
        int ic = d->plan.interceptor_of[k][v];
        if (!me->deliv) {
            me->deliv = sn_calloc((size_t)d->n, sizeof *me->deliv);
            if (!me->deliv)
                return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        struct sn_sim_hint ih = h;
        ih.call = SN_SIM_CALL_REWRITE;
        ih.role = SN_ROLE_INTERCEPTOR;
        ih.agent = ic;
        ih.persona = NULL;
        ih.target = d->plan.target;
        ih.original_text = me->text;
        ih.original_answer = me->parsed ? me->answer : NULL;
        ih.original_sender = k;
        ih.peers = NULL;
        ih.n_peers = 0;
        rc = call(d, slot_backend(d, ic), SN_PROMPT_NONE, SN_PROMPT_REWRITE, &ih, "intercept",
                  ((uint64_t)t << 32) | ((uint64_t)k << 8) | (uint64_t)v, &rep, err);
        if (rc)
            return sn_err_wrap(err, "interceptor %d on edge %d->%d, round %d", ic, k, v, t);
        if (strcmp(rep.text, me->text) == 0) { /* passed on unchanged: not a tampered copy */
            sn_llm_reply_free(&rep);
            continue;
        }
        me->deliv[v].text = steal_text(&rep);
        parse_into(d, me->deliv[v].text, me->deliv[v].answer, &me->deliv[v].parsed);
    }
    return SN_OK;
}

/* ---- decision ---- */

/* Majority over the parsed answers of the last round's speakers, decided by the project's one
** plurality vote (data/data.h) under its default tie rule: a tie is no decision (NULL), so no
** slot is favoured. NULL also when nobody parsed. */
static bool vote_eq(const char *a, const char *b, void *ctx)
{
    return sn_answer_equal(a, b, *(const enum sn_task *)ctx);
}

static const char *majority(struct debate *d, int t)
{
    const char *votes[SN_SIM_MAX_AGENTS];
    for (int k = 0; k < d->n; k++) {
        const struct msg *m = M(d, t, k);
        votes[k] = m->spoke && m->parsed ? m->answer : NULL;
    }
    enum sn_task task = d->q->task;
    int w = sn_vote_plurality((const char *const *)votes, (size_t)d->n, SN_VOTE_TIE_NONE, 0,
                              vote_eq, &task, NULL);
    return w >= 0 ? votes[w] : NULL;
}

/* Every slot that spoke in round t (only the honest ones with honest_only) parsed the same
** answer, and at least one spoke. */
static bool consensus(struct debate *d, int t, bool honest_only)
{
    const char *a = NULL;
    for (int k = 0; k < d->n; k++) {
        const struct msg *m = M(d, t, k);
        if ((honest_only && d->plan.role[k] != SN_ROLE_HONEST) || !m->spoke)
            continue;
        if (!m->parsed)
            return false;
        if (!a)
            a = m->answer;
        else if (!sn_answer_equal(a, m->answer, d->q->task))
            return false;
    }
    return a != NULL;
}

/* ---- serialisation ---- */

/* Fills the writer's view of the debate into the caller's arrays and writes it. */
static int write_traj(struct debate *d, int replicate, int n_rounds, bool stopped,
                      const char *final, const char *judge_answer, const char *id,
                      int (*edges)[2], int (*icpt)[2], struct sn_traj_out_agent *agents,
                      struct sn_traj_out_msg *msgs, struct sn_traj_delivery *dl,
                      size_t *round_len, struct sn_buf *out, struct sn_err *err)
{
    const struct sn_experiment *x = d->x;
    const struct sn_question *q = d->q;
    const int n = d->n;
    struct sn_traj_out t = {
        .id = id, .experiment = x->name, .scenario = sn_scenario_name(x->scenario),
        .dataset = q->dataset, .item_id = q->id, .subject = q->subject,
        .task_name = sn_task_name(q->task), .question = q->question,
        .options = (const char *const *)q->options, .n_options = q->n_options, .gold = q->gold,
        .gold_explanation = q->gold_explanation,
        .adversarial_target = x->scenario != SN_SCEN_NONE && d->plan.target[0] ? d->plan.target
                                                                               : NULL,
        .strategy = sn_strategy_name(x->strategy), .topology_name = x->topology.name,
        .n_agents = n, .edges = (const int(*)[2])edges, .agents = agents,
        .defense_name = x->defense.name,
        .bottom_k = strcmp(x->defense.name, "sentinel") == 0 ? x->defense.bottom_k : -1,
        .msgs = msgs, .round_len = round_len, .n_rounds = (size_t)n_rounds,
        .final = {.rule = x->decision == SN_DECIDE_JUDGE ? "judge" : "majority",
                  .answer = final, .correct = sn_answer_equal(final, q->gold, q->task),
                  .judge_answer = judge_answer, .stopped_early = stopped, .n_rounds = n_rounds},
        .labels = x->labels, .seed = x->seed, .replicate = replicate,
        .backend = d->s->backend_desc ? d->s->backend_desc : "",
        .prompt_version = SN_PROMPT_VERSION, .sentinel_version = SENTINEL_VERSION};
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (x->topology.adj[a][b]) {
                edges[t.n_edges][0] = a;
                edges[t.n_edges][1] = b;
                t.n_edges++;
            }
    const char *position = x->n_placement_slots ? "explicit"
                                                : (x->placement ? x->placement : "random");
    for (int k = 0; k < n; k++) {
        enum sn_role r = d->plan.role[k];
        struct sn_traj_out_agent *ag = &agents[k];
        ag->role = r;
        ag->model = slot_model(d, k);
        ag->backend = slot_backend_name(d, k);
        ag->persona = d->plan.persona[k];
        ag->position = r != SN_ROLE_HONEST ? position : NULL;
        if (r == SN_ROLE_INTERCEPTOR) { /* one interceptor per edge: they share icpt */
            ag->intercepts = (const int(*)[2])icpt;
            for (int a = 0; a < n; a++)
                for (int b = 0; b < n; b++)
                    if (d->plan.intercepted[a][b] && d->plan.interceptor_of[a][b] == k) {
                        icpt[ag->n_intercepts][0] = a;
                        icpt[ag->n_intercepts][1] = b;
                        ag->n_intercepts++;
                    }
            icpt += ag->n_intercepts;
        }
    }
    t.attack.name = sn_scenario_name(x->scenario);
    if (x->scenario == SN_SCEN_COLLABORATION || x->scenario == SN_SCEN_NETSAFE)
        t.attack.rhetoric = x->rhetoric ? x->rhetoric
                                        : (x->scenario == SN_SCEN_NETSAFE ? "misinformation"
                                                                          : "mixed");
    if (x->scenario != SN_SCEN_NONE) {
        t.attack.placement = position;
        t.attack.n_attackers = x->n_adversaries;
    }
    if (x->scenario == SN_SCEN_COLLABORATION)
        t.attack.best_of_n = x->best_of_n;
    if (x->scenario == SN_SCEN_PSYSAFE)
        t.attack.persona = x->persona ? x->persona : "authority";
    if (x->scenario == SN_SCEN_AUTOINJECT) {
        t.attack.has_injection = true;
        t.attack.injection_rate = x->injection_rate;
        t.attack.adaptive = x->adaptive;
    }
    bool defended = strcmp(x->defense.name, "none") != 0;
    struct sn_traj_out_msg *om = msgs;
    struct sn_traj_delivery *od = dl;
    for (int r = 0; r < n_rounds; r++)
        for (int k = 0; k < n; k++) {
            const struct msg *m = M(d, r, k);
            if (!m->spoke)
                continue;
            round_len[r]++;
            *om = (struct sn_traj_out_msg){
                .agent = k, .text = m->text, .answer = m->parsed ? m->answer : NULL,
                .parsed = m->parsed, .latency_ms = m->latency_ms, .prompt_tokens = m->pt,
                .completion_tokens = m->ct, .answer_from_llm = m->llm_extracted,
                .draft = m->draft, .original_text = m->original,
                .injected_target = m->original ? m->injected_target : NULL,
                .candidates = m->n_candidates, .deliveries = od,
                .has_blacklist = defended, .blacklist = m->blacklist,
                .finish_reason = m->finish_reason, .served_model = m->served_model,
                .system_fingerprint = m->fingerprint, .refused = m->refused};
            for (int v = 0; m->deliv && v < n; v++)
                if (m->deliv[v].text) {
                    od->to = v;
                    od->text = m->deliv[v].text;
                    od->answer = m->deliv[v].parsed ? m->deliv[v].answer : NULL;
                    od++;
                    om->n_deliveries++;
                }
            om++;
        }
    return sn_traj_write(&t, out, err);
}

/* The debate as the trajectory writer sees it (data/data.h), then written. */
static int write_json(struct debate *d, int replicate, int n_rounds, bool stopped,
                      const char *final, const char *judge_answer, struct sn_buf *out,
                      struct sn_err *err)
{
    const struct sn_experiment *x = d->x;
    const struct sn_question *q = d->q;
    const int n = d->n;
    char id[256];
    sn_debate_id(x->name, q->id, replicate, x->seed, id, sizeof id);
    /* edges (n*n), agents (n), intercepted edges (n*n at most over all interceptors: one
    ** interceptor per edge), messages (T*n), deliveries (n per message), round lengths */
    size_t n_msg_max = (size_t)n_rounds * (size_t)n;
    int (*edges)[2] = sn_malloc((size_t)n * n * sizeof *edges);
    int (*icpt)[2] = sn_malloc((size_t)n * n * sizeof *icpt);
    struct sn_traj_out_agent *agents = sn_calloc((size_t)n, sizeof *agents);
    struct sn_traj_out_msg *msgs = sn_calloc(n_msg_max ? n_msg_max : 1, sizeof *msgs);
    struct sn_traj_delivery *dl = sn_calloc(n_msg_max ? n_msg_max * (size_t)n : 1, sizeof *dl);
    size_t *round_len = sn_calloc(n_rounds ? (size_t)n_rounds : 1, sizeof *round_len);
    int rc = !edges || !icpt || !agents || !msgs || !dl || !round_len
                 ? sn_err_set(err, SN_E_NOMEM, "out of memory")
                 : SN_OK;
    if (!rc)
        rc = write_traj(d, replicate, n_rounds, stopped, final, judge_answer, id, edges, icpt,
                        agents, msgs, dl, round_len, out, err);
    sn_free(edges);
    sn_free(icpt);
    sn_free(agents);
    sn_free(msgs);
    sn_free(dl);
    sn_free(round_len);
    return rc;
}

/* ---- the debate ---- */

static void debate_free(struct debate *d)
{
    if (d->m) {
        for (size_t i = 0; i < (size_t)d->T * d->n; i++) {
            struct msg *m = &d->m[i];
            sn_free(m->text);
            sn_free(m->draft);
            sn_free(m->original);
            sn_free(m->finish_reason);
            sn_free(m->served_model);
            sn_free(m->fingerprint);
            if (m->deliv) {
                for (int v = 0; v < d->n; v++)
                    sn_free(m->deliv[v].text);
                sn_free(m->deliv);
            }
        }
        sn_free(d->m);
    }
    sn_defense_free(d->defense);
    sn_buf_free(&d->prompt_sys);
    sn_buf_free(&d->prompt_user);
    sn_buf_free(&d->peers_txt);
    sn_buf_free(&d->options);
}

int sn_debate_run(const struct sn_debate_setup *s, const struct sn_question *q, int replicate,
                  struct sn_buf *line, struct sn_debate_stats *stats, struct sn_err *err)
{
    const struct sn_experiment *x = s->x;
    struct sn_debate_stats local = {0};
    struct debate d = {.s = s, .x = x, .q = q, .n = x->n_agents, .T = x->rounds,
                       .stats = stats ? stats : &local};
    if (d.n < 1 || d.n > SN_SIM_MAX_AGENTS || d.T < 1)
        return sn_err_set(err, SN_E_ARG, "experiment '%s': bad n_agents/rounds", x->name);
    if (q->task == SN_TASK_MC && (q->n_options < 2 || !q->gold[0]))
        return sn_err_set(err, SN_E_FORMAT, "item '%s': multiple choice needs options and gold",
                          q->id);
    d.seed = sn_debate_seed(x->seed, q->id, replicate);
    int rc = sn_attack_plan(x, q, d.seed, &d.plan, err);
    if (rc)
        return rc;
    if ((rc = sn_defense_create(&x->defense, d.n, &d.defense, err)))
        return rc;
    uint64_t honest = 0; /* the sentinels of Algorithm 1 are the honest agents */
    for (int k = 0; k < d.n; k++)
        if (d.plan.role[k] == SN_ROLE_HONEST)
            honest |= 1ULL << k;
    sn_defense_set_sentinels(d.defense, honest, d.seed);
    d.m = sn_calloc((size_t)d.T * (size_t)d.n, sizeof *d.m);
    if (!d.m) {
        debate_free(&d);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    for (int k = 0; k < d.n; k++)
        d.pos[k] = k;
    rc = sn_buf_append(&d.options, "", 0, err);
    for (size_t i = 0; !rc && i < q->n_options; i++)
        rc = sn_buf_printf(&d.options, err, "%c) %s\n", (char)('A' + i), q->options[i]);
    if (rc) {
        debate_free(&d);
        return rc;
    }
    if (q->task == SN_TASK_MC)
        snprintf(d.format, sizeof d.format, "End your reply with 'FINAL ANSWER: <letter>' "
                 "(one of A-%c).", (char)('A' + q->n_options - 1));
    else
        snprintf(d.format, sizeof d.format, "End your reply with 'FINAL ANSWER: <number>'.");
    int t_done = 0;
    bool stopped = false;
    bool joined = x->join_by <= 0; /* adversaries held back until honest consensus */
    for (int t = 0; t < d.T && !rc; t++) {
        if (!joined && (t >= x->join_by || (t > 0 && consensus(&d, t - 1, true))))
            joined = true;
        for (int k = 0; k < d.n && !rc; k++)
            if (d.plan.role[k] != SN_ROLE_INTERCEPTOR &&
                (joined || d.plan.role[k] != SN_ROLE_ADVERSARY))
                rc = speak(&d, k, t, err);
        if (rc)
            break;
        t_done = t + 1;
        if (x->early_stop && t + 1 < d.T && consensus(&d, t, false)) {
            stopped = true;
            break;
        }
    }
    const char *final = NULL, *judge_answer = NULL;
    char judge_buf[SN_ANSWER_MAX];
    if (!rc && x->decision == SN_DECIDE_JUDGE) {
        struct sn_sim_peer peers[SN_SIM_MAX_AGENTS];
        size_t n = 0;
        for (int k = 0; k < d.n; k++) {
            struct msg *m = M(&d, t_done - 1, k);
            if (m->spoke)
                peers[n++] = (struct sn_sim_peer){k, t_done - 1, m->text,
                                                  m->parsed ? m->answer : NULL, false};
        }
        struct sn_sim_hint h = {.magic = SN_SIM_HINT_MAGIC, .call = SN_SIM_CALL_JUDGE, .q = q,
                                .role = SN_ROLE_HONEST, .scenario = x->scenario, .agent = -1,
                                .round = t_done, .n_rounds = d.T, .peers = peers,
                                .n_peers = n, .original_sender = -1};
        struct sn_llm_reply rep;
        rc = call(&d, s->judge, SN_PROMPT_NONE, SN_PROMPT_JUDGE, &h, "judge", 0, &rep, err);
        if (rc) {
            sn_err_wrap(err, "judge");
        } else {
            if (sn_extract_answer(rep.text, q->task, q->n_options, judge_buf))
                judge_answer = judge_buf;
            sn_llm_reply_free(&rep);
            final = judge_answer;
        }
    } else if (!rc) {
        final = majority(&d, t_done - 1);
    }
    if (!rc) {
        size_t mark = line->len;
        rc = write_json(&d, replicate, t_done, stopped, final, judge_answer, line, err);
        if (rc) {
            line->len = mark;
            if (line->data)
                line->data[mark] = '\0';
        }
    }
    debate_free(&d);
    return rc;
}
