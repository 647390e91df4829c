/* defense/bottom_k.c: lines 8-10 of Algorithm 1 (SentinelNet paper, section 4.3 "Defense
** Integration"; docs/design.md §4 "Runtime (Algorithm 1)"; docs/eval.md "Algorithm 1"): the
** bottom-k step and its seeded tie rule, the one implementation behind the debate engine's
** defense (sim/), `sentinel eval`'s replay and the sentinel object (defense/sentinel.c). */
#include "defense/defense.h"

#include <math.h>

static const char *const rule_names[] = {"all", "unlisted"};
_Static_assert(sizeof rule_names / sizeof rule_names[0] == SN_DEFENSE_RULE_COUNT,
               "rule names out of sync");

const char *sn_defense_rule_name(enum sn_defense_rule r)
{
    return (unsigned)r < SN_DEFENSE_RULE_COUNT ? rule_names[r] : "?";
}

uint64_t sn_defense_tie_key(uint64_t tie_seed, int sender)
{
    /* splitmix64 finaliser over (seed, sender): a fixed pseudo-random order of the slots */
    uint64_t z = tie_seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(sender + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* a ranks before b (is less trustworthy): NaN lowest, then score, then tie key, then id */
static bool ranks_before(double sa, uint64_t ka, int a, double sb, uint64_t kb, int b)
{
    bool na = isnan(sa), nb = isnan(sb);
    if (na != nb)
        return na;
    if (!na && sa != sb)
        return sa < sb;
    if (ka != kb)
        return ka < kb;
    return a < b;
}

uint64_t sn_defense_bottom_k(uint64_t blacklist, const int *sender, const double *score, size_t n,
                             int k, enum sn_defense_rule rule, uint64_t tie_seed)
{
    /* one candidate per sender, at its lowest score */
    double   s[64];
    uint64_t key[64];
    bool     have[64] = {false};
    for (size_t i = 0; i < n; i++) {
        int j = sender[i];
        if (j < 0 || j >= 64)
            continue;
        if (rule == SN_DEFENSE_RULE_UNLISTED && ((blacklist >> j) & 1))
            continue;
        if (!have[j] || ranks_before(score[i], 0, 0, s[j], 0, 0)) {
            s[j] = score[i];
            key[j] = sn_defense_tie_key(tie_seed, j);
            have[j] = true;
        }
    }
    uint64_t added = 0;
    for (int r = 0; r < k; r++) {
        int lo = -1;
        for (int j = 0; j < 64; j++) {
            if (!have[j] || ((added >> j) & 1))
                continue;
            if (lo < 0 || ranks_before(s[j], key[j], j, s[lo], key[lo], lo))
                lo = j;
        }
        if (lo < 0)
            break; /* k larger than the candidates: all of them */
        added |= 1ULL << lo;
    }
    return blacklist | added;
}

uint64_t sn_defense_round_seed(uint64_t tie_seed, int receiver, int round)
{
    return sn_seed_derive(tie_seed, "defense-tie",
                          ((uint64_t)(unsigned)round << 8) | (uint64_t)(unsigned)receiver);
}
