/* tests/test_data_tuples_build.c: `sentinel build` end to end (tuples/tuples.h sn_tuples_build
** and cli/cmd_build.c) on generated trajectories and the demo tokenizer:
**   - every sequence in the shards fits max_len, is a ChatML rendering (starts with
**     <|im_start|>, ends with <|im_end|> "\n"), keeps the task, and keeps the END of its
**     response (the answer) even when truncation cut it;
**   - one item (question) never spans two splits; shard attributes agree with tuple metadata;
**   - SIGKILL mid-shard (the SENTINEL_TEST_KILL_AFTER hook) then a re-run: the manifest never
**     lists a partial shard and the final directory is byte-identical to an uninterrupted build;
**   - a malformed line names file:line and the field; --skip-bad counts it;
**   - a resume with another tokenizer is refused naming the setting; recipe key errors;
**     summary "llm" without build.summary_endpoint exits 2 (tests/test_data_tuples_llm.c covers
**     the LLM paths); inspect reads shards, manifests and trajectories, and a truncated GGUF
**     fails naming the problem. */
#include "tuples/tuples.h"
#include "tests/testutil.h"

#include <inttypes.h>
#include <unistd.h>

static char dir[1024], traj[1200], tokp[1200], bin[1024], recipe[1200], small[1200];

static const char *filler[] = {
    "I reviewed the question carefully.", "Several facts point the same way.",
    "The other agents raised fair points, but the evidence is clear.",
    "Let me explain my reasoning step by step.", "This is a well-known result.",
    "One could argue otherwise, yet the details do not support it."};

/* N debates, deterministic. Some messages are long so truncation happens at max_len 256. */
static int write_trajectories(const char *path, int n)
{
    struct sn_rng rng;
    sn_rng_seed(&rng, 99);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    for (int d = 0; d < n; d++) {
        cJSON *t = cJSON_CreateObject();
        char id[32], item[32];
        snprintf(id, sizeof id, "gen-%04d", d);
        snprintf(item, sizeof item, "item-%d", d % 37);
        const char *scen = d % 3 == 0 ? "collaboration" : d % 3 == 1 ? "aitm" : "netsafe";
        cJSON_AddStringToObject(t, "schema", "sentinel.trajectory/1");
        cJSON_AddStringToObject(t, "id", id);
        cJSON_AddStringToObject(t, "experiment", scen);
        cJSON_AddStringToObject(t, "scenario", scen);
        cJSON_AddStringToObject(t, "dataset", "synthetic");
        cJSON_AddStringToObject(t, "item_id", item);
        cJSON_AddNullToObject(t, "subject");
        cJSON_AddStringToObject(t, "task", "mc");
        char q[96];
        snprintf(q, sizeof q, "Which option is right for item %d?", d);
        cJSON_AddStringToObject(t, "question", q);
        const char *opts[] = {"alpha", "beta", "gamma", "delta"};
        cJSON_AddItemToObject(t, "options", cJSON_CreateStringArray(opts, 4));
        const char *gold = "A", *target = "B";
        cJSON_AddStringToObject(t, "gold", gold);
        if (d % 2)
            cJSON_AddStringToObject(t, "gold_explanation", "Alpha is right by definition.");
        else
            cJSON_AddNullToObject(t, "gold_explanation");
        cJSON_AddStringToObject(t, "adversarial_target", target);
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
            cJSON_AddStringToObject(o, "model", "sim");
            cJSON_AddStringToObject(o, "backend", "sim");
            cJSON_AddNullToObject(o, "persona");
            cJSON_AddItemToArray(ag, o);
        }
        cJSON *rounds = cJSON_AddArrayToObject(t, "rounds");
        for (int r = 0; r < 3; r++) {
            cJSON *round = cJSON_CreateArray();
            for (int a = 0; a < 5; a++) {
                char text[2048];
                size_t len = 0;
                const char *ans = a >= 3 ? target : sn_rng_below(&rng, 4) ? gold : "C";
                int nf = 1 + (int)sn_rng_below(&rng, 3) + (sn_rng_below(&rng, 5) == 0 ? 25 : 0);
                for (int k = 0; k < nf; k++)
                    len += (size_t)snprintf(text + len, sizeof text - len, "%s ",
                                            filler[sn_rng_below(&rng, 6)]);
                snprintf(text + len, sizeof text - len, "Agent %d, round %d, debate %d: my "
                         "answer stands.\nFINAL ANSWER: %s", a, r, d, ans);
                sn_test_traj_add_message(round, a, text, ans);
            }
            cJSON_AddItemToArray(rounds, round);
        }
        sn_test_traj_add_final(t, gold, 1, d);
        char *s = cJSON_PrintUnformatted(t);
        fprintf(f, "%s\n", s);
        cJSON_free(s);
        cJSON_Delete(t);
    }
    return fclose(f) != 0;
}

static struct sn_tokenizer *tok;

static void check_shards(const char *out, size_t max_len, int64_t want_total)
{
    struct sn_manifest *m = NULL;
    struct sn_err err = {0};
    CHECK(sn_manifest_load(out, &m, &err) == SN_OK);
    if (!m)
        return;
    CHECK(m->complete);
    CHECK(sn_manifest_verify(m, &err) == SN_OK);
    int64_t total = 0;
    size_t bad = 0, truncated = 0, checked = 0;
    int32_t start = sn_tokenizer_token_id(tok, "<|im_start|>");
    int32_t end = sn_tokenizer_token_id(tok, "<|im_end|>"), nl = sn_tokenizer_token_id(tok, "\n");
    /* item -> split, to see that no question spans two splits */
    cJSON *where = cJSON_CreateObject();
    for (size_t s = 0; s < m->n_shards; s++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", out, m->shards[s].file);
        struct sn_shard_reader *r = NULL;
        struct sn_shard_reader_params rp = sn_shard_reader_default_params();
        rp.tokenizer_hash = sn_tokenizer_hash(tok);
        rp.template_id = SN_TEMPLATE_ID;
        CHECK(sn_shard_reader_open(path, &rp, &r, &err) == SN_OK);
        if (!r)
            continue;
        CHECK((int64_t)sn_shard_reader_count(r) == m->shards[s].count);
        CHECK(sn_shard_reader_info(r)->split == m->shards[s].split);
        total += m->shards[s].count;
        for (size_t i = 0; i < sn_shard_reader_count(r); i++) {
            struct sn_tuple_view v;
            struct sn_tuple_meta me;
            sn_shard_reader_get(r, i, &v, &err);
            CHECK(sn_shard_reader_meta(r, i, &me, &err) == SN_OK);
            bad += me.split != m->shards[s].split;
            const cJSON *seen = cJSON_GetObjectItemCaseSensitive(where, me.item_id);
            if (seen)
                bad += (int)seen->valuedouble != (int)me.split;
            else
                cJSON_AddNumberToObject(where, me.item_id, me.split);
            char *ctx = NULL;
            sn_shard_reader_text(r, i, SN_FIELD_CONTEXT, &ctx, &err);
            const char *nl1 = ctx ? strstr(ctx, "\nOptions:") : NULL;
            char *question = ctx && nl1 ? sn_strndup(ctx, (size_t)(nl1 - ctx)) : NULL;
            for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
                size_t n = v.n_ids[f];
                bad += n > max_len || n < 4;
                if (n < 4)
                    continue;
                bad += v.ids[f][0] != start || v.ids[f][n - 2] != end || v.ids[f][n - 1] != nl;
                char *dec = NULL, *resp = NULL;
                size_t len = 0;
                sn_tokenizer_decode(tok, v.ids[f], n, &dec, &len, &err);
                sn_shard_reader_text(r, i, (enum sn_field)f, &resp, &err);
                /* the answer end of the response survives, right before <|im_end|>\n */
                size_t rl = resp ? strlen(resp) : 0, tail = rl < 24 ? rl : 24;
                char want[64];
                snprintf(want, sizeof want, "%s<|im_end|>\n", resp ? resp + rl - tail : "");
                size_t wl = strlen(want);
                bad += !dec || len < wl || strcmp(dec + len - wl, want) != 0;
                /* the task (question + options) is never cut */
                bad += !dec || !question || !strstr(dec, question) || !strstr(dec, "D. delta");
                truncated += dec && strstr(dec, "assistant\n[...] ") != NULL;
                checked++;
                sn_free(dec);
                sn_free(resp);
            }
            sn_free(ctx);
            sn_free(question);
        }
        sn_shard_reader_close(r);
    }
    CHECK_MSG(bad == 0, "%zu bad sequences of %zu", bad, checked);
    CHECK(total == want_total);
    CHECK(truncated > 0); /* the long messages were cut at the front */
    cJSON_Delete(where);
    sn_manifest_free(m);
}

static int stop_at_120(void *user, const struct sn_build_progress *pr)
{
    (void)user;
    return pr->tuples >= 120;
}

static int run_cli(const char *env, const char *out, const char *extra)
{
    int st = sn_test_sh("%s '%s' build --recipe '%s' -i '%s' -o '%s' --tokenizer '%s' "
                        "--max-len 256 --shard-size 48 --progress none %s > '%s.log' 2>&1",
                        env, bin, recipe, traj, out, tokp, extra, out);
    return st;
}

int main(void)
{
    const char *b = getenv("SENTINEL_BIN");
    struct sn_err err = {0};
    snprintf(dir, sizeof dir, "%s", sn_test_dir("data_tuples_build"));
    snprintf(bin, sizeof bin, "%s", b ? b : "./sentinel");
    snprintf(traj, sizeof traj, "%s/traj.jsonl", dir);
    snprintf(tokp, sizeof tokp, "%s/tok.json", dir);
    CHECK(write_trajectories(traj, 24) == 0);
    /* splits of a quarter each, so every split gets shards */
    snprintf(recipe, sizeof recipe, "%s/fractions.json", dir);
    CHECK(sn_test_sh("printf '{\"build\": {\"validation_fraction\": 0.25, "
                     "\"test_fraction\": 0.25}}' > '%s'", recipe) == 0);
    snprintf(small, sizeof small, "%s/small.jsonl", dir);
    CHECK(sn_test_sh("head -n 4 '%s' > '%s'", traj, small) == 0);
    if (sn_tokenizer_write_demo(tokp, &err) || sn_tokenizer_open(tokp, &tok, &err)) {
        fprintf(stderr, "demo tokenizer: %s\n", err.msg);
        return 1;
    }

    /* library call */
    char out[1200];
    snprintf(out, sizeof out, "%s/lib", dir);
    struct sn_build_params p = sn_build_default_params();
    const char *in[] = {traj};
    p.inputs = in;
    p.n_inputs = 1;
    p.out_dir = out;
    p.tokenizer_path = tokp;
    p.max_len = 256;
    p.shard_size = 48;
    p.tuples.validation_fraction = 0.25;
    p.tuples.test_fraction = 0.25;
    struct sn_build_report rep;
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK);
    /* 24 debates x 3 rounds; per round chosen = honest A answers, rejected = 2 adversaries +
    ** honest C answers: every round has both (adversaries always answer B) unless no honest
    ** agent answered A */
    CHECK(rep.counts[SN_TC_TRAJECTORIES] == 24 && rep.counts[SN_TC_ROUNDS] == 72);
    CHECK(rep.counts[SN_TC_NO_REJECTED] == 0);
    int64_t total = rep.per_split[0] + rep.per_split[1] + rep.per_split[2];
    CHECK(total == (int64_t)rep.counts[SN_TC_TUPLES] && total > 200);
    CHECK(!rep.resumed && !rep.was_complete);
    check_shards(out, 256, total);
    /* again: nothing to do */
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK);
    CHECK(rep.was_complete && rep.counts[SN_TC_TUPLES] == (uint64_t)total);

    /* cancelled from the progress callback (what Ctrl-C does), then resumed: same bytes */
    char cancelled[1200];
    snprintf(cancelled, sizeof cancelled, "%s/cancelled", dir);
    p.out_dir = cancelled;
    p.progress = stop_at_120;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_E_CANCELLED);
    CHECK(sn_test_sh("grep -q '\"complete\":[[:space:]]*false' '%s/manifest.json'", cancelled)
          == 0);
    CHECK(sn_test_sh("ls '%s' | grep -q tmp", cancelled) != 0);
    p.progress = NULL;
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK && rep.resumed);
    CHECK(sn_test_sh("diff -r '%s' '%s'", out, cancelled) == 0);
    p.out_dir = out;

    /* CLI, uninterrupted, and gzip input gives the same shards as plain */
    char full[1200], killed[1200], gz[1300];
    snprintf(full, sizeof full, "%s/full", dir);
    CHECK(run_cli("", full, "") == 0);
    CHECK(sn_test_sh("diff -r '%s' '%s'", out, full) == 0); /* library call == CLI */

    /* killed mid-shard twice (before any shard, then in the middle), then finished */
    snprintf(killed, sizeof killed, "%s/killed", dir);
    CHECK(run_cli("SENTINEL_TEST_KILL_AFTER=25", killed, "") != 0);
    CHECK(sn_test_sh("test ! -e '%s/manifest.json'", killed) == 0); /* no shard was complete */
    int st = run_cli("SENTINEL_TEST_KILL_AFTER=160", killed, "");
    CHECK(st != 0);
    struct sn_manifest *m = NULL;
    CHECK(sn_manifest_load(killed, &m, &err) == SN_OK);
    if (m) {
        CHECK(!m->complete && m->n_shards >= 1);
        for (size_t i = 0; i < m->n_shards; i++) /* only full shards so far */
            CHECK(m->shards[i].count == 48);
        CHECK(sn_manifest_verify(m, &err) == SN_OK);
        sn_manifest_free(m);
    }
    CHECK(run_cli("SENTINEL_TEST_KILL_AFTER=200", killed, "") != 0); /* resumed, killed again */
    CHECK(run_cli("", killed, "") == 0);
    CHECK(sn_test_sh("ls '%s' | grep -q validation-00001.h5 && ls '%s' | grep -q test-00001.h5",
                     killed, killed) == 0);
    CHECK(sn_test_sh("grep -q '(resumed)' '%s.log'", killed) == 0);
    CHECK(sn_test_sh("diff -r '%s' '%s'", full, killed) == 0); /* byte-identical */
    CHECK(sn_test_sh("ls '%s' | grep -q tmp", killed) != 0);

    /* gzip input gives the same shards as plain (library calls: each CLI start costs ~1 s) */
    snprintf(gz, sizeof gz, "%s/small.jsonl.gz", dir);
    CHECK(sn_test_sh("gzip -c '%s' > '%s'", small, gz) == 0);
    char o0[1300], o1[1300];
    snprintf(o0, sizeof o0, "%s/plain", dir);
    snprintf(o1, sizeof o1, "%s/gzip", dir);
    p.tuples = sn_tuples_default_params();
    in[0] = small;
    p.out_dir = o0;
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK && rep.counts[SN_TC_TUPLES] > 10);
    in[0] = gz;
    p.out_dir = o1;
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK);
    CHECK(sn_test_sh("cmp -s '%s/train-00000.h5' '%s/train-00000.h5'", o0, o1) == 0);

    /* another tokenizer for the same directory is refused, naming the setting */
    char tok2[1300];
    snprintf(tok2, sizeof tok2, "%s/tok2.json", dir);
    CHECK(sn_test_sh("sed 's/\"<|endoftext|>\"/\"<|endoftext|>\" /' '%s' > '%s'", tokp, tok2) == 0);
    p.tokenizer_path = tok2;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "different settings ('tokenizer_hash' was") != NULL);
    char h1[65] = "", h2[65] = "", both[200];
    struct sn_err herr = {0};
    CHECK(sn_sha256_file(tokp, h1, &herr) == SN_OK && sn_sha256_file(tok2, h2, &herr) == SN_OK);
    snprintf(both, sizeof both, "'tokenizer_hash' was \"%s\", now \"%s\"", h1, h2);
    CHECK_MSG(strstr(err.msg, both) != NULL, "%s", err.msg); /* both hashes, in full */
    p.tokenizer_path = tokp;

    /* malformed line: file:line and field; skip_bad counts it */
    char bad[1300], bo[1300];
    snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
    snprintf(bo, sizeof bo, "%s/bad-out", dir);
    CHECK(sn_test_sh("head -n 2 '%s' > '%s' && head -n 1 '%s' | sed 's/\"question\"/\"q\"/' >> '%s'"
                     " && sed -n 3p '%s' >> '%s'", traj, bad, traj, bad, traj, bad) == 0);
    in[0] = bad;
    p.out_dir = bo;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_E_FORMAT);
    CHECK(strstr(err.msg, "bad.jsonl:3") && strstr(err.msg, "question"));
    CHECK(sn_test_sh("test ! -e '%s/manifest.json'", bo) == 0);
    p.skip_bad = true;
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK);
    CHECK(rep.counts[SN_TC_BAD_LINES] == 1 && rep.counts[SN_TC_TRAJECTORIES] == 3);
    CHECK(sn_test_sh("grep -q '\"bad_lines\":[[:space:]]*1' '%s/manifest.json'", bo) == 0);

    /* invalid UTF-8 in a message: named (trajectory, field) or, with skip_bad, skipped whole */
    snprintf(bad, sizeof bad, "%s/utf8.jsonl", dir);
    snprintf(bo, sizeof bo, "%s/utf8-out", dir);
    CHECK(sn_test_sh("head -n 3 '%s' | sed '2s/my answer stands/my \\xff answer stands/' > '%s'",
                     traj, bad) == 0);
    in[0] = bad;
    p.out_dir = bo;
    p.skip_bad = false;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_E_FORMAT);
    CHECK(strstr(err.msg, "gen-0001") && strstr(err.msg, "rounds[0][0].text") &&
          strstr(err.msg, "invalid UTF-8"));
    p.skip_bad = true;
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_OK);
    CHECK(rep.counts[SN_TC_BAD_LINES] == 1 && rep.counts[SN_TC_TRAJECTORIES] == 3 &&
          rep.counts[SN_TC_TUPLES] > 0);

    /* recipes: unknown key, an LLM summary without its endpoint, flags over recipe */
    char rec[1300];
    snprintf(rec, sizeof rec, "%s/r.json", dir);
    CHECK(sn_test_sh("printf '{\"build\": {\"max_pair\": 2}}' > '%s'", rec) == 0);
    CHECK(sn_test_sh("'%s' build --recipe '%s' -i '%s' -o '%s/r1' --tokenizer '%s' 2> '%s/r.log'",
                     bin, rec, traj, dir, tokp, dir) == 2);
    CHECK(sn_test_sh("grep -q \"did you mean 'max_pairs'\" '%s/r.log'", dir) == 0);
    CHECK(sn_test_sh("printf '{\"build\": {\"summary\": \"llm\"}}' > '%s'", rec) == 0);
    CHECK(sn_test_sh("'%s' build --recipe '%s' -i '%s' -o '%s/r1' --tokenizer '%s' 2> '%s/r.log'",
                     bin, rec, traj, dir, tokp, dir) == 2);
    CHECK(sn_test_sh("grep -q 'needs build.summary_endpoint' '%s/r.log'", dir) == 0);
    CHECK(sn_test_sh("printf '{\"build\": {\"max_pairs\": 1, \"tokenizer\": \"%s\", \"inputs\": "
                     "[\"%s\"], \"out\": \"%s/r2\"}}' > '%s'", tokp, small, dir, rec) == 0);
    CHECK(sn_test_sh("'%s' build --recipe '%s' --progress none --set build.max_len=300 "
                     "> /dev/null 2>&1", bin, rec) == 0);
    CHECK(sn_test_sh("grep -q '\"max_pairs\":[[:space:]]*1' '%s/r2/manifest.json' && grep -q "
                     "'\"max_len\":[[:space:]]*300' '%s/r2/manifest.json' && grep -q "
                     "'\"capped\":[[:space:]]*[1-9]' "
                     "'%s/r2/manifest.json'", dir, dir, dir) == 0);
    CHECK(sn_test_sh("'%s' build -i x 2>/dev/null", bin) == 2);

    /* inspect: shard, manifest, trajectories; a truncated GGUF fails (1) naming the problem */
    CHECK(sn_test_sh("'%s' inspect '%s/train-00000.h5' -n 1 | grep -q 'sentinel.tuples/1'", bin,
                     full) == 0);
    CHECK(sn_test_sh("'%s' inspect '%s' | grep -q 'debates      24'", bin, traj) == 0);
    CHECK(sn_test_sh("printf 'GGUF\\3\\0\\0\\0' > '%s/m.gguf'; '%s' inspect '%s/m.gguf' "
                     "> '%s/m.txt' 2>&1; [ $? -eq 1 ] && grep -q truncated '%s/m.txt'", dir, bin,
                     dir, dir, dir) == 0);
    CHECK(sn_test_sh("printf x >> '%s/train-00000.h5' && '%s' inspect '%s' --verify "
                     ">/dev/null 2>&1", full, bin, full) == 1);

    sn_tokenizer_free(tok);
    return sn_test_done();
}
