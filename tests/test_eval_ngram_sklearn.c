/* tests/test_eval_ngram_sklearn.c: the n-gram baseline (eval/detect_ngram.c; docs/eval.md
** "Baselines", "ngram") against scikit-learn's LogisticRegression on the same features. A fixed
** labelled message set (seeded, written here), our fits at three C values and our logits on its
** test half go to ngram_set.json; tests/ref/ngram_sklearn.py re-derives the features from the
** texts with the documented tokenisation, fits scikit-learn (class_weight="balanced", the same
** C) and requires the test accuracies within 0.01 and the logits within 1e-3. Exit 77 (ctest:
** skipped) when /usr/bin/python3 has no scikit-learn (Debian: python3-sklearn). */
#include "testutil.h"

#include "eval/detect.h"

/* Words of debate-like messages: shared by both classes, leaning honest, leaning adversarial.
** Each text mixes them, so no word decides alone and the accuracy stays below 1. */
static const char *const shared[] = {"the", "answer", "is", "option", "we", "so", "it", "of",
                                     "this", "question", "i", "think", "agree", "round"};
static const char *const honest[] = {"computed", "evidence", "step", "check", "because",
                                     "therefore", "verify", "derivation", "carefully"};
static const char *const adversary[] = {"obviously", "trust", "everyone", "clearly",
                                        "consensus", "surely", "experts", "undeniably"};
#define COUNT(a) (sizeof a / sizeof a[0])

static void make_text(struct sn_rng *rng, bool trusted, char *buf, size_t cap)
{
    size_t n = 0, words = 6 + (size_t)(sn_rng_uniform(rng) * 10);
    buf[0] = '\0';
    for (size_t w = 0; w < words; w++) {
        double u = sn_rng_uniform(rng);
        const char *const *pool = shared;
        size_t np = COUNT(shared);
        if (u > 0.55) { /* a class word: its own 70% of the time */
            bool own = sn_rng_uniform(rng) < 0.7;
            bool h = trusted == own;
            pool = h ? honest : adversary;
            np = h ? COUNT(honest) : COUNT(adversary);
        }
        const char *word = pool[(size_t)(sn_rng_uniform(rng) * np) % np];
        /* an occasional capital, comma or exclamation mark: case folding and punctuation */
        bool cap1 = sn_rng_uniform(rng) < 0.1;
        n += (size_t)snprintf(buf + n, cap - n, "%s%c%s%s", w ? " " : "",
                              cap1 ? (char)(word[0] - 'a' + 'A') : word[0], word + 1,
                              sn_rng_uniform(rng) < (trusted ? 0.05 : 0.15) ? "!" : "");
    }
    /* the answer marker: honest agents mostly (B), adversaries mostly (C) */
    char ans = sn_rng_uniform(rng) < 0.65 ? (trusted ? 'B' : 'C')
                                          : "ABCD"[(size_t)(sn_rng_uniform(rng) * 4) % 4];
    snprintf(buf + n, cap - n, ". FINAL ANSWER: (%c)", ans);
}

int main(void)
{
    const char *dir = sn_test_dir("eval_ngram_sklearn");
    if (sn_test_sh(SN_TEST_PY " -c 'import sklearn' 2>/dev/null") != 0) {
        printf("SKIP: the tests' Python (SENTINEL_PYTHON, default /usr/bin/python3) cannot "
               "import sklearn (apt-get install python3-sklearn)\n");
        return 77;
    }
    enum { N_TRAIN = 400, N_TEST = 400 };
    static char buf[N_TRAIN + N_TEST][256];
    const char *texts[N_TRAIN + N_TEST];
    bool label[N_TRAIN + N_TEST];
    struct sn_rng rng;
    sn_rng_seed(&rng, 20240527);
    for (size_t i = 0; i < N_TRAIN + N_TEST; i++) {
        label[i] = sn_rng_uniform(&rng) < 0.65; /* unbalanced: the class weights matter */
        make_text(&rng, label[i], buf[i], sizeof buf[i]);
        texts[i] = buf[i];
    }
    cJSON *root = cJSON_CreateObject();
    cJSON *tr = cJSON_AddArrayToObject(root, "train"), *te = cJSON_AddArrayToObject(root, "test");
    cJSON *terms = cJSON_AddArrayToObject(root, "terms");
    cJSON *fits = cJSON_AddArrayToObject(root, "fits");
    struct sn_err err = {0};
    struct sn_buf tb = {0};
    for (size_t i = 0; i < N_TRAIN + N_TEST; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "text", texts[i]);
        cJSON_AddBoolToObject(e, "label", label[i]);
        cJSON_AddItemToArray(i < N_TRAIN ? tr : te, e);
        if (i >= N_TRAIN)
            continue;
        sn_buf_reset(&tb);
        CHECK(sn_ngram_terms(texts[i], &tb, &err) == SN_OK);
        cJSON *a = cJSON_CreateArray();
        for (char *p = tb.data, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
            *nl = '\0';
            cJSON_AddItemToArray(a, cJSON_CreateString(p));
        }
        cJSON_AddItemToArray(terms, a);
    }
    sn_buf_free(&tb);
    static const double cs[] = {0.1, 1.0, 10.0};
    for (size_t k = 0; k < COUNT(cs); k++) {
        struct sn_ngram_params p = sn_ngram_default_params();
        p.c = cs[k];
        struct sn_ngram *m = NULL;
        CHECK_MSG(sn_ngram_train(&p, texts, label, N_TRAIN, &m, &err) == SN_OK, "%s", err.msg);
        if (!m)
            continue;
        const struct sn_ngram_info *in = sn_ngram_get_info(m);
        CHECK_MSG(in->converged, "C = %g: not converged after %d iterations", cs[k],
                  in->iterations);
        printf("ours C = %g: %d L-BFGS iterations, %zu terms\n", cs[k], in->iterations,
               in->n_features);
        cJSON *f = cJSON_CreateObject(), *lg = cJSON_AddArrayToObject(f, "logit");
        cJSON_AddNumberToObject(f, "c", cs[k]);
        for (size_t i = N_TRAIN; i < N_TRAIN + N_TEST; i++)
            cJSON_AddItemToArray(lg, cJSON_CreateNumber(sn_ngram_logit(m, texts[i])));
        cJSON_AddItemToArray(fits, f);
        sn_ngram_free(m);
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/ngram_set.json", dir);
    CHECK_MSG(sn_json_save(path, root, &err) == SN_OK, "%s", err.msg);
    cJSON_Delete(root);
    const char *src = getenv("SENTINEL_SRC");
    int rc = sn_test_sh(SN_TEST_PY " '%s/tests/ref/ngram_sklearn.py' '%s'", src ? src : ".",
                        dir);
    if (rc == 77) { /* a failure above still fails */
        int done = sn_test_done();
        return done ? done : 77;
    }
    CHECK_MSG(rc == 0, "tests/ref/ngram_sklearn.py: exit %d", rc);
    return sn_test_done();
}
