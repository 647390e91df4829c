/* tests/test_data_tuples_contrast.c: content-contrastive pairs and the `rejected` setting of
** the tuple builder (tuples/tuples.c, tuples/tuples_contrast.c; docs/formats.md "Tuple
** selection"), on collaboration debates of the sim agents with `styles: "full"` over the
** `facts` dataset's train part:
**   - every contrastive pair differs in content (the extracted answers: gold in chosen, a wrong
**     one in rejected) and shares its wording: the word overlap (shared words over the longer
**     text's words) is at least OVERLAP_MIN for every pair;
**   - persuasive-correct pairs (an adversary's message made right vs itself) come at the
**     configured share of adversary messages (within a binomial 4-sigma band), and so do
**     contrast pairs of chosen messages;
**   - `rejected` = adversary / misled leaves out what it says; `chosen` = honest adds honest
**     wrong messages as chosen against adversary messages only, and never draws a contrast
**     pair from a wrong chosen message;
**   - sn_tuples_swap_answer keeps every other byte (a worked example per task). */
#include "data/data.h"
#include "tuples/tuples.h"
#include "test_data_sim_util.h"

#include <ctype.h>
#include <math.h>

#define OVERLAP_MIN 0.7

struct tally {
    size_t n, contrast, persuasive, by_kind[SN_REJ_COUNT], bad_overlap, bad_content;
    size_t chosen_wrong; /* plain pairs whose chosen message lacks the gold answer */
    double min_overlap;
};

static size_t words(const char *s, char w[][32], size_t cap)
{
    size_t n = 0;
    while (*s && n < cap) {
        while (*s && !isalnum((unsigned char)*s))
            s++;
        size_t k = 0;
        while (*s && isalnum((unsigned char)*s)) {
            if (k < 31)
                w[n][k++] = (char)tolower((unsigned char)*s);
            s++;
        }
        if (k) {
            w[n][k] = '\0';
            n++;
        }
    }
    return n;
}

/* Shared words (as a multiset) over the longer text's word count. */
static double overlap(const char *a, const char *b)
{
    static char wa[512][32], wb[512][32];
    size_t na = words(a, wa, 512), nb = words(b, wb, 512), common = 0;
    bool used[512] = {false};
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            if (!used[j] && !strcmp(wa[i], wb[j])) {
                used[j] = true;
                common++;
                break;
            }
    size_t mx = na > nb ? na : nb;
    return mx ? (double)common / (double)mx : 1.0;
}

struct sink {
    struct tally *t;
    const struct sn_traj *traj;
};

static int on_tuple(void *user, const struct sn_tuple *tp, struct sn_err *err)
{
    (void)err;
    struct sink *s = user;
    struct tally *t = s->t;
    const struct sn_traj *tr = s->traj;
    t->n++;
    t->by_kind[tp->kind]++;
    bool contrast = tp->kind == SN_REJ_CONTRAST, persuasive = !strcmp(tp->meta.chosen_role,
                                                                      "contrast");
    if (!contrast && !persuasive) {
        char a[SN_ANSWER_MAX];
        t->chosen_wrong += !(sn_extract_answer(tp->text[SN_FIELD_CHOSEN], tr->task,
                                               tr->n_options, a) &&
                             sn_answer_equal(a, tr->gold, tr->task));
        return SN_OK;
    }
    t->contrast += contrast;
    t->persuasive += persuasive;
    const char *ch = tp->text[SN_FIELD_CHOSEN], *rj = tp->text[SN_FIELD_REJECTED];
    char a[SN_ANSWER_MAX], b[SN_ANSWER_MAX];
    bool ok = sn_extract_answer(ch, tr->task, tr->n_options, a) &&
              sn_extract_answer(rj, tr->task, tr->n_options, b) &&
              sn_answer_equal(a, tr->gold, tr->task) && !sn_answer_equal(b, tr->gold, tr->task);
    if (!ok) {
        t->bad_content++;
        fprintf(stderr, "content: chosen '%s' / rejected '%s'\n", ch, rj);
    }
    double o = overlap(ch, rj);
    if (o < t->min_overlap)
        t->min_overlap = o;
    if (o < OVERLAP_MIN) {
        t->bad_overlap++;
        fprintf(stderr, "overlap %.2f: '%s' / '%s'\n", o, ch, rj);
    }
    return SN_OK;
}

/* Builds tuples from the debates with p; fills the tally and the adversary-message count. */
static void build(cJSON **trajs, size_t n, const struct sn_tuples_params *p, struct tally *t,
                  size_t *n_adv_msgs, size_t *n_chosen_msgs)
{
    struct sn_err err = {0};
    struct sn_tuples *b = NULL;
    memset(t, 0, sizeof *t);
    t->min_overlap = 1.0;
    *n_adv_msgs = *n_chosen_msgs = 0;
    CHECK(sn_tuples_create(p, &b, &err) == SN_OK);
    for (size_t i = 0; i < n && b; i++) {
        char *line = cJSON_PrintUnformatted(trajs[i]);
        struct sn_traj *tr = NULL;
        CHECK(sn_traj_parse(line, strlen(line), "test", &tr, &err) == SN_OK);
        if (tr) {
            for (size_t r = 0; r < tr->n_rounds; r++)
                for (size_t k = 0; k < tr->rounds[r].n_msgs; k++) {
                    const struct sn_traj_msg *m = &tr->rounds[r].msgs[k];
                    bool adv = tr->agents[m->agent].role == SN_ROLE_ADVERSARY;
                    *n_adv_msgs += adv;
                    *n_chosen_msgs += !adv && m->parsed && m->answer &&
                                      sn_answer_equal(m->answer, tr->gold, tr->task);
                }
            struct sink s = {t, tr};
            CHECK(sn_tuples_add(b, tr, on_tuple, &s, &err) == SN_OK);
        }
        sn_traj_free(tr);
        free(line);
    }
    sn_tuples_free(b);
}

static void check_share(size_t got, size_t n, double p, const char *what)
{
    double mean = n * p, sd = sqrt(n * p * (1 - p));
    CHECK_MSG(fabs((double)got - mean) <= 4 * sd + 2, "%s: %zu of %zu, expected about %.0f",
              what, got, n, mean);
}

static void test_pairs(void)
{
    struct sn_err err = {0};
    struct sn_qset *qs = NULL;
    cJSON *spec = cJSON_Parse("{\"kind\":\"facts\",\"part\":\"train\",\"n\":60,\"seed\":3,"
                              "\"numeric_share\":0.4}");
    CHECK(sn_qset_load(spec, "dataset", 0, &qs, &err) == SN_OK);
    cJSON_Delete(spec);
    struct rec_backend *rb = rec_open("{\"kind\":\"sim\",\"styles\":\"full\"}");
    struct sn_experiment x;
    mk_exp(&x, "collab", SN_SCEN_COLLABORATION, 5, 2, 3, SN_STRAT_SIMULTANEOUS, NULL, NULL);
    x.rhetoric = "mixed";
    struct setup_store ss;
    mk_setup(&ss, &x, rb->base);
    cJSON *trajs[60];
    size_t n = 0;
    for (size_t i = 0; qs && i < qs->n; i++) {
        rec_reset(rb);
        cJSON *t = run_debate(&ss.s, &qs->items[i], 0);
        CHECK(t);
        if (t)
            trajs[n++] = t;
    }
    struct sn_tuples_params p = sn_tuples_default_params();
    p.max_pairs = 2;
    p.seed = 5;
    p.contrast = 0.5;
    p.persuasive_correct = 0.3;
    struct tally t;
    size_t n_adv, n_chosen;
    build(trajs, n, &p, &t, &n_adv, &n_chosen);
    CHECK(t.contrast > 50 && t.persuasive > 20);
    CHECK_MSG(t.bad_content == 0 && t.bad_overlap == 0, "content %zu overlap %zu (min %.2f)",
              t.bad_content, t.bad_overlap, t.min_overlap);
    /* the configured shares (a few draws are lost to duplicates and to a swap that changes
    ** nothing; both are rare here) */
    check_share(t.persuasive, n_adv, p.persuasive_correct, "persuasive-correct pairs");
    check_share(t.contrast, n_chosen, p.contrast, "contrast pairs");
    fprintf(stderr, "contrast %zu of %zu chosen, persuasive-correct %zu of %zu adversary "
            "messages, min overlap %.2f\n", t.contrast, n_chosen, t.persuasive, n_adv,
            t.min_overlap);

    /* without them: no contrastive pair, and the other tuples are the same ones */
    struct sn_tuples_params p0 = p;
    p0.contrast = p0.persuasive_correct = 0;
    struct tally t0;
    build(trajs, n, &p0, &t0, &n_adv, &n_chosen);
    CHECK(t0.contrast == 0 && t0.persuasive == 0 && t0.by_kind[SN_REJ_CONTRAST] == 0);
    CHECK(t0.n == t.n - t.contrast - t.persuasive);

    /* the rejected setting (every pair of a round, so that the lower kinds are not capped) */
    p0.max_pairs = 0;
    build(trajs, n, &p0, &t0, &n_adv, &n_chosen);
    CHECK(t0.by_kind[SN_REJ_WRONG] > 0 && t0.by_kind[SN_REJ_MISLED] > 0);
    p0.rejected = SN_REJECTED_MISLED;
    build(trajs, n, &p0, &t0, &n_adv, &n_chosen);
    CHECK(t0.by_kind[SN_REJ_WRONG] == 0 && t0.by_kind[SN_REJ_MISLED] > 0);
    p0.rejected = SN_REJECTED_ADVERSARY;
    build(trajs, n, &p0, &t0, &n_adv, &n_chosen);
    CHECK(t0.by_kind[SN_REJ_WRONG] == 0 && t0.by_kind[SN_REJ_MISLED] == 0 &&
          t0.by_kind[SN_REJ_ADVERSARY] > 0);
    CHECK(t0.chosen_wrong == 0);
    size_t n_adversary_only = t0.n;

    /* chosen = honest: honest wrong messages become chosen, against adversary messages only;
    ** contrast pairs still come from correct chosen messages only */
    struct sn_tuples_params ph = p0;
    ph.chosen = SN_CHOSEN_HONEST;
    ph.contrast = 0.5;
    build(trajs, n, &ph, &t0, &n_adv, &n_chosen);
    CHECK_MSG(t0.chosen_wrong > 0 && t0.n - t0.contrast > n_adversary_only,
              "%zu wrong chosen, %zu plain tuples vs %zu with correct chosen only",
              t0.chosen_wrong, t0.n - t0.contrast, n_adversary_only);
    CHECK(t0.by_kind[SN_REJ_WRONG] == 0 && t0.by_kind[SN_REJ_MISLED] == 0 && t0.contrast > 0 &&
          t0.bad_content == 0);
    ph.rejected = SN_REJECTED_MISLED;
    struct sn_tuples *bad = NULL;
    CHECK(sn_tuples_create(&ph, &bad, &err) == SN_E_ARG && !bad);
    CHECK(strstr(err.msg, "needs rejected = \"adversary\""));
    enum sn_chosen_from cf;
    CHECK(sn_chosen_from_parse("honest", &cf, &err) == SN_OK && cf == SN_CHOSEN_HONEST);
    CHECK(sn_chosen_from_parse("wrong", &cf, &err) == SN_E_ARG);

    enum sn_rejected_from rf;
    CHECK(sn_rejected_from_parse("misled", &rf, &err) == SN_OK && rf == SN_REJECTED_MISLED);
    CHECK(sn_rejected_from_parse("honest", &rf, &err) == SN_E_ARG);

    for (size_t i = 0; i < n; i++)
        cJSON_Delete(trajs[i]);
    sn_llm_backend_close(rb->base);
    free_keep_alive();
    sn_qset_free(qs);
}

static void test_swap(void)
{
    struct sn_err err = {0};
    struct sn_buf b = {0};
    const char *opts[] = {"Nile", "Danube", "Volga"};
    CHECK(sn_tuples_swap_answer(SN_TASK_MC, opts, 3, "A good point: Cairo lies on the Nile. "
                                "FINAL ANSWER: A", "A", "B", &b, &err) == SN_OK);
    CHECK_STR(b.data, "A good point: Cairo lies on the Danube. FINAL ANSWER: B");
    sn_buf_reset(&b);
    CHECK(sn_tuples_swap_answer(SN_TASK_NUMERIC, NULL, 0, "8 - 3 = 5 cookies, not 15 or 5.5. "
                                "The answer is 5.", "5", "6", &b, &err) == SN_OK);
    CHECK_STR(b.data, "8 - 3 = 6 cookies, not 15 or 5.5. The answer is 6.");
    sn_buf_reset(&b);
    /* nothing to swap: the final answer line is added */
    CHECK(sn_tuples_swap_answer(SN_TASK_NUMERIC, NULL, 0, "I agree.", "5", "6", &b, &err) ==
          SN_OK);
    CHECK_STR(b.data, "I agree.\n\nFINAL ANSWER: 6");
    sn_buf_free(&b);
    char w[32];
    sn_tuples_wrong_answer(SN_TASK_MC, 4, "C", NULL, 1, w);
    CHECK(w[0] >= 'A' && w[0] <= 'D' && w[0] != 'C' && !w[1]);
    sn_tuples_wrong_answer(SN_TASK_MC, 4, "C", "D", 1, w);
    CHECK_STR(w, "D");
    sn_tuples_wrong_answer(SN_TASK_NUMERIC, 0, "12", "12", 1, w);
    CHECK(strcmp(w, "12") != 0);
}

int main(void)
{
    test_swap();
    test_pairs();
    return sn_test_done();
}
