/* tests/test_data_sim_vote.c: the engine's recorded final decision is the project's one
** plurality vote (data/data.h; docs/formats.md "Panel decision"): a tie is no decision
** (final.answer null, final.correct false), and on simulated debates `sentinel stats` under
** its default rule reproduces every recorded final decision. */
#include "eval/eval.h"
#include "test_data_sim_util.h"

/* A scripted backend: even slots answer gold, odd slots the option after gold. It keeps no
** state of its own; the handle comes from sn_llm_backend_create (llm/llm.h). */
static int script_state;

static int script_complete(struct sn_llm_backend *b, const struct sn_llm_request *req,
                           struct sn_llm_reply *out, struct sn_err *err)
{
    (void)b;
    const struct sn_sim_hint *h = req->sim_hint;
    memset(out, 0, sizeof *out);
    if (!h || !h->q)
        return sn_err_set(err, SN_E_ARG, "script: no hint");
    char a = h->q->gold[0];
    if (h->agent % 2)
        a = (char)('A' + (a - 'A' + 1) % (int)h->q->n_options);
    char text[64];
    snprintf(text, sizeof text, "I think so.\n\nFINAL ANSWER: %c", a);
    out->text = strdup(text);
    out->attempts = 1;
    return out->text ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
}

static void script_close(struct sn_llm_backend *b) { (void)b; }
static const struct sn_llm_backend_ops script_ops = {"script", script_complete, script_close};

static cJSON *final_of(const struct sn_debate_setup *s, const struct sn_question *q)
{
    cJSON *j = run_debate(s, q, 0);
    return j ? j : cJSON_CreateNull();
}

int main(void)
{
    struct sn_err err = {0};
    struct sn_qset *qs = sn_calloc(1, sizeof *qs);
    CHECK(qs && sn_synthetic_generate(qs, 200, 3, 0.3, "synthetic", &err) == SN_OK);
    const struct sn_question *mc = NULL;
    for (size_t i = 0; i < qs->n && !mc; i++)
        if (qs->items[i].task == SN_TASK_MC)
            mc = &qs->items[i];
    CHECK(mc != NULL);

    /* 4 slots: gold, other, gold, other -> a 2-2 tie: no decision. The old rule (lowest id)
    ** would have recorded gold. 3 slots: gold, other, gold -> gold. */
    struct sn_llm_backend *sb = NULL;
    CHECK(sn_llm_backend_create(&script_ops, &script_state, "script", &sb, &err) == SN_OK);
    for (int n = 3; n <= 4 && mc; n++) {
        struct sn_experiment x;
        mk_exp(&x, "vote", SN_SCEN_NONE, n, 0, 1, SN_STRAT_SIMULTANEOUS, NULL, NULL);
        struct setup_store ss;
        mk_setup(&ss, &x, sb);
        cJSON *j = final_of(&ss.s, mc);
        const cJSON *fin = cJSON_GetObjectItem(j, "final");
        const cJSON *ans = cJSON_GetObjectItem(fin, "answer");
        const cJSON *cor = cJSON_GetObjectItem(fin, "correct");
        if (n == 4) {
            CHECK_MSG(cJSON_IsNull(ans), "a 2-2 tie recorded answer %s",
                      cJSON_IsString(ans) ? ans->valuestring : "?");
            CHECK(cJSON_IsFalse(cor));
        } else {
            CHECK(cJSON_IsString(ans) && !strcmp(ans->valuestring, mc->gold));
            CHECK(cJSON_IsTrue(cor));
        }
        cJSON_Delete(j);
    }
    sn_llm_backend_close(sb);

    /* Simulated debates (4 agents: 2-2 ties happen): the recorded final decision equals
    ** sn_vote_plurality over the last round's parsed answers under the default rule, and
    ** `sentinel stats` scores every debate's final decision as recorded. */
    cJSON *cfg = cJSON_Parse("{\"kind\":\"sim\"}");
    struct sn_llm_backend *sim = NULL;
    CHECK(sn_sim_endpoint_open(cfg, &sim, &err) == SN_OK);
    cJSON_Delete(cfg);
    struct sn_experiment x;
    mk_exp(&x, "vote-sim", SN_SCEN_COLLABORATION, 4, 1, 2, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    x.rhetoric = "mixed";
    struct setup_store ss;
    mk_setup(&ss, &x, sim);
    struct sn_stats *st = NULL;
    CHECK(sn_stats_create(NULL, &st, &err) == SN_OK);
    int n_ties = 0, n_same = 0, n = 0;
    struct sn_buf line = {0};
    for (size_t i = 0; sim && st && i < qs->n; i++) {
        sn_buf_reset(&line);
        struct sn_traj *t = NULL;
        if (sn_debate_run(&ss.s, &qs->items[i], 0, &line, NULL, &err) ||
            sn_traj_parse(line.data, line.len, "vote", &t, &err) || sn_stats_add(st, t, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            CHECK(0);
            sn_traj_free(t);
            break;
        }
        const char *votes[SN_SIM_MAX_AGENTS];
        size_t L = t->n_rounds - 1;
        for (size_t a = 0; a < t->n_agents; a++) {
            const struct sn_traj_msg *m = sn_traj_msg_of(t, L, (int)a);
            votes[a] = m && t->agents[a].role != SN_ROLE_INTERCEPTOR ? m->answer : NULL;
        }
        bool tie = false;
        int w = sn_vote_plurality(votes, t->n_agents, SN_VOTE_TIE_NONE, 0, NULL, NULL, &tie);
        const char *want = w >= 0 ? votes[w] : NULL;
        const char *got = t->final.answer;
        bool same = (!want && !got) || (want && got && !strcmp(want, got));
        n_same += same;
        n_ties += tie;
        n++;
        sn_traj_free(t);
    }
    sn_buf_free(&line);
    CHECK_MSG(n_same == n, "%d of %d recorded final decisions differ from the vote", n - n_same,
              n);
    CHECK_MSG(n_ties >= 5, "only %d ties among %d debates: the tie rule is not exercised",
              n_ties, n);
    const struct sn_stat_row *rows;
    size_t nr = 0;
    double fin = NAN, rec = NAN;
    CHECK(st && sn_stats_rows(st, &rows, &nr, &err) == SN_OK);
    for (size_t i = 0; i < nr; i++) {
        if (!strcmp(rows[i].metric, "accuracy.final"))
            fin = rows[i].value;
        if (!strcmp(rows[i].metric, "accuracy.final_recorded"))
            rec = rows[i].value;
    }
    CHECK_MSG(isfinite(fin) && fin == rec, "accuracy.final %.4f vs recorded %.4f", fin, rec);
    sn_stats_free(st);
    sn_llm_backend_close(sim);
    sn_qset_free(qs);
    free_keep_alive();
    return sn_test_done();
}
