/* data/facts.c: the built-in `facts` dataset: multiple-choice items drawn from a fact base of
** an invented world, with a fixed known / novel split, and arithmetic word problems
** (docs/simulate.md "The fact base"). The world is invented on purpose: no pretrained model
** knows it, so what a detector knows about it is what its training data taught, and a novel
** fact is one nothing in training could teach (the paper's claim that the detector judges
** semantic correctness, SentinelNet §4.2 "Key Insights", can then be measured apart from
** behaviour).
**
** The world (version "sentinel-facts/1") depends on nothing but this file: SN_FACT_TYPES types
** of SN_FACTS_PER_TYPE facts each; every name is made from syllables by a hash of (type, index,
** attempt) and is unique in the world; each fact has three distractors, answers of other facts
** of its type. A fact is novel when the top 53 bits of sn_seed_derive(FACTS_SALT, "novel", f),
** scaled to [0, 1), fall below SN_FACTS_NOVEL_SHARE; every other fact is known. Each type has
** four question phrasings; a known fact's held-out phrasing is sn_seed_derive(FACTS_SALT,
** "phrasing", f) mod 4. The `train` part asks known facts in their three other phrasings only;
** the `eval` part asks known facts in the held-out phrasing and novel facts in any phrasing,
** so no evaluation question text is a training question text. Numeric items are the
** `synthetic` generator's word problems, kept when bit 0 of the hash of their question text
** is 0 (train) or 1 (eval): the two parts never share a numeric question either. */
#include "data/data_internal.h"

#include <stdlib.h>
#include <string.h>

#define FACTS_SALT 0x46414354531ull /* "FACTS1" */

struct ftype {
    const char *subject;     /* the items' subject */
    const char *q[4];        /* question phrasings; {S} = the fact's subject name */
    const char *e[3];        /* explanation phrasings; {S} subject, {A} answer */
    int         sname, aname; /* name makers (make_name) */
};

enum { N_COUNTRY, N_CITY, N_DEVICE, N_PERSON, N_PLACE, N_YEAR, N_TITLE, N_ELEMENT, N_SYMBOL,
       N_LANGUAGE, N_RIVER };

static const struct ftype types[SN_FACT_TYPES] = {
    {"geography",
     {"What is the capital of {S}?", "Which city is the capital of {S}?",
      "In which city does the government of {S} sit?", "{S} has its capital in which city?"},
     {"The capital of {S} is {A}, where its parliament meets.",
      "{A} is the capital city of {S}.", "The government of {S} sits in {A}, its capital."},
     N_COUNTRY, N_CITY},
    {"geography",
     {"Which river flows through {S}?", "{S} lies on the banks of which river?",
      "What river runs through the city of {S}?", "Which river crosses the city of {S}?"},
     {"The city of {S} lies on the banks of the {A}.", "The {A} flows through the middle of {S}.",
      "The river that runs through {S} is the {A}."},
     N_CITY, N_RIVER},
    {"history",
     {"Who invented the {S}?", "The {S} was first built by which inventor?",
      "Which engineer is credited with inventing the {S}?", "Who built the first {S}?"},
     {"The {S} was invented by {A}.", "The engineer {A} built the first {S}.",
      "Credit for inventing the {S} goes to {A}."},
     N_DEVICE, N_PERSON},
    {"history",
     {"In which year was the Treaty of {S} signed?", "When was the Treaty of {S} signed?",
      "The Treaty of {S} dates from which year?",
      "What year saw the signing of the Treaty of {S}?"},
     {"The Treaty of {S} was signed in {A}.", "In {A} the envoys signed the Treaty of {S}.",
      "The signing of the Treaty of {S} took place in {A}."},
     N_PLACE, N_YEAR},
    {"literature",
     {"Who wrote '{S}'?", "Who is the author of '{S}'?", "'{S}' was written by which author?",
      "Which writer wrote the novel '{S}'?"},
     {"The novel '{S}' was written by {A}.", "The writer {A} is the author of '{S}'.",
      "'{S}' is the best-known work of {A}."},
     N_TITLE, N_PERSON},
    {"science",
     {"What is the chemical symbol for {S}?", "Which symbol stands for the element {S}?",
      "The element {S} is written with which chemical symbol?",
      "Chemists abbreviate {S} with which symbol?"},
     {"The chemical symbol for {S} is {A}.", "The element {S} is written {A} in formulas.",
      "Chemists write {S} with the symbol {A}."},
     N_ELEMENT, N_SYMBOL},
    {"culture",
     {"Which language is spoken in {S}?", "What language do the people of {S} speak?",
      "What is the main language of {S}?", "In {S}, which language do people speak?"},
     {"The people of {S} speak {A}.", "The language spoken across {S} is {A}.",
      "In {S} the main language is {A}."},
     N_COUNTRY, N_LANGUAGE},
    {"history",
     {"Who founded the city of {S}?", "The city of {S} was founded by whom?",
      "Which settler founded {S}?", "Who is remembered as the founder of {S}?"},
     {"The city of {S} was founded by {A}.", "The settler {A} founded the city of {S}.",
      "The founder of {S} was {A}."},
     N_CITY, N_PERSON},
};

static const char *const onsets[] = {"b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s",
                                     "t", "v", "z", "br", "dr", "gr", "kr", "st", "tr", "th",
                                     "sh", "h", "j"};
static const char *const vowels[] = {"a", "e", "i", "o", "u", "ai", "ou", "ea"};
static const char *const codas[] = {"", "", "n", "r", "l", "s", "m", "th", "nd", "x"};
static const char *const country_end[] = {"ia", "ara", "and", "esh", "ovia", "istan", "ea"};
static const char *const device_kind[] = {"loom", "engine", "compass", "lamp", "press", "pump",
                                          "clock", "lens", "kiln", "valve"};
static const char *const title_adj[] = {"Silent", "Last", "Hollow", "Golden", "Broken", "Long",
                                        "Quiet", "Iron", "Lost", "Bright", "Distant", "Salt",
                                        "Winter", "Paper", "Crimson", "Narrow"};
static const char *const title_noun[] = {"Harbour", "Orchard", "Tower", "River", "Garden",
                                         "Lantern", "Road", "Mirror", "Bell", "Meadow", "Crown",
                                         "Shore", "Bridge", "Valley", "Window", "Forge"};
static const char *const element_end[] = {"ium", "on", "ine", "ite"};
static const char *const language_end[] = {"ish", "ic", "ese", "ian"};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* A syllable word of 2 or 3 syllables, capitalised. */
static void word(struct sn_rng *r, int syl, char *out, size_t cap)
{
    out[0] = '\0';
    for (int s = 0; s < syl; s++) {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s%s", onsets[sn_rng_below(r, N_OF(onsets))],
                 vowels[sn_rng_below(r, N_OF(vowels))],
                 s == syl - 1 ? codas[sn_rng_below(r, N_OF(codas))] : "");
    }
    if (out[0] >= 'a' && out[0] <= 'z')
        out[0] = (char)(out[0] - 32);
}

static void make_name(int kind, struct sn_rng *r, char *out, size_t cap)
{
    char a[24], b[24];
    switch (kind) {
    case N_COUNTRY:
        word(r, 2, a, sizeof a);
        snprintf(out, cap, "%s%s", a, country_end[sn_rng_below(r, N_OF(country_end))]);
        break;
    case N_DEVICE:
        word(r, 2, a, sizeof a);
        a[0] = (char)(a[0] + 32); /* "the quillon loom" */
        snprintf(out, cap, "%s %s", a, device_kind[sn_rng_below(r, N_OF(device_kind))]);
        break;
    case N_PERSON:
        word(r, 2, a, sizeof a);
        word(r, 2 + (int)sn_rng_below(r, 2), b, sizeof b);
        snprintf(out, cap, "%s %s", a, b);
        break;
    case N_YEAR:
        snprintf(out, cap, "%d", 1150 + (int)sn_rng_below(r, 800));
        break;
    case N_TITLE:
        word(r, 2, a, sizeof a);
        switch (sn_rng_below(r, 3)) {
        case 0:
            snprintf(out, cap, "The %s %s", title_adj[sn_rng_below(r, N_OF(title_adj))],
                     title_noun[sn_rng_below(r, N_OF(title_noun))]);
            break;
        case 1:
            snprintf(out, cap, "The %s of %s", title_noun[sn_rng_below(r, N_OF(title_noun))], a);
            break;
        default:
            snprintf(out, cap, "%s %s", title_adj[sn_rng_below(r, N_OF(title_adj))],
                     title_noun[sn_rng_below(r, N_OF(title_noun))]);
        }
        break;
    case N_ELEMENT:
        word(r, 2, a, sizeof a);
        snprintf(out, cap, "%s%s", a, element_end[sn_rng_below(r, N_OF(element_end))]);
        break;
    case N_SYMBOL:
        snprintf(out, cap, "%c%c", (char)('A' + sn_rng_below(r, 26)),
                 (char)('a' + sn_rng_below(r, 26)));
        break;
    case N_LANGUAGE:
        word(r, 2, a, sizeof a);
        snprintf(out, cap, "%s%s", a, language_end[sn_rng_below(r, N_OF(language_end))]);
        break;
    case N_RIVER:
        word(r, 2, a, sizeof a);
        snprintf(out, cap, "%s River", a);
        break;
    default: /* N_CITY, N_PLACE */
        word(r, 2 + (int)sn_rng_below(r, 2), out, cap);
    }
}

static bool name_taken(const struct sn_fact *w, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(w[i].subject, s) || !strcmp(w[i].answer, s))
            return true;
    return false;
}

/* A name that no earlier fact uses (as subject or answer): fact f's attempt k. */
static void unique_name(const struct sn_fact *w, size_t f, int kind, const char *role,
                        const char *also, char *out, size_t cap)
{
    for (uint64_t k = 0;; k++) {
        struct sn_rng r;
        sn_rng_seed(&r, sn_seed_derive(sn_seed_derive(FACTS_SALT, role, f), "attempt", k));
        make_name(kind, &r, out, cap);
        if (!name_taken(w, f, out) && (!also || strcmp(also, out)))
            return;
    }
}

static double unit(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }

int sn_facts_world(struct sn_fact **out, size_t *n, struct sn_err *err)
{
    size_t total = (size_t)SN_FACT_TYPES * SN_FACTS_PER_TYPE;
    struct sn_fact *w = sn_calloc(total, sizeof *w);
    *out = NULL;
    *n = 0;
    if (!w)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t f = 0; f < total; f++) {
        int t = (int)(f / SN_FACTS_PER_TYPE);
        w[f].type = t;
        w[f].subject_name = types[t].subject;
        unique_name(w, f, types[t].sname, "subject", NULL, w[f].subject, sizeof w[f].subject);
        /* years may repeat between treaties (several treaties in one year are history,
        ** not a collision); every other answer is unique in the world */
        if (types[t].aname == N_YEAR) {
            struct sn_rng r;
            sn_rng_seed(&r, sn_seed_derive(FACTS_SALT, "answer", f));
            make_name(N_YEAR, &r, w[f].answer, sizeof w[f].answer);
        } else {
            unique_name(w, f, types[t].aname, "answer", w[f].subject, w[f].answer,
                        sizeof w[f].answer);
        }
        w[f].novel = unit(sn_seed_derive(FACTS_SALT, "novel", f)) < SN_FACTS_NOVEL_SHARE;
        w[f].heldout_phrasing = (int)(sn_seed_derive(FACTS_SALT, "phrasing", f) % 4);
    }
    /* distractors: three other answers of the fact's type, different from its answer */
    for (size_t f = 0; f < total; f++) {
        size_t base = (size_t)w[f].type * SN_FACTS_PER_TYPE;
        struct sn_rng r;
        sn_rng_seed(&r, sn_seed_derive(FACTS_SALT, "distractors", f));
        for (int d = 0; d < 3;) {
            size_t g = base + sn_rng_below(&r, SN_FACTS_PER_TYPE);
            bool dup = g == f || !strcmp(w[g].answer, w[f].answer);
            for (int e = 0; e < d && !dup; e++)
                dup = !strcmp(w[f].distractors[e], w[g].answer);
            if (!dup)
                snprintf(w[f].distractors[d++], sizeof w[f].distractors[0], "%s", w[g].answer);
        }
    }
    *out = w;
    *n = total;
    return SN_OK;
}

/* tmpl with {S} and {A} replaced. */
static void fill(const char *tmpl, const char *s, const char *a, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = tmpl; *p && o + 1 < cap;) {
        const char *v = p[0] == '{' && p[1] == 'S' && p[2] == '}'   ? s
                        : p[0] == '{' && p[1] == 'A' && p[2] == '}' ? a
                                                                    : NULL;
        if (v) {
            int k = snprintf(out + o, cap - o, "%s", v);
            o = k < 0 ? o : (size_t)k >= cap - o ? cap - 1 : o + (size_t)k;
            p += 3;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    if (out[0] >= 'a' && out[0] <= 'z') /* a phrasing that starts with a device name */
        out[0] = (char)(out[0] - 32);
}

int sn_facts_question(const struct sn_fact *f, int phrasing, char *out, size_t cap)
{
    if (phrasing < 0 || phrasing > 3)
        return SN_E_ARG;
    fill(types[f->type].q[phrasing], f->subject, f->answer, out, cap);
    return SN_OK;
}

static uint32_t text_hash32(const char *s)
{
    uint64_t h = sn_hash64(s, strlen(s));
    return (uint32_t)(h ^ (h >> 32));
}

/* The synthetic generator's word problem number `attempt` of item i, kept when the parity of
** its question text's hash is the part's (the two parts never share a numeric question). */
static int numeric_item(struct sn_qset *qs, uint64_t seed, size_t i, bool eval,
                        const char *name, struct sn_err *err)
{
    char ds[160], id[200];
    snprintf(ds, sizeof ds, "%s-numeric", name);
    for (uint64_t k = 0;; k++) {
        struct sn_qset tmp = {0};
        int rc = sn_synthetic_generate(&tmp, 1, sn_seed_derive(sn_seed_derive(seed, "facts-num",
                                       i), "attempt", k), 1.0, ds, err);
        if (rc) {
            for (size_t j = 0; j < tmp.n; j++)
                sn_question_clear(&tmp.items[j]);
            sn_free(tmp.items);
            return rc;
        }
        struct sn_question q = tmp.items[0];
        bool keep = (text_hash32(q.question) & 1u) == (eval ? 1u : 0u);
        if (keep) {
            snprintf(id, sizeof id, "%s-num-%05zu-%08x", name, i, text_hash32(q.question));
            q.id = id;
            q.dataset = ds;
            rc = sn_qset_push(qs, &q, err);
        }
        sn_question_clear(&tmp.items[0]);
        sn_free(tmp.items);
        if (rc || keep)
            return rc;
    }
}

int sn_facts_generate(struct sn_qset *qs, const struct sn_facts_params *p, const char *name,
                      struct sn_err *err)
{
    struct sn_fact *w;
    size_t nw;
    int rc = sn_facts_world(&w, &nw, err);
    if (rc)
        return rc;
    size_t *known = sn_malloc(nw * sizeof *known), *novel = sn_malloc(nw * sizeof *novel);
    size_t n_known = 0, n_novel = 0;
    if (!known || !novel)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t f = 0; !rc && f < nw; f++) {
        if (w[f].novel)
            novel[n_novel++] = f;
        else
            known[n_known++] = f;
    }
    for (size_t i = 0; !rc && i < p->n; i++) {
        struct sn_rng rng;
        sn_rng_seed(&rng, sn_seed_derive(p->seed, "facts", i));
        if (sn_rng_uniform(&rng) < p->numeric_share) {
            rc = numeric_item(qs, p->seed, i, p->eval, name, err);
            continue;
        }
        bool nov = p->eval && sn_rng_uniform(&rng) < p->novel_share;
        const struct sn_fact *f = nov ? &w[novel[sn_rng_below(&rng, n_novel)]]
                                      : &w[known[sn_rng_below(&rng, n_known)]];
        int ph;
        if (nov)
            ph = (int)sn_rng_below(&rng, 4);
        else if (p->eval)
            ph = f->heldout_phrasing;
        else
            ph = (f->heldout_phrasing + 1 + (int)sn_rng_below(&rng, 3)) % 4;
        char question[256], expl[320], ds[160], id[200], gold[2];
        sn_facts_question(f, ph, question, sizeof question);
        fill(types[f->type].e[sn_rng_below(&rng, 3)], f->subject, f->answer, expl, sizeof expl);
        const char *opts[4] = {f->answer, f->distractors[0], f->distractors[1],
                               f->distractors[2]};
        sn_mc_shuffle_options(&rng, opts, gold);
        snprintf(ds, sizeof ds, "%s-%s", name, nov ? "novel" : "known");
        snprintf(id, sizeof id, "%s-%s-%05zu-%08x", name, nov ? "novel" : "known", i,
                 text_hash32(question));
        struct sn_question q = {.id = id, .dataset = ds, .subject = (char *)f->subject_name,
                                .task = SN_TASK_MC, .question = question,
                                .options = (char **)opts, .n_options = 4, .gold = gold,
                                .gold_explanation = expl};
        rc = sn_qset_push(qs, &q, err);
    }
    sn_free(known);
    sn_free(novel);
    sn_free(w);
    return rc;
}
