/* tests/test_data_split.c: honest held-out splits (tuples/tuples.h sn_tuples_split, `sentinel
** build`, `sentinel inspect`; docs/formats.md "Tuple selection"):
**   - the split of a value is the documented hash (checked against sha256sum);
**   - every debate and replicate of an item lands on one side; the default fractions are
**     80/10/10 of items; the split is deterministic for a seed and another seed reshuffles;
**   - split_by dataset (named lists, and fractions) holds out whole datasets; model, scenario
**     and experiment likewise; a value listed twice is refused;
**   - labels.split = "ood" goes to the ood split only, whatever the other settings;
**   - end to end: no item on two sides in the shards, ood tuples only in ood shards; inspect
**     shows the items per split, warns on split_by experiment and fails loudly when an item
**     is shared; a resume with a changed split setting is refused naming the key. */
#include "tuples/tuples.h"
#include "tests/testutil.h"

#include <inttypes.h>
#include <stdlib.h>

static char dir[1024], tokp[1200], bin[1024];

struct tj {
    const char *id, *experiment, *scenario, *dataset, *item, *honest_model;
    bool ood;
};

/* One debate: 3 honest agents answer A (gold), 2 adversaries B, 2 rounds; texts carry the id
** so no two debates give the same tuple. */
static char *traj_json(const struct tj *x)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "schema", "sentinel.trajectory/1");
    cJSON_AddStringToObject(t, "id", x->id);
    cJSON_AddStringToObject(t, "experiment", x->experiment);
    cJSON_AddStringToObject(t, "scenario", x->scenario);
    cJSON_AddStringToObject(t, "dataset", x->dataset);
    cJSON_AddStringToObject(t, "item_id", x->item);
    cJSON_AddNullToObject(t, "subject");
    cJSON_AddStringToObject(t, "task", "mc");
    char q[160];
    snprintf(q, sizeof q, "Which option is right for %s/%s?", x->dataset, x->item);
    cJSON_AddStringToObject(t, "question", q);
    const char *opts[] = {"alpha", "beta", "gamma", "delta"};
    cJSON_AddItemToObject(t, "options", cJSON_CreateStringArray(opts, 4));
    cJSON_AddStringToObject(t, "gold", "A");
    cJSON_AddNullToObject(t, "gold_explanation");
    cJSON_AddStringToObject(t, "adversarial_target", "B");
    cJSON_AddStringToObject(t, "strategy", "simultaneous");
    cJSON *topo = cJSON_AddObjectToObject(t, "topology");
    cJSON_AddStringToObject(topo, "name", "complete");
    cJSON_AddNumberToObject(topo, "n_agents", 5);
    cJSON_AddArrayToObject(topo, "edges");
    cJSON *ag = cJSON_AddArrayToObject(t, "agents");
    for (int a = 0; a < 5; a++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", a);
        cJSON_AddStringToObject(o, "role", a < 3 ? "honest" : "adversary");
        cJSON_AddStringToObject(o, "model", a < 3 ? x->honest_model : "adv-model");
        cJSON_AddStringToObject(o, "backend", "sim");
        cJSON_AddNullToObject(o, "persona");
        cJSON_AddItemToArray(ag, o);
    }
    cJSON *rounds = cJSON_AddArrayToObject(t, "rounds");
    for (int r = 0; r < 2; r++) {
        cJSON *round = cJSON_CreateArray();
        for (int a = 0; a < 5; a++) {
            const char *ans = a < 3 ? "A" : "B";
            char text[320];
            snprintf(text, sizeof text, "Agent %d in round %d of %s thinks it through.\n"
                     "FINAL ANSWER: %s", a, r, x->id, ans);
            sn_test_traj_add_message(round, a, text, ans);
        }
        cJSON_AddItemToArray(rounds, round);
    }
    sn_test_traj_add_final(t, "A", 1, 1);
    if (x->ood) {
        cJSON *lb = cJSON_AddObjectToObject(t, "labels");
        cJSON_AddStringToObject(lb, "split", "ood");
    }
    char *s = cJSON_PrintUnformatted(t);
    cJSON_Delete(t);
    return s;
}

static struct sn_traj *parse(const struct tj *x)
{
    struct sn_err err = {0};
    struct sn_traj *t = NULL;
    char *s = traj_json(x);
    if (!s || sn_traj_parse(s, strlen(s), "test", &t, &err))
        fprintf(stderr, "trajectory: %s\n", err.msg);
    cJSON_free(s);
    return t;
}

static enum sn_split split_of(const struct tj *x, const struct sn_tuples_params *p)
{
    struct sn_traj *t = parse(x);
    enum sn_split s = t ? sn_tuples_split(t, p) : SN_SPLIT_COUNT;
    CHECK(t != NULL);
    sn_traj_free(t);
    return s;
}

/* u of the documented preimage, by sha256sum */
static double u_of(uint64_t seed, const char *by, const char *value)
{
    char cmd[512], hex[80] = {0};
    snprintf(cmd, sizeof cmd, "printf 'sentinel-split/2\\n%" PRIu64 "\\n%s\\n%s' | sha256sum",
             seed, by, value);
    FILE *f = popen(cmd, "r");
    CHECK(f && fgets(hex, sizeof hex, f));
    if (f)
        pclose(f);
    hex[16] = '\0';
    return (double)(strtoull(hex, NULL, 16) >> 11) / 9007199254740992.0;
}

static void test_formula(void)
{
    struct sn_tuples_params p = sn_tuples_default_params();
    p.split_seed = 7;
    p.validation_fraction = 0.3;
    p.test_fraction = 0.3;
    const char *items[] = {"q1", "q2", "item-77", "x", "2024/17"};
    for (size_t k = 0; k < 5; k++) {
        struct tj x = {"t-1", "e", "s", "medmcqa", items[k], "m", false};
        char v[64];
        snprintf(v, sizeof v, "medmcqa/%s", items[k]);
        double u = u_of(7, "item", v);
        enum sn_split want = u < 0.4 ? SN_SPLIT_TRAIN : u < 0.7 ? SN_SPLIT_VALIDATION
                                                                : SN_SPLIT_TEST;
        CHECK_MSG(split_of(&x, &p) == want, "%s: u = %f", v, u);
    }
    p.split_by = SN_SPLIT_BY_DATASET;
    const char *ds[] = {"medmcqa", "truthfulqa", "mmlu", "gsm8k"};
    for (size_t k = 0; k < 4; k++) {
        struct tj x = {"t-1", "e", "s", ds[k], "q1", "m", false};
        double u = u_of(7, "dataset", ds[k]);
        enum sn_split want = u < 0.4 ? SN_SPLIT_TRAIN : u < 0.7 ? SN_SPLIT_VALIDATION
                                                                : SN_SPLIT_TEST;
        CHECK_MSG(split_of(&x, &p) == want, "%s: u = %f", ds[k], u);
    }
}

static void test_items(void)
{
    struct sn_tuples_params p = sn_tuples_default_params();
    CHECK(p.split_by == SN_SPLIT_BY_ITEM && p.validation_fraction == 0.1 &&
          p.test_fraction == 0.1);
    size_t n[SN_SPLIT_COUNT] = {0}, spread = 0, changed = 0, same_seed = 0;
    const char *exps[] = {"collab", "aitm", "netsafe"};
    for (int i = 0; i < 2000; i++) {
        char item[32], id[64];
        snprintf(item, sizeof item, "item-%d", i);
        enum sn_split first = SN_SPLIT_COUNT;
        for (int r = 0; r < 3; r++) { /* debates of the item under three experiments */
            snprintf(id, sizeof id, "%s-%d-r%d", exps[r], i, r);
            struct tj x = {id, exps[r], exps[r], "ds", item, r ? "m2" : "m1", false};
            struct sn_traj *t = parse(&x);
            if (!t)
                continue;
            enum sn_split s = sn_tuples_split(t, &p);
            same_seed += s == sn_tuples_split(t, &p);
            if (r == 0) {
                first = s;
                n[s]++;
                p.split_seed = 12345;
                changed += sn_tuples_split(t, &p) != s;
                p.split_seed = 0;
            } else {
                spread += s != first;
            }
            sn_traj_free(t);
        }
    }
    CHECK_MSG(spread == 0, "%zu debates on another side than their item", spread);
    CHECK(same_seed == 6000);
    /* 10% / 10% of 2000 items = 200 each; binomial sd ~ 13.4 */
    CHECK_MSG(n[SN_SPLIT_VALIDATION] > 140 && n[SN_SPLIT_VALIDATION] < 260, "%zu",
              n[SN_SPLIT_VALIDATION]);
    CHECK_MSG(n[SN_SPLIT_TEST] > 140 && n[SN_SPLIT_TEST] < 260, "%zu", n[SN_SPLIT_TEST]);
    CHECK(n[SN_SPLIT_TRAIN] > 1500 && n[SN_SPLIT_OOD] == 0);
    CHECK_MSG(changed > 200, "%zu", changed); /* another seed reshuffles (expected ~640) */
}

static void test_split_by(void)
{
    struct sn_tuples_params p = sn_tuples_default_params();
    struct sn_tuples *b = NULL;
    struct sn_err err = {0};
    const char *ds[] = {"medmcqa", "truthfulqa", "mmlu", "gsm8k"};
    const char *test[] = {"medmcqa", "truthfulqa"}, *val[] = {"gsm8k"};
    p.split_by = SN_SPLIT_BY_DATASET;
    p.test_values = test;
    p.n_test_values = 2;
    p.validation_values = val;
    p.n_validation_values = 1;
    CHECK(sn_tuples_create(&p, &b, &err) == SN_OK);
    sn_tuples_free(b);
    size_t bad = 0;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 50; i++) {
            char item[32];
            snprintf(item, sizeof item, "q%d", i);
            struct tj x = {"t", "e", "s", ds[k], item, "m", false};
            enum sn_split want = k < 2 ? SN_SPLIT_TEST : k == 3 ? SN_SPLIT_VALIDATION
                                                               : SN_SPLIT_TRAIN;
            bad += split_of(&x, &p) != want;
        }
    CHECK_MSG(bad == 0, "%zu", bad);
    /* a value on both lists is refused, naming it */
    const char *val2[] = {"truthfulqa"};
    p.validation_values = val2;
    CHECK(sn_tuples_create(&p, &b, &err) == SN_E_ARG && b == NULL &&
          strstr(err.msg, "truthfulqa"));
    /* fractions of the datasets: every item of a dataset on one side, some on each */
    p.n_test_values = p.n_validation_values = 0;
    p.validation_fraction = p.test_fraction = 0.3;
    size_t per[SN_SPLIT_COUNT] = {0};
    bad = 0;
    for (int d = 0; d < 40; d++) {
        char name[32];
        snprintf(name, sizeof name, "dataset-%d", d);
        enum sn_split first = SN_SPLIT_COUNT;
        for (int i = 0; i < 5; i++) {
            char item[32];
            snprintf(item, sizeof item, "q%d", i);
            struct tj x = {"t", "e", "s", name, item, "m", false};
            enum sn_split s = split_of(&x, &p);
            if (!i)
                per[first = s]++;
            bad += s != first;
        }
    }
    CHECK(bad == 0 && per[SN_SPLIT_TRAIN] && per[SN_SPLIT_VALIDATION] && per[SN_SPLIT_TEST]);
    /* model (the honest agents'), scenario, experiment */
    const char *m1[] = {"qwen-7b"}, *m2[] = {"adv-model"};
    p.split_by = SN_SPLIT_BY_MODEL;
    p.test_values = m1;
    p.n_test_values = 1;
    struct tj a = {"t", "exp-a", "aitm", "ds", "q", "qwen-7b", false};
    struct tj c = {"t", "exp-b", "collab", "ds", "q", "llama-8b", false};
    CHECK(split_of(&a, &p) == SN_SPLIT_TEST && split_of(&c, &p) == SN_SPLIT_TRAIN);
    p.test_values = m2; /* the adversaries' model does not name the debate */
    CHECK(split_of(&a, &p) == SN_SPLIT_TRAIN);
    const char *sc[] = {"collab"}, *ex[] = {"exp-a"};
    p.split_by = SN_SPLIT_BY_SCENARIO;
    p.test_values = sc;
    CHECK(split_of(&a, &p) == SN_SPLIT_TRAIN && split_of(&c, &p) == SN_SPLIT_TEST);
    p.split_by = SN_SPLIT_BY_EXPERIMENT;
    p.test_values = ex;
    CHECK(split_of(&a, &p) == SN_SPLIT_TEST && split_of(&c, &p) == SN_SPLIT_TRAIN);
    enum sn_split_by by;
    CHECK(sn_split_by_parse("dataset", &by, &err) == SN_OK && by == SN_SPLIT_BY_DATASET);
    CHECK(sn_split_by_parse("question", &by, &err) == SN_E_ARG);
}

static void test_ood(void)
{
    struct sn_tuples_params p = sn_tuples_default_params();
    p.validation_fraction = p.test_fraction = 0; /* everything else trains */
    struct tj o = {"o", "psysafe", "psysafe", "ds", "q1", "m", true};
    struct tj i = {"i", "psysafe", "psysafe", "ds", "q1", "m", false};
    CHECK(split_of(&o, &p) == SN_SPLIT_OOD && split_of(&i, &p) == SN_SPLIT_TRAIN);
    const char *v[] = {"psysafe"};
    p.split_by = SN_SPLIT_BY_EXPERIMENT;
    p.validation_values = v;
    p.n_validation_values = 1;
    CHECK(split_of(&o, &p) == SN_SPLIT_OOD && split_of(&i, &p) == SN_SPLIT_VALIDATION);
    CHECK(!strcmp(sn_split_name(SN_SPLIT_OOD), "ood"));
}

/* ---- end to end ---------------------------------------------------------------------- */

/* 30 items in three datasets, each debated in experiments main-a and main-b; items 0..9 also
** in an out-of-domain experiment (labels.split = "ood"). */
static int write_file(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    const char *ds[] = {"ds-a", "ds-b", "ds-c"};
    for (int i = 0; i < 30; i++) {
        char item[32], id[64];
        snprintf(item, sizeof item, "item-%d", i);
        for (int r = 0; r < 3; r++) {
            if (r == 2 && i >= 10)
                continue;
            const char *exp = r == 0 ? "main-a" : r == 1 ? "main-b" : "psysafe";
            snprintf(id, sizeof id, "%s-%d", exp, i);
            struct tj x = {id, exp, r == 2 ? "psysafe" : "collaboration", ds[i % 3], item,
                           "qwen", r == 2};
            char *s = traj_json(&x);
            fprintf(f, "%s\n", s);
            cJSON_free(s);
        }
    }
    return fclose(f) != 0;
}

struct seen {
    cJSON *item_split; /* item -> bit mask of splits */
    size_t ood_misplaced, tuples[SN_SPLIT_COUNT];
    size_t items[SN_SPLIT_COUNT], shared;
};

static void read_build(const char *out, struct seen *sv)
{
    struct sn_manifest *m = NULL;
    struct sn_err err = {0};
    memset(sv, 0, sizeof *sv);
    sv->item_split = cJSON_CreateObject();
    CHECK(sn_manifest_load(out, &m, &err) == SN_OK);
    for (size_t s = 0; m && s < m->n_shards; s++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", out, m->shards[s].file);
        struct sn_shard_reader *r = NULL;
        CHECK(sn_shard_reader_open(path, NULL, &r, &err) == SN_OK);
        for (size_t i = 0; r && i < sn_shard_reader_count(r); i++) {
            struct sn_tuple_meta me;
            CHECK(sn_shard_reader_meta(r, i, &me, &err) == SN_OK);
            if ((unsigned)me.split >= SN_SPLIT_COUNT)
                continue;
            sv->tuples[me.split]++;
            bool from_ood = !strncmp(me.trajectory_id, "psysafe-", 8);
            sv->ood_misplaced += from_ood != (me.split == SN_SPLIT_OOD);
            char key[128];
            snprintf(key, sizeof key, "%s/%s", me.dataset, me.item_id);
            cJSON *e = cJSON_GetObjectItemCaseSensitive(sv->item_split, key);
            if (!e)
                e = cJSON_AddNumberToObject(sv->item_split, key, 0);
            cJSON_SetNumberValue(e, (double)((int)e->valuedouble | 1 << me.split));
        }
        sn_shard_reader_close(r);
    }
    sn_manifest_free(m);
    const cJSON *e;
    cJSON_ArrayForEach(e, sv->item_split) {
        int v = (int)e->valuedouble, h = v & 7;
        for (int k = 0; k < SN_SPLIT_COUNT; k++)
            sv->items[k] += (size_t)(v >> k & 1);
        sv->shared += (h & (h - 1)) != 0;
    }
}

static void test_build(void)
{
    struct sn_err err = {0};
    char traj[1200], out[1200], out2[1200], out3[1200], log[1300];
    snprintf(traj, sizeof traj, "%s/traj.jsonl", dir);
    CHECK(write_file(traj) == 0);
    snprintf(out, sizeof out, "%s/items", dir);
    struct sn_build_params p = sn_build_default_params();
    const char *in[] = {traj};
    p.inputs = in;
    p.n_inputs = 1;
    p.out_dir = out;
    p.tokenizer_path = tokp;
    p.max_len = 256;
    p.tuples.validation_fraction = p.tuples.test_fraction = 0.25;
    struct sn_build_report rep;
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK);
    struct seen sv;
    read_build(out, &sv);
    CHECK(rep.counts[SN_TC_TRAJECTORIES] == 70);
    CHECK_MSG(sv.shared == 0, "%zu items on two sides", sv.shared);
    CHECK(sv.ood_misplaced == 0 && sv.tuples[SN_SPLIT_OOD] > 0 &&
          rep.per_split[SN_SPLIT_OOD] == (int64_t)sv.tuples[SN_SPLIT_OOD]);
    CHECK(sv.items[SN_SPLIT_TRAIN] && sv.items[SN_SPLIT_VALIDATION] && sv.items[SN_SPLIT_TEST]);
    CHECK(sv.items[SN_SPLIT_TRAIN] + sv.items[SN_SPLIT_VALIDATION] + sv.items[SN_SPLIT_TEST]
          == 30 && sv.items[SN_SPLIT_OOD] == 10);
    /* inspect shows the same item counts and says nothing is shared */
    snprintf(log, sizeof log, "%s/inspect.txt", dir);
    CHECK(sn_test_sh("'%s' inspect '%s' > '%s' 2>&1", bin, out, log) == 0);
    CHECK(sn_test_sh("grep -q 'items          %zu train, %zu validation, %zu test, 10 ood "
                     "(split by item)' '%s' && grep -q 'no item is shared' '%s'",
                     sv.items[SN_SPLIT_TRAIN], sv.items[SN_SPLIT_VALIDATION],
                     sv.items[SN_SPLIT_TEST], log, log) == 0);
    CHECK(sn_test_sh("'%s' inspect --json '%s' | grep -q '\"shared\":[[:space:]]*0'", bin,
                     out) == 0);
    cJSON_Delete(sv.item_split);
    /* the same settings again: deterministic, nothing to do */
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK && rep.was_complete);

    /* a changed split setting on the same directory is refused, naming the key */
    p.tuples.split_seed = 3;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "split_seed") != NULL, "%s", err.msg);
    p.tuples.split_seed = 0;
    p.tuples.split_by = SN_SPLIT_BY_DATASET;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "split_by") != NULL, "%s", err.msg);
    /* and the CLI says so too */
    char recipe[1300];
    snprintf(recipe, sizeof recipe, "%s/recipe.json", dir);
    sn_test_write_file(recipe, "{\"build\": {\"split_by\": \"dataset\", \"test\": [\"ds-b\"]}}");
    CHECK(sn_test_sh("'%s' build --recipe '%s' -i '%s' -o '%s' --tokenizer '%s' --max-len 256 "
                     "--progress none 2> '%s'; test $? -ne 0 && grep -q split_by '%s'", bin,
                     recipe, traj, out, tokp, log, log) == 0);

    /* split_by dataset, ds-b held out for test by name (CLI) */
    snprintf(out2, sizeof out2, "%s/dataset", dir);
    CHECK(sn_test_sh("'%s' build --recipe '%s' -i '%s' -o '%s' --tokenizer '%s' --max-len 256 "
                     "--progress none > '%s' 2>&1", bin, recipe, traj, out2, tokp, log) == 0);
    read_build(out2, &sv);
    size_t wrong = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, sv.item_split) {
        int v = (int)e->valuedouble & 7;
        bool b = !strncmp(e->string, "ds-b/", 5);
        wrong += v != (b ? 1 << SN_SPLIT_TEST : 1 << SN_SPLIT_TRAIN);
    }
    CHECK_MSG(wrong == 0, "%zu items on the wrong side", wrong);
    CHECK(sv.items[SN_SPLIT_TEST] == 10 && sv.items[SN_SPLIT_VALIDATION] == 0 &&
          sv.ood_misplaced == 0);
    cJSON_Delete(sv.item_split);
    /* lists and fractions together are refused */
    sn_test_write_file(recipe, "{\"build\": {\"split_by\": \"dataset\", \"test\": [\"ds-b\"], "
                               "\"test_fraction\": 0.2}}");
    CHECK(sn_test_sh("'%s' build --recipe '%s' -i '%s' -o '%s/x' --tokenizer '%s' "
                     "--progress none 2> '%s'; test $? -ne 0 && grep -q test_fraction '%s'",
                     bin, recipe, traj, dir, tokp, log, log) == 0);

    /* split_by experiment shares items by design: inspect warns, exit 0 */
    snprintf(out3, sizeof out3, "%s/experiment", dir);
    sn_test_write_file(recipe, "{\"build\": {\"split_by\": \"experiment\", "
                               "\"test\": [\"main-b\"]}}");
    CHECK(sn_test_sh("'%s' build --recipe '%s' -i '%s' -o '%s' --tokenizer '%s' --max-len 256 "
                     "--progress none > '%s' 2>&1", bin, recipe, traj, out3, tokp, log) == 0);
    CHECK(sn_test_sh("'%s' inspect '%s' > '%s' 2>&1 && grep -q 'WARNING: 30 item' '%s'", bin,
                     out3, log, log) == 0);
    /* an item split whose test shard comes from another seed: inspect fails loudly */
    char forged[1300];
    snprintf(forged, sizeof forged, "%s/forged", dir);
    p.out_dir = forged;
    p.tuples.split_by = SN_SPLIT_BY_ITEM;
    p.tuples.split_seed = 0;
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK);
    char other[1300];
    snprintf(other, sizeof other, "%s/seed5", dir);
    p.out_dir = other;
    p.tuples.split_seed = 5;
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK);
    read_build(forged, &sv);
    size_t before = sv.shared;
    cJSON_Delete(sv.item_split);
    CHECK(before == 0);
    CHECK(sn_test_sh("cp '%s/test-00000.h5' '%s/test-00000.h5'", other, forged) == 0);
    read_build(forged, &sv);
    CHECK(sv.shared > 0); /* the forgery does share items (else this check proves nothing) */
    cJSON_Delete(sv.item_split);
    CHECK(sn_test_sh("'%s' inspect '%s' > '%s' 2>&1; test $? -eq 1 && grep -q 'ERROR: .* "
                     "item(s) occur in more than one of train, validation and test' '%s'", bin,
                     forged, log, log) == 0);
}

int main(void)
{
    const char *b = getenv("SENTINEL_BIN");
    struct sn_err err = {0};
    snprintf(dir, sizeof dir, "%s", sn_test_dir("data_split"));
    snprintf(bin, sizeof bin, "%s", b ? b : "./sentinel");
    snprintf(tokp, sizeof tokp, "%s/tok.json", dir);
    if (sn_tokenizer_write_demo(tokp, &err)) {
        fprintf(stderr, "demo tokenizer: %s\n", err.msg);
        return 1;
    }
    test_formula();
    test_items();
    test_split_by();
    test_ood();
    test_build();
    return sn_test_done();
}
