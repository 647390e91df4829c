/* tests/test_data_import_collab.c: the Collaboration-attack importer on hand-made records and
** files, one case per edge case of docs/formats.md "Imported trajectories": the source answer
** rule (hand-derived expectations), roles, targets, legacy design, datasets' gold forms, item
** ids, replicate and experiment names, models, the source vote, empty / partial / gzip /
** malformed / unsupported files, and byte-identical re-runs. Every produced line is read back
** with the project's trajectory reader (sn_traj_parse). */
#include "import/import.h"
#include "data/data.h"
#include "testutil.h"

#include <zlib.h>

static const char *const ABCD[] = {"Paris", "London", "Berlin", "Rome"};

static void answer_rule(void)
{
    char raw[64];
    /* the last passing letter candidate, when no option text occurs */
    CHECK(sn_import_collab_answer("mmlu", "I think (A). No, wait: (C)", ABCD, 4, raw, 64));
    CHECK_STR(raw, "C");
    /* a literal (X) placeholder fails the string comparison ("X" > "D"): the one before wins */
    CHECK(sn_import_collab_answer("mmlu", "So (B). Answer: (X)", ABCD, 4, raw, 64));
    CHECK_STR(raw, "B");
    CHECK(!sn_import_collab_answer("mmlu", "Answer: (X)", ABCD, 4, raw, 64));
    CHECK_STR(raw, "");
    /* (X) (B): B */
    CHECK(sn_import_collab_answer("medmcqa", "The answer is (X) (B)", ABCD, 4, raw, 64));
    CHECK_STR(raw, "B");
    /* no parentheses: nothing */
    CHECK(!sn_import_collab_answer("mmlu", "my answer choice C", ABCD, 4, raw, 64));
    /* multi-letter words pass the string comparison and become a non-letter answer */
    CHECK(!sn_import_collab_answer("mmlu", "(B) is wrong (BWC)", ABCD, 4, raw, 64));
    CHECK_STR(raw, "BWC");
    CHECK(!sn_import_collab_answer("mmlu", "(A) ... ACTION) done", ABCD, 4, raw, 64));
    CHECK_STR(raw, "ACTION");
    /* "E)" is past D for MMLU; lower case counts after upper-casing */
    CHECK(sn_import_collab_answer("mmlu", "(a) then E)", ABCD, 4, raw, 64));
    CHECK_STR(raw, "A");
    /* option text wins over an explicit letter; furthest right occurrence decides */
    CHECK(sn_import_collab_answer("mmlu", "Not London, not Rome. It is PARIS (B)", ABCD, 4, raw,
                                  64));
    CHECK_STR(raw, "A");
    CHECK(sn_import_collab_answer("mmlu", "Paris? London? (C)", ABCD, 4, raw, 64));
    CHECK_STR(raw, "B");
    /* a tie (two options with the same text) goes to the first option */
    static const char *const twin[] = {"yes", "no", "yes", "maybe"};
    CHECK(sn_import_collab_answer("medmcqa", "I say yes (D)", twin, 4, raw, 64));
    CHECK_STR(raw, "A");
    /* strip rules: MMLU strips whitespace only; the others strip '., ' too */
    static const char *const dotted[] = {"alpha.", "beta", "gamma", "delta"};
    CHECK(sn_import_collab_answer("medmcqa", "it is alpha (B)", dotted, 4, raw, 64));
    CHECK_STR(raw, "A");
    CHECK(sn_import_collab_answer("mmlu", "it is alpha (B)", dotted, 4, raw, 64));
    CHECK_STR(raw, "B");
    /* a 1-character option is found anywhere: the spurious hit the source rule makes */
    static const char *const tiny[] = {"1", "2", "3", "4"};
    CHECK(sn_import_collab_answer("mmlu", "Step 2 gives (A)", tiny, 4, raw, 64));
    CHECK_STR(raw, "B");
    /* 13 options (TruthfulQA): letters up to M; N) fails */
    static const char *const many[] = {"o1", "o2", "o3", "o4", "o5", "o6", "o7",
                                       "o8", "o9", "o10", "o11", "o12", "o13"};
    CHECK(sn_import_collab_answer("truthfulqa", "(M) N)", many, 13, raw, 64));
    CHECK_STR(raw, "M");
    /* Unicode \w: (é) is a candidate that fails; dotless i upper-cases to I */
    CHECK(sn_import_collab_answer("truthfulqa", "(B) or (\xc3\xa9)", many, 13, raw, 64));
    CHECK_STR(raw, "B");
    CHECK(sn_import_collab_answer("truthfulqa", "(B) or (\xc4\xb1)", many, 13, raw, 64));
    CHECK_STR(raw, "I");
    /* a word run glued to '(' is not a candidate start: "x(AB)" -> "AB" */
    CHECK(!sn_import_collab_answer("mmlu", "x(AB)", ABCD, 4, raw, 64));
    CHECK_STR(raw, "AB");
}

/* ---- building source lines ---- */

struct conv {
    const char *system;       /* NULL: honest */
    const char *first_user;   /* NULL: the question */
    const char *later_user;   /* NULL: a debate message */
    const char *replies[4];
    int         n_replies;
};

static char *line_json(const char *dataset, const char *question, const struct conv *c, int n)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", 7);
    cJSON_AddStringToObject(o, "question", question);
    if (!strcmp(dataset, "mmlu")) {
        cJSON_AddStringToObject(o, "answer", "A");
        cJSON *r = cJSON_AddArrayToObject(o, "raw_task");
        cJSON_AddItemToArray(r, cJSON_CreateString("Capital of France?"));
        for (int i = 0; i < 4; i++)
            cJSON_AddItemToArray(r, cJSON_CreateString(ABCD[i]));
        cJSON_AddItemToArray(r, cJSON_CreateString("A"));
    } else if (!strcmp(dataset, "medmcqa")) {
        cJSON_AddStringToObject(o, "answer", "b");
        cJSON *r = cJSON_AddObjectToObject(o, "raw_task");
        cJSON_AddStringToObject(r, "question", "Which flap?");
        cJSON_AddStringToObject(r, "exp", "Because.");
        cJSON_AddNumberToObject(r, "cop", 2);
        cJSON_AddStringToObject(r, "opa", "Rhomboid flap");
        cJSON_AddStringToObject(r, "opb", "Circular flap");
        cJSON_AddStringToObject(r, "opc", "Free flap");
        cJSON_AddStringToObject(r, "opd", "Rotational flap");
        cJSON_AddStringToObject(r, "subject_name", "Surgery");
    } else { /* truthfulqa */
        cJSON *a = cJSON_AddArrayToObject(o, "answer");
        cJSON *p = cJSON_CreateArray();
        cJSON_AddItemToArray(p, cJSON_CreateString("a"));
        cJSON_AddItemToArray(p, cJSON_CreateString("Zeta true."));
        cJSON_AddItemToArray(a, p);
        cJSON *r = cJSON_AddObjectToObject(o, "raw_task");
        cJSON_AddStringToObject(r, "question", "What is true?");
        cJSON *m = cJSON_AddObjectToObject(r, "mc1_targets");
        cJSON_AddNumberToObject(m, "Zeta true.", 1);
        cJSON_AddNumberToObject(m, "Alpha false.", 0);
        cJSON_AddNumberToObject(m, "Mid false.", 0);
    }
    cJSON *ar = cJSON_AddArrayToObject(o, "agent_responses");
    for (int k = 0; k < n; k++) {
        cJSON *cv = cJSON_CreateArray();
        if (c[k].system) {
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "role", "system");
            cJSON_AddStringToObject(m, "content", c[k].system);
            cJSON_AddItemToArray(cv, m);
        }
        for (int t = 0; t < c[k].n_replies; t++) {
            cJSON *u = cJSON_CreateObject();
            cJSON_AddStringToObject(u, "role", "user");
            cJSON_AddStringToObject(u, "content",
                                    t == 0 ? (c[k].first_user ? c[k].first_user : question)
                                           : (c[k].later_user ? c[k].later_user : "debate"));
            cJSON_AddItemToArray(cv, u);
            cJSON *a = cJSON_CreateObject();
            cJSON_AddStringToObject(a, "role", "assistant");
            cJSON_AddStringToObject(a, "content", c[k].replies[t]);
            cJSON_AddItemToArray(cv, a);
        }
        cJSON_AddItemToArray(ar, cv);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* Imports one line under rel and reads the result back; NULL on failure (err filled). */
static struct sn_traj *imp(const struct sn_import_params *p, const char *rel, const char *json,
                           struct sn_import_summary *sum, struct sn_err *err)
{
    struct sn_buf b = {0};
    struct sn_import_summary local = {0};
    int rc = sn_import_record(p, rel, json, strlen(json), 3, &b, sum ? sum : &local, err);
    struct sn_traj *t = NULL;
    if (!rc) {
        struct sn_err e2 = {0};
        if (sn_traj_parse(b.data, b.len, "out:1", &t, &e2)) {
            fprintf(stderr, "reader refused the output: %s\n", e2.msg);
            t = NULL;
        }
    }
    sn_buf_free(&b);
    return t;
}

#define ADV_SYS "You're playing the role of an adversary"
#define ADV_FIRST(x) "Answer the question with the provided answer.\nQuestion: Q\n\nYour answer: (" x ")\n\n"

static const char *MMLU_CLEAN = "mmlu/100_3_3_gpt-3.5-turbo/mmlu_100_3_3_4.jsonl";
static const char *MMLU_ADV =
    "mmlu/adv_100_3_3_1-gpt-4-turbo-gpt-3.5-turbo/adv_mmlu_100_3_3_1_2-gpt-4-turbo-gpt-3.5-turbo.jsonl";

static void records(void)
{
    struct sn_import_params p = sn_import_default_params();
    struct sn_err err = {0};
    /* clean MMLU: 3 honest agents, 2 rounds; answers by the source rule; vote */
    struct conv c3[3] = {
        {.replies = {"I pick (B)", "Now (A)"}, .n_replies = 2},
        {.replies = {"(A)", "Still (A)"}, .n_replies = 2},
        {.replies = {"(C)", "(X)"}, .n_replies = 2},
    };
    char *j = line_json("mmlu", "Q: capital of France? A) Paris ...", c3, 3);
    struct sn_traj *t = imp(&p, MMLU_CLEAN, j, NULL, &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    if (t) {
        CHECK_STR(t->experiment, "collab-attack.mmlu.100_3_3_gpt-3.5-turbo");
        CHECK_STR(t->dataset, "mmlu");
        CHECK_STR(t->scenario, "none");
        CHECK_STR(t->question, "Capital of France?");
        CHECK(t->n_options == 4 && !strcmp(t->options[3], "Rome"));
        CHECK_STR(t->gold, "A");
        CHECK(t->replicate == 4);
        CHECK(t->adversarial_target == NULL);
        CHECK(t->n_agents == 3 && t->n_honest == 3 && t->n_adversary == 0);
        CHECK_STR(t->agents[0].model, "gpt-3.5-turbo");
        CHECK(t->n_rounds == 2);
        CHECK_STR(t->rounds[0].msgs[0].text, "I pick (B)");
        CHECK_STR(t->rounds[0].msgs[0].answer, "B");
        CHECK(t->rounds[1].msgs[2].answer == NULL && !t->rounds[1].msgs[2].parsed);
        CHECK_STR(t->final.answer, "A"); /* A, A, None */
        CHECK(t->final.correct);
        CHECK(t->edges && t->n_edges == 6);
        char buf[64];
        CHECK_STR(sn_traj_label(t, "design", buf, sizeof buf), "clean");
        /* item id: dataset + 16 hex of SHA-256 of the formatted question */
        char hex[65];
        const char *q = "Q: capital of France? A) Paris ...";
        sn_sha256_hex(q, strlen(q), hex);
        char want[40];
        snprintf(want, sizeof want, "mmlu-%.16s", hex);
        CHECK_STR(t->item_id, want);
        const cJSON *imp_o = cJSON_GetObjectItemCaseSensitive(t->root_, "import");
        CHECK(cJSON_IsObject(imp_o));
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(imp_o, "path")),
                  MMLU_CLEAN);
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(imp_o, "line")) == 3);
        const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetArrayItem(
            cJSON_GetObjectItemCaseSensitive(t->root_, "rounds"), 0), 0);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r0, "answer_rule")),
                  "collab-attack");
        sn_traj_free(t);
    }
    /* the same line under --answers sentinel: the extractor's answers, the rule recorded */
    {
        struct sn_import_params ps = p;
        ps.answers = SN_IMPORT_ANSWERS_SENTINEL;
        struct sn_import_summary sum = {0};
        t = imp(&ps, MMLU_CLEAN, j, &sum, &err);
        CHECK(t != NULL);
        if (t) {
            const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetArrayItem(
                cJSON_GetObjectItemCaseSensitive(t->root_, "rounds"), 0), 0);
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r0, "answer_rule")),
                      "sentinel");
            sn_traj_free(t);
        }
        CHECK(sum.n_messages == 6);
    }
    cJSON_free(j);
    /* ties and None in the vote: A, B, None -> no decision; BWC, BWC, A -> no decision */
    struct conv tie[3] = {{.replies = {"(A)"}, .n_replies = 1},
                          {.replies = {"(B)"}, .n_replies = 1},
                          {.replies = {"none"}, .n_replies = 1}};
    j = line_json("mmlu", "Q tie", tie, 3);
    t = imp(&p, MMLU_CLEAN, j, NULL, &err);
    CHECK(t && t->final.answer == NULL && !t->final.correct);
    sn_traj_free(t);
    cJSON_free(j);
    struct conv multi[3] = {{.replies = {"(BWC)"}, .n_replies = 1},
                            {.replies = {"(BWC)"}, .n_replies = 1},
                            {.replies = {"(A)"}, .n_replies = 1}};
    j = line_json("mmlu", "Q multi", multi, 3);
    t = imp(&p, MMLU_CLEAN, j, NULL, &err);
    CHECK(t && t->final.answer == NULL && t->rounds[0].msgs[0].answer == NULL);
    sn_traj_free(t);
    cJSON_free(j);
    struct conv nones[3] = {{.replies = {"(X)"}, .n_replies = 1},
                            {.replies = {"nothing"}, .n_replies = 1},
                            {.replies = {"(A)"}, .n_replies = 1}};
    j = line_json("mmlu", "Q nones", nones, 3);
    t = imp(&p, MMLU_CLEAN, j, NULL, &err);
    CHECK(t && t->final.answer == NULL); /* None wins the vote: no decision */
    sn_traj_free(t);
    cJSON_free(j);

    /* targeted attack, heterogeneous models, replicate after the adversary count */
    struct conv adv[3] = {
        {.system = ADV_SYS, .first_user = ADV_FIRST("C"),
         .later_user = "... select it.\nYour Answer: (c)\n\n", .replies = {"Berlin! (C)", "(C)"},
         .n_replies = 2},
        {.replies = {"(A)", "(C)"}, .n_replies = 2},
        {.replies = {"(A)", "(A)"}, .n_replies = 2},
    };
    j = line_json("mmlu", "Q adv", adv, 3);
    t = imp(&p, MMLU_ADV, j, NULL, &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    if (t) {
        CHECK_STR(t->scenario, "collaboration");
        CHECK_STR(t->adversarial_target, "C");
        CHECK(t->replicate == 2);
        CHECK(t->agents[0].role == SN_ROLE_ADVERSARY && t->agents[1].role == SN_ROLE_HONEST);
        CHECK_STR(t->agents[0].model, "gpt-3.5-turbo");
        CHECK_STR(t->agents[1].model, "gpt-4-turbo");
        CHECK_STR(t->agents[0].position, "first");
        CHECK_STR(t->attack_name, "collaboration");
        CHECK_STR(t->rounds[0].msgs[0].answer, "C");
        CHECK_STR(t->final.answer, "C"); /* C, C, A */
        CHECK(!t->final.correct);
        char buf[64];
        CHECK_STR(sn_traj_label(t, "design", buf, sizeof buf), "targeted");
        CHECK_STR(t->experiment,
                  "collab-attack.mmlu.adv_100_3_3_1-gpt-4-turbo-gpt-3.5-turbo");
        sn_traj_free(t);
    }
    cJSON_free(j);
    /* target errors: later message disagrees; target = gold; two adversaries disagree */
    adv[0].later_user = "Your answer: (D)";
    j = line_json("mmlu", "Q adv", adv, 3);
    sn_err_clear(&err);
    CHECK(imp(&p, MMLU_ADV, j, NULL, &err) == NULL && err.code == SN_E_FORMAT &&
          strstr(err.msg, ":4: ") && strstr(err.msg, "targets"));
    cJSON_free(j);
    adv[0].later_user = NULL;
    adv[0].first_user = ADV_FIRST("A");
    j = line_json("mmlu", "Q adv", adv, 3);
    sn_err_clear(&err);
    CHECK(imp(&p, MMLU_ADV, j, NULL, &err) == NULL && strstr(err.msg, "gold"));
    cJSON_free(j);
    adv[0].first_user = ADV_FIRST("C");
    adv[1].system = ADV_SYS;
    adv[1].first_user = ADV_FIRST("D");
    j = line_json("mmlu", "Q adv", adv, 3);
    sn_err_clear(&err);
    CHECK(imp(&p, MMLU_ADV, j, NULL, &err) == NULL && strstr(err.msg, "different targets"));
    cJSON_free(j);
    adv[1].system = NULL;
    adv[1].first_user = NULL;
    /* ragged conversations are refused */
    adv[2].n_replies = 1;
    j = line_json("mmlu", "Q adv", adv, 3);
    sn_err_clear(&err);
    CHECK(imp(&p, MMLU_ADV, j, NULL, &err) == NULL && strstr(err.msg, "ragged"));
    cJSON_free(j);
    adv[2].n_replies = 2;

    /* legacy design: no target, all three adversaries (no honest slot), file in the dataset
    ** folder: the stem is part of the experiment and its last number is the adversary count */
    struct conv leg[3];
    for (int k = 0; k < 3; k++)
        leg[k] = (struct conv){.system = "steer to a wrong answer",
                               .first_user = "Correct Answer: A\nGenerate an explanation",
                               .replies = {"(B)", "(B)"}, .n_replies = 2};
    j = line_json("mmlu", "Q legacy", leg, 3);
    t = imp(&p, "mmlu/adv_mmlu_100_3_3_3.jsonl", j, NULL, &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    if (t) {
        CHECK(t->adversarial_target == NULL);
        CHECK(t->n_honest == 0 && t->n_adversary == 3);
        CHECK(t->replicate == 0);
        CHECK_STR(t->experiment, "collab-attack.mmlu.adv_mmlu_100_3_3_3");
        CHECK_STR(t->agents[0].model, "unknown");
        char buf[64];
        CHECK_STR(sn_traj_label(t, "design", buf, sizeof buf), "legacy-no-target");
        sn_traj_free(t);
    }
    /* archive file, --group-model / --adv-model fill unknown models */
    struct sn_import_params pm = p;
    pm.group_model = "gpt-3.5-turbo";
    pm.adv_model = "gpt-3.5-turbo";
    t = imp(&pm, "archive/mmlu/mmlu_100_3_3.jsonl", j, NULL, &err);
    CHECK(t && !strcmp(t->experiment, "collab-attack.archive.mmlu.mmlu_100_3_3") &&
          !strcmp(t->agents[1].model, "gpt-3.5-turbo"));
    sn_traj_free(t);
    cJSON_free(j);
    /* an adversary only in a later slot: imported by the system-message rule, with a warning */
    struct conv late[2] = {{.replies = {"(A)"}, .n_replies = 1},
                           {.system = ADV_SYS, .first_user = ADV_FIRST("B"),
                            .replies = {"(B)"}, .n_replies = 1}};
    j = line_json("mmlu", "Q late", late, 2);
    struct sn_import_summary sum = {0};
    t = imp(&p, MMLU_ADV, j, &sum, &err);
    CHECK(t && t->agents[1].role == SN_ROLE_ADVERSARY && t->agents[0].role == SN_ROLE_HONEST);
    CHECK(sum.n_warnings >= 1);
    CHECK(t && t->final.answer == NULL); /* 2 agents, A vs B */
    sn_traj_free(t);
    cJSON_free(j);

    /* MedMCQA: lower-case gold checked against cop, subject, explanation */
    struct conv med[2] = {{.replies = {"Circular flap (B)"}, .n_replies = 1},
                          {.replies = {"(B)"}, .n_replies = 1}};
    j = line_json("medmcqa", "Q med", med, 2);
    t = imp(&p, "medmcqa/100_3_3_Qwen1.5-14B-Chat/medmcqa_100_3_3_1.jsonl", j, NULL, &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    if (t) {
        CHECK_STR(t->gold, "B");
        CHECK_STR(t->subject, "Surgery");
        CHECK_STR(t->gold_explanation, "Because.");
        CHECK_STR(t->agents[0].model, "Qwen1.5-14B-Chat");
        CHECK_STR(t->final.answer, "B");
        CHECK(t->final.correct);
        sn_traj_free(t);
    }
    /* cop disagreeing with answer is refused */
    char *bad = strdup(j);
    char *cop = strstr(bad, "\"cop\":2");
    if (cop)
        cop[6] = '3';
    sn_err_clear(&err);
    CHECK(imp(&p, "medmcqa/x_100_3_3/medmcqa_100_3_3_0.jsonl", bad, NULL, &err) == NULL &&
          strstr(err.msg, "disagrees"));
    free(bad);
    cJSON_free(j);

    /* TruthfulQA: gold from the pair list, options in JSON order */
    struct conv tq[3] = {{.replies = {"Alpha false. (B)"}, .n_replies = 1},
                         {.replies = {"(C)"}, .n_replies = 1},
                         {.replies = {"(C) for sure"}, .n_replies = 1}};
    j = line_json("truthfulqa", "Q tq", tq, 3);
    t = imp(&p, "truthfulqa/100_3_3/truthfulqa_100_3_3_2.jsonl", j, NULL, &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    if (t) {
        CHECK_STR(t->gold, "A");
        CHECK(t->n_options == 3 && !strcmp(t->options[0], "Zeta true.") &&
              !strcmp(t->options[2], "Mid false."));
        CHECK_STR(t->rounds[0].msgs[0].answer, "B");
        CHECK_STR(t->final.answer, "C");
        CHECK(t->replicate == 2);
        CHECK_STR(t->agents[0].model, "unknown");
        sn_traj_free(t);
    }
    cJSON_free(j);

    /* not JSON / not the shape: errors name file:line */
    sn_err_clear(&err);
    CHECK(imp(&p, MMLU_CLEAN, "{\"question\": ", NULL, &err) == NULL &&
          err.code == SN_E_FORMAT && strstr(err.msg, "mmlu_100_3_3_4.jsonl:4"));
    sn_err_clear(&err);
    CHECK(imp(&p, MMLU_CLEAN, "{\"question\":\"q\",\"agent_responses\":[]}", NULL, &err) ==
          NULL && err.code == SN_E_FORMAT);
    /* unsupported datasets are refused with the reason; unknown layouts too */
    sn_err_clear(&err);
    CHECK(imp(&p, "math/adv_math_100_3_3_1.jsonl", "{}", NULL, &err) == NULL &&
          err.code == SN_E_UNSUPPORTED && strstr(err.msg, "LaTeX"));
    sn_err_clear(&err);
    CHECK(imp(&p, "somewhere/else.jsonl", "{}", NULL, &err) == NULL &&
          strstr(err.msg, "cannot tell the dataset"));
}

/* ---- whole files ---- */

static void write_file(const char *path, const char *data, size_t n, bool gz)
{
    if (gz) {
        gzFile g = gzopen(path, "wb");
        gzwrite(g, data, (unsigned)n);
        gzclose(g);
    } else {
        FILE *f = fopen(path, "wb");
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static size_t count_lines(const char *path)
{
    struct sn_traj_reader *r;
    struct sn_err err = {0};
    if (sn_traj_reader_open(path, NULL, &r, &err))
        return (size_t)-1;
    size_t n = 0;
    struct sn_traj *t;
    while (!sn_traj_reader_next(r, &t, &err) && t) {
        n++;
        sn_traj_free(t);
    }
    sn_traj_reader_close(r);
    return n;
}

static void files(void)
{
    const char *dir = sn_test_dir("import_collab_files");
    char p1[1024], p2[1024], p3[1024], out[1024], out2[1024];
    snprintf(p1, sizeof p1, "%s/results/mmlu/100_3_3_gpt-3.5-turbo", dir);
    snprintf(p2, sizeof p2, "%s/results/truthfulqa/adv_100_3_3_1-x-y", dir);
    snprintf(p3, sizeof p3, "%s/results/math", dir);
    sn_test_sh("mkdir -p '%s' '%s' '%s'", p1, p2, p3);
    struct conv c3[3] = {{.replies = {"(A)", "(A)"}, .n_replies = 2},
                         {.replies = {"(B)", "(A)"}, .n_replies = 2},
                         {.replies = {"(A)", "(A)"}, .n_replies = 2}};
    struct sn_buf b = {0};
    struct sn_err err = {0};
    /* 3 lines, the third repeats the first question: its item id gets -<id> */
    for (int i = 0; i < 3; i++) {
        char q[64];
        snprintf(q, sizeof q, "Question number %d", i == 2 ? 0 : i);
        char *j = line_json("mmlu", q, c3, 3);
        sn_buf_printf(&b, &err, "%s\n", j);
        cJSON_free(j);
    }
    char f1[1100], f2[1100], f3[1100], f4[1100];
    snprintf(f1, sizeof f1, "%s/mmlu_100_3_3_1.jsonl.gz", p1);
    write_file(f1, b.data, b.len, true);                 /* gzip */
    snprintf(f2, sizeof f2, "%s/mmlu_100_3_3_2.jsonl", p1);
    write_file(f2, b.data, b.len, false);                /* plain */
    snprintf(f3, sizeof f3, "%s/adv_truthfulqa_100_3_3_1_0-x-y.jsonl", p2);
    write_file(f3, "", 0, false);                        /* 0 bytes */
    snprintf(f4, sizeof f4, "%s/adv_math_100_3_3_1.jsonl", p3);
    write_file(f4, b.data, b.len, false);                /* unsupported */
    snprintf(out, sizeof out, "%s/out.jsonl.gz", dir);
    snprintf(out2, sizeof out2, "%s/out2.jsonl.gz", dir);
    char results[1024];
    snprintf(results, sizeof results, "%s/results", dir);
    const char *in[] = {results};
    struct sn_import_params p = sn_import_default_params();
    p.progress = 3;
    struct sn_import_summary s;
    /* math refused as a whole, naming the file and the reason */
    CHECK(sn_import_run(&p, in, 1, out, &s, &err) == SN_E_FORMAT && strstr(err.msg, "math") &&
          strstr(err.msg, "skip-unsupported"));
    CHECK(!sn_path_exists(out));
    sn_err_clear(&err);
    p.skip_unsupported = true;
    CHECK_MSG(sn_import_run(&p, in, 1, out, &s, &err) == SN_OK, "%s", err.msg);
    CHECK(s.n_trajectories == 6 && s.n_files == 3 && s.n_empty_files == 1 &&
          s.n_unsupported_files == 1);
    CHECK(count_lines(out) == 6);
    /* byte-identical re-run */
    CHECK(sn_import_run(&p, in, 1, out2, &s, &err) == SN_OK);
    CHECK(sn_test_sh("cmp -s '%s' '%s'", out, out2) == 0);
    /* the repeated question's item id */
    struct sn_traj_reader *r;
    CHECK(sn_traj_reader_open(out, NULL, &r, &err) == SN_OK);
    struct sn_traj *t[3] = {0};
    for (int i = 0; i < 3; i++)
        sn_traj_reader_next(r, &t[i], &err);
    CHECK(t[0] && t[2] && strncmp(t[2]->item_id, t[0]->item_id, strlen(t[0]->item_id)) == 0 &&
          !strcmp(t[2]->item_id + strlen(t[0]->item_id), "-7"));
    CHECK(t[0] && t[1] && strcmp(t[0]->id, t[1]->id) != 0);
    for (int i = 0; i < 3; i++)
        sn_traj_free(t[i]);
    sn_traj_reader_close(r);
    /* a partial file (the first two lines, as a killed run leaves) imports those two */
    size_t cut = (size_t)(strchr(strchr(b.data, '\n') + 1, '\n') - b.data) + 1;
    write_file(f2, b.data, cut, false);
    CHECK(sn_import_run(&p, in, 1, out, &s, &err) == SN_OK && s.n_trajectories == 5);
    /* a malformed line names file:line; --skip-bad counts it */
    struct sn_buf b2 = {0};
    sn_buf_append(&b2, b.data, cut, &err);
    sn_buf_puts(&b2, "{not json\n", &err);
    sn_buf_append(&b2, b.data, cut, &err);
    write_file(f2, b2.data, b2.len, false);
    sn_err_clear(&err);
    CHECK(sn_import_run(&p, in, 1, out, &s, &err) == SN_E_FORMAT &&
          strstr(err.msg, "mmlu_100_3_3_2.jsonl:3"));
    p.skip_bad = true;
    sn_err_clear(&err);
    CHECK(sn_import_run(&p, in, 1, out, &s, &err) == SN_OK && s.n_bad == 1 &&
          s.n_trajectories == 7 && strstr(s.first_bad, ":3"));
    /* plain output when the name has no .gz */
    char outp[1100];
    snprintf(outp, sizeof outp, "%s/out.jsonl", dir);
    CHECK(sn_import_run(&p, in, 1, outp, &s, &err) == SN_OK);
    CHECK(sn_test_sh("head -c1 '%s' | grep -q '{'", outp) == 0);
    sn_buf_free(&b);
    sn_buf_free(&b2);
}

int main(void)
{
    answer_rule();
    records();
    files();
    return sn_test_done();
}
