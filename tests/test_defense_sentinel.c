/* tests/test_defense_sentinel.c: the library's sentinel (defense/defense.h, Algorithm 1 as an
** object; docs/agents.md "The sentinel") against `sentinel eval` on recorded debates. Three
** sim-backend debates (5 agents, 2 adversaries, 3 rounds, complete topology) are replayed by
** `sentinel eval --detector --items` with the suite's tiny detector, and again here: one
** sentinel per honest agent, fed each round's received messages and scoring them through the
** detector's sn_detector_score_prompt. For every (debate, round, sentinel, sender) the score
** must equal eval's to the printed bit (%.9g) and the exclusion eval's `blacklisted`; the
** sentinel's context must equal, byte for byte, the tuple builder's (sn_tuples_context) for
** every round. Also: argument checks, k and the unlisted rule, and rewind. */
#include "testutil.h"
#include "context/context.h"
#include "data/data.h"
#include "tuples/tuples.h"
#include "defense/defense.h"
#include "export/export.h"

static int det_score(void *d, const char *task, const char *const *hist, size_t n_hist,
                     const char *const *resp, size_t n, float *out, struct sn_err *err)
{
    return sn_detector_score_prompt(d, task, hist, n_hist, resp, n, out, err);
}

/* eval's rows of the detector ranker: "debate|round|sentinel|sender" -> score, blacklisted */
#define MAX_ROWS 4096
static struct row {
    char key[96];
    char score[32];
    int  blacklisted;
} rows[MAX_ROWS];
static size_t n_rows;

static void load_items(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "detector,", 9) != 0)
            continue;
        /* detector,"ID","scenario","dataset",round,sentinel,sender,adv,score,blacklisted */
        char id[64];
        int round, sentinel, sender, adv, bl;
        char score[32];
        const char *p = line + 9;
        if (sscanf(p, "\"%63[^\"]\",\"%*[^\"]\",\"%*[^\"]\",%d,%d,%d,%d,%31[^,],%d", id, &round,
                   &sentinel, &sender, &adv, score, &bl) != 7) {
            CHECK_MSG(0, "unparsed items row: %s", line);
            continue;
        }
        if (n_rows == MAX_ROWS)
            break;
        struct row *r = &rows[n_rows++];
        snprintf(r->key, sizeof r->key, "%s|%d|%d|%d", id, round, sentinel, sender);
        snprintf(r->score, sizeof r->score, "%s", score);
        r->blacklisted = bl;
    }
    if (f)
        fclose(f);
}

static const struct row *find_row(const char *id, size_t round, int sentinel, int sender)
{
    char key[96];
    snprintf(key, sizeof key, "%s|%zu|%d|%d", id, round, sentinel, sender);
    for (size_t i = 0; i < n_rows; i++)
        if (strcmp(rows[i].key, key) == 0)
            return &rows[i];
    return NULL;
}

static void unit_checks(void)
{
    struct sn_err err = {0};
    struct sn_sentinel *s = NULL;
    struct sn_sentinel_params p = sn_sentinel_default_params();
    CHECK(p.k == 1 && p.rule == SN_DEFENSE_RULE_ALL);
    p.self = 64;
    CHECK(sn_sentinel_create(&p, "t", &s, &err) == SN_E_ARG && !s);
    CHECK(strstr(err.msg, "self 64") != NULL);
    p.self = 0;
    p.k = 0;
    err = (struct sn_err){0};
    CHECK(sn_sentinel_create(&p, "t", &s, &err) == SN_E_ARG && !s);
    /* k = 2 under the unlisted rule: two new senders per round while there are any */
    p.k = 2;
    p.rule = SN_DEFENSE_RULE_UNLISTED;
    CHECK(sn_sentinel_create(&p, "t", &s, &err) == SN_OK);
    int snd[4] = {1, 2, 3, 4};
    float sc[4] = {0.5f, -1.0f, 2.0f, -3.0f};
    uint64_t added = 0;
    CHECK(sn_sentinel_update(s, 0, snd, sc, 4, &added, &err) == SN_OK);
    CHECK(added == ((1ULL << 2) | (1ULL << 4)) && sn_sentinel_blacklist(s) == added);
    CHECK(sn_sentinel_update(s, 1, snd, sc, 4, &added, &err) == SN_OK);
    CHECK(added == ((1ULL << 1) | (1ULL << 3)));
    CHECK(sn_sentinel_excludes(s, 3) && !sn_sentinel_excludes(s, 0) &&
          !sn_sentinel_excludes(s, 99));
    /* a bad sender is refused and changes nothing */
    int bad[1] = {64};
    uint64_t before = sn_sentinel_blacklist(s);
    err = (struct sn_err){0};
    CHECK(sn_sentinel_update(s, 2, bad, sc, 1, &added, &err) == SN_E_ARG);
    CHECK(sn_sentinel_blacklist(s) == before);
    /* history and rewind */
    struct sn_sentinel_msg m = {1, "It is 4. FINAL ANSWER: 4", "4"};
    CHECK(sn_sentinel_add_history(s, 0, &m, &err) == SN_OK);
    CHECK(sn_sentinel_add_history(s, 0, &m, &err) == SN_OK);
    struct sn_buf ctx = {0};
    CHECK(sn_sentinel_context(s, &ctx, &err) == SN_OK);
    CHECK(ctx.data && strstr(ctx.data, "Round 1, agent 1 (answer 4): It is 4.") != NULL);
    sn_sentinel_rewind(s, 0, 1);
    CHECK(sn_sentinel_blacklist(s) == 0 && sn_sentinel_n_history(s) == 1);
    sn_buf_free(&ctx);
    sn_sentinel_free(s);
    sn_sentinel_free(NULL);
}

int main(void)
{
    unit_checks();
    const char *bin = sn_test_bin(), *gguf = sn_test_tiny_detector();
    const char *dir = sn_test_dir("defense_sentinel");
    sn_test_write_file(sn_test_path(dir, "r.json"),
        "{\"simulate\": {\"endpoints\": {\"sim\": {\"kind\": \"sim\", \"competence\": 0.7}},\n"
        " \"defaults\": {\"dataset\": {\"kind\": \"synthetic\", \"n\": 3, \"seed\": 5},\n"
        "   \"backend\": \"sim\", \"n_agents\": 5, \"rounds\": 3, \"seed\": 2},\n"
        " \"experiments\": [{\"name\": \"d\", \"scenario\": \"collaboration\",\n"
        "   \"n_adversaries\": 2, \"topology\": \"complete\", \"strategy\": \"simultaneous\"}]}}\n");
    CHECK(sn_test_sh("cd '%s' && '%s' simulate --recipe r.json -o traj --progress none "
                     "> sim.txt 2>&1", dir, bin) == 0);
    const uint64_t seed = 11;
    CHECK(sn_test_sh("cd '%s' && '%s' eval --detector '%s' -i traj --items items.csv --seed %llu "
                     "--threads 1 "
                     "--bootstrap 0 --quiet > eval.txt 2>&1", dir, bin, gguf,
                     (unsigned long long)seed) == 0);
    load_items(sn_test_path(dir, "items.csv"));
    CHECK(n_rows > 0);

    struct sn_err err = {0};
    struct sn_detector *d = NULL;
    struct sn_detector_params dp = sn_detector_default_params();
    dp.n_threads = 1;
    CHECK_MSG(sn_detector_open(gguf, &dp, &d, &err) == SN_OK, "%s", err.msg);
    struct sn_sentinel_scorer scorer = {det_score, d};
    struct sn_traj_reader *r = NULL;
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    CHECK_MSG(sn_traj_reader_open(sn_test_path(dir, "traj/trajectories-0of1.jsonl.gz"), &rp, &r,
                                  &err) == SN_OK, "%s", err.msg);
    struct sn_tuples_params tp = sn_tuples_default_params();
    size_t n_debates = 0, n_matched = 0, n_excluded = 0, n_ctx = 0;
    struct sn_buf want = {0}, got = {0}, task = {0};
    for (; r && d;) {
        struct sn_traj *t = NULL;
        CHECK_MSG(sn_traj_reader_next(r, &t, &err) == SN_OK, "%s", err.msg);
        if (!t)
            break;
        n_debates++;
        /* the task as an agent renders it (context/) is the builder's */
        sn_buf_reset(&task);
        sn_buf_reset(&want);
        CHECK(sn_context_task_text(t->task, t->question, t->options, t->n_options, &task,
                                   &err) == SN_OK);
        CHECK(sn_tuples_task(t, &want, &err) == SN_OK);
        CHECK_MSG(task.data && want.data && strcmp(task.data, want.data) == 0, "task text:\n%s\n"
                  "-- vs --\n%s", task.data, want.data);
        struct sn_sentinel *sn[64] = {NULL};
        for (size_t k = 0; k < t->n_agents; k++) {
            if (t->agents[k].role != SN_ROLE_HONEST)
                continue;
            struct sn_sentinel_params p = sn_sentinel_default_params();
            p.self = (int)k;
            p.tie_seed = sn_seed_derive(seed, t->id, 0); /* eval's (eval/detect.c) */
            CHECK(sn_sentinel_create(&p, task.data, &sn[k], &err) == SN_OK);
        }
        for (size_t rd = 0; rd < t->n_rounds; rd++) {
            for (size_t k = 0; k < t->n_agents; k++) {
                if (!sn[k])
                    continue;
                /* the context of round rd is the builder's, byte for byte */
                sn_buf_reset(&want);
                sn_buf_reset(&got);
                CHECK(sn_tuples_context(t, rd, &tp, &want, &err) == SN_OK);
                CHECK(sn_sentinel_context(sn[k], &got, &err) == SN_OK);
                CHECK_MSG(want.data && got.data && strcmp(want.data, got.data) == 0,
                          "debate %s round %zu: context differs:\n%s\n-- vs --\n%s", t->id, rd,
                          want.data, got.data);
                n_ctx++;
                struct sn_sentinel_msg msgs[64];
                size_t m = 0;
                for (size_t j = 0; j < t->n_agents; j++) {
                    const struct sn_traj_msg *tm = sn_traj_msg_of(t, rd, (int)j);
                    if (j != k && tm)
                        msgs[m++] = (struct sn_sentinel_msg){(int)j, tm->text, tm->answer};
                }
                float sc[64];
                bool ex[64];
                CHECK_MSG(sn_sentinel_round(sn[k], &scorer, (int)rd, msgs, m, sc, ex, NULL,
                                            &err) == SN_OK, "%s", err.msg);
                for (size_t i = 0; i < m; i++) {
                    const struct row *w = find_row(t->id, rd, (int)k, msgs[i].agent);
                    char mine[32];
                    snprintf(mine, sizeof mine, "%.9g", (double)sc[i]);
                    CHECK_MSG(w != NULL, "no eval row for %s round %zu sentinel %zu sender %d",
                              t->id, rd, k, msgs[i].agent);
                    if (!w)
                        continue;
                    CHECK_MSG(strcmp(w->score, mine) == 0, "score %s vs eval's %s", mine,
                              w->score);
                    CHECK_MSG(w->blacklisted == (int)ex[i], "%s round %zu sentinel %zu sender "
                              "%d: excluded %d, eval %d", t->id, rd, k, msgs[i].agent, ex[i],
                              w->blacklisted);
                    n_matched++;
                    n_excluded += ex[i];
                }
            }
            /* the round joins every sentinel's history, in record order */
            for (size_t k = 0; k < t->n_agents; k++)
                for (size_t i = 0; sn[k] && i < t->rounds[rd].n_msgs; i++) {
                    const struct sn_traj_msg *tm = &t->rounds[rd].msgs[i];
                    struct sn_sentinel_msg hm = {tm->agent, tm->text, tm->answer};
                    CHECK(sn_sentinel_add_history(sn[k], rd, &hm, &err) == SN_OK);
                }
        }
        for (size_t k = 0; k < 64; k++)
            sn_sentinel_free(sn[k]);
        sn_traj_free(t);
    }
    CHECK(n_debates == 3);
    CHECK(n_matched == n_rows); /* every eval row, once */
    CHECK(n_excluded > 0 && n_ctx >= 3 * 3 * 3);
    sn_buf_free(&want);
    sn_buf_free(&got);
    sn_buf_free(&task);
    sn_traj_reader_close(r);
    sn_detector_free(d);
    return sn_test_done();
}
