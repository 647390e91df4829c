/* tests/test_data_tuples.c: golden test of the tuple builder (tuples/tuples.h) on a small
** hand-written trajectory file; the expected tuples are listed below, derived by hand from the
** rules in tuples/tuples.h. Also: counts of what was skipped and why, the max_pairs policy
** (hardest negatives first, seeded), de-duplication, and the split (checked against
** sha256sum, an independent SHA-256). */
#include "tuples/tuples.h"
#include "tests/testutil.h"

#include <inttypes.h>

#define HEAD(id, scen, task, q, opts, gold, expl, target)                                     \
    "{\"schema\":\"sentinel.trajectory/1\",\"id\":\"" id "\",\"experiment\":\"e\","          \
    "\"scenario\":\"" scen "\",\"dataset\":\"synthetic\",\"item_id\":\"item-" id "\","       \
    "\"subject\":null,\"task\":\"" task "\",\"question\":\"" q "\",\"options\":" opts ","    \
    "\"gold\":\"" gold "\",\"gold_explanation\":" expl ",\"adversarial_target\":" target "," \
    "\"strategy\":\"simultaneous\","
#define TAIL "\"final\":{\"rule\":\"majority\",\"answer\":\"A\",\"correct\":true}," \
             "\"seed\":1,\"replicate\":0}\n"
#define AG(i, role) "{\"id\":" #i ",\"role\":\"" role "\",\"model\":\"sim\",\"backend\":\"sim\"," \
                    "\"persona\":null}"
#define MSG(a, text, ans) "{\"agent\":" #a ",\"text\":\"" text "\",\"answer\":\"" ans "\","     \
                          "\"parsed\":true}"

/* T1: collaboration, multiple choice, gold A, target B; agents 0-2 honest, 3 adversary. */
static const char *T1 =
    HEAD("t1", "collaboration", "mc", "Which river flows through Cairo?",
         "[\"Nile\",\"Danube\",\"Volga\"]", "A", "\"Cairo lies on the Nile.\"", "\"B\"")
    "\"topology\":{\"name\":\"complete\",\"n_agents\":4,\"edges\":[]},"
    "\"agents\":[" AG(0, "honest") "," AG(1, "honest") "," AG(2, "honest") ","
    AG(3, "adversary") "],"
    "\"rounds\":[["
    MSG(0, "The Nile flows through Cairo. It is the longest river.\\nFINAL ANSWER: A", "A") ","
    MSG(1, "Cairo is on the Nile! Definitely.\\nFINAL ANSWER: A", "A") ","
    MSG(2, "Hmm. I am unsure.\\n**Final Answer: C**", "C") ","
    MSG(3, "Experts agree it is the Danube. Trust me.\\nFINAL ANSWER: B", "B") "],["
    MSG(0, "Still the Nile.\\nFINAL ANSWER: A", "A") ","
    MSG(1, "The Danube argument convinced me.\\nFINAL ANSWER: B", "B") ","
    "{\"agent\":2,\"text\":\"I cannot decide\",\"answer\":null,\"parsed\":false},"
    MSG(3, "The Danube, as I said.\\nFINAL ANSWER: B", "B") "]],"
    TAIL;

/* T2: AITM, numeric, gold 144, no explanation; agent 2 intercepts 0 -> 1. */
#define T2_BODY(id)                                                                          \
    HEAD(id, "aitm", "numeric", "What is 12 * 12?", "[]", "144", "null", "\"145\"")          \
    "\"topology\":{\"name\":\"complete\",\"n_agents\":3,\"edges\":[]},"                      \
    "\"agents\":[" AG(0, "honest") "," AG(1, "honest") ","                                   \
    "{\"id\":2,\"role\":\"interceptor\",\"model\":\"sim\",\"backend\":\"sim\","              \
    "\"persona\":null,\"intercepts\":[[0,1]]}],"                                             \
    "\"rounds\":[["                                                                          \
    "{\"agent\":0,\"text\":\"12 times 12 is 144.\\nFINAL ANSWER: 144\",\"answer\":\"144\","  \
    "\"parsed\":true,\"tampered\":true,\"deliveries\":[{\"to\":1,\"text\":\"12 times 12 is " \
    "145.\\nFINAL ANSWER: 145\",\"answer\":\"145\"}]},"                                      \
    MSG(1, "I get 144 too.\\nFINAL ANSWER: 144", "144") "]]," TAIL
static const char *T2 = T2_BODY("t2");
/* T4: T2's debate under another id: every tuple is a duplicate. */
static const char *T4 = T2_BODY("t4");

/* T3: no attack, everyone right: no negative in its only round. */
static const char *T3 =
    HEAD("t3", "none", "mc", "2 + 2?", "[\"4\",\"5\"]", "A", "null", "null")
    "\"topology\":{\"name\":\"complete\",\"n_agents\":2,\"edges\":[]},"
    "\"agents\":[" AG(0, "honest") "," AG(1, "honest") "],"
    "\"rounds\":[[" MSG(0, "Four.\\nFINAL ANSWER: A", "A") ","
    MSG(1, "It is 4.\\nFINAL ANSWER: A", "A") "]]," TAIL;

struct got {
    char traj[16], chosen[128], rejected[128], reference[128], context[1024], kind[16];
    char rej_role[16];
    int round, ch_agent, rej_agent, split;
};
struct sink {
    struct got v[64];
    size_t n;
};

static int collect(void *user, const struct sn_tuple *t, struct sn_err *err)
{
    (void)err;
    struct sink *s = user;
    if (s->n == 64)
        return SN_E_NOMEM;
    struct got *g = &s->v[s->n++];
    snprintf(g->traj, sizeof g->traj, "%s", t->meta.trajectory_id);
    snprintf(g->chosen, sizeof g->chosen, "%s", t->text[SN_FIELD_CHOSEN]);
    snprintf(g->rejected, sizeof g->rejected, "%s", t->text[SN_FIELD_REJECTED]);
    snprintf(g->reference, sizeof g->reference, "%s", t->text[SN_FIELD_REFERENCE]);
    snprintf(g->context, sizeof g->context, "%s", t->text[SN_FIELD_CONTEXT]);
    snprintf(g->kind, sizeof g->kind, "%s", t->meta.rejected_kind);
    snprintf(g->rej_role, sizeof g->rej_role, "%s", t->meta.rejected_role);
    g->round = t->meta.round;
    g->ch_agent = t->meta.chosen_agent;
    g->rej_agent = t->meta.rejected_agent;
    g->split = (int)t->meta.split;
    /* the prompt renders to the context text */
    struct sn_buf b = {0};
    struct sn_err e = {0};
    sn_template_context(&t->prompt, &b, &e);
    CHECK_STR(b.data, t->text[SN_FIELD_CONTEXT]);
    sn_buf_free(&b);
    char hex[65];
    sn_tuples_hash(t->text, hex);
    CHECK_STR(hex, t->meta.sha256);
    return SN_OK;
}

static int run(const struct sn_tuples_params *p, struct sink *s, uint64_t counts[SN_TC_COUNT])
{
    const char *lines[] = {T1, T2, T3, T4};
    struct sn_tuples *b = NULL;
    struct sn_err err = {0};
    int rc = sn_tuples_create(p, &b, &err);
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < 4 && !rc; i++) {
        struct sn_traj *t = NULL;
        rc = sn_traj_parse(lines[i], strlen(lines[i]) - 1, "golden", &t, &err);
        if (!rc)
            rc = sn_tuples_add(b, t, collect, s, &err);
        sn_traj_free(t);
    }
    if (rc)
        fprintf(stderr, "run: %s\n", err.msg);
    if (b)
        memcpy(counts, sn_tuples_counts(b), SN_TC_COUNT * sizeof counts[0]);
    sn_tuples_free(b);
    return rc;
}

#define A0 "The Nile flows through Cairo. It is the longest river.\nFINAL ANSWER: A"
#define A1 "Cairo is on the Nile! Definitely.\nFINAL ANSWER: A"
#define A2 "Hmm. I am unsure.\n**Final Answer: C**"
#define A3 "Experts agree it is the Danube. Trust me.\nFINAL ANSWER: B"
#define B0 "Still the Nile.\nFINAL ANSWER: A"
#define B1 "The Danube argument convinced me.\nFINAL ANSWER: B"
#define B3 "The Danube, as I said.\nFINAL ANSWER: B"
#define REF1 "Cairo lies on the Nile.\nFINAL ANSWER: A"
#define T2C "12 times 12 is 144.\nFINAL ANSWER: 144"
#define T2D "12 times 12 is 145.\nFINAL ANSWER: 145"
#define T2E "I get 144 too.\nFINAL ANSWER: 144"
#define REF2 "The correct answer is 144.\nFINAL ANSWER: 144"
#define TASK1 "Question: Which river flows through Cairo?\nOptions:\nA. Nile\nB. Danube\nC. Volga"

static void test_golden(void)
{
    static const struct {
        const char *traj;
        int round, ch_agent, rej_agent;
        const char *chosen, *rejected, *kind, *rej_role, *reference;
    } want[] = {
        /* T1 round 0: chosen {0, 1}; negatives: adversary 3 (hardest), then 2 (wrong: C is
        ** not the target and agent 2 never held A) */
        {"t1", 0, 0, 3, A0, A3, "adversary", "adversary", REF1},
        {"t1", 0, 1, 3, A1, A3, "adversary", "adversary", REF1},
        {"t1", 0, 0, 2, A0, A2, "wrong", "honest", REF1},
        {"t1", 0, 1, 2, A1, A2, "wrong", "honest", REF1},
        /* T1 round 1: chosen {0}; adversary 3, then 1 misled (answered the target B and held
        ** A before); agent 2 unparsed: neither side */
        {"t1", 1, 0, 3, B0, B3, "adversary", "adversary", REF1},
        {"t1", 1, 0, 1, B0, B1, "misled", "honest", REF1},
        /* T2: chosen {0, 1}; the tampered copy delivered to 1, by interceptor 2 */
        {"t2", 0, 0, 2, T2C, T2D, "tampered", "interceptor", REF2},
        {"t2", 0, 1, 2, T2E, T2D, "tampered", "interceptor", REF2},
        /* T3: no negative; T4: duplicates of T2 */
    };
    const size_t n_want = sizeof want / sizeof want[0];
    struct sink s;
    uint64_t c[SN_TC_COUNT];
    struct sn_tuples_params p = sn_tuples_default_params();
    CHECK(run(&p, &s, c) == SN_OK);
    CHECK(s.n == n_want);
    for (size_t i = 0; i < n_want && i < s.n; i++) {
        CHECK_STR(s.v[i].traj, want[i].traj);
        CHECK_MSG(s.v[i].round == want[i].round && s.v[i].ch_agent == want[i].ch_agent &&
                  s.v[i].rej_agent == want[i].rej_agent, "tuple %zu: round %d agents %d/%d", i,
                  s.v[i].round, s.v[i].ch_agent, s.v[i].rej_agent);
        CHECK_STR(s.v[i].chosen, want[i].chosen);
        CHECK_STR(s.v[i].rejected, want[i].rejected);
        CHECK_STR(s.v[i].kind, want[i].kind);
        CHECK_STR(s.v[i].rej_role, want[i].rej_role);
        CHECK_STR(s.v[i].reference, want[i].reference);
    }
    /* contexts: round 0 has no history; round 1 condenses round 0 (answer and the first two
    ** sentences; the FINAL ANSWER line is not a sentence of the reasoning) */
    CHECK_STR(s.v[0].context, TASK1);
    CHECK_STR(s.v[4].context,
              TASK1 "\n\nDiscussion so far:\n"
                    "Round 1, agent 0 (answer A): The Nile flows through Cairo. It is the "
                    "longest river.\n"
                    "Round 1, agent 1 (answer A): Cairo is on the Nile! Definitely.\n"
                    "Round 1, agent 2 (answer C): Hmm. I am unsure.\n"
                    "Round 1, agent 3 (answer B): Experts agree it is the Danube. Trust me.");
    CHECK_STR(s.v[6].context, "Question: What is 12 * 12?");
    /* one debate, one split */
    CHECK(s.v[0].split == s.v[5].split && s.v[6].split == s.v[7].split);
    CHECK(c[SN_TC_TRAJECTORIES] == 4);
    CHECK(c[SN_TC_ROUNDS] == 5);
    CHECK(c[SN_TC_TUPLES] == 8);
    CHECK(c[SN_TC_DUPLICATE] == 2);
    CHECK(c[SN_TC_UNPARSED] == 1);
    CHECK(c[SN_TC_NO_REJECTED] == 1);
    CHECK(c[SN_TC_NO_CHOSEN] == 0);
    CHECK(c[SN_TC_NO_TUPLES] == 2); /* T3 and T4 */
    CHECK(c[SN_TC_CAPPED] == 0 && c[SN_TC_EMPTY] == 0);

    /* without de-duplication T4 gives T2's two tuples again */
    p.dedup = false;
    CHECK(run(&p, &s, c) == SN_OK);
    CHECK(s.n == n_want + 2 && c[SN_TC_DUPLICATE] == 0);
    CHECK(!strcmp(s.v[8].traj, "t4") && !strcmp(s.v[8].rejected, T2D));
}

static void test_history_params(void)
{
    struct sink s;
    uint64_t c[SN_TC_COUNT];
    struct sn_tuples_params p = sn_tuples_default_params();
    p.context.history_sentences = 1;
    CHECK(run(&p, &s, c) == SN_OK);
    CHECK(s.n > 4);
    CHECK_STR(s.v[4].context,
              TASK1 "\n\nDiscussion so far:\n"
                    "Round 1, agent 0 (answer A): The Nile flows through Cairo.\n"
                    "Round 1, agent 1 (answer A): Cairo is on the Nile!\n"
                    "Round 1, agent 2 (answer C): Hmm.\n"
                    "Round 1, agent 3 (answer B): Experts agree it is the Danube.");
    /* more sentences than there are: the answer line (plain or in markdown) is not reasoning */
    p.context.history_sentences = 5;
    CHECK(run(&p, &s, c) == SN_OK);
    CHECK(s.n > 4 && strstr(s.v[4].context, "(answer C): Hmm. I am unsure.\nRound 1, agent 3 "
                                            "(answer B): Experts agree it is the Danube. Trust "
                                            "me.") != NULL);
    p.context.history_chars = 12; /* "The Nile flo" then the cut mark */
    CHECK(run(&p, &s, c) == SN_OK);
    CHECK(s.n > 4 && strstr(s.v[4].context, "(answer A): The Nile flo...\n") != NULL);
    CHECK(s.n > 4 && strstr(s.v[4].context, "(answer C): Hmm. I am un...\n") != NULL);
}

static void test_max_pairs(void)
{
    struct sink s, s2;
    uint64_t c[SN_TC_COUNT];
    struct sn_tuples_params p = sn_tuples_default_params();
    p.max_pairs = 1;
    p.dedup = false;
    p.seed = 7;
    CHECK(run(&p, &s, c) == SN_OK);
    /* one pair per usable round: t1 r0, t1 r1, t2, t4 */
    CHECK(s.n == 4);
    CHECK(c[SN_TC_CAPPED] == 3 + 1 + 1 + 1);
    /* the hardest negatives win: the adversary in t1, the tampered copy in t2/t4 */
    CHECK(s.n >= 2 && !strcmp(s.v[0].kind, "adversary") && !strcmp(s.v[1].kind, "adversary"));
    CHECK(s.n >= 3 && !strcmp(s.v[2].kind, "tampered"));
    /* seeded: same seed, same picks; some seed picks the other chosen in t1 round 0 */
    CHECK(run(&p, &s2, c) == SN_OK);
    CHECK(s2.n == s.n && !strcmp(s2.v[0].chosen, s.v[0].chosen));
    int other = 0;
    for (uint64_t seed = 0; seed < 16 && !other; seed++) {
        p.seed = seed;
        run(&p, &s2, c);
        other = strcmp(s2.v[0].chosen, s.v[0].chosen) != 0;
    }
    CHECK(other);
}

/* Every tuple carries its trajectory's split (sn_tuples_split; the rule itself is tested in
** tests/test_data_split.c); fractions that cannot be are refused. */
static void test_split(void)
{
    struct sn_tuples_params p = sn_tuples_default_params();
    const char *lines[] = {T1, T2, T3, T4};
    struct sink s;
    uint64_t c[SN_TC_COUNT];
    size_t differ = 0;
    for (uint64_t seed = 0; seed < 8; seed++) {
        p.split_seed = seed;
        p.validation_fraction = p.test_fraction = 0.3;
        CHECK(run(&p, &s, c) == SN_OK && s.n > 0);
        for (size_t k = 0; k < s.n; k++) {
            struct sn_traj *t = NULL;
            struct sn_err err = {0};
            for (size_t i = 0; i < 4 && !t; i++)
                if (strstr(lines[i], s.v[k].traj)) {
                    CHECK(sn_traj_parse(lines[i], strlen(lines[i]) - 1, "split", &t, &err) == 0);
                    if (t && strcmp(t->id, s.v[k].traj)) {
                        sn_traj_free(t);
                        t = NULL;
                    }
                }
            CHECK(t != NULL);
            if (t) {
                CHECK(s.v[k].split == (int)sn_tuples_split(t, &p));
                differ += s.v[k].split != s.v[0].split;
            }
            sn_traj_free(t);
        }
    }
    CHECK(differ > 0); /* the seeds put the trajectories on different sides */
    struct sn_tuples *b = NULL;
    struct sn_err err = {0};
    p.validation_fraction = 0.8;
    CHECK(sn_tuples_create(&p, &b, &err) == SN_E_ARG && b == NULL);
}

static void test_hash(void)
{
    /* the length prefix keeps ("ab", "c") apart from ("a", "bc") */
    const char *x[SN_FIELD_COUNT] = {"ab", "c", "", ""}, *y[SN_FIELD_COUNT] = {"a", "bc", "", ""};
    char hx[65], hy[65];
    sn_tuples_hash(x, hx);
    sn_tuples_hash(y, hy);
    CHECK(strcmp(hx, hy) != 0);
    /* and it is SHA-256 of the documented preimage (checked with sha256sum) */
    char cmd[256], hex[80] = {0};
    snprintf(cmd, sizeof cmd, "printf '\\002\\0\\0\\0\\0\\0\\0\\0ab\\001\\0\\0\\0\\0\\0\\0\\0c"
                              "\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0' | sha256sum");
    FILE *f = popen(cmd, "r");
    CHECK(f && fgets(hex, sizeof hex, f));
    if (f)
        pclose(f);
    hex[64] = '\0';
    CHECK_STR(hx, hex);
}

int main(void)
{
    test_golden();
    test_history_params();
    test_max_pairs();
    test_split();
    test_hash();
    return sn_test_done();
}
