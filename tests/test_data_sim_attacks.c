/* tests/test_data_sim_attacks.c: attack scenarios, placement, the defense hook and the
** debate options of sim/ (attacks.c, engine.c, defense.c, simagent.c). */
#include "test_data_sim_util.h"

static struct sn_qset *qs;

static void test_targets(void)
{
    struct sn_qset *big = calloc(1, sizeof *big);
    struct sn_err err = {0};
    CHECK(sn_synthetic_generate(big, 300, 17, 0.5, "synthetic", &err) == SN_OK);
    int n_mc = 0, n_num = 0;
    for (size_t i = 0; i < big->n; i++) {
        const struct sn_question *q = &big->items[i];
        char t[SN_ANSWER_MAX];
        sn_attack_target(q, t);
        if (q->task == SN_TASK_MC) {
            n_mc++;
            int g = q->gold[0] - 'A';
            char want = (char)('A' + (g + 1) % (int)q->n_options); /* the next option */
            CHECK(t[0] == want && t[1] == '\0');
        } else {
            n_num++;
            char *e;
            double v = strtod(t, &e), g = strtod(q->gold, NULL);
            CHECK(*e == '\0' && t[0]);
            CHECK_MSG(v != g, "%s: target %s equals gold %s", q->id, t, q->gold);
            CHECK(g < 0 || v >= 0);
            CHECK(fabs(v - g) <= fmax(10.0, fabs(g))); /* plausible: near or a simple multiple */
        }
        char t2[SN_ANSWER_MAX];
        sn_attack_target(q, t2);
        CHECK_STR(t, t2);
    }
    CHECK(n_mc > 50 && n_num > 50);
    /* wrap-around: gold = last option -> A */
    for (size_t i = 0; i < big->n; i++)
        if (big->items[i].task == SN_TASK_MC && big->items[i].gold[0] == 'D') {
            char t[SN_ANSWER_MAX];
            sn_attack_target(&big->items[i], t);
            CHECK_STR(t, "A");
            break;
        }
    sn_qset_free(big);
}

static int count_role(const cJSON *traj, const char *role)
{
    int n = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(traj, "agents"))
    {
        n += !strcmp(jstr_of(a, "role"), role);
    }
    return n;
}

static const char *role_of(const cJSON *traj, int k)
{
    return jstr_of(cJSON_GetArrayItem(cJSON_GetObjectItem(traj, "agents"), k), "role");
}

static void test_collaboration(void)
{
    struct sn_experiment x;
    mk_exp(&x, "collab", SN_SCEN_COLLABORATION, 5, 2, 4, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    x.rhetoric = "mixed";
    struct rec_backend *rb = rec_open(NULL);
    struct setup_store ss;
    mk_setup(&ss, &x, rb->base);
    int slots_seen[5] = {0};
    for (size_t qi = 0; qi < 8; qi++) {
        rec_reset(rb);
        cJSON *traj = run_debate(&ss.s, &qs->items[qi], 0);
        CHECK(traj);
        if (!traj)
            continue;
        const char *target = jstr_of(traj, "adversarial_target");
        char want[SN_ANSWER_MAX];
        sn_attack_target(&qs->items[qi], want);
        CHECK(target && !strcmp(target, want));
        CHECK(count_role(traj, "adversary") == 2 && count_role(traj, "honest") == 3);
        for (int t = 0; t < 4; t++)
            for (int k = 0; k < 5; k++) {
                const cJSON *m = msg_of(traj, t, k);
                CHECK(m != NULL);
                if (m && !strcmp(role_of(traj, k), "adversary")) {
                    slots_seen[k]++;
                    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "parsed")));
                    CHECK_STR(jstr_of(m, "answer"), target); /* always argues the target */
                }
            }
        const cJSON *a;
        cJSON_ArrayForEach(a, cJSON_GetObjectItem(traj, "agents"))
        {
            if (!strcmp(jstr_of(a, "role"), "adversary")) {
                CHECK_STR(jstr_of(a, "position"), "random");
                const char *p = jstr_of(a, "persona");
                CHECK(p && (!strcmp(p, "logos") || !strcmp(p, "ethos") || !strcmp(p, "pathos")));
            }
        }
        /* adversaries see each other's actual replies (allies), honest agents never do */
        for (size_t c = 0; c < rb->n; c++) {
            const struct rec_call *rc = &rb->calls[c];
            if (rc->call != SN_SIM_CALL_ANSWER)
                continue;
            bool adv = !strcmp(role_of(traj, rc->agent), "adversary");
            int allies = 0;
            for (int i = 0; i < rc->n_peers; i++) {
                if (!adv)
                    CHECK(!rc->peer_ally[i]);
                if (rc->peer_ally[i]) {
                    allies++;
                    const cJSON *m = msg_of(traj, rc->peer_round[i], rc->peer_agent[i]);
                    CHECK(m && !strcmp(jstr_of(m, "text"), rc->peer_text[i]));
                }
            }
            (void)allies;
        }
        cJSON_Delete(traj);
    }
    /* placement is not fixed to the first slots */
    int used = 0;
    for (int k = 0; k < 5; k++)
        used += slots_seen[k] > 0;
    CHECK(used >= 3);
    sn_llm_backend_close(rb->base);
}

static void test_placement(void)
{
    struct sn_topology t;
    struct sn_err err = {0};
    cJSON *star = cJSON_Parse("\"star\""), *tree = cJSON_Parse("\"tree\""),
          *chain = cJSON_Parse("\"chain\"");
    int s[4];
    CHECK(sn_topology_build(star, "t", 5, 1, &t, &err) == SN_OK);
    CHECK(sn_placement_choose(&t, "hub", NULL, 0, 1, 1, s, &err) == SN_OK && s[0] == 0);
    CHECK(sn_placement_choose(&t, "leaf", NULL, 0, 2, 1, s, &err) == SN_OK && s[0] == 4 &&
          s[1] == 3);
    CHECK(sn_topology_build(tree, "t", 7, 1, &t, &err) == SN_OK);
    CHECK(sn_placement_choose(&t, "root", NULL, 0, 1, 1, s, &err) == SN_OK && s[0] == 0);
    CHECK(sn_placement_choose(&t, "hub", NULL, 0, 1, 1, s, &err) == SN_OK && s[0] == 1);
    CHECK(sn_topology_degree(&t, 1) == 3 && sn_topology_degree(&t, 6) == 1);
    CHECK(sn_topology_build(chain, "t", 5, 1, &t, &err) == SN_OK);
    CHECK(sn_placement_choose(&t, "leaf", NULL, 0, 2, 1, s, &err) == SN_OK && s[0] == 4 &&
          s[1] == 0);
    int ex[2] = {3, 1};
    CHECK(sn_placement_choose(&t, NULL, ex, 2, 2, 1, s, &err) == SN_OK && s[0] == 3 &&
          s[1] == 1);
    int bad[2] = {3, 3};
    CHECK(sn_placement_choose(&t, NULL, bad, 2, 2, 1, s, &err) == SN_E_ARG);
    CHECK(sn_placement_choose(&t, "middle", NULL, 0, 1, 1, s, &err) == SN_E_ARG);
    /* random placement depends on the seed */
    int a[2], b[2], diff = 0;
    for (uint64_t sd = 0; sd < 20; sd++) {
        sn_placement_choose(&t, "random", NULL, 0, 2, sd, a, &err);
        sn_placement_choose(&t, "random", NULL, 0, 2, sd + 100, b, &err);
        diff += a[0] != b[0] || a[1] != b[1];
        CHECK(a[0] != a[1]);
    }
    CHECK(diff > 5);
    cJSON *bt = cJSON_Parse("\"hexagon\"");
    sn_err_clear(&err);
    CHECK(sn_topology_build(bt, "topology", 5, 1, &t, &err) == SN_E_ARG &&
          strstr(err.msg, "hexagon"));
    cJSON_Delete(bt);
    cJSON_Delete(star);
    cJSON_Delete(tree);
    cJSON_Delete(chain);
}

static void test_aitm(void)
{
    for (int st = 0; st < SN_STRAT_COUNT; st++) {
        struct sn_experiment x;
        mk_exp(&x, "aitm", SN_SCEN_AITM, 5, 2, 3, (enum sn_strategy)st, NULL, NULL);
        struct rec_backend *rb = rec_open(NULL);
        struct setup_store ss;
        mk_setup(&ss, &x, rb->base);
        for (size_t qi = 0; qi < 6; qi++) {
            rec_reset(rb);
            cJSON *traj = run_debate(&ss.s, &qs->items[qi], 0);
            CHECK(traj);
            if (!traj)
                continue;
            const char *target = jstr_of(traj, "adversarial_target");
            /* intercepted edges per the agents table */
            bool icpt[5][5] = {{0}};
            int n_icpt = 0;
            const cJSON *a;
            cJSON_ArrayForEach(a, cJSON_GetObjectItem(traj, "agents"))
            {
                const cJSON *e;
                cJSON_ArrayForEach(e, cJSON_GetObjectItem(a, "intercepts"))
                {
                    icpt[cJSON_GetArrayItem(e, 0)->valueint][cJSON_GetArrayItem(e, 1)->valueint] =
                        true;
                    n_icpt++;
                }
            }
            CHECK(count_role(traj, "interceptor") == 2);
            CHECK(n_icpt > 0);
            for (int t = 0; t < 3; t++)
                for (int k = 0; k < 5; k++) {
                    const cJSON *m = msg_of(traj, t, k);
                    bool is_int = !strcmp(role_of(traj, k), "interceptor");
                    CHECK(is_int == (m == NULL)); /* interceptors do not speak */
                    if (!m)
                        continue;
                    const cJSON *dl = cJSON_GetObjectItem(m, "deliveries");
                    bool got[5] = {0};
                    const cJSON *d;
                    cJSON_ArrayForEach(d, dl)
                    {
                        int to = cJSON_GetObjectItem(d, "to")->valueint;
                        CHECK_MSG(icpt[k][to], "delivery %d->%d on an edge not intercepted", k,
                                  to);
                        got[to] = true;
                        CHECK(strcmp(jstr_of(d, "text"), jstr_of(m, "text")) != 0);
                        CHECK(jstr_of(d, "answer") && !strcmp(jstr_of(d, "answer"), target));
                    }
                    /* a copy is rewritten on every intercepted edge whose original does not
                    ** already argue the target (then it is passed on unchanged) */
                    bool on_target = jstr_of(m, "answer") && !strcmp(jstr_of(m, "answer"), target);
                    for (int v = 0; v < 5; v++)
                    {
                        CHECK(!got[v] || icpt[k][v]);
                        CHECK(got[v] || !icpt[k][v] || on_target);
                    }
                    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "tampered")) == (dl != NULL));
                }
            /* what receivers saw: the delivered copy on intercepted edges, the original
            ** elsewhere */
            for (size_t c = 0; c < rb->n; c++) {
                const struct rec_call *rc = &rb->calls[c];
                if (rc->call == SN_SIM_CALL_REWRITE) {
                    const cJSON *m = msg_of(traj, rc->round, rc->original_sender);
                    CHECK(m && !strcmp(rc->original, jstr_of(m, "text")));
                    CHECK(!strcmp(role_of(traj, rc->agent), "interceptor"));
                }
                if (rc->call != SN_SIM_CALL_ANSWER)
                    continue;
                for (int i = 0; i < rc->n_peers; i++) {
                    int j = rc->peer_agent[i];
                    const cJSON *m = msg_of(traj, rc->peer_round[i], j);
                    const char *want = jstr_of(m, "text");
                    const cJSON *d;
                    cJSON_ArrayForEach(d, cJSON_GetObjectItem(m, "deliveries"))
                    {
                        if (cJSON_GetObjectItem(d, "to")->valueint == rc->agent)
                            want = jstr_of(d, "text");
                    }
                    CHECK(!strcmp(rc->peer_text[i], want));
                    bool differs = strcmp(rc->peer_text[i], jstr_of(m, "text")) != 0;
                    bool on_target = jstr_of(m, "answer") && !strcmp(jstr_of(m, "answer"), target);
                    CHECK(!differs || icpt[j][rc->agent]);            /* only intercepted */
                    CHECK(differs || !icpt[j][rc->agent] || on_target); /* all intercepted */
                }
            }
            cJSON_Delete(traj);
        }
        sn_llm_backend_close(rb->base);
    }
}

/* A stand-in scorer for the sentinel defense: shorter messages are less trustworthy. */
static int len_scorer(void *ctx, const char *context, const char *response, float *out,
                      struct sn_err *err)
{
    (void)ctx;
    (void)context;
    (void)err;
    *out = (float)strlen(response);
    return SN_OK;
}

static void test_defense(void)
{
    struct sn_defense_config cfg;
    struct sn_defense *d = NULL;
    struct sn_err err = {0};
    cJSON *spec = cJSON_Parse("{\"name\":\"sentinel\",\"bottom_k\":1}");
    CHECK(sn_defense_config_parse(spec, "defense", &cfg, &err) == SN_OK);
    CHECK(sn_defense_create(&cfg, 5, &d, &err) == SN_E_UNSUPPORTED && !d &&
          strstr(err.msg, "needs the runtime detector"));
    cJSON_Delete(spec);
    spec = cJSON_Parse("\"sentinal\"");
    sn_err_clear(&err);
    CHECK(sn_defense_config_parse(spec, "defense", &cfg, &err) == SN_E_ARG);
    cJSON_Delete(spec);

    /* the hook with a scorer: cumulative bottom-1 blacklist per receiver */
    struct sn_experiment x;
    mk_exp(&x, "def", SN_SCEN_COLLABORATION, 5, 2, 4, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    snprintf(x.defense.name, sizeof x.defense.name, "sentinel");
    x.defense.bottom_k = 1;
    x.defense.rule = SN_DEFENSE_RULE_UNLISTED; /* the earlier rule, every receiver */
    x.defense.every_receiver = true;
    x.defense.scorer.score = len_scorer;
    struct rec_backend *rb = rec_open(NULL);
    struct setup_store ss;
    mk_setup(&ss, &x, rb->base);
    cJSON *traj = run_debate(&ss.s, &qs->items[1], 0);
    CHECK(traj);
    uint32_t bl[5] = {0};
    for (int t = 1; t < 4 && traj; t++)
        for (int k = 0; k < 5; k++) {
            /* independent replay: unfiltered view = everyone's round t-1 text */
            int lo = -1;
            size_t lo_len = 0;
            for (int j = 0; j < 5; j++) {
                if (j == k || (bl[k] >> j) & 1)
                    continue;
                size_t L = strlen(jstr_of(msg_of(traj, t - 1, j), "text"));
                if (lo < 0 || L < lo_len) {
                    lo = j;
                    lo_len = L;
                }
            }
            if (lo >= 0)
                bl[k] |= 1u << lo;
            /* the trajectory lists the blacklist held when speaking */
            const cJSON *m = msg_of(traj, t, k);
            uint32_t rec = 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, cJSON_GetObjectItem(m, "blacklisted"))
            {
                rec |= 1u << e->valueint;
            }
            CHECK_MSG(rec == bl[k], "round %d agent %d blacklist %x want %x", t, k, rec, bl[k]);
            /* and the agent's view excluded exactly those senders (allies aside) */
            for (size_t c = 0; c < rb->n; c++) {
                const struct rec_call *rc = &rb->calls[c];
                if (rc->call != SN_SIM_CALL_ANSWER || rc->agent != k || rc->round != t)
                    continue;
                uint32_t seen = 0;
                for (int i = 0; i < rc->n_peers; i++)
                    if (!rc->peer_ally[i])
                        seen |= 1u << rc->peer_agent[i];
                CHECK(seen == ((0x1fu & ~(1u << k)) & ~bl[k]));
            }
        }
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(traj, "defense"), "bottom_k") != NULL);
    cJSON_Delete(traj);
    sn_llm_backend_close(rb->base);
}

static void test_options(void)
{
    struct sn_experiment x;
    struct setup_store ss;
    /* determinism: same inputs, same line; another replicate, another debate */
    mk_exp(&x, "det", SN_SCEN_COLLABORATION, 5, 2, 3, SN_STRAT_ONE_BY_ONE, NULL, NULL);
    struct rec_backend *rb = rec_open(NULL);
    mk_setup(&ss, &x, rb->base);
    struct sn_buf l1 = {0}, l2 = {0}, l3 = {0};
    struct sn_err err = {0};
    CHECK(sn_debate_run(&ss.s, &qs->items[4], 0, &l1, NULL, &err) == SN_OK);
    CHECK(sn_debate_run(&ss.s, &qs->items[4], 0, &l2, NULL, &err) == SN_OK);
    CHECK(sn_debate_run(&ss.s, &qs->items[4], 1, &l3, NULL, &err) == SN_OK);
    CHECK(l1.len > 0 && l1.len == l2.len && !memcmp(l1.data, l2.data, l1.len));
    CHECK(l1.len != l3.len || memcmp(l1.data, l3.data, l1.len) != 0);
    sn_buf_free(&l1);
    sn_buf_free(&l2);
    sn_buf_free(&l3);
    char id1[128], id2[128], id3[128];
    sn_debate_id("exp", "item-1", 0, 1, id1, sizeof id1);
    sn_debate_id("exp", "item-1", 0, 1, id2, sizeof id2);
    sn_debate_id("exp", "item-1", 1, 1, id3, sizeof id3);
    CHECK_STR(id1, id2);
    CHECK(strcmp(id1, id3) != 0 && !strncmp(id1, "exp-", 4) && strlen(id1) == 4 + 16);

    /* best-of-N: the sent message is the candidate the judge scored highest */
    x.best_of_n = 3;
    rec_reset(rb);
    cJSON *traj = run_debate(&ss.s, &qs->items[5], 0);
    CHECK(traj);
    int n_score = 0;
    for (size_t c = 0; c < rb->n; c++)
        n_score += rb->calls[c].call == SN_SIM_CALL_SCORE;
    CHECK(n_score == 2 * 3 * 3); /* 2 adversaries x 3 rounds x 3 candidates */
    for (size_t c = 0; c + 2 < rb->n; c++) {
        const struct rec_call *rc = &rb->calls[c];
        if (rc->call != SN_SIM_CALL_ANSWER || strcmp(role_of(traj, rc->agent), "adversary"))
            continue;
        /* candidates come as ANSWER, SCORE pairs; find the best of this turn */
        double best = -1;
        const char *best_text = NULL;
        size_t e = c;
        for (int i = 0; i < 3; i++, e += 2) {
            double v = sn_sim_persuasion(rb->calls[e].reply);
            if (v > best + 1e-9) {
                best = v;
                best_text = rb->calls[e].reply;
            }
        }
        const cJSON *m = msg_of(traj, rc->round, rc->agent);
        CHECK(m && !strcmp(jstr_of(m, "text"), best_text));
        CHECK(cJSON_GetObjectItem(m, "candidates")->valueint == 3);
        c = e - 1;
    }
    cJSON_Delete(traj);
    x.best_of_n = 1;

    /* self-reflection: one REFLECT per speaker in round 0, the draft is recorded */
    x.self_reflection = true;
    rec_reset(rb);
    traj = run_debate(&ss.s, &qs->items[6], 0);
    int n_ref = 0;
    for (size_t c = 0; c < rb->n; c++)
        n_ref += rb->calls[c].call == SN_SIM_CALL_REFLECT;
    CHECK(n_ref == 5);
    for (int k = 0; k < 5; k++)
        CHECK(jstr_of(msg_of(traj, 0, k), "draft") != NULL);
    CHECK(jstr_of(msg_of(traj, 1, 0), "draft") == NULL);
    cJSON_Delete(traj);
    x.self_reflection = false;
    sn_llm_backend_close(rb->base);

    /* early stop on consensus: perfectly competent honest agents agree at round 0 */
    mk_exp(&x, "early", SN_SCEN_NONE, 4, 0, 5, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    x.early_stop = true;
    rb = rec_open("{\"kind\":\"sim\",\"competence\":1.0,\"reresolve\":0}");
    mk_setup(&ss, &x, rb->base);
    traj = run_debate(&ss.s, &qs->items[0], 0);
    const cJSON *fin = cJSON_GetObjectItem(traj, "final");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(fin, "stopped_early")));
    CHECK(cJSON_GetObjectItem(fin, "n_rounds")->valueint == 1);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(traj, "rounds")) == 1);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(fin, "correct")));
    cJSON_Delete(traj);
    /* judge decision */
    x.early_stop = false;
    x.decision = SN_DECIDE_JUDGE;
    x.rounds = 2;
    traj = run_debate(&ss.s, &qs->items[1], 0);
    fin = cJSON_GetObjectItem(traj, "final");
    CHECK_STR(jstr_of(fin, "rule"), "judge");
    CHECK(jstr_of(fin, "judge_answer") && !strcmp(jstr_of(fin, "judge_answer"),
                                                 jstr_of(fin, "answer")));
    cJSON_Delete(traj);
    sn_llm_backend_close(rb->base);

    /* competence 0 agents are never right at round 0; majority is then wrong */
    mk_exp(&x, "dumb", SN_SCEN_NONE, 3, 0, 1, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    rb = rec_open("{\"kind\":\"sim\",\"competence\":0.0}");
    mk_setup(&ss, &x, rb->base);
    traj = run_debate(&ss.s, &qs->items[0], 0);
    for (int k = 0; k < 3; k++)
        CHECK(strcmp(jstr_of(msg_of(traj, 0, k), "answer"), jstr_of(traj, "gold")) != 0);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(traj, "final"), "correct")));
    cJSON_Delete(traj);
    sn_llm_backend_close(rb->base);

    /* autoinject: rewritten messages carry the original and the injected target */
    mk_exp(&x, "ai", SN_SCEN_AUTOINJECT, 5, 2, 5, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    x.injection_rate = 0.5;
    rb = rec_open(NULL);
    mk_setup(&ss, &x, rb->base);
    int n_inj = 0, n_faulty_msgs = 0;
    for (size_t qi = 0; qi < 8; qi++) {
        traj = run_debate(&ss.s, &qs->items[qi], 0);
        for (int t = 0; t < 5; t++)
            for (int k = 0; k < 5; k++) {
                const cJSON *m = msg_of(traj, t, k);
                bool faulty = !strcmp(role_of(traj, k), "adversary");
                bool inj = cJSON_IsTrue(cJSON_GetObjectItem(m, "injected"));
                CHECK(!inj || faulty);
                n_faulty_msgs += faulty;
                if (inj) {
                    n_inj++;
                    CHECK(jstr_of(m, "original_text") != NULL);
                    CHECK_STR(jstr_of(m, "answer"), jstr_of(m, "injected_target"));
                }
            }
        cJSON_Delete(traj);
    }
    CHECK(n_faulty_msgs == 8 * 5 * 2);
    CHECK(n_inj > n_faulty_msgs / 4 && n_inj < 3 * n_faulty_msgs / 4); /* rate 0.5 */
    sn_llm_backend_close(rb->base);

    /* prompt injection: the injected text reaches honest agents and names the target */
    mk_exp(&x, "pi", SN_SCEN_PROMPT_INJECTION, 5, 1, 2, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    rb = rec_open(NULL);
    mk_setup(&ss, &x, rb->base);
    traj = run_debate(&ss.s, &qs->items[2], 0);
    for (int k = 0; k < 5; k++)
        if (!strcmp(role_of(traj, k), "adversary"))
            CHECK(strstr(jstr_of(msg_of(traj, 0, k), "text"), "Ignore all previous "
                                                                "instructions") != NULL);
    cJSON_Delete(traj);
    sn_llm_backend_close(rb->base);
}

/* Prompt overrides render the recipe's template; an unknown placeholder is an error. */
static void test_prompts(void)
{
    struct sn_prompts p;
    struct sn_err err = {0};
    cJSON *o = cJSON_Parse("{\"first_round\":\"Q={question} OPTS={options}END {unknown?}\"}");
    CHECK(sn_prompts_init(&p, o, "prompts", &err) == SN_OK);
    struct sn_buf b = {0};
    const char *vars[] = {"question", "Why?", "options", "A) x\n", NULL, NULL};
    CHECK(sn_prompt_render(&p, SN_PROMPT_FIRST_ROUND, vars, &b, &err) == SN_OK);
    CHECK_STR(b.data, "Q=Why? OPTS=A) x\nEND {unknown?}");
    sn_buf_free(&b);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"judge\":\"{questoin}\"}");
    CHECK(sn_prompts_init(&p, o, "prompts", &err) == SN_E_ARG && strstr(err.msg, "questoin"));
    cJSON_Delete(o);
    sn_err_clear(&err);
    o = cJSON_Parse("{\"jduge\":\"x\"}");
    CHECK(sn_prompts_init(&p, o, "prompts", &err) == SN_E_ARG && strstr(err.msg, "judge"));
    cJSON_Delete(o);
}

/* Allocation failure anywhere in a debate: an error or success, never a crash or leak. */
static void test_debate_alloc_failures(void)
{
    struct sn_experiment x;
    mk_exp(&x, "af", SN_SCEN_AITM, 4, 1, 2, SN_STRAT_ONE_BY_ONE, NULL, NULL);
    struct sn_llm_backend *b;
    struct sn_err err = {0};
    cJSON *cfg = cJSON_Parse("{\"kind\":\"sim\"}");
    CHECK(sn_sim_endpoint_open(cfg, &b, &err) == SN_OK);
    cJSON_Delete(cfg);
    struct setup_store ss;
    mk_setup(&ss, &x, b);
    int ok = 0, failed = 0;
    for (uint64_t n = 1; n < 600; n += 3) {
        struct sn_buf line = {0};
        sn_err_clear(&err);
        sn_alloc_fail_after(n);
        int rc = sn_debate_run(&ss.s, &qs->items[3], 0, &line, NULL, &err);
        sn_alloc_fail_after(0);
        if (rc == SN_OK)
            ok++;
        else
            failed += rc == SN_E_NOMEM;
        sn_buf_free(&line);
    }
    CHECK(ok > 0 && failed > 0);
    sn_llm_backend_close(b);
}

/* A backend whose agents never state an answer the rules can parse, and whose extraction
** pass answers "B". */
static int garble_complete(struct sn_llm_backend *b, const struct sn_llm_request *req,
                           struct sn_llm_reply *out, struct sn_err *err)
{
    (void)b;
    (void)err;
    const struct sn_sim_hint *h = req->sim_hint;
    memset(out, 0, sizeof *out);
    out->text = sn_strdup(h->call == SN_SIM_CALL_EXTRACT ? "FINAL ANSWER: B"
                                                         : "I am leaning toward the river one.");
    return out->text ? SN_OK : SN_E_NOMEM;
}
static void garble_close(struct sn_llm_backend *b) { (void)b; }
static const struct sn_llm_backend_ops garble_ops = {"garble", garble_complete, garble_close};

static void test_unparsed_and_llm_extract(void)
{
    struct sn_llm_backend *gb = NULL;
    struct sn_err gerr = {0};
    CHECK(sn_llm_backend_create(&garble_ops, NULL, "garble", &gb, &gerr) == SN_OK);
    struct sn_experiment x;
    struct setup_store ss;
    const struct sn_question *q = NULL;
    for (size_t i = 0; i < qs->n && !q; i++)
        if (qs->items[i].task == SN_TASK_MC)
            q = &qs->items[i];
    CHECK(q != NULL);
    mk_exp(&x, "garble", SN_SCEN_NONE, 3, 0, 2, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    mk_setup(&ss, &x, gb);
    cJSON *traj = run_debate(&ss.s, q, 0);
    for (int k = 0; k < 3; k++) {
        const cJSON *m = msg_of(traj, 1, k);
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(m, "parsed")));
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(m, "answer")));
    }
    const cJSON *fin = cJSON_GetObjectItem(traj, "final");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(fin, "answer")));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(fin, "correct"))); /* never counted as correct */
    cJSON_Delete(traj);
    x.llm_extract = true;
    traj = run_debate(&ss.s, q, 0);
    for (int k = 0; k < 3; k++) {
        const cJSON *m = msg_of(traj, 1, k);
        CHECK_STR(jstr_of(m, "answer"), "B");
        CHECK_STR(jstr_of(m, "answer_source"), "llm");
        CHECK_STR(jstr_of(m, "text"), "I am leaning toward the river one.");
    }
    CHECK_STR(jstr_of(cJSON_GetObjectItem(traj, "final"), "answer"), "B");
    cJSON_Delete(traj);
    sn_llm_backend_close(gb);
}

int main(void)
{
    qs = calloc(1, sizeof *qs);
    struct sn_err err = {0};
    CHECK(sn_synthetic_generate(qs, 10, 21, 0.4, "synthetic", &err) == SN_OK);
    test_targets();
    test_placement();
    test_collaboration();
    test_aitm();
    test_defense();
    test_options();
    test_prompts();
    test_debate_alloc_failures();
    test_unparsed_and_llm_extract();
    sn_qset_free(qs);
    free_keep_alive();
    return sn_test_done();
}
