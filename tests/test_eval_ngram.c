/* tests/test_eval_ngram.c: the n-gram baseline's terms and choice of C (eval/detect_ngram.c),
** its role-labelled training data read from a real build (eval/detect_ngram_data.c), the
** question keys `sentinel build` records (tuples/build_questions.c, tokenizer/fold.c) and
** `sentinel eval`'s leakage check by question text (docs/eval.md "Leakage", "Baselines"). The
** comparison with scikit-learn is tests/test_eval_ngram_sklearn.c. */
#include "test_eval_fixture.h"

#include "tuples/tuples.h"
#include "shard/shard.h"
#include "eval/detect.h"
#include "tokenizer/tokenizer.h"

static void test_fold(void)
{
    struct sn_buf b = {0};
    struct sn_err err = {0};
    /* NFD e + combining acute, capitals, tabs, newlines and a no-break space */
    const char *in = "  Cafe\xcc\x81\t AU\n\xc2\xa0lait  ";
    CHECK(sn_text_fold(in, strlen(in), &b, &err) == SN_OK);
    CHECK_STR(b.data, "caf\xc3\xa9 au lait");
    sn_buf_reset(&b);
    CHECK(sn_text_fold("", 0, &b, &err) == SN_OK && b.data && b.len == 0);
    sn_buf_reset(&b);
    CHECK(sn_text_fold("\xff", 1, &b, &err) == SN_E_FORMAT);
    sn_buf_free(&b);
}

static void test_terms(void)
{
    struct sn_buf b = {0};
    struct sn_err err = {0};
    /* words lower-cased, every punctuation character a token: "(B)" survives as ( b ) */
    CHECK(sn_ngram_terms("The answer is (B)!", &b, &err) == SN_OK);
    CHECK_STR(b.data, "the\nanswer\nthe answer\nis\nanswer is\n(\nis (\nb\n( b\n)\nb )\n!\n) !\n");
    sn_buf_reset(&b);
    /* UTF-8 words stay whole (bytes >= 0x80 are word bytes, not lower-cased); digits too */
    CHECK(sn_ngram_terms("Caf\xc3\xa9 42,x", &b, &err) == SN_OK);
    CHECK_STR(b.data, "caf\xc3\xa9\n42\ncaf\xc3\xa9 42\n,\n42 ,\nx\n, x\n");
    sn_buf_reset(&b);
    CHECK(sn_ngram_terms("  \t\n", &b, &err) == SN_OK && b.len == 0);
    sn_buf_free(&b);
}

/* C chosen on held-out groups: a noisy set where neither extreme of the grid is best would
** be fragile; what must hold is the contract: a grid value, one loss per value, the final fit
** on every text, and the fallback when the held-out side lacks a class. */
static void test_select(void)
{
    enum { N = 240 };
    static char buf[N][96];
    const char *texts[N], *groups[N];
    static char gname[N][16];
    bool label[N];
    struct sn_rng rng;
    sn_rng_seed(&rng, 5);
    static const char *const hw[] = {"computed", "evidence", "check", "step"};
    static const char *const aw[] = {"trust", "everyone", "obviously", "clearly"};
    static const char *const sw[] = {"the", "answer", "is", "we", "so"};
    for (size_t i = 0; i < N; i++) {
        label[i] = i % 3 != 0;
        size_t n = 0;
        for (int w = 0; w < 6; w++) {
            double u = sn_rng_uniform(&rng);
            bool own = sn_rng_uniform(&rng) < 0.75;
            const char *word = u < 0.5 ? sw[(size_t)(sn_rng_uniform(&rng) * 5) % 5]
                               : (label[i] == own) ? hw[(size_t)(sn_rng_uniform(&rng) * 4) % 4]
                                                   : aw[(size_t)(sn_rng_uniform(&rng) * 4) % 4];
            n += (size_t)snprintf(buf[i] + n, sizeof buf[i] - n, "%s ", word);
        }
        texts[i] = buf[i];
        snprintf(gname[i], sizeof gname[i], "q%zu", i / 4);
        groups[i] = gname[i];
    }
    struct sn_ngram_params p = sn_ngram_default_params();
    struct sn_ngram *m = NULL;
    struct sn_err err = {0};
    CHECK_MSG(sn_ngram_select(&p, texts, label, groups, N, &m, &err) == SN_OK, "%s", err.msg);
    if (m) {
        const struct sn_ngram_info *in = sn_ngram_get_info(m);
        CHECK(in->selected && in->n_grid == 5 && !in->no_selection[0]);
        CHECK(in->n_texts == N && in->n_trusted == 160 && in->converged);
        CHECK(in->n_validation > 0 && in->n_validation < N && in->n_validation_groups > 0);
        bool in_grid = false;
        double best = INFINITY;
        for (size_t k = 0; k < in->n_grid; k++) {
            CHECK(isfinite(in->validation_loss[k]) && in->validation_loss[k] > 0);
            best = fmin(best, in->validation_loss[k]);
            if (in->c_grid[k] == in->c)
                in_grid = in->validation_loss[k] == best;
        }
        CHECK_MSG(in_grid, "C = %g is not the grid value of the lowest loss", in->c);
        /* the same data, the same choice and model */
        struct sn_ngram *m2 = NULL;
        CHECK(sn_ngram_select(&p, texts, label, groups, N, &m2, &err) == SN_OK);
        if (m2) {
            CHECK(sn_ngram_get_info(m2)->c == in->c);
            double a = sn_ngram_logit(m, texts[3]), b = sn_ngram_logit(m2, texts[3]);
            CHECK(memcmp(&a, &b, sizeof a) == 0);
        }
        sn_ngram_free(m2);
    }
    sn_ngram_free(m);
    /* one group only: no held-out side with both classes; C = p.c, said why */
    p.c = 3.0;
    CHECK(sn_ngram_select(&p, texts, label, NULL, N, &m, &err) == SN_OK);
    if (m) {
        const struct sn_ngram_info *in = sn_ngram_get_info(m);
        CHECK(!in->selected && in->c == 3.0 && in->no_selection[0]);
    }
    sn_ngram_free(m);
    p.c = -1;
    CHECK(sn_ngram_select(&p, texts, label, groups, N, &m, &err) == SN_E_ARG && !m);
}

/* ---- a real build ---------------------------------------------------------------------- */

/* Debates "<prefix>-<i>" of dataset ds on items item<i>, questions from qfmt (i once or twice
** in it), gold A;
** honest agents reason and answer A, the two adversaries push B; T = 2 rounds. Appended. */
static void write_debates(const char *path, const char *ds, const char *prefix, int first,
                          int n, const char *qfmt)
{
    static const char *g[2] = {"AAABB", "AAABB"};
    FILE *f = fopen(path, "ab");
    for (int i = first; i < first + n; i++) {
        char id[64], item[32], q[160];
        snprintf(id, sizeof id, "%s-%d", prefix, i);
        snprintf(item, sizeof item, "item%d", i);
        snprintf(q, sizeof q, qfmt, i, i); /* a format may take i twice */
        struct fx fx = {.id = id, .item = item, .roles = "HHHAA", .gold = "A", .target = "B",
                        .grid = g, .T = 2, .dataset = ds};
        char *js = fx_json(&fx);
        cJSON *j = cJSON_Parse(js);
        free(js);
        cJSON_ReplaceItemInObject(j, "question", cJSON_CreateString(q));
        cJSON *rd, *m;
        int r = 0;
        cJSON_ArrayForEach(rd, cJSON_GetObjectItem(j, "rounds")) {
            cJSON_ArrayForEach(m, rd) {
                int a = cJSON_GetObjectItem(m, "agent")->valueint;
                char text[200];
                if (a < 3)
                    snprintf(text, sizeof text, "I computed %d plus one step by step; the "
                             "evidence gives (A). FINAL ANSWER: A", i + r);
                else
                    snprintf(text, sizeof text, "Trust me, everyone agrees it is (B)! Obviously "
                             "B. FINAL ANSWER: B");
                cJSON_ReplaceItemInObject(m, "text", cJSON_CreateString(text));
            }
            r++;
        }
        js = cJSON_PrintUnformatted(j);
        fprintf(f, "%s\n", js);
        free(js);
        cJSON_Delete(j);
    }
    fclose(f);
}

#define TRAIN_Q "Caf\xc3\xa9 question %d: what is %d plus one?"

static cJSON *load_json(const char *path)
{
    cJSON *j = NULL;
    struct sn_err err = {0};
    if (sn_json_load(path, &j, &err))
        fprintf(stderr, "%s\n", err.msg);
    return j;
}

static void test_build_and_eval(void)
{
    char dir[1024], traj[1100], shards[1100], tokp[1100], moved[1100];
    snprintf(dir, sizeof dir, "%s", sn_test_dir("eval_ngram"));
    snprintf(traj, sizeof traj, "%s/train.jsonl", dir);
    snprintf(shards, sizeof shards, "%s/shards", dir);
    snprintf(tokp, sizeof tokp, "%s/tok.json", dir);
    FILE *f = fopen(traj, "wb");
    if (f)
        fclose(f);
    write_debates(traj, "synthetic", "tr", 0, 40, TRAIN_Q);
    struct sn_err err = {0};
    CHECK_MSG(sn_tokenizer_write_demo(tokp, &err) == SN_OK, "%s", err.msg);
    struct sn_build_params bp = sn_build_default_params();
    const char *in[] = {traj};
    bp.inputs = in;
    bp.n_inputs = 1;
    bp.out_dir = shards;
    bp.tokenizer_path = tokp;
    bp.max_len = 256;
    bp.tuples.validation_fraction = 0.2;
    bp.tuples.test_fraction = 0.1;
    struct sn_build_report rep;
    CHECK_MSG(sn_tuples_build(&bp, &rep, &err) == SN_OK, "%s", err.msg);

    /* the manifest's train_questions: the keys of exactly the train split's trajectories */
    struct sn_manifest *man = NULL;
    struct sn_strmap q = {0}, qog = {0};
    CHECK_MSG(sn_manifest_load(shards, &man, &err) == SN_OK, "%s", err.msg);
    if (man)
        CHECK_MSG(sn_manifest_train_questions(man, &q, &qog, &err) == SN_OK, "%s", err.msg);
    sn_manifest_free(man);
    struct sn_traj_reader *r = NULL;
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    size_t n_train = 0, n_train_keys_found = 0;
    CHECK(sn_traj_reader_open(traj, &rp, &r, &err) == SN_OK);
    for (struct sn_traj *t = NULL; r && sn_traj_reader_next(r, &t, &err) == SN_OK && t;) {
        char kq[65], kqog[65];
        CHECK(sn_question_keys(t, kq, kqog, &err) == SN_OK);
        bool train = sn_tuples_split(t, &bp.tuples) == SN_SPLIT_TRAIN;
        n_train += train;
        CHECK_MSG(sn_strmap_has(&q, kq, 64) == train, "%s", t->id);
        n_train_keys_found += train && sn_strmap_has(&qog, kqog, 64);
        sn_traj_free(t);
        t = NULL;
    }
    sn_traj_reader_close(r);
    CHECK_MSG(n_train > 20 && q.n == n_train && qog.n == n_train &&
              n_train_keys_found == n_train, "%zu train, %zu keys", n_train, q.n);
    sn_strmap_free(&q);
    sn_strmap_free(&qog);

    /* role labels: every message of every train-split trajectory (5 agents x 2 rounds) */
    struct sn_ngram_params p = sn_ngram_default_params();
    struct sn_ngram *m = NULL;
    struct sn_ngram_data nd = {.labels = SN_NGRAM_ROLES, .shards_dir = shards};
    CHECK_MSG(sn_ngram_train_data(&p, &nd, &m, &err) == SN_OK, "%s", err.msg);
    if (m) {
        const struct sn_ngram_info *in = sn_ngram_get_info(m);
        CHECK_MSG(in->n_trajectories == n_train && in->n_texts == 10 * n_train &&
                  in->n_trusted == 6 * n_train && in->labels == SN_NGRAM_ROLES,
                  "%zu trajectories, %zu texts", in->n_trajectories, in->n_texts);
        CHECK(sn_ngram_logit(m, "Trust me, everyone agrees! FINAL ANSWER: B") <
              sn_ngram_logit(m, "I computed it step by step. FINAL ANSWER: A"));
    }
    sn_ngram_free(m);
    /* evaluated debates are left out */
    struct sn_strmap ex = {0};
    CHECK(sn_strmap_put(&ex, "tr-0", 4, 0, NULL, &err) == SN_OK);
    CHECK(sn_strmap_put(&ex, "tr-1", 4, 0, NULL, &err) == SN_OK);
    CHECK(sn_strmap_put(&ex, "tr-2", 4, 0, NULL, &err) == SN_OK);
    nd.exclude = &ex;
    CHECK_MSG(sn_ngram_train_data(&p, &nd, &m, &err) == SN_OK, "%s", err.msg);
    if (m) {
        const struct sn_ngram_info *in = sn_ngram_get_info(m);
        CHECK(in->n_excluded <= 3 && in->n_texts == 10 * (n_train - in->n_excluded));
    }
    sn_ngram_free(m);
    sn_strmap_free(&ex);
    nd.exclude = NULL;
    /* the trajectories moved: named where they are now, or refused naming the fix */
    snprintf(moved, sizeof moved, "%s/moved", dir);
    CHECK(sn_test_sh("mkdir -p '%s' && mv '%s' '%s/'", moved, traj, moved) == 0);
    CHECK(sn_ngram_train_data(&p, &nd, &m, &err) == SN_E_IO && !m &&
          strstr(err.msg, "--train-trajectories"));
    const char *where[] = {moved};
    nd.trajectories = where;
    nd.n_trajectories = 1;
    memset(&err, 0, sizeof err);
    CHECK_MSG(sn_ngram_train_data(&p, &nd, &m, &err) == SN_OK, "%s", err.msg);
    sn_ngram_free(m);
    /* other trajectories than the build's: refused, naming one it lacks */
    char other[1100];
    snprintf(other, sizeof other, "%s/other.jsonl", dir);
    write_debates(other, "synthetic", "zz", 0, 5, "Other question %d?");
    where[0] = other;
    memset(&err, 0, sizeof err);
    CHECK(sn_ngram_train_data(&p, &nd, &m, &err) == SN_E_ARG && !m &&
          strstr(err.msg, "not among"));
    /* tuple labels read no trajectory */
    nd.labels = SN_NGRAM_TUPLES;
    CHECK(sn_ngram_train_data(&p, &nd, &m, &err) == SN_E_ARG);
    nd.n_trajectories = 0;
    CHECK_MSG(sn_ngram_train_data(&p, &nd, &m, &err) == SN_OK, "%s", err.msg);
    if (m)
        CHECK(sn_ngram_get_info(m)->labels == SN_NGRAM_TUPLES);
    sn_ngram_free(m);

    /* `sentinel eval`: truly new questions pass quietly; a dataset renamed but holding training
    ** questions (written in NFD, other case and spacing) is refused whatever its name, unless
    ** overlap is allowed, and then the groups question=seen and question=unseen appear */
    const char *bin = getenv("SENTINEL_BIN");
    if (!bin)
        return;
    char fresh[1100], renamed[1100];
    snprintf(fresh, sizeof fresh, "%s/fresh.jsonl", dir);
    snprintf(renamed, sizeof renamed, "%s/renamed.jsonl", dir);
    write_debates(fresh, "fresh-set", "fr", 100, 6, "A new question, number %d?");
    write_debates(renamed, "renamed-set", "rn", 0, 40,
                  "  CAFE\xcc\x81   Question %d:\tWhat IS %d plus one?\n");
    CHECK(sn_test_sh("cd '%s' && '%s' eval -i fresh.jsonl --train-shards shards "
                     "--train-trajectories moved --bootstrap 0 --json fresh.json > out1.txt "
                     "2> err1.txt", dir, bin) == 0);
    cJSON *j = NULL;
    {
        char path[1200];
        snprintf(path, sizeof path, "%s/fresh.json", dir);
        j = load_json(path);
    }
    CHECK(j != NULL);
    if (j) {
        CHECK(cJSON_GetObjectItem(j, "debates_question_seen")->valuedouble == 0);
        CHECK(cJSON_GetObjectItem(j, "debates_on_train_questions")->valuedouble == 0);
        const cJSON *ng = cJSON_GetObjectItem(j, "ngram");
        CHECK(ng && !strcmp(cJSON_GetObjectItem(ng, "labels")->valuestring, "roles"));
        CHECK(ng && cJSON_GetObjectItem(ng, "trajectories")->valuedouble == (double)n_train);
        const cJSON *rk, *rks = cJSON_GetObjectItem(j, "rankers");
        bool found = false;
        cJSON_ArrayForEach(rk, rks) {
            if (strcmp(cJSON_GetObjectItem(rk, "ranker")->valuestring, "ngram"))
                continue;
            found = true;
            const cJSON *gr = cJSON_GetObjectItem(rk, "groups");
            CHECK(!cJSON_GetObjectItem(gr, "question=seen"));
            double auroc = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
                cJSON_GetObjectItem(gr, "all"), "pooled"), "auroc"), "p")->valuedouble;
            CHECK_MSG(auroc > 0.99, "ngram AUROC %.3f on the fresh debates", auroc);
        }
        CHECK(found);
        cJSON_Delete(j);
    }
    CHECK(sn_test_sh("grep -q 'ngram baseline: roles labels' '%s/out1.txt'", dir) == 0);
    /* renamed: refused, with the count and one example question */
    CHECK(sn_test_sh("cd '%s' && '%s' eval -i renamed.jsonl -i fresh.jsonl --train-shards "
                     "shards --train-trajectories moved --bootstrap 0 > out2.txt 2> err2.txt",
                     dir, bin) == 1);
    char want[160];
    snprintf(want, sizeof want, "%zu of %zu evaluated debates are on questions seen in "
             "training", n_train, (size_t)46);
    CHECK_MSG(sn_test_sh("grep -qF '%s' '%s/err2.txt'", want, dir) == 0, "want '%s'", want);
    CHECK(sn_test_sh("grep -q 'e.g. debate rn-[0-9]*: \"  CAFE' '%s/err2.txt'", dir) == 0);
    CHECK(sn_test_sh("grep -q 'by dataset and item id' '%s/err2.txt'", dir) == 0);
    /* allowed: every debate in one of the groups, the seen ones counted */
    CHECK(sn_test_sh("cd '%s' && '%s' eval -i renamed.jsonl -i fresh.jsonl --train-shards "
                     "shards --train-trajectories moved --allow-overlap --bootstrap 0 "
                     "--json both.json > out3.txt 2> err3.txt", dir, bin) == 0);
    CHECK(sn_test_sh("grep -q 'WARNING: %zu of 46 debates are on questions seen' "
                     "'%s/err3.txt'", n_train, dir) == 0);
    {
        char path[1200];
        snprintf(path, sizeof path, "%s/both.json", dir);
        j = load_json(path);
    }
    if (j) {
        CHECK(cJSON_GetObjectItem(j, "debates_question_seen")->valuedouble == (double)n_train);
        CHECK(cJSON_GetObjectItem(j, "debates_on_train_questions")->valuedouble ==
              (double)n_train);
        CHECK(cJSON_GetObjectItem(j, "debates_on_train_questions_options_gold")->valuedouble ==
              (double)n_train);
        CHECK(cJSON_GetObjectItem(j, "debates_on_train_items")->valuedouble == 0);
        /* the evaluated debates are never the n-gram's training: none of them is */
        CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "ngram"),
                                  "excluded_evaluated")->valuedouble == 0);
        const cJSON *gr = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j,
                                                                 "rankers"), 0), "groups");
        const cJSON *seen = cJSON_GetObjectItem(gr, "question=seen");
        const cJSON *unseen = cJSON_GetObjectItem(gr, "question=unseen");
        CHECK(seen && unseen);
        if (seen && unseen) {
            CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(seen, "last_round"),
                                      "debates")->valuedouble == (double)n_train);
            CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(unseen, "last_round"),
                                      "debates")->valuedouble == 46 - (double)n_train);
        }
        CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "oracle"), "groups") &&
              cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "oracle"),
                                                      "groups"), "question=seen"));
        cJSON_Delete(j);
    }
    /* the old check stays part of it: the training debates themselves, by (dataset, item id) */
    CHECK(sn_test_sh("cd '%s' && '%s' eval -i moved/train.jsonl --train-shards shards "
                     "--train-trajectories moved --baselines random --bootstrap 0 > out4.txt "
                     "2> err4.txt", dir, bin) == 1);
    CHECK(sn_test_sh("grep -q '%zu by dataset and item id' '%s/err4.txt'", n_train, dir) == 0);
    /* --ngram-train tuples; unknown data and orphan options are usage errors */
    CHECK(sn_test_sh("cd '%s' && '%s' eval -i fresh.jsonl --train-shards shards --ngram-train "
                     "tuples --bootstrap 0 > out5.txt 2> err5.txt", dir, bin) == 0);
    CHECK(sn_test_sh("grep -q 'ngram baseline: tuples labels' '%s/out5.txt'", dir) == 0);
    CHECK(sn_test_sh("cd '%s' && '%s' eval -i fresh.jsonl --train-shards shards --ngram-train "
                     "words > /dev/null 2>&1", dir, bin) == 2);
    CHECK(sn_test_sh("cd '%s' && '%s' eval -i fresh.jsonl --ngram-train tuples > /dev/null "
                     "2>&1", dir, bin) == 2);
}

int main(void)
{
    test_fold();
    test_terms();
    test_select();
    test_build_and_eval();
    return sn_test_done();
}
