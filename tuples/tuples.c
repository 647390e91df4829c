/* tuples/tuples.c: the tuple builder (tuples/tuples.h; docs/design.md §4 "Tuple";
** selection rules and layout in docs/formats.md). */
#include "tuples/tuples.h"
#include "data/data.h"
#include "llm/llm.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"adversary", "tampered", "misled", "wrong",
                                         "contrast"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == SN_REJ_COUNT, "kinds");
static const char *const count_names[] = {
    "trajectories", "rounds", "tuples", "bad_lines", "no_chosen", "no_rejected", "unparsed",
    "empty", "capped", "duplicate", "task_too_long", "no_tuples", "reference_fallback",
    "contrast", "persuasive_correct", "not_rejected", "preference_rows", "truncated"};
_Static_assert(sizeof count_names / sizeof count_names[0] == SN_TC_COUNT, "counts");

const char *sn_rejected_kind_name(enum sn_rejected_kind k)
{
    return (unsigned)k < SN_REJ_COUNT ? kind_names[k] : "?";
}

const char *sn_tuples_count_name(enum sn_tuples_count k)
{
    return (unsigned)k < SN_TC_COUNT ? count_names[k] : "?";
}

/* Hardness rank of a negative: 0 hardest. Adversary, tampered and contrast share rank 0. */
static int rank_of(enum sn_rejected_kind k)
{
    return k == SN_REJ_ADVERSARY || k == SN_REJ_TAMPERED || k == SN_REJ_CONTRAST ? 0
           : k == SN_REJ_MISLED                                                  ? 1
                                                                                 : 2;
}

/* The index of name in names[0..n), or -1 (the parsers of the build's enum settings). */
static int name_index(const char *const *names, int n, const char *name)
{
    for (int k = 0; name && k < n; k++)
        if (!strcmp(name, names[k]))
            return k;
    return -1;
}

static const char *const rejected_from_names[] = {"all", "adversary", "misled"};
_Static_assert(sizeof rejected_from_names / sizeof rejected_from_names[0] ==
               SN_REJECTED_FROM_COUNT, "rejected_from");

const char *sn_rejected_from_name(enum sn_rejected_from r)
{
    return (unsigned)r < SN_REJECTED_FROM_COUNT ? rejected_from_names[r] : "?";
}

int sn_rejected_from_parse(const char *name, enum sn_rejected_from *out, struct sn_err *err)
{
    int k = name_index(rejected_from_names, SN_REJECTED_FROM_COUNT, name);
    if (k >= 0) {
        *out = (enum sn_rejected_from)k;
        return SN_OK;
    }
    return sn_err_set(err, SN_E_ARG, "rejected = \"%s\": expected all (every wrong answer), "
                      "adversary (adversary and tampered messages only) or misled (those and "
                      "misled honest agents)", name ? name : "(null)");
}

static const char *const chosen_from_names[] = {"correct", "honest"};
_Static_assert(sizeof chosen_from_names / sizeof chosen_from_names[0] == SN_CHOSEN_FROM_COUNT,
               "chosen_from");

const char *sn_chosen_from_name(enum sn_chosen_from c)
{
    return (unsigned)c < SN_CHOSEN_FROM_COUNT ? chosen_from_names[c] : "?";
}

int sn_chosen_from_parse(const char *name, enum sn_chosen_from *out, struct sn_err *err)
{
    int k = name_index(chosen_from_names, SN_CHOSEN_FROM_COUNT, name);
    if (k >= 0) {
        *out = (enum sn_chosen_from)k;
        return SN_OK;
    }
    return sn_err_set(err, SN_E_ARG, "chosen = \"%s\": expected correct (honest messages with "
                      "the gold answer) or honest (every honest message with a parsed answer; "
                      "needs rejected = adversary)", name ? name : "(null)");
}

struct sn_tuples_params sn_tuples_default_params(void)
{
    struct sn_tuples_params p;
    memset(&p, 0, sizeof p);
    p.validation_fraction = 0.1;
    p.test_fraction = 0.1;
    p.context = sn_context_default_params();
    p.dedup = true;
    return p;
}

static const char *const split_by_names[] = {"item", "dataset", "model", "scenario",
                                              "experiment"};
_Static_assert(sizeof split_by_names / sizeof split_by_names[0] == SN_SPLIT_BY_COUNT, "split_by");

const char *sn_split_by_name(enum sn_split_by b)
{
    return (unsigned)b < SN_SPLIT_BY_COUNT ? split_by_names[b] : "?";
}

int sn_split_by_parse(const char *name, enum sn_split_by *out, struct sn_err *err)
{
    int k = name_index(split_by_names, SN_SPLIT_BY_COUNT, name);
    if (k >= 0) {
        *out = (enum sn_split_by)k;
        return SN_OK;
    }
    return sn_err_set(err, SN_E_ARG, "split_by = \"%s\": expected item, dataset, model, "
                      "scenario or experiment", name ? name : "(null)");
}

const char *sn_split_value(const struct sn_traj *t, enum sn_split_by by, char *buf, size_t n)
{
    switch (by) {
    case SN_SPLIT_BY_DATASET:
        return t->dataset ? t->dataset : "";
    case SN_SPLIT_BY_SCENARIO:
        return t->scenario ? t->scenario : "";
    case SN_SPLIT_BY_EXPERIMENT:
        return t->experiment ? t->experiment : "";
    case SN_SPLIT_BY_MODEL: {
        const char *m = NULL;
        for (size_t i = 0; i < t->n_agents && !m; i++)
            if (t->agents[i].role == SN_ROLE_HONEST)
                m = t->agents[i].model;
        if (!m && t->n_agents)
            m = t->agents[0].model;
        return m ? m : "";
    }
    default:
        snprintf(buf, n, "%s/%s", t->dataset ? t->dataset : "", t->item_id ? t->item_id : "");
        return buf;
    }
}

static bool listed(const char *v, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] && !strcmp(list[i], v))
            return true;
    return false;
}

enum sn_split sn_tuples_split(const struct sn_traj *t, const struct sn_tuples_params *p)
{
    char lb[64], buf[1024];
    const char *ood = sn_traj_label(t, "split", lb, sizeof lb);
    if (ood && !strcmp(ood, "ood"))
        return SN_SPLIT_OOD;
    const char *v = sn_split_value(t, p->split_by, buf, sizeof buf);
    if (p->n_validation_values || p->n_test_values) {
        if (listed(v, p->test_values, p->n_test_values))
            return SN_SPLIT_TEST;
        if (listed(v, p->validation_values, p->n_validation_values))
            return SN_SPLIT_VALIDATION;
        return SN_SPLIT_TRAIN;
    }
    struct sn_sha256 h;
    uint8_t d[32];
    char salt[96];
    int n = snprintf(salt, sizeof salt, "sentinel-split/2\n%" PRIu64 "\n%s\n", p->split_seed,
                     sn_split_by_name(p->split_by));
    sn_sha256_init(&h);
    sn_sha256_update(&h, salt, (size_t)n);
    sn_sha256_update(&h, v, strlen(v));
    sn_sha256_final(&h, d);
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x = x << 8 | d[i];
    double u = (double)(x >> 11) / 9007199254740992.0; /* 53 bits -> [0, 1) exactly */
    if (u < 1.0 - p->validation_fraction - p->test_fraction)
        return SN_SPLIT_TRAIN;
    if (u < 1.0 - p->test_fraction)
        return SN_SPLIT_VALIDATION;
    return SN_SPLIT_TEST;
}

void sn_tuples_hash(const char *const text[SN_FIELD_COUNT], char hex[65])
{
    struct sn_sha256 h;
    uint8_t d[32];
    sn_sha256_init(&h);
    for (int f = 0; f < SN_FIELD_COUNT; f++) {
        uint64_t n = text[f] ? strlen(text[f]) : 0;
        uint8_t le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (uint8_t)(n >> (8 * i));
        sn_sha256_update(&h, le, 8);
        if (n)
            sn_sha256_update(&h, text[f], (size_t)n);
    }
    sn_sha256_final(&h, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

int sn_tuples_task(const struct sn_traj *t, struct sn_buf *out, struct sn_err *err)
{
    return sn_context_task_text(t->task, t->question, (const char *const *)t->options,
                                t->n_options, out, err);
}

static int extractive_entry(const struct sn_traj *t, size_t round, const struct sn_traj_msg *m,
                            const struct sn_tuples_params *p, struct sn_buf *out,
                            struct sn_err *err)
{
    (void)t;
    return sn_context_history_entry(round, m->agent, m->answer, m->text, &p->context, out,
                                    err);
}

int sn_tuples_context(const struct sn_traj *t, size_t round, const struct sn_tuples_params *p,
                      struct sn_buf *out, struct sn_err *err)
{
    struct sn_buf task = {0};
    size_t n = 0, cap = 0;
    for (size_t r = 0; r < round && r < t->n_rounds; r++)
        cap += t->rounds[r].n_msgs;
    struct sn_context_msg *msgs = sn_calloc(cap + 1, sizeof *msgs);
    int rc = msgs ? sn_tuples_task(t, &task, err) : sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t r = 0; r < round && r < t->n_rounds && !rc; r++)
        for (size_t i = 0; i < t->rounds[r].n_msgs; i++) {
            const struct sn_traj_msg *m = &t->rounds[r].msgs[i];
            msgs[n++] = (struct sn_context_msg){r, m->agent, m->answer, m->text};
        }
    if (!rc)
        rc = sn_context_from_msgs(task.data, msgs, n, &p->context, out, err);
    sn_free(msgs);
    sn_buf_free(&task);
    return rc;
}

/* ---- de-duplication set of SHA-256 digests ---------------------------------------------- */

static bool hex_to_digest(const char *hex, uint8_t d[32])
{
    for (int i = 0; i < 32; i++) {
        unsigned x;
        if (sscanf(hex + 2 * i, "%2x", &x) != 1)
            return false;
        d[i] = (uint8_t)x;
    }
    return true;
}

/* Inserts d into the set of seen digests; *dup = true when it was there already. */
static int digest_insert(struct sn_strmap *seen, const uint8_t d[32], bool *dup,
                         struct sn_err *err)
{
    bool added = false;
    if (sn_strmap_put(seen, d, 32, 0, &added, err))
        return sn_err_wrap(err, "de-duplication set");
    *dup = !added;
    return SN_OK;
}

/* ---- builder ----------------------------------------------------------------------------- */

struct sn_tuples {
    struct sn_tuples_params p;
    uint64_t counts[SN_TC_COUNT];
    struct sn_strmap seen; /* digests of the tuples written (dedup) */
};

int sn_tuples_create(const struct sn_tuples_params *p, struct sn_tuples **out, struct sn_err *err)
{
    *out = NULL;
    if (p->validation_fraction < 0 || p->test_fraction < 0 ||
        p->validation_fraction + p->test_fraction > 1.0)
        return sn_err_set(err, SN_E_ARG, "build: validation_fraction %g + test_fraction %g must "
                          "be fractions summing to at most 1", p->validation_fraction,
                          p->test_fraction);
    if ((unsigned)p->split_by >= SN_SPLIT_BY_COUNT)
        return sn_err_set(err, SN_E_ARG, "build: split_by %d is out of range", (int)p->split_by);
    /* an honest wrong message cannot be chosen in one pair and rejected in another */
    if (p->chosen == SN_CHOSEN_HONEST && p->rejected != SN_REJECTED_ADVERSARY)
        return sn_err_set(err, SN_E_ARG, "build: chosen = \"honest\" needs rejected = "
                          "\"adversary\" (it is \"%s\"): an honest wrong answer would be both "
                          "chosen and rejected (docs/formats.md \"Tuple selection\")",
                          sn_rejected_from_name(p->rejected));
    for (size_t i = 0; i < p->n_test_values; i++)
        if (!p->test_values[i] || listed(p->test_values[i], p->validation_values,
                                         p->n_validation_values))
            return sn_err_set(err, SN_E_ARG, "build: %s \"%s\" is listed for both validation "
                              "and test", sn_split_by_name(p->split_by),
                              p->test_values[i] ? p->test_values[i] : "(null)");
    for (size_t i = 0; i < p->n_validation_values; i++)
        if (!p->validation_values[i])
            return sn_err_set(err, SN_E_ARG, "build: a NULL validation value");
    struct sn_tuples *b = sn_calloc(1, sizeof *b);
    if (!b)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    b->p = *p;
    if (!b->p.context.history_sentences)
        b->p.context.history_sentences = 2;
    if (!b->p.context.history_chars)
        b->p.context.history_chars = 300;
    *out = b;
    return SN_OK;
}

void sn_tuples_free(struct sn_tuples *b)
{
    if (!b)
        return;
    sn_strmap_free(&b->seen);
    sn_free(b);
}

uint64_t *sn_tuples_counts(struct sn_tuples *b)
{
    return b->counts;
}

struct neg {
    const char *text;
    int agent;
    const char *role;
    enum sn_rejected_kind kind;
    size_t order; /* position of discovery: speaking order, deliveries after their message */
};

struct pair {
    size_t ci, ri;
    int rank;
    uint64_t key;
};

static int cmp_neg(const void *a, const void *b)
{
    const struct neg *x = a, *y = b;
    int rx = rank_of(x->kind), ry = rank_of(y->kind);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_pair(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->ri != y->ri)
        return x->ri < y->ri ? -1 : 1;
    return x->ci < y->ci ? -1 : x->ci > y->ci;
}

static bool str_eq(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

enum sn_honest_kind sn_tuples_honest_kind(const struct sn_traj *t, size_t r,
                                          const struct sn_traj_msg *m)
{
    if (!m->parsed || !m->answer)
        return SN_HONEST_UNPARSED;
    if (str_eq(m->answer, t->gold))
        return SN_HONEST_CORRECT;
    bool misled = str_eq(m->answer, t->adversarial_target);
    for (size_t q = 0; q < r && !misled; q++) {
        const struct sn_traj_msg *e = sn_traj_msg_of(t, q, m->agent);
        misled = e && str_eq(e->answer, t->gold);
    }
    return misled ? SN_HONEST_MISLED : SN_HONEST_WRONG;
}

static bool is_empty(const char *s)
{
    if (!s)
        return true;
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return false;
    return true;
}

/* The interceptor that rewrote from -> to, or -1. */
static int interceptor_of(const struct sn_traj *t, int from, int to)
{
    int any = -1;
    for (size_t i = 0; i < t->n_agents; i++) {
        const struct sn_traj_agent *a = &t->agents[i];
        if (a->role != SN_ROLE_INTERCEPTOR)
            continue;
        if (any < 0)
            any = a->id;
        for (size_t k = 0; k < a->n_intercepts; k++)
            if (a->intercepts[k][0] == from && a->intercepts[k][1] == to)
                return a->id;
    }
    return any;
}

static enum sn_role role_of(const struct sn_traj *t, int agent)
{
    return agent >= 0 && (size_t)agent < t->n_agents ? t->agents[agent].role : SN_ROLE_HONEST;
}

int sn_tuples_builtin_reference(const struct sn_traj *t, struct sn_buf *out, struct sn_err *err)
{
    const char *gold = t->gold ? t->gold : "";
    int rc;
    if (!is_empty(t->gold_explanation)) {
        rc = sn_buf_puts(out, t->gold_explanation, err);
        if (!rc && !strstr(t->gold_explanation, "FINAL ANSWER"))
            rc = sn_buf_printf(out, err, "\nFINAL ANSWER: %s", gold);
        return rc;
    }
    size_t idx = gold[0] >= 'A' && gold[0] <= 'Z' && !gold[1] ? (size_t)(gold[0] - 'A') : SIZE_MAX;
    if (t->task == SN_TASK_MC && idx < t->n_options)
        return sn_buf_printf(out, err, "The correct answer is %s (%s).\nFINAL ANSWER: %s", gold,
                             t->options[idx], gold);
    return sn_buf_printf(out, err, "The correct answer is %s.\nFINAL ANSWER: %s", gold, gold);
}

static int make_reference(struct sn_tuples *b, const struct sn_traj *t, size_t round,
                          struct sn_buf *out, struct sn_err *err)
{
    sn_buf_reset(out);
    if (b->p.reference) {
        int rc = b->p.reference(b->p.user, t, round, out, err);
        if (rc || out->len)
            return rc;
        b->counts[SN_TC_REFERENCE_FALLBACK]++;
    }
    return sn_tuples_builtin_reference(t, out, err);
}

/* History entries of every message of rounds [0, upto), appended to *v (owned strings). */
struct strvec {
    char  **v;
    size_t  n, cap;
};

static void strvec_free(struct strvec *s)
{
    for (size_t i = 0; i < s->n; i++)
        sn_free(s->v[i]);
    sn_free(s->v);
    memset(s, 0, sizeof *s);
}

static int strvec_push(struct strvec *s, char *str, struct sn_err *err)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        char **nv = sn_realloc(s->v, nc * sizeof *nv);
        if (!nv) {
            sn_free(str);
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = str;
    return SN_OK;
}

/* A content-contrastive pair of a round: chosen ci with its answer made wrong (ri SIZE_MAX),
** or negative ri with its answer made right (ci SIZE_MAX). */
struct con {
    size_t ci, ri;
};

/* What every tuple of one round shares. */
struct emit_ctx {
    struct sn_tuples        *b;
    const struct sn_traj    *t;
    size_t                   r;
    const struct sn_prompt  *prompt;
    const char              *ctx;
    struct sn_buf           *ref;
    bool                    *have_ref;
    enum sn_split            split;
    sn_tuple_fn              fn;
    void                    *user;
};

/* One tuple (chosen, ng): hashed, de-duplicated, handed to fn; *emitted false for a duplicate. */
static int emit(struct emit_ctx *e, const char *chosen, int chosen_agent, const char *chosen_role,
                const struct neg *ng, bool *emitted, struct sn_err *err)
{
    struct sn_tuples *b = e->b;
    const struct sn_traj *t = e->t;
    struct sn_tuple tp;
    char hex[65];
    int rc;
    *emitted = false;
    memset(&tp, 0, sizeof tp);
    tp.prompt = *e->prompt;
    tp.text[SN_FIELD_CONTEXT] = e->ctx;
    tp.text[SN_FIELD_CHOSEN] = chosen;
    tp.text[SN_FIELD_REJECTED] = ng->text;
    if (!*e->have_ref) {
        if ((rc = make_reference(b, t, e->r, e->ref, err)))
            return rc;
        *e->have_ref = true;
    }
    tp.text[SN_FIELD_REFERENCE] = e->ref->data;
    sn_tuples_hash(tp.text, hex);
    if (b->p.dedup) {
        uint8_t d[32];
        bool dup = false;
        hex_to_digest(hex, d);
        if ((rc = digest_insert(&b->seen, d, &dup, err)))
            return rc;
        if (dup) {
            b->counts[SN_TC_DUPLICATE]++;
            return SN_OK;
        }
    }
    tp.kind = ng->kind;
    tp.meta.scenario = t->scenario;
    tp.meta.dataset = t->dataset;
    tp.meta.trajectory_id = t->id;
    tp.meta.item_id = t->item_id;
    tp.meta.round = (int32_t)e->r;
    tp.meta.chosen_agent = chosen_agent;
    tp.meta.rejected_agent = ng->agent;
    tp.meta.chosen_role = chosen_role;
    tp.meta.rejected_role = ng->role;
    tp.meta.rejected_kind = kind_names[ng->kind];
    tp.meta.split = e->split;
    tp.meta.sha256 = hex;
    b->counts[SN_TC_TUPLES]++;
    *emitted = true;
    return e->fn(e->user, &tp, err);
}

int sn_tuples_add(struct sn_tuples *b, const struct sn_traj *t, sn_tuple_fn fn, void *user,
                  struct sn_err *err)
{
    struct sn_buf task = {0}, ref = {0}, ctx = {0}, line = {0};
    struct strvec hist = {0}, hook = {0};
    size_t *hist_upto = NULL; /* (n_rounds + 1): entries of rounds < r */
    struct neg *negs = NULL;
    const char **chosen = NULL;
    int *chosen_agent = NULL;
    bool *chosen_correct = NULL; /* the chosen message has the gold answer */
    struct pair *pairs = NULL;
    uint64_t before = b->counts[SN_TC_TUPLES];
    enum sn_split split = sn_tuples_split(t, &b->p);
    int rc = SN_OK;
    b->counts[SN_TC_TRAJECTORIES]++;

    bool have_ref = false; /* made before the first tuple (a hook may call a model) */
    rc = sn_tuples_task(t, &task, err);
    hist_upto = sn_calloc(t->n_rounds + 1, sizeof *hist_upto);
    size_t max_msgs = 0;
    for (size_t r = 0; r < t->n_rounds; r++) {
        size_t k = t->rounds[r].n_msgs;
        for (size_t i = 0; i < t->rounds[r].n_msgs; i++)
            k += t->rounds[r].msgs[i].n_deliveries;
        if (k > max_msgs)
            max_msgs = k;
    }
    negs = sn_calloc(max_msgs + 1, sizeof *negs);
    chosen = sn_calloc(max_msgs + 1, sizeof *chosen);
    chosen_agent = sn_calloc(max_msgs + 1, sizeof *chosen_agent);
    chosen_correct = sn_calloc(max_msgs + 1, sizeof *chosen_correct);
    struct con *con = sn_calloc(2 * max_msgs + 2, sizeof *con);
    if (!rc && (!hist_upto || !negs || !chosen || !chosen_agent || !chosen_correct || !con))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    /* extractive history: entries of all rounds, in order; round r's context is a prefix */
    for (size_t r = 0; r < t->n_rounds && !rc && !b->p.summarize; r++) {
        hist_upto[r] = hist.n;
        for (size_t i = 0; i < t->rounds[r].n_msgs && !rc; i++) {
            sn_buf_reset(&line);
            rc = extractive_entry(t, r, &t->rounds[r].msgs[i], &b->p, &line, err);
            if (!rc) {
                char *s = sn_strdup(line.data ? line.data : "");
                rc = s ? strvec_push(&hist, s, err) : sn_err_set(err, SN_E_NOMEM, "out of memory");
            }
        }
    }
    for (size_t r = 0; r < t->n_rounds && !rc; r++) {
        const struct sn_traj_round *rd = &t->rounds[r];
        size_t n_neg = 0, n_ch = 0;
        b->counts[SN_TC_ROUNDS]++;
        for (size_t i = 0; i < rd->n_msgs; i++) {
            const struct sn_traj_msg *m = &rd->msgs[i];
            enum sn_role role = role_of(t, m->agent);
            enum sn_honest_kind hk = sn_tuples_honest_kind(t, r, m);
            if (is_empty(m->text)) {
                b->counts[SN_TC_EMPTY]++;
            } else if (role != SN_ROLE_HONEST) {
                negs[n_neg++] = (struct neg){m->text, m->agent, sn_role_name(role),
                                             SN_REJ_ADVERSARY, i * 1000};
            } else if (hk == SN_HONEST_UNPARSED) {
                b->counts[SN_TC_UNPARSED]++;
            } else if (hk == SN_HONEST_CORRECT || b->p.chosen == SN_CHOSEN_HONEST) {
                chosen_correct[n_ch] = hk == SN_HONEST_CORRECT;
                chosen_agent[n_ch] = m->agent;
                chosen[n_ch++] = m->text;
            } else {
                enum sn_rejected_kind kd = hk == SN_HONEST_MISLED ? SN_REJ_MISLED : SN_REJ_WRONG;
                if (b->p.rejected == SN_REJECTED_ADVERSARY ||
                    (b->p.rejected == SN_REJECTED_MISLED && kd == SN_REJ_WRONG))
                    b->counts[SN_TC_NOT_REJECTED]++;
                else
                    negs[n_neg++] = (struct neg){m->text, m->agent, sn_role_name(role), kd,
                                                 i * 1000};
            }
            /* AITM: the rewritten copies are negatives (unless the rewrite kept the gold) */
            for (size_t d = 0; m->tampered && d < m->n_deliveries; d++) {
                const struct sn_traj_delivery *dv = &m->deliveries[d];
                bool dup = false;
                if (is_empty(dv->text)) {
                    b->counts[SN_TC_EMPTY]++;
                    continue;
                }
                if (str_eq(dv->answer, t->gold))
                    continue;
                for (size_t q = 0; q < n_neg && !dup; q++)
                    dup = negs[q].kind == SN_REJ_TAMPERED && !strcmp(negs[q].text, dv->text);
                if (dup)
                    continue;
                int ic = interceptor_of(t, m->agent, dv->to);
                negs[n_neg++] = (struct neg){dv->text, ic,
                                             ic >= 0 ? sn_role_name(role_of(t, ic)) : "interceptor",
                                             SN_REJ_TAMPERED, i * 1000 + 1 + d};
            }
        }
        if (!n_ch)
            b->counts[SN_TC_NO_CHOSEN]++;
        if (!n_neg)
            b->counts[SN_TC_NO_REJECTED]++;
        /* content-contrastive pairs of this round (docs/formats.md "Content-contrastive
        ** pairs"): drawn from their own stream, so the max_pairs sample is the same with and
        ** without them */
        size_t n_con = 0;
        struct sn_rng crng;
        sn_rng_seed(&crng, sn_seed_derive(sn_seed_derive(b->p.seed, t->id, r), "contrast", 0));
        bool can_swap = t->gold && t->gold[0] && (t->task != SN_TASK_MC || t->n_options >= 2);
        for (size_t ci = 0; can_swap && b->p.contrast > 0 && ci < n_ch; ci++)
            if (chosen_correct[ci] && sn_rng_uniform(&crng) < b->p.contrast)
                con[n_con++] = (struct con){ci, SIZE_MAX};
        for (size_t ri = 0; can_swap && b->p.persuasive_correct > 0 && ri < n_neg; ri++)
            if (negs[ri].kind == SN_REJ_ADVERSARY && !strcmp(negs[ri].role, "adversary") &&
                sn_rng_uniform(&crng) < b->p.persuasive_correct)
                con[n_con++] = (struct con){SIZE_MAX, ri};
        if ((!n_ch || !n_neg) && !n_con)
            continue;
        size_t n_pairs = n_ch * n_neg, take = n_pairs;
        sn_free(pairs);
        pairs = sn_calloc(n_pairs + 1, sizeof *pairs);
        if (!pairs) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            break;
        }
        if (n_neg)
            qsort(negs, n_neg, sizeof *negs, cmp_neg);
        struct sn_rng rng;
        sn_rng_seed(&rng, sn_seed_derive(b->p.seed, t->id, r));
        size_t k = 0;
        for (size_t ri = 0; ri < n_neg; ri++)
            for (size_t ci = 0; ci < n_ch; ci++)
                pairs[k++] = (struct pair){ci, ri, rank_of(negs[ri].kind), 0};
        if (b->p.max_pairs && n_pairs > b->p.max_pairs) {
            for (k = 0; k < n_pairs; k++)
                pairs[k].key = sn_rng_u64(&rng);
            qsort(pairs, n_pairs, sizeof *pairs, cmp_pair);
            take = b->p.max_pairs;
            b->counts[SN_TC_CAPPED] += n_pairs - take;
        }
        /* context of round r */
        struct sn_prompt prompt = {NULL, task.data, NULL, 0};
        if (b->p.summarize) {
            strvec_free(&hook);
            rc = b->p.summarize(b->p.user, t, r, &hook.v, &hook.n, err);
            if (rc)
                break;
            hook.cap = hook.n;
            prompt.history = (const char *const *)hook.v;
            prompt.n_history = hook.n;
        } else {
            prompt.history = (const char *const *)hist.v;
            prompt.n_history = hist_upto[r];
        }
        sn_buf_reset(&ctx);
        rc = sn_template_context(&prompt, &ctx, err);
        struct emit_ctx ec = {b, t, r, &prompt, ctx.data, &ref, &have_ref, split, fn, user};
        for (k = 0; k < take && !rc; k++) {
            const struct neg *ng = &negs[pairs[k].ri];
            bool emitted;
            rc = emit(&ec, chosen[pairs[k].ci], chosen_agent[pairs[k].ci],
                      sn_role_name(SN_ROLE_HONEST), ng, &emitted, err);
        }
        /* the contrastive pairs: same wording, the answer made wrong (or right) */
        char wrong[SN_ANSWER_MAX];
        sn_tuples_wrong_answer(t->task, t->n_options, t->gold, t->adversarial_target,
                               sn_seed_derive(sn_seed_derive(b->p.seed, t->id, r), "wrong", 0),
                               wrong);
        const char *const *opts = (const char *const *)t->options;
        for (size_t c = 0; c < n_con && !rc; c++) {
            bool emitted = false;
            sn_buf_reset(&line);
            if (con[c].ci != SIZE_MAX) {
                rc = sn_tuples_swap_answer(t->task, opts, t->n_options, chosen[con[c].ci],
                                           t->gold, wrong, &line, err);
                if (!rc && line.data && strcmp(line.data, chosen[con[c].ci])) {
                    struct neg ng = {line.data, chosen_agent[con[c].ci],
                                     sn_role_name(SN_ROLE_HONEST), SN_REJ_CONTRAST, 0};
                    rc = emit(&ec, chosen[con[c].ci], chosen_agent[con[c].ci],
                              sn_role_name(SN_ROLE_HONEST), &ng, &emitted, err);
                    b->counts[SN_TC_CONTRAST] += emitted;
                }
            } else {
                const struct neg *ng = &negs[con[c].ri];
                char said[SN_ANSWER_MAX];
                const char *from = t->adversarial_target;
                if (sn_extract_answer(ng->text, t->task, t->n_options, said))
                    from = said;
                if (!from || !from[0] || sn_answer_equal(from, t->gold, t->task))
                    continue;
                rc = sn_tuples_swap_answer(t->task, opts, t->n_options, ng->text, from, t->gold,
                                           &line, err);
                if (!rc && line.data && strcmp(line.data, ng->text)) {
                    rc = emit(&ec, line.data, ng->agent, "contrast", ng, &emitted, err);
                    b->counts[SN_TC_PERSUASIVE_CORRECT] += emitted;
                }
            }
        }
    }
    if (!rc && b->counts[SN_TC_TUPLES] == before)
        b->counts[SN_TC_NO_TUPLES]++;
    sn_buf_free(&task);
    sn_buf_free(&ref);
    sn_buf_free(&ctx);
    sn_buf_free(&line);
    strvec_free(&hist);
    strvec_free(&hook);
    sn_free(hist_upto);
    sn_free(negs);
    sn_free(chosen);
    sn_free(chosen_agent);
    sn_free(chosen_correct);
    sn_free(con);
    sn_free(pairs);
    return rc;
}

/* ---- LLM summary and reference (prompts versioned by their ids) ---------------- */

#define SUMMARY_SALT   0x53554d4dull /* "SUMM" */
#define REFERENCE_SALT 0x52454631ull /* "REF1" */

static int llm_ask(struct sn_llm_backend *be, const struct sn_tuples_llm *L, const char *system,
                   const char *user, int64_t seed, struct sn_llm_reply *rep, struct sn_err *err)
{
    struct sn_chat_msg msgs[2] = {{"system", system}, {"user", user}};
    struct sn_llm_request req;
    memset(&req, 0, sizeof req);
    req.messages = msgs;
    req.n_messages = 2;
    req.temperature = 0.0;
    req.top_p = -1.0;
    req.max_tokens = L->max_tokens;
    req.has_seed = true;
    req.seed = seed;
    memset(rep, 0, sizeof *rep);
    return sn_llm_complete(be, &req, rep, err);
}

/* The reply with surrounding white space trimmed, appended to out; false when empty. */
static int put_trimmed(const char *s, struct sn_buf *out, bool *empty, struct sn_err *err)
{
    s = s ? s : "";
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    *empty = n == 0;
    return sn_buf_append(out, s, n, err);
}

static int llm_summarize(void *user, const struct sn_traj *t, size_t round, char ***entries,
                         size_t *n, struct sn_err *err)
{
    struct sn_tuples_llm *L = user;
    struct sn_buf prompt = {0}, out = {0};
    struct sn_llm_reply rep;
    size_t sentences = L->summary_sentences ? L->summary_sentences : 3;
    memset(&rep, 0, sizeof rep);
    if (round == 0)
        return SN_OK; /* no earlier rounds: no history, no request */
    int rc = sn_tuples_task(t, &prompt, err);
    if (!rc)
        rc = sn_buf_puts(&prompt, "\n\nDebate so far:", err);
    for (size_t q = 0; q < round && q < t->n_rounds && !rc; q++)
        for (size_t i = 0; i < t->rounds[q].n_msgs && !rc; i++) {
            const struct sn_traj_msg *m = &t->rounds[q].msgs[i];
            rc = sn_buf_printf(&prompt, err, "\nRound %zu, agent %d (answer %s): ", q + 1,
                               m->agent, m->answer ? m->answer : "none");
            if (!rc)
                rc = sn_context_gist(m->text ? m->text : "", 8, 1200, &prompt, err);
        }
    char span[48]; /* "round 1" / "rounds 1-3" */
    if (round > 1)
        snprintf(span, sizeof span, "rounds 1-%zu", round);
    else
        snprintf(span, sizeof span, "round 1");
    if (!rc)
        rc = sn_buf_printf(&prompt, err, "\n\nSummarize %s of this debate for the question "
                           "above in at most %zu sentences. Name each agent's answer and the "
                           "main reason it gave. Do not give your own answer.", span,
                           sentences);
    if (!rc) {
        rc = llm_ask(L->summary, L, "You condense multi-agent debates into short, faithful "
                     "summaries. Reply with the summary only.", prompt.data,
                     (int64_t)(sn_seed_derive(SUMMARY_SALT, t->id, round) & 0x7fffffff), &rep,
                     err);
        if (rc)
            sn_err_wrap(err, "trajectory %s round %zu: LLM summary", t->id, round);
    }
    bool empty = false;
    if (!rc)
        rc = sn_buf_printf(&out, err, "Summary of %s: ", span);
    if (!rc)
        rc = put_trimmed(rep.text, &out, &empty, err);
    if (!rc && empty)
        rc = sn_err_set(err, SN_E_BACKEND, "trajectory %s round %zu: LLM summary: %s returned "
                        "an empty reply", t->id, round, sn_llm_backend_describe(L->summary));
    if (!rc) {
        char **v = sn_realloc(*entries, (*n + 1) * sizeof *v);
        if (!v) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        } else {
            *entries = v;
            v[(*n)++] = out.data;
            out.data = NULL;
        }
    }
    sn_llm_reply_free(&rep);
    sn_buf_free(&prompt);
    sn_buf_free(&out);
    return rc;
}

static int llm_reference(void *user, const struct sn_traj *t, size_t round, struct sn_buf *out,
                         struct sn_err *err)
{
    struct sn_tuples_llm *L = user;
    if (!is_empty(t->gold_explanation) || !t->gold || !*t->gold)
        return sn_tuples_builtin_reference(t, out, err); /* the dataset's own */
    struct sn_buf prompt = {0};
    struct sn_llm_reply rep;
    memset(&rep, 0, sizeof rep);
    const char *gold = t->gold;
    size_t idx = gold[0] >= 'A' && gold[0] <= 'Z' && !gold[1] ? (size_t)(gold[0] - 'A') : SIZE_MAX;
    int rc = sn_tuples_task(t, &prompt, err);
    if (!rc && t->task == SN_TASK_MC && idx < t->n_options)
        rc = sn_buf_printf(&prompt, err, "\n\nThe correct answer is %s (%s).", gold,
                           t->options[idx]);
    else if (!rc)
        rc = sn_buf_printf(&prompt, err, "\n\nThe correct answer is %s.", gold);
    if (!rc)
        rc = sn_buf_printf(&prompt, err, "\nWrite a short, correct explanation (at most 4 "
                           "sentences) of why this is the answer, and end with the line "
                           "\"FINAL ANSWER: %s\".", gold);
    if (!rc) {
        rc = llm_ask(L->reference, L, "You write short, correct worked explanations for exam "
                     "questions.", prompt.data,
                     (int64_t)(sn_seed_derive(REFERENCE_SALT, t->id, 0) & 0x7fffffff), &rep, err);
        if (rc)
            sn_err_wrap(err, "trajectory %s round %zu: LLM reference", t->id, round);
    }
    char got[SN_ANSWER_MAX];
    if (!rc && rep.text && sn_extract_answer(rep.text, t->task, t->n_options, got) &&
        sn_answer_equal(got, gold, t->task)) {
        bool empty = false;
        size_t start = out->len;
        rc = put_trimmed(rep.text, out, &empty, err);
        if (!rc && !strstr(out->data + start, "FINAL ANSWER"))
            rc = sn_buf_printf(out, err, "\nFINAL ANSWER: %s", gold);
    } /* else: nothing appended: the builder falls back to the templated one and counts it */
    sn_llm_reply_free(&rep);
    sn_buf_free(&prompt);
    return rc;
}

static bool is_sim(struct sn_llm_backend *be)
{
    return be && !strcmp(sn_llm_backend_kind(be), "sim");
}

int sn_tuples_use_llm(struct sn_tuples_params *p, struct sn_tuples_llm *llm, struct sn_err *err)
{
    if (is_sim(llm->summary) || is_sim(llm->reference))
        return sn_err_set(err, SN_E_ARG, "build: the sim backend cannot write %s (its agents "
                          "answer debate-engine requests only); use an openai endpoint",
                          is_sim(llm->summary) ? "summaries" : "references");
    p->user = llm;
    if (llm->summary) {
        snprintf(llm->summary_method, sizeof llm->summary_method, "llm %s sentences=%zu (%s)",
                 SN_TUPLES_SUMMARY_PROMPT, llm->summary_sentences ? llm->summary_sentences : 3,
                 sn_llm_backend_describe(llm->summary));
        p->summarize = llm_summarize;
        p->summary_method = llm->summary_method;
    }
    if (llm->reference) {
        snprintf(llm->reference_method, sizeof llm->reference_method,
                 "dataset-or-model %s (%s), else template", SN_TUPLES_REFERENCE_PROMPT,
                 sn_llm_backend_describe(llm->reference));
        p->reference = llm_reference;
        p->reference_method = llm->reference_method;
    }
    if (llm->max_tokens) {
        size_t k = strlen(llm->summary_method);
        if (llm->summary)
            snprintf(llm->summary_method + k, sizeof llm->summary_method - k, " max_tokens=%d",
                     llm->max_tokens);
        k = strlen(llm->reference_method);
        if (llm->reference)
            snprintf(llm->reference_method + k, sizeof llm->reference_method - k,
                     " max_tokens=%d", llm->max_tokens);
    }
    return SN_OK;
}
