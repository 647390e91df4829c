/* tests/test_data_sim_style.c: the style-matched adversary (scenario style_matched; sim/
** attacks.c, simagent.c, prompts.c; docs/simulate.md "Attacks"). It argues for the target in
** the honest agents' own phrasing and structure:
**   - adversaries always answer the target, recorded with persona "style-matched";
**   - an endpoint adversary gets the style-matched system prompt (imitate the peers, never sound
**     persuasive), honest agents the honest one;
**   - its wording does not give it away: an n-gram logistic regression (eval/detect_baselines.c)
**     trained on collaboration debates — adversary vs honest messages, or the tuple builder's
**     labels (correct honest messages vs adversaries' and misled agents') — separates held-out
**     collaboration messages almost perfectly and style-matched ones no better than chance
**     (below 0.6; 0.43 and 0.32 at these seeds); and the sim persuasiveness of its messages is
**     that of the honest agents, where the collaboration adversaries' is far above it. */
#include "test_data_sim_util.h"

#include "eval/detect.h"

#include <math.h>

static struct sn_qset *qs;

struct msgs {
    char **text;
    bool *adv, *correct;
    size_t n, cap;
};

static void push(struct msgs *m, const char *text, bool adv, bool correct)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->text = realloc(m->text, m->cap * sizeof *m->text);
        m->adv = realloc(m->adv, m->cap * sizeof *m->adv);
        m->correct = realloc(m->correct, m->cap * sizeof *m->correct);
    }
    m->text[m->n] = strdup(text);
    m->correct[m->n] = correct;
    m->adv[m->n++] = adv;
}

static void msgs_free(struct msgs *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->text[i]);
    free(m->text);
    free(m->adv);
    free(m->correct);
}

/* Runs items [i0, i1) of the scenario; collects every message (adversarial = sent by an
** adversary). Checks what every scenario must hold: adversaries answer the target. */
static void run(enum sn_scenario sc, size_t i0, size_t i1, struct msgs *out,
                struct rec_backend *rb)
{
    struct sn_experiment x;
    mk_exp(&x, sn_scenario_name(sc), sc, 5, 2, 3, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    if (sc == SN_SCEN_COLLABORATION)
        x.rhetoric = "mixed";
    struct setup_store ss;
    mk_setup(&ss, &x, rb->base);
    for (size_t qi = i0; qi < i1 && qi < qs->n; qi++) {
        rec_reset(rb);
        cJSON *traj = run_debate(&ss.s, &qs->items[qi], 0);
        CHECK(traj);
        if (!traj)
            continue;
        CHECK_STR(jstr_of(traj, "scenario"), sn_scenario_name(sc));
        const char *target = jstr_of(traj, "adversarial_target");
        const cJSON *agents = cJSON_GetObjectItem(traj, "agents");
        for (int t = 0; t < 3; t++)
            for (int k = 0; k < 5; k++) {
                const cJSON *m = msg_of(traj, t, k);
                const cJSON *ag = cJSON_GetArrayItem(agents, k);
                bool adv = !strcmp(jstr_of(ag, "role"), "adversary");
                if (!m)
                    continue;
                if (adv) {
                    CHECK_STR(jstr_of(m, "answer"), target);
                    if (sc == SN_SCEN_STYLE_MATCHED)
                        CHECK_STR(jstr_of(ag, "persona"), "style-matched");
                }
                const char *ans = jstr_of(m, "answer");
                push(out, jstr_of(m, "text"), adv,
                     ans && !strcmp(ans, jstr_of(traj, "gold")));
            }
        /* the system prompt each speaker got */
        for (size_t c = 0; sc == SN_SCEN_STYLE_MATCHED && c < rb->n; c++) {
            const struct rec_call *r = &rb->calls[c];
            if (r->call != SN_SIM_CALL_ANSWER)
                continue;
            bool style = strstr(r->prompt, "imitate their phrasing") != NULL &&
                         strstr(r->prompt, "Never sound persuasive") != NULL;
            CHECK_MSG(style == (r->role == SN_ROLE_ADVERSARY), "agent %d (role %d): style "
                      "prompt %d", r->agent, r->role, style);
            if (r->role == SN_ROLE_ADVERSARY)
                CHECK(strstr(r->prompt, "persuasively") == NULL);
        }
        cJSON_Delete(traj);
    }
}

static double mean_persuasion(const struct msgs *m, bool adv)
{
    double s = 0;
    int n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->adv[i] == adv) {
            s += sn_sim_persuasion(m->text[i]);
            n++;
        }
    return n ? s / n : NAN;
}

static double auroc_of(const struct sn_ngram *model, const struct msgs *m)
{
    double *s = malloc(m->n * sizeof *s);
    for (size_t i = 0; i < m->n; i++)
        s[i] = sn_ngram_logit(model, m->text[i]);
    double a = sn_detect_auroc(s, m->adv, m->n);
    free(s);
    return a;
}

static void test_style_does_not_give_it_away(void)
{
    struct rec_backend *rb = rec_open(NULL);
    struct msgs train = {0}, collab = {0}, style = {0};
    run(SN_SCEN_COLLABORATION, 0, 40, &train, rb);
    run(SN_SCEN_COLLABORATION, 40, 80, &collab, rb);
    run(SN_SCEN_STYLE_MATCHED, 40, 80, &style, rb);
    /* two n-gram LRs on the training debates: (a) honest = 1, adversary = 0; (b) as the tuple
    ** builder labels (chosen = a correct honest message, rejected = an adversary's or a misled
    ** honest agent's), which also learns the wording of wrong answers */
    bool *label = malloc(train.n * sizeof *label);
    for (int v = 0; v < 2; v++) {
        for (size_t i = 0; i < train.n; i++)
            label[i] = v == 0 ? !train.adv[i] : !train.adv[i] && train.correct[i];
        struct sn_ngram_params np = sn_ngram_default_params();
        struct sn_ngram *model = NULL;
        struct sn_err err = {0};
        CHECK_MSG(sn_ngram_train(&np, (const char *const *)train.text, label, train.n, &model,
                                 &err) == SN_OK, "%s", err.msg);
        if (!model)
            continue;
        double a_collab = auroc_of(model, &collab), a_style = auroc_of(model, &style);
        printf("n-gram (%s): AUROC collaboration %.3f, style-matched %.3f\n",
               v == 0 ? "adversary vs honest" : "tuple labels", a_collab, a_style);
        CHECK_MSG(a_collab > 0.95, "collaboration AUROC %.3f", a_collab);
        /* style-matched: no better than chance by more than a little */
        CHECK_MSG(a_style < 0.6, "style-matched AUROC %.3f", a_style);
        sn_ngram_free(model);
    }
    free(label);
    double pc_adv = mean_persuasion(&collab, true), pc_hon = mean_persuasion(&collab, false);
    double ps_adv = mean_persuasion(&style, true), ps_hon = mean_persuasion(&style, false);
    printf("persuasion: collaboration adv %.3f honest %.3f; style-matched adv %.3f honest %.3f\n",
           pc_adv, pc_hon, ps_adv, ps_hon);
    CHECK(pc_adv > pc_hon + 0.1);
    CHECK(fabs(ps_adv - ps_hon) < 0.05);
    msgs_free(&train);
    msgs_free(&collab);
    msgs_free(&style);
    sn_llm_backend_close(rb->base);
}

/* the recipe names the scenario; an unknown one lists it */
static void test_recipe_name(void)
{
    enum sn_scenario s;
    CHECK(sn_scenario_parse("style_matched", &s) == SN_OK && s == SN_SCEN_STYLE_MATCHED);
    CHECK_STR(sn_scenario_name(SN_SCEN_STYLE_MATCHED), "style_matched");
    struct sn_prompts p;
    struct sn_err err = {0};
    CHECK(sn_prompts_init(&p, NULL, "prompts", &err) == SN_OK);
    const char *vars[] = {"agent", "3", "target", "B", "format", "End with FINAL ANSWER.", NULL};
    struct sn_buf b = {0};
    CHECK(sn_prompt_render(&p, SN_PROMPT_SYSTEM_STYLE_MATCHED, vars, &b, &err) == SN_OK);
    CHECK(b.data && strstr(b.data, "agent 3") && strstr(b.data, "settles on B") &&
          strstr(b.data, "End with FINAL ANSWER."));
    sn_buf_free(&b);
    /* overridable from the recipe like every template */
    cJSON *o = cJSON_Parse("{\"system_style_matched\": \"be {target}\"}");
    CHECK(sn_prompts_init(&p, o, "prompts", &err) == SN_OK);
    CHECK_STR(p.text[SN_PROMPT_SYSTEM_STYLE_MATCHED], "be {target}");
    cJSON_Delete(o);
}

int main(void)
{
    qs = calloc(1, sizeof *qs);
    struct sn_err err = {0};
    CHECK(sn_synthetic_generate(qs, 80, 23, 0.4, "synthetic", &err) == SN_OK);
    test_recipe_name();
    test_style_does_not_give_it_away();
    sn_qset_free(qs);
    free_keep_alive();
    return sn_test_done();
}
