/* data/vote.h: the one plurality vote of the project (docs/formats.md "Panel decision";
** docs/design.md §4 "Final decision by majority vote"). The debate engine's recorded final
** decision (data/sim/engine.c) and `sentinel stats` (eval/) both call sn_vote_plurality, so a
** tie is settled the same way wherever a panel decides.
**
** Tie rules. With adversaries placed in the low slots, "the lowest agent id wins a tie" hands
** every 2-2 tie to the adversary; so the default rule favours no slot: a tie is no decision,
** scored wrong, as the published collaboration-attack evaluation scores its final-round vote
** (Amayuelas et al., "MultiAgent Collaboration Attack"). The others stay selectable for
** comparison with older reports. */
#ifndef SN_DATA_VOTE_H
#define SN_DATA_VOTE_H
#include "common/common.h"

enum sn_vote_tie {
    SN_VOTE_TIE_NONE,      /* default: a tie for the top count is no decision */
    SN_VOTE_TIE_LOWEST_ID, /* the tied answer whose first holder has the lowest slot id */
    SN_VOTE_TIE_RANDOM,    /* uniform among the tied answers, seeded by sn_vote_seed */
    SN_VOTE_TIE_COUNT
};
const char *sn_vote_tie_name(enum sn_vote_tie rule); /* "none", "lowest-id", "random" */
int sn_vote_tie_parse(const char *s, enum sn_vote_tie *out, struct sn_err *err);

/* The seed of the random tie-break for round `round` of the debate with id `debate_id`
** (the trajectory's "id"): the engine and `sentinel stats` derive the same one. */
uint64_t sn_vote_seed(const char *debate_id, size_t round);

/* Answer equality for votes; ctx is passed through. NULL eq = strcmp equality. */
typedef bool (*sn_vote_eq_fn)(const char *a, const char *b, void *ctx);

/* Plurality over votes[0..n) in slot order (NULL = no vote: silent, unparsed or not a voter).
** Returns the slot of the winning answer's first holder, or -1 for no decision (no votes, or a
** tie under SN_VOTE_TIE_NONE). *tie (may be NULL) is set when the top count was shared by
** two or more distinct answers, whatever the rule did with it. Never allocates. */
int sn_vote_plurality(const char *const *votes, size_t n, enum sn_vote_tie rule, uint64_t seed,
                      sn_vote_eq_fn eq, void *ctx, bool *tie);

#endif
