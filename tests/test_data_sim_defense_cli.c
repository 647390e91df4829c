/* tests/test_data_sim_defense_cli.c: `sentinel simulate` with the `sentinel` defense scoring with
** the runtime detector ($SENTINEL_BIN; docs/simulate.md "Defense"). A tiny detector (random
** weights: the suite's tiny_detector fixture, tests/test_export_fixture.c) defends the
** honest agents of sim-backend collaboration debates:
**   - every debate records the defense and, from round 1 on, each honest agent's blacklist;
**   - the blacklists are replayed independently: each honest receiver scores the messages of
**     the previous round (complete topology, simultaneous strategy: everyone else's) with the
**     library's detector on the tuple builder's prompt for that round (its task and one
**     extractive entry per earlier message, built here from the parts, encoded with the
**     template's truncation), and Algorithm 1's bottom-k (sn_defense_bottom_k) gives the
**     recorded blacklist: the engine's context and the CLI's scorer reproduce training's;
**   - on those debates, sn_tuples_context equals, byte for byte, the context the tuple builder
**     gives every tuple of the round (default and other history settings), and `sentinel
**     eval`'s replay hands its rankers that same context;
**   - a `sentinel` defense without "detector", or with a missing file, is refused. */
#include "testutil.h"
#include "sim/sim.h"
#include "data/data.h"
#include "tuples/tuples.h"
#include "eval/detect.h"
#include "export/export.h"
#include "tokenizer/template.h"

static const char *bin;
static char dir[1024];

static void write_recipe(const char *name, const char *defense)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fprintf(f,
            "{\"simulate\": {\"endpoints\": {\"sim\": {\"kind\": \"sim\", \"competence\": 0.7}},\n"
            " \"defaults\": {\"dataset\": {\"kind\": \"synthetic\", \"n\": 3, \"seed\": 5},\n"
            "   \"backend\": \"sim\", \"n_agents\": 5, \"rounds\": 3, \"seed\": 2},\n"
            " \"experiments\": [{\"name\": \"def\", \"scenario\": \"collaboration\",\n"
            "   \"n_adversaries\": 2, \"topology\": \"complete\", \"strategy\": \"simultaneous\",\n"
            "   \"defense\": %s}]}}\n", defense);
    fclose(f);
}

static int sim(const char *recipe, const char *out)
{
    return sn_test_sh("cd '%s' && '%s' simulate --recipe %s -o %s --progress none > out.txt "
                      "2> err.txt", dir, bin, recipe, out);
}

static uint64_t mask_of(const struct sn_traj_msg *m)
{
    uint64_t b = 0;
    for (size_t i = 0; i < m->n_blacklisted; i++)
        b |= 1ULL << m->blacklisted[i];
    return b;
}

/* the tuple builder's context of every tuple, checked against sn_tuples_context */
struct ctx_check {
    const struct sn_traj *t;
    const struct sn_tuples_params *p;
    size_t n_tuples, n_bad;
};

static int on_tuple(void *user, const struct sn_tuple *tp, struct sn_err *err)
{
    struct ctx_check *c = user;
    struct sn_buf want = {0};
    int rc = sn_tuples_context(c->t, (size_t)tp->meta.round, c->p, &want, err);
    if (!rc && strcmp(want.data, tp->text[SN_FIELD_CONTEXT]) != 0) {
        c->n_bad++;
        fprintf(stderr, "round %d: builder context\n%s\n-- vs --\n%s\n", tp->meta.round,
                tp->text[SN_FIELD_CONTEXT], want.data);
    }
    c->n_tuples++;
    sn_buf_free(&want);
    return rc;
}

/* a ranker that records whether every view's context is sn_tuples_context of its round */
struct view_check {
    size_t n_views, n_bad;
};

static int rank_check(void *ctx, const struct sn_detect_view *v, double *scores,
                      struct sn_err *err)
{
    struct view_check *c = ctx;
    struct sn_tuples_params tp = sn_tuples_default_params();
    struct sn_buf want = {0};
    int rc = sn_tuples_context(v->traj, v->round, &tp, &want, err);
    c->n_views++;
    c->n_bad += !rc && strcmp(want.data, v->context) != 0;
    for (size_t i = 0; i < v->n_msgs; i++)
        scores[i] = (double)i;
    sn_buf_free(&want);
    return rc;
}

int main(void)
{
    bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN not set\n");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s", sn_test_dir("sim_defense_cli"));
    struct sn_err err = {0};
    char gg[1200], traj[1300];
    snprintf(gg, sizeof gg, "%s/d.gguf", dir);
    CHECK(sn_test_sh("cp '%s' '%s'", sn_test_tiny_detector(), gg) == 0);

    write_recipe("r.json", "{\"name\": \"sentinel\", \"detector\": \"d.gguf\", \"bottom_k\": 1}");
    CHECK(sim("r.json", "o") == 0);
    snprintf(traj, sizeof traj, "%s/o/trajectories-0of1.jsonl.gz", dir);

    struct sn_detector *d = NULL;
    CHECK_MSG(sn_detector_open(gg, NULL, &d, &err) == SN_OK, "%s", err.msg);
    struct sn_traj_reader *r = NULL;
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    CHECK_MSG(sn_traj_reader_open(traj, &rp, &r, &err) == SN_OK, "%s", err.msg);
    struct sn_tuples_params tp = sn_tuples_default_params();
    size_t n_debates = 0, n_checked = 0, n_nonempty = 0, n_ctx_tuples = 0;
    struct sn_buf ctx = {0};
    struct sn_ids ids = {0};
    for (; r && d;) {
        struct sn_traj *t = NULL;
        CHECK_MSG(sn_traj_reader_next(r, &t, &err) == SN_OK, "%s", err.msg);
        if (!t)
            break;
        n_debates++;
        CHECK(t->defense_name && !strcmp(t->defense_name, "sentinel"));
        uint64_t bl[SN_SIM_MAX_AGENTS] = {0};
        struct sn_buf task = {0};
        CHECK(sn_tuples_task(t, &task, &err) == SN_OK);
        char *hist[64];
        size_t n_hist = 0;
        for (size_t rd = 1; rd < t->n_rounds; rd++) {
            /* history entries of round rd - 1, appended */
            for (size_t i = 0; i < t->rounds[rd - 1].n_msgs && n_hist < 64; i++) {
                const struct sn_traj_msg *hm = &t->rounds[rd - 1].msgs[i];
                sn_buf_reset(&ctx);
                CHECK(sn_context_history_entry(rd - 1, hm->agent, hm->answer, hm->text,
                                               &tp.context, &ctx, &err) == SN_OK);
                hist[n_hist++] = sn_strdup(ctx.data);
            }
            for (size_t k = 0; k < t->n_agents; k++) {
                const struct sn_traj_msg *m = sn_traj_msg_of(t, rd, (int)k);
                if (t->agents[k].role != SN_ROLE_HONEST || !m)
                    continue;
                int snd[SN_SIM_MAX_AGENTS];
                double sc[SN_SIM_MAX_AGENTS];
                size_t n = 0;
                for (size_t j = 0; j < t->n_agents; j++) {
                    const struct sn_traj_msg *pm = sn_traj_msg_of(t, rd - 1, (int)j);
                    if (j == k || !pm)
                        continue;
                    /* the prompt as the tuple builder makes it, truncated by the template's
                    ** policy (oldest history first) to the exported max_len */
                    struct sn_prompt pr = {NULL, task.data, (const char *const *)hist, n_hist};
                    float f = 0;
                    CHECK_MSG(sn_template_encode(sn_detector_tokenizer(d), &pr, pm->text, 1024,
                                                 &ids, NULL, NULL, &err) == SN_OK &&
                              sn_detector_score_ids(d, ids.v, ids.n, &f, NULL, &err) == SN_OK,
                              "%s", err.msg);
                    snd[n] = (int)j;
                    sc[n++] = f;
                }
                bl[k] = sn_defense_bottom_k(bl[k], snd, sc, n, 1, SN_DEFENSE_RULE_ALL,
                                            sn_defense_round_seed(t->seed, (int)k,
                                                                  (int)rd));
                CHECK(m->has_blacklist);
                CHECK_MSG(mask_of(m) == bl[k], "debate %s round %zu agent %zu: recorded %llx, "
                          "replayed %llx", t->id, rd, k, (unsigned long long)mask_of(m),
                          (unsigned long long)bl[k]);
                n_checked++;
                n_nonempty += m->n_blacklisted > 0;
            }
        }
        /* the builder's contexts, with the default and with other history settings */
        for (int v = 0; v < 2; v++) {
            struct sn_tuples_params bp = sn_tuples_default_params();
            bp.max_pairs = 0;
            if (v) {
                bp.context.history_sentences = 1;
                bp.context.history_chars = 40;
            }
            struct sn_tuples *b = NULL;
            struct ctx_check cc = {t, &bp, 0, 0};
            CHECK(sn_tuples_create(&bp, &b, &err) == SN_OK);
            CHECK_MSG(sn_tuples_add(b, t, on_tuple, &cc, &err) == SN_OK, "%s", err.msg);
            CHECK(cc.n_tuples > 0 && cc.n_bad == 0);
            n_ctx_tuples += cc.n_tuples;
            sn_tuples_free(b);
        }
        /* what eval's replay hands a ranker */
        struct view_check vc = {0, 0};
        struct sn_detect_ranker rk = {"check", rank_check, &vc};
        struct sn_detect_params dp = sn_detect_default_params();
        dp.n_boot = 0;
        struct sn_detect *det = NULL;
        CHECK(sn_detect_create(&dp, &rk, &det, &err) == SN_OK);
        CHECK_MSG(sn_detect_add(det, t, NULL, &err) == SN_OK, "%s", err.msg);
        CHECK(vc.n_views > 0 && vc.n_bad == 0);
        sn_detect_free(det);
        for (size_t i = 0; i < n_hist; i++)
            sn_free(hist[i]);
        sn_buf_free(&task);
        sn_traj_free(t);
    }
    CHECK(n_debates == 3);
    CHECK(n_ctx_tuples > 0);
    CHECK(n_checked >= 3 * 3 * 2 && n_nonempty == n_checked);
    sn_buf_free(&ctx);
    sn_ids_free(&ids);
    sn_traj_reader_close(r);
    sn_detector_free(d);

    /* refused: no detector key; a missing file */
    write_recipe("r2.json", "{\"name\": \"sentinel\", \"bottom_k\": 1}");
    CHECK(sim("r2.json", "o2") != 0);
    CHECK(sn_test_sh("grep -q 'detector' '%s/err.txt'", dir) == 0);
    write_recipe("r3.json", "{\"name\": \"sentinel\", \"detector\": \"nope.gguf\"}");
    CHECK(sim("r3.json", "o3") != 0);
    CHECK(sn_test_sh("grep -q 'nope.gguf' '%s/err.txt'", dir) == 0);
    return sn_test_done();
}
