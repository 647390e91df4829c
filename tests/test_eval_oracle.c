/* tests/test_eval_oracle.c: the oracle ranker (eval/detect_oracle.c; docs/eval.md "Oracle")
** through the replay of eval/detect.c. Hand-computed figures:
**   - k equal to the number of adversaries: balanced accuracy 1, FPR 0, FNR 0, hit rate 1,
**     AUROC 1, every round;
**   - k below it: the lowest slot in round 0 (FNR 1/2, balanced accuracy 3/4), the adversary
**     not yet listed in round 1 (balanced accuracy 1 from then on), under rule all and
**     unlisted; under unlisted round 2 has no adversarial candidate left (no ranking counts
**     for the hit rate);
**   - k above it: the extra places go to honest agents by the seeded tie rule, computed here
**     from sn_defense_tie_key;
**   - three agents (one adversary, k = 1): the two honest agents left split 1-1, so the
**     tie-neutral accuracy is 1/2 where the strict one is 0;
**   - an AITM copy: the tampered copy scores lowest for its receiver. */
#include "test_eval_fixture.h"

#include "common/common.h"
#include "eval/detect.h"

static struct sn_detect *run(const struct fx *f, size_t n_fx, int k, enum sn_defense_rule rule,
                             struct sn_buf *items)
{
    struct sn_detect_params p = sn_detect_default_params();
    p.k = k;
    p.rule = rule;
    p.n_boot = 0;
    struct sn_detect_ranker r = sn_detect_oracle_ranker();
    CHECK_STR(r.name, "oracle");
    struct sn_detect *d = NULL;
    struct sn_err err = {0};
    CHECK(sn_detect_create(&p, &r, &d, &err) == SN_OK);
    for (size_t i = 0; d && i < n_fx; i++) {
        struct sn_traj *t = fx_traj(&f[i]);
        CHECK(t != NULL);
        if (t)
            CHECK_MSG(sn_detect_add(d, t, items, &err) == SN_OK, "%s", err.msg);
        sn_traj_free(t);
    }
    return d;
}

static struct sn_detect_summary sum(struct sn_detect *d, size_t round)
{
    struct sn_detect_summary s;
    struct sn_err err = {0};
    CHECK_MSG(sn_detect_summary(d, "all", round, &s, &err) == SN_OK, "%s", err.msg);
    return s;
}

static const char *grid5[3] = {"AAABB", "AABBB", "AAABB"};

/* k = 2 = the adversaries: perfect every round */
static void test_k_equal(void)
{
    struct fx f = {.id = "o1", .roles = "HHHAA", .gold = "A", .target = "B", .grid = grid5,
                   .T = 3};
    struct sn_detect *d = run(&f, 1, 2, SN_DEFENSE_RULE_ALL, NULL);
    if (!d)
        return;
    for (size_t r = 0; r < 3; r++) {
        struct sn_detect_summary s = sum(d, r);
        CHECK_CLOSE(s.agent_bacc.p, 1.0, 0, 0);
        CHECK_CLOSE(s.agent_fpr.p, 0.0, 0, 0);
        CHECK_CLOSE(s.agent_fnr.p, 0.0, 0, 0);
        CHECK_CLOSE(s.pair_bacc.p, 1.0, 0, 0);
        CHECK_CLOSE(s.hit.p, 1.0, 0, 0);
        CHECK_CLOSE(s.hit.n, 3, 0, 0);
        CHECK_CLOSE(s.auroc.p, 1.0, 0, 0);
        /* only the honest vote: A A A (round 1: A A B -> A) */
        CHECK_CLOSE(s.task_defended.p, 1.0, 0, 0);
        CHECK_CLOSE(s.task_defended_neutral.p, 1.0, 0, 0);
    }
    CHECK_CLOSE(sum(d, SN_DETECT_POOLED).agent_bacc.p, 1.0, 0, 0);
    sn_detect_free(d);
}

/* k = 1 below 2 adversaries. Rule all: round 0 every sentinel's B_t is {3} (the lower slot),
** round 1 {4} (not yet listed), round 2 {3} again: the lists hold 3 from round 0 and 4 from
** round 1: FNR 1/2 then 0, FPR 0, balanced 3/4 then 1 (pooled over rounds: FNR 1/6, balanced
** 11/12); hit rate 3/3 each round. Rule unlisted: round 0 {3}, round 1 {4}: the same lists;
** round 2 ranks only honest senders, so no ranking counts for the hit rate (n = 0). */
static void test_k_below(void)
{
    static const char *grid_kb[3] = {"AABBB", "AABBB", "AAABB"};
    struct fx f = {.id = "o2", .roles = "HHHAA", .gold = "A", .target = "B", .grid = grid_kb,
                   .T = 3};
    struct sn_detect *d = run(&f, 1, 1, SN_DEFENSE_RULE_ALL, NULL);
    if (d) {
        for (size_t r = 0; r < 3; r++) {
            struct sn_detect_summary s = sum(d, r);
            CHECK_CLOSE(s.agent_fnr.p, r == 0 ? 0.5 : 0.0, 0, 0);
            CHECK_CLOSE(s.agent_fpr.p, 0.0, 0, 0);
            CHECK_CLOSE(s.agent_bacc.p, r == 0 ? 0.75 : 1.0, 1e-12, 0);
            CHECK_CLOSE(s.hit.k, 3, 0, 0);
            CHECK_CLOSE(s.hit.n, 3, 0, 0);
        }
        /* round 0 votes: kept A A B . B: 2-2, tie-neutral 1/2, strict 0; round 1: A A B, both
        ** adversaries out: A, right under both rules */
        struct sn_detect_summary s = sum(d, 0);
        CHECK_CLOSE(s.task_defended.p, 0.0, 0, 0);
        CHECK_CLOSE(s.task_defended_neutral.p, 0.5, 1e-12, 0);
        s = sum(d, 1);
        CHECK_CLOSE(s.task_defended.p, 1.0, 0, 0);
        CHECK_CLOSE(s.task_defended_neutral.p, 1.0, 0, 0);
        CHECK_CLOSE(sum(d, SN_DETECT_POOLED).agent_bacc.p, 11.0 / 12.0, 1e-12, 0);
        sn_detect_free(d);
    }
    d = run(&f, 1, 1, SN_DEFENSE_RULE_UNLISTED, NULL);
    if (d) {
        CHECK_CLOSE(sum(d, 0).agent_bacc.p, 0.75, 1e-12, 0);
        struct sn_detect_summary s = sum(d, 1);
        CHECK_CLOSE(s.agent_bacc.p, 1.0, 0, 0);
        CHECK_CLOSE(s.hit.k, 3, 0, 0);
        CHECK_CLOSE(s.hit.n, 3, 0, 0);
        s = sum(d, 2);
        CHECK(s.hit.n == 0 && isnan(s.hit.p));
        CHECK_CLOSE(sum(d, SN_DETECT_POOLED).hit.n, 6, 0, 0);
        sn_detect_free(d);
    }
}

/* k = 2 above 1 adversary (HHHHA, 4 sentinels, 1 round): every sentinel holds 4 and the honest
** sender its tie key ranks first; an honest agent is excluded when at least 2 of the other 3
** sentinels hold it. */
static void test_k_above(void)
{
    enum { N = 40 };
    static struct fx f[N];
    static char ids[N][16];
    static const char *g[1] = {"AAAAB"};
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "k%d", i);
        f[i] = (struct fx){.id = ids[i], .roles = "HHHHA", .gold = "A", .target = "B", .grid = g,
                           .T = 1};
    }
    struct sn_detect *d = run(f, N, 2, SN_DEFENSE_RULE_ALL, NULL);
    if (!d)
        return;
    uint64_t seed = sn_detect_default_params().seed;
    double fp = 0;
    for (int i = 0; i < N; i++) {
        uint64_t ts = sn_seed_derive(seed, ids[i], 0), bl[4] = {0};
        for (int s = 0; s < 4; s++) {
            uint64_t rs = sn_defense_round_seed(ts, s, 0);
            int lo = -1;
            for (int j = 0; j < 4; j++)
                if (j != s && (lo < 0 || sn_defense_tie_key(rs, j) < sn_defense_tie_key(rs, lo)))
                    lo = j;
            bl[s] = 1ULL << lo | 1ULL << 4;
        }
        for (int j = 0; j < 4; j++) {
            int votes = 0;
            for (int s = 0; s < 4; s++)
                votes += s != j && ((bl[s] >> j) & 1);
            fp += 2 * votes > 3;
        }
    }
    struct sn_detect_summary s = sum(d, 0);
    CHECK_CLOSE(s.agent_fnr.p, 0.0, 0, 0);
    CHECK_CLOSE(s.agent_fpr.k, fp, 0, 0);
    CHECK_CLOSE(s.agent_fpr.n, 4 * N, 0, 0);
    CHECK_CLOSE(s.agent_bacc.p, 1.0 - fp / (4.0 * N) / 2.0, 1e-12, 0);
    CHECK_CLOSE(s.hit.p, 1.0, 0, 0);
    CHECK_CLOSE(s.auroc.p, 1.0, 0, 0);
    sn_detect_free(d);
}

/* Three agents, the adversary last: the oracle excludes it (balanced accuracy 1), and the two
** honest agents left answer A and B: a 1-1 split holding gold. Strict: no decision, 0;
** tie-neutral: 1/2. Every agent: A B B -> B, 0 under both rules. */
static void test_three_agents(void)
{
    static const char *g[1] = {"ABB"};
    struct fx f = {.id = "t3", .roles = "HHA", .gold = "A", .target = "B", .grid = g, .T = 1};
    struct sn_detect *d = run(&f, 1, 1, SN_DEFENSE_RULE_ALL, NULL);
    if (!d)
        return;
    struct sn_detect_summary s = sum(d, 0);
    CHECK_CLOSE(s.agent_bacc.p, 1.0, 0, 0);
    CHECK_CLOSE(s.task_defended.p, 0.0, 0, 0);
    CHECK_CLOSE(s.task_defended_neutral.p, 0.5, 1e-12, 0);
    CHECK_CLOSE(s.task_undefended.p, 0.0, 0, 0);
    CHECK_CLOSE(s.task_undefended_neutral.p, 0.0, 0, 0);
    sn_detect_free(d);
}

/* AITM: agent 0's round-0 message reached sentinel 2 rewritten. For sentinel 2 that copy is
** adversarial: it scores 0 - 64 and is its B_t; the copies of the other sentinels are honest
** (0). AUROC 1. */
static void test_aitm(void)
{
    static const char *g[1] = {"AAA."};
    struct fx f = {.id = "ai", .roles = "HHHI", .gold = "A", .target = "B", .grid = g, .T = 1};
    char *js = fx_json(&f);
    cJSON *j = cJSON_Parse(js);
    free(js);
    fx_tamper(j, 0, 0, 2);
    struct sn_traj *t = fx_parse_json(j);
    struct sn_err err = {0};
    CHECK(t != NULL);
    struct sn_detect_params p = sn_detect_default_params();
    p.n_boot = 0;
    struct sn_detect_ranker r = sn_detect_oracle_ranker();
    struct sn_detect *d = NULL;
    struct sn_buf items = {0};
    CHECK(sn_detect_create(&p, &r, &d, &err) == SN_OK);
    if (d && t) {
        CHECK_MSG(sn_detect_add(d, t, &items, &err) == SN_OK, "%s", err.msg);
        /* round 0, sentinel 2, sender 0: adversarial, not yet listed: 0 - 128, blacklisted */
        CHECK_MSG(items.data && strstr(items.data, ",0,2,0,1,-128,1\n"), "%s",
                  items.data ? items.data : "");
        CHECK(items.data && strstr(items.data, ",0,1,0,0,0,"));
        CHECK_CLOSE(sum(d, 0).auroc.p, 1.0, 0, 0);
    }
    sn_buf_free(&items);
    sn_traj_free(t);
    sn_detect_free(d);
}

int main(void)
{
    test_k_equal();
    test_k_below();
    test_k_above();
    test_three_agents();
    test_aitm();
    return sn_test_done();
}
