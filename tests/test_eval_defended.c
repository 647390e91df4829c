/* tests/test_eval_defended.c: defended debates next to their clean and attacked twins
** (eval/detect_defended.c; docs/eval.md "Defended debates"). Hand-made debates with scripted
** outcomes give hand-computed per-round accuracy of each arm, the defended system's vote over
** the agents not excluded (from recorded blacklists), recovery with its n/a case, the carrying
** forward of a debate that stopped early, the generation time on both bases, unmatched debates
** and the arm checks; ties (a 2-2 split and a 1-1 split after exclusion) under both tie rules,
** the recovery on the tie-neutral accuracy, the oracle's recovery and the share of it, with
** its n/a cases; the fourth arm (clean debates with the defence on) and the cost of the
** defence, the question=seen / question=unseen groups of the defended tables, and the shape
** of the measured overhead of endpoint debates. */
#include "test_eval_fixture.h"

#include "common/common.h"
#include "eval/detect.h"

#include <math.h>

/* A fixture debate with a defense, recorded blacklists (bl[r]: what every honest speaker holds
** in round r; NULL = none recorded), a backend description and per-message generation data. */
static struct sn_traj *mk(const struct fx *f, const char *scenario, const char *defense,
                          const uint64_t *bl, const char *backend, double latency_ms,
                          int tokens)
{
    char *js = fx_json(f);
    cJSON *j = cJSON_Parse(js);
    free(js);
    if (!j)
        return NULL;
    if (scenario) {
        cJSON_ReplaceItemInObject(j, "scenario", cJSON_CreateString(scenario));
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "attack"), "name",
                                  cJSON_CreateString(scenario));
    }
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "defense"), "name",
                              cJSON_CreateString(defense));
    cJSON_ReplaceItemInObject(j, "backend", cJSON_CreateString(backend));
    const cJSON *rounds = cJSON_GetObjectItem(j, "rounds");
    int r = 0;
    for (const cJSON *rd = rounds ? rounds->child : NULL; rd; rd = rd->next, r++)
        for (cJSON *m = rd->child; m; m = m->next) {
            int a = cJSON_GetObjectItem(m, "agent")->valueint;
            cJSON_AddNumberToObject(m, "latency_ms", latency_ms);
            cJSON_AddNumberToObject(m, "completion_tokens", tokens);
            if (!bl)
                continue;
            cJSON *arr = cJSON_AddArrayToObject(m, "blacklisted");
            for (int k = 0; f->roles[a] == 'H' && k < 64; k++)
                if ((bl[r] >> k) & 1)
                    cJSON_AddItemToArray(arr, cJSON_CreateNumber(k));
        }
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    struct sn_traj *t = NULL;
    struct sn_err err = {0};
    if (sn_traj_parse(s, strlen(s), "fx", &t, &err))
        fprintf(stderr, "parse: %s\n", err.msg);
    free(s);
    return t;
}

static int add(struct sn_defended *d, enum sn_arm arm, struct sn_traj *t, struct sn_err *err)
{
    CHECK(t != NULL);
    int rc = t ? sn_defended_add(d, arm, t, err) : SN_E_ARG;
    sn_traj_free(t);
    return rc;
}

#define CHECK_RATE_P(r, P) CHECK_CLOSE((r).p, (P), 1e-12, 0)

static int rank_const(void *ctx, const struct sn_detect_view *v, double *scores,
                      struct sn_err *err)
{
    (void)ctx;
    (void)err;
    for (size_t i = 0; i < v->n_msgs; i++)
        scores[i] = 1.0;
    return SN_OK;
}

/* Gold A; attackers (slots 3, 4) push B. Ten items.
**   clean (HHHHH):   item 0 round 0 "ABBBA" (B wins: wrong), else all A; item 1 stopped after
**                    round 0 (carried forward: correct). Clean = 9/10, 10/10, 10/10.
**   attacked:        "AAABB" (A 3-2: right), "ABBBB", "BBBBB" (wrong); item 9 stopped after
**                    round 0 (carried forward: right). Attacked = 10/10, 1/10, 1/10.
**   defended:        items 0-5: sentinels blacklist {3, 4} from round 1 on; rounds "AAABB",
**                    "AABBB" (every agent: B 3-2 wrong; kept agents 0-2: A 2-1 right),
**                    "AAABB" (right either way). Items 6-8: nothing blacklisted, "AAABB",
**                    "AABBB", "BBBBB". Item 9: as 6-8 but its round 2 is "AAABB".
**     kept vote     = 10/10, 6/10, 7/10;  every agent = 10/10, 0/10, 7/10.
**   round 0: clean 9/10 [0.596, 0.982] and attacked 10/10 [0.722, 1] overlap: n/a.
**   round 1: recovery = (0.6 − 0.1) / (1 − 0.1) = 5/9.
**   round 2 and overall: (0.7 − 0.1) / (1 − 0.1) = 2/3.
**   No vote ties: tie-neutral = strict. The oracle (k = 1, rule all) excludes slot 3 of the
**   attacked debates: AAA.B -> A, ABB.B -> B, BBB.B -> B (item 9 carried): 10/10, 1/10, 1/10,
**   the attacked arm's own figures: its recovery is 0 in every resample, its interval [0, 0]
**   does not lie above 0, and the share is n/a. */
static void test_hand(void)
{
    static const char *clean0[3] = {"ABBBA", "AAAAA", "AAAAA"};
    static const char *clean[3] = {"AAAAA", "AAAAA", "AAAAA"};
    static const char *att[3] = {"AAABB", "ABBBB", "BBBBB"};
    static const char *def_bl[3] = {"AAABB", "AABBB", "AAABB"};
    static const char *def_nobl[3] = {"AAABB", "AABBB", "BBBBB"};
    static const char *def9[3] = {"AAABB", "AABBB", "AAABB"};
    static const uint64_t bl_on[3] = {0, 0x18, 0x18}, bl_off[3] = {0, 0, 0};
    struct sn_defended_params p = sn_defended_default_params();
    p.n_boot = 500;
    p.gen_tokens_per_s = 50;
    struct sn_defended *d = NULL;
    struct sn_err err = {0};
    CHECK(sn_defended_create(&p, &d, &err) == SN_OK);
    if (!d)
        return;
    char ids[10][8];
    for (int i = 0; i < 10; i++) {
        snprintf(ids[i], sizeof ids[i], "i%d", i);
        struct fx c = {.id = ids[i], .roles = "HHHHH", .gold = "A", .grid = i ? clean : clean0,
                       .T = i == 1 ? 1 : 3};
        struct fx a = {.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B", .grid = att,
                       .T = i == 9 ? 1 : 3};
        struct fx x = {.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B",
                       .grid = i < 6 ? def_bl : i == 9 ? def9 : def_nobl, .T = 3};
        CHECK_MSG(add(d, SN_ARM_CLEAN, mk(&c, NULL, "none", NULL, "sim: x", 0, 10), &err) == 0,
                  "%s", err.msg);
        CHECK_MSG(add(d, SN_ARM_ATTACKED, mk(&a, NULL, "none", NULL, "sim: x", 0, 10), &err) == 0,
                  "%s", err.msg);
        /* items 0-4: sim agents (tokens at 50/s: 5 messages x 10 tokens = 1000 ms a round);
        ** items 5-9: an endpoint with 300 ms per message (1500 ms a round) */
        bool ep = i >= 5;
        struct sn_traj *t = mk(&x, NULL, "sentinel", i < 6 ? bl_on : bl_off,
                               ep ? "openai: http://x" : "sim: x", ep ? 300 : 0, 10);
        CHECK_MSG(t && sn_defended_add(d, SN_ARM_DEFENDED, t, &err) == 0, "%s", err.msg);
        sn_traj_free(t);
    }
    /* an attacked debate without twins */
    struct fx lone = {.id = "lone", .roles = "HHHAA", .gold = "A", .target = "B", .grid = att,
                      .T = 3};
    CHECK(add(d, SN_ARM_ATTACKED, mk(&lone, NULL, "none", NULL, "sim: x", 0, 10), &err) == 0);
    uint64_t un[SN_ARM_COUNT];
    sn_defended_unmatched(d, un);
    CHECK(un[SN_ARM_CLEAN] == 0 && un[SN_ARM_ATTACKED] == 1 && un[SN_ARM_DEFENDED] == 0);

    /* timing: replay the defended arm with a timed constant ranker */
    struct sn_detect_ranker inner = {"detector", rank_const, NULL};
    struct sn_detect_ranker timed = sn_defended_timed_ranker(d, &inner);
    CHECK_STR(timed.name, "detector");
    struct sn_detect_params dp = sn_detect_default_params();
    dp.n_boot = 0;
    struct sn_detect *rep = NULL;
    CHECK(sn_detect_create(&dp, &timed, &rep, &err) == SN_OK);
    for (int i = 0; rep && i < 10; i++) {
        struct fx x = {.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B",
                       .grid = i < 6 ? def_bl : i == 9 ? def9 : def_nobl, .T = 3};
        bool ep = i >= 5;
        struct sn_traj *t = mk(&x, NULL, "sentinel", i < 6 ? bl_on : bl_off,
                               ep ? "openai: http://x" : "sim: x", ep ? 300 : 0, 10);
        CHECK_MSG(t && sn_detect_add(rep, t, NULL, &err) == SN_OK, "%s", err.msg);
        sn_traj_free(t);
    }
    sn_detect_free(rep);

    CHECK(sn_defended_n_rounds(d, "all") == 3);
    struct sn_defended_round s;
    const double kc[3] = {9, 10, 10}, ka[3] = {10, 1, 1}, kk[3] = {10, 6, 7}, ke[3] = {10, 0, 7};
    for (size_t r = 0; r <= 3; r++) {
        size_t round = r == 3 ? SIZE_MAX : r, q = r == 3 ? 2 : r;
        CHECK_MSG(sn_defended_summary(d, "all", round, &s, &err) == SN_OK, "%s", err.msg);
        CHECK(s.n_units == 10);
        CHECK_CLOSE(s.acc[SN_ARM_CLEAN].p, kc[q] / 10, 1e-12, 0);
        CHECK_CLOSE(s.acc[SN_ARM_ATTACKED].p, ka[q] / 10, 1e-12, 0);
        CHECK_CLOSE(s.acc_kept.p, kk[q] / 10, 1e-12, 0);
        CHECK_CLOSE(s.acc[SN_ARM_DEFENDED].p, ke[q] / 10, 1e-12, 0);
        /* Wilson intervals of the arms, from the shared helper */
        double lo, hi;
        sn_wilson((uint64_t)kc[q], 10, &lo, &hi);
        CHECK_CLOSE(s.acc[SN_ARM_CLEAN].lo, lo, 1e-12, 0);
        /* timing: 10 debates timed in every round; generation 5 x 1000 + 5 x 1500 ms */
        CHECK(s.n_timed == 10 && s.n_gen_tokens == 5 && s.n_gen_latency == 5);
        CHECK_CLOSE(s.gen_ms, 1250.0, 1e-9, 0);
        CHECK(s.score_ms >= 0.0);
        CHECK_CLOSE(s.overhead_pct_serial, 100.0 * s.score_ms / s.gen_ms, 1e-9, 1e-9);
        /* the paper's Table 1: one sentinel's scoring (3 sentinels each scored once a round)
        ** over the round's time with parallel generation: simultaneous talk waits for the
        ** slowest message, 10 tokens at 50/s = 200 ms (sim) or 300 ms (endpoint) */
        CHECK(s.n_round_slowest == 10 && s.n_round_sum == 0);
        CHECK_CLOSE(s.round_ms, 250.0, 1e-9, 0);
        CHECK_CLOSE(s.score_ms_sentinel, s.score_ms / 3.0, 1e-9, 1e-9);
        CHECK_CLOSE(s.overhead_pct, 100.0 * s.score_ms_sentinel / s.round_ms, 1e-9, 1e-9);
        CHECK_CLOSE(s.acc_oracle.p, ka[q] / 10, 1e-12, 0);
        CHECK_CLOSE(s.acc_oracle_neutral.p, ka[q] / 10, 1e-12, 0);
        CHECK_CLOSE(s.acc_kept_neutral.p, kk[q] / 10, 1e-12, 0);
        CHECK_CLOSE(s.acc_neutral[SN_ARM_CLEAN].p, kc[q] / 10, 1e-12, 0);
        CHECK(isnan(s.share.p) && s.share_na[0]);
        if (q == 0) {
            CHECK(isnan(s.recovery.p) && strstr(s.na, "do not differ") != NULL);
            CHECK(isnan(s.recovery.lo));
            CHECK(isnan(s.recovery_oracle.p) && strstr(s.share_na, "recovery is n/a"));
        } else {
            CHECK_CLOSE(s.recovery_oracle.p, 0.0, 1e-12, 0);
            CHECK(s.recovery_oracle.lo == 0.0 && s.recovery_oracle.hi == 0.0);
            CHECK_MSG(strstr(s.share_na, "does not lie above 0") != NULL, "%s", s.share_na);
            double want = (kk[q] - ka[q]) / (kc[q] - ka[q]);
            CHECK_MSG(s.na[0] == 0, "%s", s.na);
            CHECK_CLOSE(s.recovery.p, want, 1e-12, 0);
            CHECK_MSG(s.recovery.lo <= want && want <= s.recovery.hi &&
                          s.recovery.lo < s.recovery.hi,
                      "round %zu: %.3f not in [%.3f, %.3f]", r, want, s.recovery.lo,
                      s.recovery.hi);
            /* every resample has (kept − attacked) / (clean − attacked) <= 1: clean is right
            ** in every debate of rounds >= 1, so kept <= clean in any resample */
            CHECK(s.recovery.hi <= 1.0);
            CHECK(s.n_boot_undefined < 5);
        }
    }
    /* the bootstrap is seeded: the same figures twice */
    struct sn_defended_round s2;
    CHECK(sn_defended_summary(d, "all", 1, &s, &err) == SN_OK);
    CHECK(sn_defended_summary(d, "all", 1, &s2, &err) == SN_OK);
    CHECK(s.recovery.lo == s2.recovery.lo && s.recovery.hi == s2.recovery.hi);
    /* groups from the attacked arm */
    CHECK(sn_defended_summary(d, "scenario=collaboration", 1, &s, &err) == SN_OK);
    CHECK(s.n_units == 10);
    CHECK(sn_defended_summary(d, "domain=in", 1, &s, &err) == SN_OK && s.n_units == 10);
    CHECK(sn_defended_summary(d, "nope", 1, &s, &err) == SN_E_ARG);
    /* the JSON report */
    cJSON *j = NULL;
    err = (struct sn_err){0};
    CHECK(sn_defended_report(d, &j, &err) == SN_OK && j);
    const cJSON *all = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "groups"), "all");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(all, "rounds")) == 3);
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(all, "rounds"), 0);
    CHECK(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(r0, "recovery"), "na")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(r0, "recovery"), "p")));
    const cJSON *ov = cJSON_GetObjectItem(all, "overall");
    CHECK_CLOSE(cJSON_GetObjectItem(cJSON_GetObjectItem(ov, "recovery"), "p")->valuedouble,
                2.0 / 3.0, 1e-12, 0);
    const cJSON *lr = cJSON_GetObjectItem(all, "last_round");
    CHECK_CLOSE(cJSON_GetObjectItem(cJSON_GetObjectItem(lr, "recovery"), "p")->valuedouble,
                2.0 / 3.0, 1e-12, 0);
    CHECK(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(lr, "recovery_share_of_oracle"),
                                             "na")));
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(lr, "accuracy"), "oracle") != NULL);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "unmatched"), "attacked")->valueint == 1);
    cJSON_Delete(j);
    sn_defended_free(d);
}

/* The fourth arm: clean debates with the defence on. Three honest agents, gold A, two rounds,
** ten items; endpoint backend (300 ms a message).
**   clean:      "AAB", "AAB" everywhere: A, 10/10 both rounds.
**   attacked:   roles HHA, "ABB" (B: 0); defended: blacklist {2} from round 0, kept "AB".
**   clean_defended (HHH, defense sentinel):
**     items 0-3: "AAB", "AAB", every sentinel holds {0} in round 1: agent 0 (right) is
**                excluded (2 of the 2 other sentinels hold it), kept "AB": a 1-1 split:
**                strict 0, tie-neutral 1/2; every agent: A, 1.
**     items 4-5: "AAB", "ABB", {0} in round 1: kept "BB": 0; every agent: B, 0.
**     items 6-8: "AAB", "AAB", nothing held: 1 either way.
**     item 9:    none (not matched in this arm: the cost is over the 9 others).
**   round 0: clean-defended 9/9, cost 0 (every resample 0).
**   round 1 (= last): clean-defended tie-neutral (4 · 1/2 + 0 + 3) / 9 = 5/9, strict 3/9,
**     every agent 7/9; cost = clean − clean-defended = (9 − 5) / 9 = 4/9.
**   question=seen (items 0-4, from the attacked arm): kept (2 + 0) / 5, cost 3/5;
**   question=unseen (items 5-9): item 9 has no twin: 4 debates, kept 3/4, cost 1/4.
** Measured overhead: attacked wall 1000 ms over 20 debate-rounds (50 ms), defended 1500 ms
** (75 ms): +25 ms, +50%; clean 800 ms (40 ms), clean_defended not timed: n/a. */
static void test_clean_defended(void)
{
    static const char *clean[2] = {"AAB", "AAB"}, *att[2] = {"ABB", "ABB"};
    static const char *cd_a[2] = {"AAB", "AAB"}, *cd_b[2] = {"AAB", "ABB"};
    static const uint64_t bl_def[2] = {0x4, 0x4}, bl_0[2] = {0, 0x1}, bl_none[2] = {0, 0};
    struct sn_defended_params p = sn_defended_default_params();
    p.n_boot = 300;
    struct sn_defended *d = NULL;
    struct sn_err err = {0};
    CHECK(sn_defended_create(&p, &d, &err) == SN_OK);
    if (!d)
        return;
    const char *ep = "openai: http://x";
    char ids[10][8];
    for (int i = 0; i < 10; i++) {
        snprintf(ids[i], sizeof ids[i], "c%d", i);
        struct fx c = {.id = ids[i], .roles = "HHH", .gold = "A", .grid = clean, .T = 2};
        struct fx a = {.id = ids[i], .roles = "HHA", .gold = "A", .target = "B", .grid = att,
                       .T = 2};
        struct fx x = {.id = ids[i], .roles = "HHH", .gold = "A", .grid = i >= 4 && i < 6 ? cd_b
                                                                                     : cd_a,
                       .T = 2};
        CHECK_MSG(add(d, SN_ARM_CLEAN, mk(&c, NULL, "none", NULL, ep, 300, 10), &err) == 0, "%s",
                  err.msg);
        struct sn_traj *t = mk(&a, NULL, "none", NULL, ep, 300, 10);
        CHECK_MSG(t && sn_defended_add_in_group(d, SN_ARM_ATTACKED, t, "question",
                                                i < 5 ? "seen" : "unseen", &err) == 0,
                  "%s", err.msg);
        sn_traj_free(t);
        CHECK_MSG(add(d, SN_ARM_DEFENDED, mk(&a, NULL, "sentinel", bl_def, ep, 300, 10), &err) ==
                      0, "%s", err.msg);
        if (i < 9)
            CHECK_MSG(add(d, SN_ARM_CLEAN_DEFENDED,
                          mk(&x, NULL, "sentinel", i < 6 ? bl_0 : bl_none, ep, 300, 10),
                          &err) == 0, "%s", err.msg);
    }
    CHECK_STR(sn_arm_name(SN_ARM_CLEAN_DEFENDED), "clean_defended");
    /* a clean-defended debate without twins is unmatched; the matched three stay matched */
    struct fx lone = {.id = "lone", .roles = "HHH", .gold = "A", .grid = cd_a, .T = 2};
    CHECK(add(d, SN_ARM_CLEAN_DEFENDED, mk(&lone, NULL, "sentinel", bl_none, ep, 300, 10),
              &err) == 0);
    uint64_t un[SN_ARM_COUNT];
    sn_defended_unmatched(d, un);
    CHECK(un[SN_ARM_CLEAN] == 0 && un[SN_ARM_ATTACKED] == 0 && un[SN_ARM_CLEAN_DEFENDED] == 1);

    struct sn_defended_round s;
    CHECK_MSG(sn_defended_summary(d, "all", 0, &s, &err) == SN_OK, "%s", err.msg);
    CHECK(s.n_units == 10 && s.n_cost == 9);
    CHECK_RATE_P(s.acc_kept_clean_neutral, 1.0);
    CHECK_MSG(s.cost_na[0] == 0, "%s", s.cost_na);
    CHECK_CLOSE(s.cost.p, 0.0, 1e-12, 0);
    CHECK(s.cost.lo == 0.0 && s.cost.hi == 0.0);
    for (int w = 0; w < 2; w++) {
        CHECK_MSG(sn_defended_summary(d, "all", w ? SN_DETECT_LAST : 1, &s, &err) == SN_OK, "%s",
                  err.msg);
        CHECK(s.n_units == 10 && s.n_cost == 9);
        CHECK_RATE_P(s.acc_neutral[SN_ARM_CLEAN], 1.0);
        CHECK_CLOSE(s.acc_kept_clean_neutral.k, 5.0, 1e-12, 0);
        CHECK_CLOSE(s.acc_kept_clean_neutral.n, 9.0, 1e-12, 0);
        CHECK_RATE_P(s.acc_kept_clean_neutral, 5.0 / 9.0);
        CHECK_RATE_P(s.acc_kept_clean, 3.0 / 9.0);
        CHECK_RATE_P(s.acc[SN_ARM_CLEAN_DEFENDED], 7.0 / 9.0);
        CHECK_RATE_P(s.acc_neutral[SN_ARM_CLEAN_DEFENDED], 7.0 / 9.0);
        /* Wilson of a mean: one matched debate per item */
        double lo, hi;
        sn_wilson_mean(5.0, 9.0, &lo, &hi);
        CHECK_CLOSE(s.acc_kept_clean_neutral.lo, lo, 1e-12, 0);
        CHECK_CLOSE(s.cost.p, 4.0 / 9.0, 1e-12, 0);
        CHECK_MSG(s.cost.lo <= 4.0 / 9.0 && 4.0 / 9.0 <= s.cost.hi && s.cost.lo < s.cost.hi &&
                      s.cost.lo >= 0.0 && s.cost.hi <= 1.0,
                  "cost %.3f [%.3f, %.3f]", s.cost.p, s.cost.lo, s.cost.hi);
        /* the defended arm under attack is unchanged by the fourth arm: kept "AB" = 1/2 */
        CHECK_RATE_P(s.acc_kept_neutral, 0.5);
    }
    /* the seen / unseen split of the defended tables */
    CHECK_MSG(sn_defended_summary(d, "question=seen", SN_DETECT_LAST, &s, &err) == SN_OK, "%s",
              err.msg);
    CHECK(s.n_units == 5 && s.n_cost == 5);
    CHECK_RATE_P(s.acc_kept_clean_neutral, 2.0 / 5.0);
    CHECK_CLOSE(s.cost.p, 3.0 / 5.0, 1e-12, 0);
    CHECK(sn_defended_summary(d, "question=unseen", SN_DETECT_LAST, &s, &err) == SN_OK);
    CHECK(s.n_units == 5 && s.n_cost == 4);
    CHECK_RATE_P(s.acc_kept_clean_neutral, 3.0 / 4.0);
    CHECK_CLOSE(s.cost.p, 1.0 / 4.0, 1e-12, 0);
    size_t ng = 0;
    const char *const *gn = sn_defended_groups(d, &ng);
    int n_q = 0;
    for (size_t g = 0; g < ng; g++)
        n_q += strncmp(gn[g], "question=", 9) == 0;
    CHECK(n_q == 2);

    /* the measured overhead: with minus without the detector, per debate-round of wall time */
    struct sn_defended_measured m;
    sn_defended_measured(d, 0, &m);
    CHECK(m.na[0] && strstr(m.na, "wall time is not known"));
    CHECK(isnan(m.overhead_pct));
    sn_defended_set_wall(d, SN_ARM_ATTACKED, 1000.0, NULL);
    sn_defended_set_wall(d, SN_ARM_DEFENDED, 1500.0, NULL);
    sn_defended_set_wall(d, SN_ARM_CLEAN, 800.0, NULL);
    sn_defended_measured(d, 0, &m);
    CHECK_MSG(m.na[0] == 0, "%s", m.na);
    CHECK_CLOSE(m.wall_ms_without, 50.0, 1e-12, 0);
    CHECK_CLOSE(m.wall_ms_with, 75.0, 1e-12, 0);
    CHECK_CLOSE(m.diff_ms, 25.0, 1e-12, 0);
    CHECK_CLOSE(m.overhead_pct, 50.0, 1e-12, 0);
    sn_defended_measured(d, 1, &m);
    CHECK(m.na[0] && strstr(m.na, "clean_defended"));
    sn_defended_set_wall(d, SN_ARM_CLEAN_DEFENDED, NAN, "resumed, say");
    sn_defended_measured(d, 1, &m);
    CHECK(strstr(m.na, "resumed, say") != NULL);

    /* JSON: the fourth arm's accuracy, the cost under its own name, the measured overhead */
    cJSON *j = NULL;
    CHECK(sn_defended_report(d, &j, &err) == SN_OK && j);
    const cJSON *lr = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "groups"), "all"), "last_round");
    const cJSON *cost = cJSON_GetObjectItem(lr, "cost_of_defence");
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(cost, "p")), 4.0 / 9.0, 1e-12, 0);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(cost, "debates")) == 9);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(cost, "na")));
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cost, "accuracy")), "tie_neutral");
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(
                    cJSON_GetObjectItem(cJSON_GetObjectItem(lr, "accuracy_tie_neutral"),
                                        "clean_defended"), "k")), 5, 1e-12, 0);
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(
                    cJSON_GetObjectItem(cJSON_GetObjectItem(lr, "accuracy"),
                                        "clean_defended_every_agent"), "k")), 7, 0, 0);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "groups"), "question=unseen") != NULL);
    const cJSON *mo = cJSON_GetObjectItem(j, "overhead_measured");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(mo, "basis")), "measured");
    const cJSON *ad = cJSON_GetObjectItem(mo, "attacked_to_defended");
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(ad, "overhead_pct")), 50.0, 1e-12, 0);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(ad, "na")));
    CHECK(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(mo, "clean_to_clean_defended"),
                                             "na")));
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "unmatched"),
                                                   "clean_defended")) == 1);
    cJSON_Delete(j);
    sn_defended_free(d);
}

/* Arms are checked against what the debates are. */
static void test_arm_checks(void)
{
    static const char *g[1] = {"AAABB"};
    static const uint64_t bl[1] = {0x10};
    struct sn_defended_params p = sn_defended_default_params();
    struct sn_defended *d = NULL;
    struct sn_err err = {0};
    CHECK(sn_defended_create(&p, &d, &err) == SN_OK);
    if (!d)
        return;
    struct fx a = {.id = "x", .roles = "HHHAA", .gold = "A", .target = "B", .grid = g, .T = 1};
    struct fx c = {.id = "x", .roles = "HHHHH", .gold = "A", .grid = g, .T = 1};
    err = (struct sn_err){0};
    CHECK(add(d, SN_ARM_CLEAN, mk(&a, NULL, "none", NULL, "sim", 0, 1), &err) == SN_E_FORMAT);
    CHECK(strstr(err.msg, "clean arm has adversaries") != NULL);
    err = (struct sn_err){0};
    CHECK(add(d, SN_ARM_ATTACKED, mk(&c, NULL, "none", NULL, "sim", 0, 1), &err) == SN_E_FORMAT);
    err = (struct sn_err){0};
    CHECK(add(d, SN_ARM_ATTACKED, mk(&a, NULL, "sentinel", bl, "sim", 0, 1), &err) ==
          SN_E_FORMAT);
    CHECK(strstr(err.msg, "expected none") != NULL);
    err = (struct sn_err){0};
    CHECK(add(d, SN_ARM_DEFENDED, mk(&a, NULL, "sentinel", NULL, "sim", 0, 1), &err) ==
          SN_E_FORMAT);
    CHECK(strstr(err.msg, "no blacklists") != NULL);
    err = (struct sn_err){0};
    CHECK(add(d, SN_ARM_CLEAN_DEFENDED, mk(&a, NULL, "sentinel", bl, "sim", 0, 1), &err) ==
          SN_E_FORMAT);
    CHECK(strstr(err.msg, "clean_defended arm has adversaries") != NULL);
    err = (struct sn_err){0};
    CHECK(add(d, SN_ARM_CLEAN_DEFENDED, mk(&c, NULL, "none", NULL, "sim", 0, 1), &err) ==
          SN_E_FORMAT);
    CHECK(strstr(err.msg, "clean_defended arm records no blacklists") != NULL);
    err = (struct sn_err){0};
    CHECK(add(d, SN_ARM_ATTACKED, mk(&a, NULL, "none", NULL, "sim", 0, 1), &err) == SN_OK);
    CHECK(add(d, SN_ARM_ATTACKED, mk(&a, NULL, "none", NULL, "sim", 0, 1), &err) == SN_E_FORMAT);
    CHECK(strstr(err.msg, "second debate") != NULL);
    /* out-of-domain scenario: its own group; nothing matched, so no recovery */
    struct fx o = {.id = "y", .roles = "HHHAA", .gold = "A", .target = "B", .grid = g, .T = 1};
    err = (struct sn_err){0};
    CHECK(add(d, SN_ARM_ATTACKED, mk(&o, "style_matched", "none", NULL, "sim", 0, 1), &err) ==
          SN_OK);
    struct sn_defended_round s;
    CHECK(sn_defended_summary(d, "domain=out", SIZE_MAX, &s, &err) == SN_OK);
    CHECK(s.n_units == 0 && isnan(s.recovery.p) && strstr(s.na, "no debates matched"));
    CHECK(sn_defended_summary(d, "scenario=style_matched", 0, &s, &err) == SN_OK);
    CHECK(s.n_cost == 0 && isnan(s.cost.p) && strstr(s.cost_na, "clean_defended twin"));
    /* sim agents: no measured overhead, and the reason says it is modelled */
    struct sn_defended_measured m;
    sn_defended_set_wall(d, SN_ARM_ATTACKED, 10.0, NULL);
    sn_defended_measured(d, 0, &m);
    CHECK_MSG(strstr(m.na, "sim agents") && strstr(m.na, "modelled"), "%s", m.na);
    sn_defended_free(d);
}

/* Ties, and the oracle's ceiling (k = 2: it excludes both attackers, slots 3 and 4). Gold A,
** one round, 20 items; clean HHHHH "AAAAA" everywhere: 1 under both rules.
**   items 0-9:   attacked "AABBB" (B, 0); oracle keeps A A B: 1.
**                defended "AABBB", blacklists {3, 4}: kept A A B: 1; every agent: 0.
**   items 10-19: attacked "AB-BB" (B, 0; agent 2 unparsed); the oracle keeps A B: a 1-1
**                split holding gold: strict 0, tie-neutral 1/2.
**   items 10-14: defended "ABABB", blacklist {3}: kept A B A B: a 2-2 split: strict 0,
**                tie-neutral 1/2; every agent: B 3-2, 0.
**   items 15-19: defended "ABBBB", blacklist {3}: kept A B B B: B, 0.
** Tie-neutral: clean 20/20, attacked 0/20, defended 12.5/20, oracle 15/20.
** Recovery (tie-neutral) = (0.625 − 0) / (1 − 0) = 5/8 (strict would give 10/20 = 1/2); the
** oracle's = 3/4; share = 5/8 / 3/4 = 5/6. In every resample the oracle's credit is 1 or 1/2
** per item, so its recovery is at least 1/2: the share is defined. */
static void test_ties_oracle(void)
{
    static const char *clean[1] = {"AAAAA"}, *att_a[1] = {"AABBB"}, *att_b[1] = {"AB-BB"};
    static const char *def_a[1] = {"AABBB"}, *def_b[1] = {"ABABB"}, *def_c[1] = {"ABBBB"};
    static const uint64_t bl_both[1] = {0x18}, bl_3[1] = {0x08};
    struct sn_defended_params p = sn_defended_default_params();
    p.n_boot = 400;
    p.k = 2;
    struct sn_defended *d = NULL;
    struct sn_err err = {0};
    CHECK(sn_defended_create(&p, &d, &err) == SN_OK);
    if (!d)
        return;
    char ids[20][8];
    for (int i = 0; i < 20; i++) {
        snprintf(ids[i], sizeof ids[i], "t%d", i);
        struct fx c = {.id = ids[i], .roles = "HHHHH", .gold = "A", .grid = clean, .T = 1};
        struct fx a = {.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B",
                       .grid = i < 10 ? att_a : att_b, .T = 1};
        struct fx x = {.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B",
                       .grid = i < 10 ? def_a : i < 15 ? def_b : def_c, .T = 1};
        CHECK_MSG(add(d, SN_ARM_CLEAN, mk(&c, NULL, "none", NULL, "sim: x", 0, 10), &err) == 0,
                  "%s", err.msg);
        CHECK_MSG(add(d, SN_ARM_ATTACKED, mk(&a, NULL, "none", NULL, "sim: x", 0, 10), &err) == 0,
                  "%s", err.msg);
        CHECK_MSG(add(d, SN_ARM_DEFENDED, mk(&x, NULL, "sentinel", i < 10 ? bl_both : bl_3,
                                             "sim: x", 0, 10), &err) == 0, "%s", err.msg);
    }
    struct sn_defended_round s;
    for (int w = 0; w < 2; w++) {
        CHECK_MSG(sn_defended_summary(d, "all", w ? SN_DETECT_LAST : 0, &s, &err) == SN_OK, "%s",
                  err.msg);
        CHECK(s.n_units == 20);
        /* strict */
        CHECK_RATE_P(s.acc[SN_ARM_CLEAN], 1.0);
        CHECK_RATE_P(s.acc[SN_ARM_ATTACKED], 0.0);
        CHECK_RATE_P(s.acc_kept, 0.5);
        CHECK_RATE_P(s.acc_oracle, 0.5);
        CHECK_RATE_P(s.acc[SN_ARM_DEFENDED], 0.0);
        /* tie-neutral, with the Wilson interval of a mean */
        CHECK_RATE_P(s.acc_neutral[SN_ARM_CLEAN], 1.0);
        CHECK_RATE_P(s.acc_neutral[SN_ARM_ATTACKED], 0.0);
        CHECK_RATE_P(s.acc_kept_neutral, 0.625);
        CHECK_RATE_P(s.acc_oracle_neutral, 0.75);
        CHECK_CLOSE(s.acc_kept_neutral.k, 12.5, 1e-12, 0);
        double lo, hi;
        sn_wilson_mean(12.5, 20, &lo, &hi);
        CHECK_CLOSE(s.acc_kept_neutral.lo, lo, 1e-12, 0);
        CHECK_CLOSE(s.acc_kept_neutral.hi, hi, 1e-12, 0);
        /* recovery on the tie-neutral accuracy, the oracle's, the share */
        CHECK_MSG(s.na[0] == 0, "%s", s.na);
        CHECK_CLOSE(s.recovery.p, 0.625, 1e-12, 0);
        CHECK_CLOSE(s.recovery_oracle.p, 0.75, 1e-12, 0);
        CHECK_MSG(s.share_na[0] == 0, "%s", s.share_na);
        CHECK_CLOSE(s.share.p, 5.0 / 6.0, 1e-12, 0);
        CHECK(s.recovery_oracle.lo >= 0.5 && s.recovery_oracle.hi <= 1.0);
        CHECK_MSG(s.share.lo <= 5.0 / 6.0 && 5.0 / 6.0 <= s.share.hi && s.share.lo < s.share.hi,
                  "share %.3f [%.3f, %.3f]", s.share.p, s.share.lo, s.share.hi);
        CHECK(s.n_boot_undefined == 0 && s.n_boot_share_undefined == 0);
    }
    /* JSON: both tie rules side by side */
    cJSON *j = NULL;
    CHECK(sn_defended_report(d, &j, &err) == SN_OK && j);
    const cJSON *r0 = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "groups"), "all"),
                            "rounds"), 0);
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(
                    cJSON_GetObjectItem(cJSON_GetObjectItem(r0, "accuracy_tie_neutral"),
                                        "oracle"), "k")), 15, 1e-12, 0);
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(
                    cJSON_GetObjectItem(cJSON_GetObjectItem(r0, "accuracy"), "defended"), "k")),
                10, 0, 0);
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(
                    cJSON_GetObjectItem(r0, "recovery_share_of_oracle"), "p")), 5.0 / 6.0, 1e-12,
                0);
    cJSON_Delete(j);
    sn_defended_free(d);

    /* no bootstrap: no interval for the oracle's recovery, so no share */
    p.n_boot = 0;
    CHECK(sn_defended_create(&p, &d, &err) == SN_OK);
    for (int i = 0; d && i < 20; i++) {
        struct fx c = {.id = ids[i], .roles = "HHHHH", .gold = "A", .grid = clean, .T = 1};
        struct fx a = {.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B",
                       .grid = i < 10 ? att_a : att_b, .T = 1};
        struct fx x = {.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B",
                       .grid = i < 10 ? def_a : i < 15 ? def_b : def_c, .T = 1};
        CHECK(add(d, SN_ARM_CLEAN, mk(&c, NULL, "none", NULL, "sim: x", 0, 10), &err) == 0);
        CHECK(add(d, SN_ARM_ATTACKED, mk(&a, NULL, "none", NULL, "sim: x", 0, 10), &err) == 0);
        CHECK(add(d, SN_ARM_DEFENDED, mk(&x, NULL, "sentinel", i < 10 ? bl_both : bl_3,
                                         "sim: x", 0, 10), &err) == 0);
    }
    if (d) {
        CHECK(sn_defended_summary(d, "all", 0, &s, &err) == SN_OK);
        CHECK_CLOSE(s.recovery.p, 0.625, 1e-12, 0);
        CHECK(isnan(s.share.p) && strstr(s.share_na, "no interval"));
    }
    sn_defended_free(d);
}

/* One-by-one talk: the round waits for every message in turn (5 x 200 ms = 1000 ms), against
** simultaneous talk's slowest message (200 ms); the serial figure sums both ways. */
static void test_round_time(void)
{
    static const char *clean[2] = {"AAAAA", "AAAAA"}, *att[2] = {"AAABB", "AAABB"};
    static const uint64_t bl_on[2] = {0x18, 0x18};
    static const char *strat[2] = {"one_by_one", "simultaneous"};
    const double want[2] = {1000.0, 200.0};
    for (int q = 0; q < 2; q++) {
        struct sn_defended_params p = sn_defended_default_params();
        p.n_boot = 0;
        struct sn_defended *d = NULL;
        struct sn_err err = {0};
        CHECK(sn_defended_create(&p, &d, &err) == SN_OK);
        if (!d)
            return;
        struct fx c = {.id = "o1", .roles = "HHHHH", .gold = "A", .grid = clean, .T = 2,
                       .strategy = strat[q]};
        struct fx a = {.id = "o1", .roles = "HHHAA", .gold = "A", .target = "B", .grid = att,
                       .T = 2, .strategy = strat[q]};
        CHECK(add(d, SN_ARM_CLEAN, mk(&c, NULL, "none", NULL, "sim: x", 0, 10), &err) == 0);
        CHECK(add(d, SN_ARM_ATTACKED, mk(&a, NULL, "none", NULL, "sim: x", 0, 10), &err) == 0);
        struct sn_traj *t = mk(&a, NULL, "sentinel", bl_on, "sim: x", 0, 10);
        CHECK_MSG(t && sn_defended_add(d, SN_ARM_DEFENDED, t, &err) == 0, "%s", err.msg);
        struct sn_detect_ranker inner = {"detector", rank_const, NULL};
        struct sn_detect_ranker timed = sn_defended_timed_ranker(d, &inner);
        struct sn_detect_params dp = sn_detect_default_params();
        dp.n_boot = 0;
        struct sn_detect *rep = NULL;
        CHECK(sn_detect_create(&dp, &timed, &rep, &err) == SN_OK);
        CHECK(rep && t && sn_detect_add(rep, t, NULL, &err) == SN_OK);
        sn_detect_free(rep);
        sn_traj_free(t);
        struct sn_defended_round s;
        CHECK(sn_defended_summary(d, "all", 0, &s, &err) == SN_OK);
        CHECK_CLOSE(s.round_ms, want[q], 1e-9, 0);
        CHECK_CLOSE(s.gen_ms, 1000.0, 1e-9, 0);
        CHECK(q == 0 ? s.n_round_sum == 1 : s.n_round_slowest == 1);
        CHECK_CLOSE(s.overhead_pct, 100.0 * s.score_ms_sentinel / want[q], 1e-9, 1e-9);
        sn_defended_free(d);
    }
}

int main(void)
{
    test_round_time();
    test_ties_oracle();
    test_hand();
    test_arm_checks();
    test_clean_defended();
    return sn_test_done();
}
