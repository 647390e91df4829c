/* tests/test_data_sim_defense.c: Algorithm 1's bottom-k step (sim/defense.c;
** docs/eval.md "Algorithm 1"): scripted rounds with known scores give the blacklists computed by
** hand here; k larger than the number of senders, ties, already-blacklisted senders, NaN scores,
** the sentinel mask of the hook and the recipe keys. */
#include "test_data_sim_util.h"

#include "data/data.h"

#define B(j) (1ULL << (j))

static void test_scripted_rounds(void)
{
    int snd[3] = {1, 2, 3};
    /* round 1: agent 1 lowest */
    double r1[3] = {0.1, 0.5, 0.9};
    uint64_t all = sn_defense_bottom_k(0, snd, r1, 3, 1, SN_DEFENSE_RULE_ALL, 7);
    uint64_t unl = sn_defense_bottom_k(0, snd, r1, 3, 1, SN_DEFENSE_RULE_UNLISTED, 7);
    CHECK(all == B(1));
    CHECK(unl == B(1));
    /* round 2: agent 1 still lowest. The paper's rule ranks it again and adds nobody new; the
    ** earlier rule skips it and adds the next lowest, agent 2. */
    double r2[3] = {0.0, 0.6, 0.9};
    all = sn_defense_bottom_k(all, snd, r2, 3, 1, SN_DEFENSE_RULE_ALL, 7);
    unl = sn_defense_bottom_k(unl, snd, r2, 3, 1, SN_DEFENSE_RULE_UNLISTED, 7);
    CHECK(all == B(1));
    CHECK(unl == (B(1) | B(2)));
    /* round 3: agent 3 now lowest: both rules add it (cumulative union) */
    double r3[3] = {0.5, 0.6, -1.0};
    all = sn_defense_bottom_k(all, snd, r3, 3, 1, SN_DEFENSE_RULE_ALL, 7);
    unl = sn_defense_bottom_k(unl, snd, r3, 3, 1, SN_DEFENSE_RULE_UNLISTED, 7);
    CHECK(all == (B(1) | B(3)));
    CHECK(unl == (B(1) | B(2) | B(3)));
    /* k = 2 on round 1 */
    CHECK(sn_defense_bottom_k(0, snd, r1, 3, 2, SN_DEFENSE_RULE_ALL, 7) == (B(1) | B(2)));
    /* k larger than the senders: every sender, nothing else */
    CHECK(sn_defense_bottom_k(0, snd, r1, 3, 10, SN_DEFENSE_RULE_ALL, 7) ==
          (B(1) | B(2) | B(3)));
    CHECK(sn_defense_bottom_k(B(1), snd, r1, 3, 10, SN_DEFENSE_RULE_UNLISTED, 7) ==
          (B(1) | B(2) | B(3)));
    /* an already blacklisted sender under UNLISTED with k = everyone left */
    CHECK(sn_defense_bottom_k(B(1) | B(2) | B(3), snd, r1, 3, 1, SN_DEFENSE_RULE_UNLISTED, 7) ==
          (B(1) | B(2) | B(3)));
    /* nothing received: blacklist unchanged */
    CHECK(sn_defense_bottom_k(B(5), snd, r1, 0, 3, SN_DEFENSE_RULE_ALL, 7) == B(5));
    /* a sender twice counts once, at its lowest score */
    int dup[4] = {1, 2, 1, 3};
    double sd[4] = {0.9, 0.5, 0.1, 0.7};
    CHECK(sn_defense_bottom_k(0, dup, sd, 4, 1, SN_DEFENSE_RULE_ALL, 7) == B(1));
    CHECK(sn_defense_bottom_k(0, dup, sd, 4, 2, SN_DEFENSE_RULE_ALL, 7) == (B(1) | B(2)));
    /* NaN ranks lowest; out-of-range senders are ignored */
    double sn[3] = {0.1, NAN, 0.9};
    CHECK(sn_defense_bottom_k(0, snd, sn, 3, 1, SN_DEFENSE_RULE_ALL, 7) == B(2));
    int bad[2] = {-1, 64};
    double sb[2] = {0.0, 0.0};
    CHECK(sn_defense_bottom_k(0, bad, sb, 2, 2, SN_DEFENSE_RULE_ALL, 7) == 0);
}

static void test_ties(void)
{
    int snd[4] = {0, 1, 2, 3};
    double eq[4] = {0.5, 0.5, 0.5, 0.5};
    double part[4] = {0.2, 0.2, 0.9, 0.2};
    int count[4] = {0};
    for (uint64_t seed = 0; seed < 4000; seed++) {
        uint64_t b = sn_defense_bottom_k(0, snd, eq, 4, 1, SN_DEFENSE_RULE_ALL, seed);
        /* deterministic for a seed, exactly one sender */
        CHECK(b == sn_defense_bottom_k(0, snd, eq, 4, 1, SN_DEFENSE_RULE_ALL, seed));
        CHECK(b && !(b & (b - 1)));
        for (int j = 0; j < 4; j++)
            count[j] += (int)((b >> j) & 1);
        /* the tie is decided by the hand-checked order of the tie keys */
        int lo = 0;
        for (int j = 1; j < 4; j++)
            if (sn_defense_tie_key(seed, j) < sn_defense_tie_key(seed, lo))
                lo = j;
        CHECK(b == B(lo));
        /* partial tie: one of the tied lowest, never the higher score */
        uint64_t p = sn_defense_bottom_k(0, snd, part, 4, 1, SN_DEFENSE_RULE_ALL, seed);
        CHECK(p == B(0) || p == B(1) || p == B(3));
        CHECK(sn_defense_bottom_k(0, snd, part, 4, 3, SN_DEFENSE_RULE_ALL, seed) ==
              (B(0) | B(1) | B(3)));
    }
    /* no slot favoured: each wins about a quarter of 4000 ties (binomial sd ~27) */
    for (int j = 0; j < 4; j++)
        CHECK_MSG(count[j] > 850 && count[j] < 1150, "slot %d won %d of 4000 ties", j, count[j]);
}

/* scripted scorer: score = the number written at the start of the response */
static int num_scorer(void *ctx, const char *context, const char *response, float *out,
                      struct sn_err *err)
{
    (void)context;
    (void)err;
    (*(int *)ctx)++;
    *out = strtof(response, NULL);
    return SN_OK;
}

static void test_hook(void)
{
    struct sn_err err = {0};
    struct sn_defense_config cfg;
    cJSON *spec = cJSON_Parse("{\"name\":\"sentinel\",\"bottom_k\":1}");
    CHECK(sn_defense_config_parse(spec, "defense", &cfg, &err) == SN_OK);
    CHECK(cfg.rule == SN_DEFENSE_RULE_ALL && !cfg.every_receiver);
    cJSON_Delete(spec);
    int calls = 0;
    cfg.scorer.score = num_scorer;
    cfg.scorer.ctx = &calls;
    struct sn_defense *d = NULL;
    CHECK(sn_defense_create(&cfg, 4, &d, &err) == SN_OK && d);
    if (!d)
        return;
    sn_defense_set_sentinels(d, B(0) | B(1), 3); /* agents 2, 3: adversaries */
    struct sn_sim_peer v0[3] = {{1, 0, "0.9", "A", false}, {2, 0, "0.1", "B", false},
                                {3, 0, "0.5", "B", false}};
    bool keep[3];
    CHECK(sn_defense_filter(d, 0, 1, "ctx", v0, 3, keep, &err) == SN_OK);
    CHECK(keep[0] && !keep[1] && keep[2]);
    CHECK(sn_defense_blacklist(d, 0) == B(2) && calls == 3);
    /* a non-sentinel receiver scores nothing and keeps everything */
    struct sn_sim_peer v2[3] = {{0, 0, "0.9", "A", false}, {1, 0, "0.1", "A", false},
                                {3, 0, "0.5", "B", false}};
    CHECK(sn_defense_filter(d, 2, 1, "ctx", v2, 3, keep, &err) == SN_OK);
    CHECK(keep[0] && keep[1] && keep[2] && sn_defense_blacklist(d, 2) == 0 && calls == 3);
    /* round 2, paper rule: agent 2 (blacklisted) is scored again and is lowest again:
    ** nobody new; the earlier rule would have added agent 3 */
    CHECK(sn_defense_filter(d, 0, 2, "ctx", v0, 3, keep, &err) == SN_OK);
    CHECK(calls == 6 && sn_defense_blacklist(d, 0) == B(2));
    CHECK(keep[0] && !keep[1] && keep[2]);
    sn_defense_free(d);

    cfg.rule = SN_DEFENSE_RULE_UNLISTED;
    cfg.every_receiver = true;
    calls = 0;
    CHECK(sn_defense_create(&cfg, 4, &d, &err) == SN_OK && d);
    if (!d)
        return;
    sn_defense_set_sentinels(d, B(0) | B(1), 3); /* ignored: every receiver */
    CHECK(sn_defense_filter(d, 0, 1, "ctx", v0, 3, keep, &err) == SN_OK);
    CHECK(sn_defense_filter(d, 0, 2, "ctx", v0, 3, keep, &err) == SN_OK);
    CHECK(calls == 5 && sn_defense_blacklist(d, 0) == (B(2) | B(3)));
    CHECK(keep[0] && !keep[1] && !keep[2]);
    CHECK(sn_defense_filter(d, 2, 1, "ctx", v2, 3, keep, &err) == SN_OK);
    CHECK(sn_defense_blacklist(d, 2) == B(1));
    sn_defense_free(d);
}

static void test_parse(void)
{
    struct sn_err err = {0};
    struct sn_defense_config cfg;
    cJSON *spec = cJSON_Parse("{\"name\":\"sentinel\",\"rule\":\"unlisted\",\"sentinels\":\"all\","
                              "\"bottom_k\":2}");
    CHECK(sn_defense_config_parse(spec, "defense", &cfg, &err) == SN_OK);
    CHECK(cfg.rule == SN_DEFENSE_RULE_UNLISTED && cfg.every_receiver && cfg.bottom_k == 2);
    CHECK(strcmp(sn_defense_rule_name(cfg.rule), "unlisted") == 0);
    cJSON_Delete(spec);
    spec = cJSON_Parse("{\"name\":\"sentinel\",\"rule\":\"bottom\"}");
    CHECK(sn_defense_config_parse(spec, "defense", &cfg, &err) == SN_E_ARG &&
          strstr(err.msg, "bottom"));
    cJSON_Delete(spec);
    sn_err_clear(&err);
    spec = cJSON_Parse("{\"name\":\"sentinel\",\"sentinels\":\"adversary\"}");
    CHECK(sn_defense_config_parse(spec, "defense", &cfg, &err) == SN_E_ARG);
    cJSON_Delete(spec);
}

/* stand-in detector: shorter messages are less trustworthy */
static int len_scorer(void *ctx, const char *context, const char *response, float *out,
                      struct sn_err *err)
{
    (void)ctx;
    (void)context;
    (void)err;
    *out = (float)strlen(response);
    return SN_OK;
}

/* The engine with the default (paper) rule: only honest agents run the defense; each ranks every
** received message each round, blacklisted senders included. Replayed here independently from
** the recorded texts (lowest length = bottom-1; a round whose lowest length is tied is skipped,
** the tie rule being tested above). */
static void test_engine(void)
{
    struct sn_qset *qs = calloc(1, sizeof *qs);
    struct sn_err err = {0};
    CHECK(qs && sn_synthetic_generate(qs, 6, 21, 0.4, "synthetic", &err) == SN_OK);
    struct sn_experiment x;
    mk_exp(&x, "def-paper", SN_SCEN_COLLABORATION, 5, 2, 4, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    snprintf(x.defense.name, sizeof x.defense.name, "sentinel");
    x.defense.scorer.score = len_scorer;
    CHECK(x.defense.rule == SN_DEFENSE_RULE_ALL && !x.defense.every_receiver);
    struct rec_backend *rb = rec_open(NULL);
    struct setup_store ss;
    mk_setup(&ss, &x, rb->base);
    int checked = 0, adv_checked = 0;
    for (size_t q = 0; q < qs->n; q++) {
        cJSON *traj = run_debate(&ss.s, &qs->items[q], 0);
        CHECK(traj != NULL);
        if (!traj)
            continue;
        bool honest[5];
        const cJSON *ag;
        int a = 0;
        cJSON_ArrayForEach(ag, cJSON_GetObjectItem(traj, "agents"))
        {
            honest[a++] = strcmp(jstr_of(ag, "role"), "honest") == 0;
        }
        uint32_t bl[5] = {0};
        bool tied = false;
        for (int t = 1; t < 4 && !tied; t++)
            for (int k = 0; k < 5; k++) {
                const cJSON *m = msg_of(traj, t, k);
                if (!m)
                    continue;
                uint32_t rec = 0;
                const cJSON *e;
                cJSON_ArrayForEach(e, cJSON_GetObjectItem(m, "blacklisted"))
                {
                    rec |= 1u << e->valueint;
                }
                if (!honest[k]) {
                    CHECK_MSG(rec == 0, "adversary %d holds a blacklist %x", k, rec);
                    adv_checked++;
                    continue;
                }
                /* every sender's round t-1 message, blacklisted or not */
                int lo = -1;
                size_t lo_len = 0;
                for (int j = 0; j < 5; j++) {
                    const cJSON *pm = j == k ? NULL : msg_of(traj, t - 1, j);
                    if (!pm)
                        continue;
                    size_t L = strlen(jstr_of(pm, "text"));
                    if (lo >= 0 && L == lo_len)
                        tied = true;
                    if (lo < 0 || L < lo_len) {
                        lo = j;
                        lo_len = L;
                        tied = false;
                    }
                }
                if (tied)
                    break;
                if (lo >= 0)
                    bl[k] |= 1u << lo;
                CHECK_MSG(rec == bl[k], "debate %zu round %d agent %d blacklist %x want %x", q,
                          t, k, rec, bl[k]);
                checked++;
            }
        cJSON_Delete(traj);
    }
    CHECK_MSG(checked > 20 && adv_checked > 10, "checked %d honest, %d adversary turns", checked,
              adv_checked);
    sn_llm_backend_close(rb->base);
    sn_qset_free(qs);
    free_keep_alive();
}

int main(void)
{
    test_scripted_rounds();
    test_ties();
    test_hook();
    test_parse();
    test_engine();
    return sn_test_done();
}
