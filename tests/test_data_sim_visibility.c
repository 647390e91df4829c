/* tests/test_data_sim_visibility.c: which messages each agent saw, per strategy and topology
** (sim/engine.c visibility rule, docs/simulate.md#visibility), asserted through a
** recording backend against an independent statement of the rule:
**   simultaneous   round t sees round t-1 of every in-neighbour (round 0: nothing)
**   one_by_one     latest message of every in-neighbour: round t if it spoke earlier in
**                  round t (lower id), else round t-1
**   sc_one_by_one  round 0 nothing, then one_by_one
** Seen texts must be exactly what the trajectory records for that (agent, round), and the
** prompt must name exactly the visible senders. */
#include "test_data_sim_util.h"

static bool expect_sees(enum sn_strategy st, const struct sn_topology *tp, int j, int k, int t,
                        int *round)
{
    if (j == k || !tp->adj[j][k])
        return false;
    bool obo = st == SN_STRAT_ONE_BY_ONE || (st == SN_STRAT_SC_ONE_BY_ONE && t > 0);
    if (!obo) {
        *round = t - 1;
        return t > 0;
    }
    if (j < k) {
        *round = t;
        return true;
    }
    *round = t - 1;
    return t > 0;
}

static void check_one(const char *topo, enum sn_strategy st, const struct sn_question *q,
                      enum sn_scenario sc, int n_adv)
{
    struct sn_experiment x;
    mk_exp(&x, "vis", sc, 5, n_adv, 3, st, topo, sc == SN_SCEN_NETSAFE ? "hub" : NULL);
    struct rec_backend *rb = rec_open(NULL);
    struct setup_store ss;
    mk_setup(&ss, &x, rb->base);
    cJSON *traj = run_debate(&ss.s, q, 0);
    CHECK(traj != NULL);
    if (!traj) {
        sn_llm_backend_close(rb->base);
        return;
    }
    int n_answer = 0;
    for (size_t c = 0; c < rb->n; c++) {
        const struct rec_call *rc = &rb->calls[c];
        if (rc->call != SN_SIM_CALL_ANSWER)
            continue;
        n_answer++;
        int k = rc->agent, t = rc->round;
        /* expected set */
        bool want[SN_SIM_MAX_AGENTS] = {0};
        int want_round[SN_SIM_MAX_AGENTS];
        for (int j = 0; j < x.n_agents; j++)
            want[j] = expect_sees(st, &x.topology, j, k, t, &want_round[j]);
        bool got[SN_SIM_MAX_AGENTS] = {0};
        for (int i = 0; i < rc->n_peers; i++) {
            int j = rc->peer_agent[i];
            CHECK_MSG(!rc->peer_ally[i], "no allies without collaboration");
            CHECK_MSG(j >= 0 && j < x.n_agents && !got[j], "%s/%s: agent %d round %d saw %d twice",
                      topo, sn_strategy_name(st), k, t, j);
            got[j] = true;
            CHECK_MSG(want[j], "%s/%s: agent %d round %d saw agent %d (no edge or not yet "
                      "spoken)", topo, sn_strategy_name(st), k, t, j);
            if (!want[j])
                continue;
            CHECK_MSG(rc->peer_round[i] == want_round[j], "%s/%s: agent %d round %d saw agent "
                      "%d's round %d, want %d", topo, sn_strategy_name(st), k, t, j,
                      rc->peer_round[i], want_round[j]);
            const cJSON *m = msg_of(traj, rc->peer_round[i], j);
            CHECK(m && !strcmp(jstr_of(m, "text"), rc->peer_text[i]));
            /* NetSafe: nothing crosses a missing edge (checked above) and the hub adversary's
            ** text reaches only its out-neighbours */
        }
        for (int j = 0; j < x.n_agents; j++) {
            CHECK_MSG(got[j] == want[j], "%s/%s: agent %d round %d: sees %d = %d, want %d", topo,
                      sn_strategy_name(st), k, t, j, got[j], want[j]);
            char tag[32];
            snprintf(tag, sizeof tag, "Agent %d:", j);
            CHECK_MSG((strstr(rc->prompt, tag) != NULL) == want[j], "%s/%s: prompt of agent %d "
                      "round %d and '%s'", topo, sn_strategy_name(st), k, t, tag);
        }
    }
    CHECK(n_answer == 15); /* 5 agents x 3 rounds, everyone speaks */
    cJSON_Delete(traj);
    sn_llm_backend_close(rb->base);
}

int main(void)
{
    struct sn_qset *qs = calloc(1, sizeof *qs);
    struct sn_err err = {0};
    CHECK(sn_synthetic_generate(qs, 4, 3, 0.5, "synthetic", &err) == SN_OK);
    const char *topos[] = {"\"complete\"", "\"chain\"", "\"star\"", "\"wheel\"", "\"tree\"",
                           "\"ring\"", "{\"name\":\"random\",\"p\":0.4,\"seed\":9}",
                           "{\"name\":\"edges\",\"edges\":[[0,1],[1,2],[2,0],[3,1],[4,3],[0,4]]}"};
    for (size_t i = 0; i < sizeof topos / sizeof topos[0]; i++)
        for (int st = 0; st < SN_STRAT_COUNT; st++)
            for (size_t qi = 0; qi < 2; qi++)
                check_one(topos[i], (enum sn_strategy)st, &qs->items[qi], SN_SCEN_NONE, 0);
    /* NetSafe on sparse graphs: the adversary's misinformation only travels along edges */
    for (int st = 0; st < SN_STRAT_COUNT; st++) {
        check_one("\"chain\"", (enum sn_strategy)st, &qs->items[2], SN_SCEN_NETSAFE, 1);
        check_one("\"star\"", (enum sn_strategy)st, &qs->items[3], SN_SCEN_NETSAFE, 1);
    }

    /* the headline difference, stated directly on a complete graph */
    struct sn_experiment x;
    for (int st = 0; st < SN_STRAT_COUNT; st++) {
        mk_exp(&x, "vis2", SN_SCEN_NONE, 4, 0, 2, (enum sn_strategy)st, NULL, NULL);
        struct rec_backend *rb = rec_open(NULL);
        struct setup_store ss;
        mk_setup(&ss, &x, rb->base);
        cJSON *traj = run_debate(&ss.s, &qs->items[0], 0);
        for (size_t c = 0; c < rb->n; c++) {
            const struct rec_call *rc = &rb->calls[c];
            if (rc->call != SN_SIM_CALL_ANSWER || rc->round != 0)
                continue;
            if (st == SN_STRAT_ONE_BY_ONE) /* later speakers see this round's earlier ones */
                CHECK(rc->n_peers == rc->agent);
            else
                CHECK(rc->n_peers == 0);
            for (int i = 0; i < rc->n_peers; i++)
                CHECK(rc->peer_round[i] == 0 && rc->peer_agent[i] < rc->agent);
        }
        cJSON_Delete(traj);
        sn_llm_backend_close(rb->base);
    }
    /* the recorded topology is the graph that was used */
    mk_exp(&x, "vis3", SN_SCEN_NONE, 5, 0, 1, SN_STRAT_SIMULTANEOUS, "\"star\"", NULL);
    {
        struct rec_backend *rb = rec_open(NULL);
        struct setup_store ss;
        mk_setup(&ss, &x, rb->base);
        cJSON *traj = run_debate(&ss.s, &qs->items[0], 0);
        const cJSON *edges = cJSON_GetObjectItem(cJSON_GetObjectItem(traj, "topology"), "edges");
        CHECK(cJSON_GetArraySize(edges) == 8); /* hub 0 <-> 4 spokes */
        const cJSON *e;
        cJSON_ArrayForEach(e, edges)
        {
            int a = cJSON_GetArrayItem(e, 0)->valueint, b = cJSON_GetArrayItem(e, 1)->valueint;
            CHECK((a == 0) != (b == 0));
        }
        cJSON_Delete(traj);
        sn_llm_backend_close(rb->base);
    }
    sn_qset_free(qs);
    free_keep_alive();
    return sn_test_done();
}
