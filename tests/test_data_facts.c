/* tests/test_data_facts.c: the `facts` dataset (data/facts.c; docs/simulate.md "The fact
** base"): the world and its known / novel split are deterministic and disjoint, the train part
** is built from known facts only, the two parts never share a question text, phrasings differ,
** and distractors are answers of the same type. */
#include "data/data.h"
#include "testutil.h"

static struct sn_qset *load(const char *spec_json)
{
    cJSON *spec = cJSON_Parse(spec_json);
    struct sn_qset *qs = NULL;
    struct sn_err err;
    sn_err_clear(&err);
    int rc = sn_qset_load(spec, "dataset", 0, &qs, &err);
    CHECK_MSG(rc == SN_OK, "%s: %s", spec_json, err.msg);
    cJSON_Delete(spec);
    return qs;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* The fact whose subject the question names (subjects are unique in the world), or -1. */
static long fact_of(const struct sn_fact *w, size_t n, const char *question)
{
    long best = -1;
    size_t best_len = 0;
    for (size_t f = 0; f < n; f++) {
        const char *p = strstr(question, w[f].subject);
        size_t l = strlen(w[f].subject);
        /* the longest match: "Drai" must not claim a question about "Draind" */
        if (p && l > best_len) {
            best = (long)f;
            best_len = l;
        }
    }
    return best;
}

static void test_world(void)
{
    struct sn_err err;
    struct sn_fact *w, *w2;
    size_t n, n2, n_novel = 0;
    CHECK(sn_facts_world(&w, &n, &err) == SN_OK);
    CHECK(sn_facts_world(&w2, &n2, &err) == SN_OK);
    CHECK(n == (size_t)SN_FACT_TYPES * SN_FACTS_PER_TYPE && n >= 200);
    CHECK(n2 == n && memcmp(w, w2, n * sizeof *w) == 0); /* deterministic */
    for (size_t f = 0; f < n; f++) {
        n_novel += w[f].novel;
        /* subjects unique in the world; answers unique within a type except years */
        for (size_t g = 0; g < f; g++) {
            CHECK_MSG(strcmp(w[f].subject, w[g].subject) != 0, "subject %s twice",
                      w[f].subject);
            if (w[f].type == w[g].type && w[f].type != 3)
                CHECK_MSG(strcmp(w[f].answer, w[g].answer) != 0, "answer %s twice",
                          w[f].answer);
        }
        /* distractors: three different answers of other facts of the same type */
        for (int d = 0; d < 3; d++) {
            CHECK(strcmp(w[f].distractors[d], w[f].answer) != 0);
            bool same_type = false;
            for (size_t g = 0; g < n && !same_type; g++)
                same_type = w[g].type == w[f].type && !strcmp(w[g].answer, w[f].distractors[d]);
            CHECK(same_type);
        }
        CHECK(strcmp(w[f].distractors[0], w[f].distractors[1]) &&
              strcmp(w[f].distractors[1], w[f].distractors[2]) &&
              strcmp(w[f].distractors[0], w[f].distractors[2]));
        /* four phrasings, all different */
        char q[4][256];
        for (int p = 0; p < 4; p++)
            CHECK(sn_facts_question(&w[f], p, q[p], sizeof q[p]) == SN_OK);
        for (int p = 0; p < 4; p++)
            for (int r = 0; r < p; r++)
                CHECK(strcmp(q[p], q[r]) != 0);
        CHECK(w[f].heldout_phrasing >= 0 && w[f].heldout_phrasing < 4);
    }
    /* the split: both sides non-empty, near the documented share */
    CHECK(n_novel > n / 8 && n_novel < n * 3 / 8);
    sn_free(w);
    sn_free(w2);
}

static void test_parts(void)
{
    struct sn_err err;
    struct sn_fact *w;
    size_t n;
    CHECK(sn_facts_world(&w, &n, &err) == SN_OK);
    struct sn_qset *tr = load("{\"kind\":\"facts\",\"part\":\"train\",\"n\":600,\"seed\":7,"
                              "\"numeric_share\":0.3,\"name\":\"ft\"}");
    struct sn_qset *tr2 = load("{\"kind\":\"facts\",\"part\":\"train\",\"n\":600,\"seed\":7,"
                               "\"numeric_share\":0.3,\"name\":\"ft\"}");
    struct sn_qset *ev = load("{\"kind\":\"facts\",\"part\":\"eval\",\"n\":600,\"seed\":99,"
                              "\"numeric_share\":0.3,\"name\":\"fe\"}");
    if (!tr || !tr2 || !ev)
        return;
    CHECK(tr->n == 600 && tr2->n == 600 && ev->n == 600);
    size_t n_num = 0, n_known = 0, n_novel = 0, n_eval_num = 0;
    for (size_t i = 0; i < tr->n; i++) {
        const struct sn_question *q = &tr->items[i];
        CHECK(!strcmp(q->id, tr2->items[i].id) && !strcmp(q->question, tr2->items[i].question));
        if (q->task == SN_TASK_NUMERIC) {
            n_num++;
            CHECK(!strcmp(q->dataset, "ft-numeric"));
            continue;
        }
        CHECK(!strcmp(q->dataset, "ft-known"));
        long f = fact_of(w, n, q->question);
        CHECK_MSG(f >= 0, "no fact in '%s'", q->question);
        if (f < 0)
            continue;
        CHECK_MSG(!w[f].novel, "train item on novel fact: %s", q->question);
        char held[256];
        sn_facts_question(&w[f], w[f].heldout_phrasing, held, sizeof held);
        CHECK_MSG(strcmp(held, q->question) != 0, "train item in the held-out phrasing: %s",
                  q->question);
        CHECK(!strcmp(q->options[q->gold[0] - 'A'], w[f].answer));
        CHECK(q->gold_explanation && strstr(q->gold_explanation, w[f].answer));
    }
    CHECK(n_num > 120 && n_num < 240);
    for (size_t i = 0; i < ev->n; i++) {
        const struct sn_question *q = &ev->items[i];
        for (size_t j = 0; j < tr->n; j++) /* no evaluation question is a training question */
            CHECK_MSG(strcmp(q->question, tr->items[j].question) != 0, "shared: %s",
                      q->question);
        if (q->task == SN_TASK_NUMERIC) {
            n_eval_num++;
            CHECK(!strcmp(q->dataset, "fe-numeric"));
            continue;
        }
        long f = fact_of(w, n, q->question);
        CHECK(f >= 0);
        if (f < 0)
            continue;
        if (ends_with(q->dataset, "-novel")) {
            n_novel++;
            CHECK(w[f].novel);
        } else {
            n_known++;
            CHECK(!strcmp(q->dataset, "fe-known") && !w[f].novel);
            char held[256];
            sn_facts_question(&w[f], w[f].heldout_phrasing, held, sizeof held);
            CHECK(!strcmp(held, q->question));
        }
    }
    CHECK(n_known > 100 && n_novel > 100 && n_eval_num > 120);
    sn_qset_free(tr);
    sn_qset_free(tr2);
    sn_qset_free(ev);
    sn_free(w);
}

static void test_bad_spec(void)
{
    cJSON *spec = cJSON_Parse("{\"kind\":\"facts\",\"part\":\"test\"}");
    struct sn_qset *qs = NULL;
    struct sn_err err;
    sn_err_clear(&err);
    int rc = sn_qset_load(spec, "dataset", 0, &qs, &err);
    CHECK_MSG(rc == SN_E_ARG && !qs, "rc %d: %s", rc, err.msg);
    CHECK(strstr(err.msg, "dataset.part") != NULL);
    cJSON_Delete(spec);
}

int main(void)
{
    test_world();
    test_parts();
    test_bad_spec();
    return sn_test_done();
}
