/* data/vote.c: plurality vote with an explicit tie rule (data/data.h). */
#include "data/data.h"

#include <string.h>

static const char *const tie_names[] = {"none", "lowest-id", "random"};
_Static_assert(sizeof tie_names / sizeof tie_names[0] == SN_VOTE_TIE_COUNT, "tie names");

const char *sn_vote_tie_name(enum sn_vote_tie rule)
{
    return (unsigned)rule < SN_VOTE_TIE_COUNT ? tie_names[rule] : "?";
}

int sn_vote_tie_parse(const char *s, enum sn_vote_tie *out, struct sn_err *err)
{
    for (int i = 0; i < SN_VOTE_TIE_COUNT; i++) {
        if (!strcmp(s, tie_names[i])) {
            *out = (enum sn_vote_tie)i;
            return SN_OK;
        }
    }
    return sn_err_set(err, SN_E_ARG, "unknown tie rule '%s' (expected none, lowest-id or "
                                     "random)", s);
}

uint64_t sn_vote_seed(const char *debate_id, size_t round)
{
    const char *id = debate_id ? debate_id : "";
    return sn_seed_derive(sn_hash64(id, strlen(id)), "tie", (uint64_t)round);
}

static bool same(const char *a, const char *b, sn_vote_eq_fn eq, void *ctx)
{
    if (!a || !b)
        return false;
    return eq ? eq(a, b, ctx) : strcmp(a, b) == 0;
}

/* Whether votes[a] is an answer's first holder (non-NULL, no earlier slot the same); if so, *c
** is how many slots from a on hold that answer. */
static bool first_count(const char *const *votes, size_t n, size_t a, sn_vote_eq_fn eq,
                        void *ctx, size_t *c)
{
    if (!votes[a])
        return false;
    for (size_t b = 0; b < a; b++)
        if (same(votes[b], votes[a], eq, ctx))
            return false;
    *c = 0;
    for (size_t b = a; b < n; b++)
        *c += same(votes[b], votes[a], eq, ctx);
    return true;
}

int sn_vote_plurality(const char *const *votes, size_t n, enum sn_vote_tie rule, uint64_t seed,
                      sn_vote_eq_fn eq, void *ctx, bool *tie)
{
    int best = -1;
    size_t best_n = 0, n_tied = 0;
    bool is_tie = false;
    /* each distinct answer is counted once, at its first holder, in slot order; O(n²) with
    ** n the panel size (a few to a few dozen) and no allocation */
    for (size_t a = 0; a < n; a++) {
        size_t c;
        if (!first_count(votes, n, a, eq, ctx, &c))
            continue;
        if (c > best_n) {
            best_n = c;
            best = (int)a;
            is_tie = false;
            n_tied = 1;
        } else if (c == best_n) {
            is_tie = true;
            n_tied++;
        }
    }
    if (tie)
        *tie = is_tie;
    if (!is_tie || rule == SN_VOTE_TIE_LOWEST_ID)
        return best;
    if (rule != SN_VOTE_TIE_RANDOM)
        return -1;
    /* the k-th tied answer in order of first holder, k uniform in [0, n_tied) */
    struct sn_rng rng;
    sn_rng_seed(&rng, seed);
    size_t k = (size_t)sn_rng_below(&rng, n_tied);
    for (size_t a = 0; a < n; a++) {
        size_t c;
        if (!first_count(votes, n, a, eq, ctx, &c))
            continue;
        if (c == best_n && k-- == 0)
            return (int)a;
    }
    return best; /* not reached */
}
