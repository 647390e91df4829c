/* tests/test_data_sim_run.c: `sentinel simulate` end to end (sim/run.c, cli/
** cmd_simulate.c): output validated by the trajectory reader, thread-count independence,
** resume after a run killed mid-write and after hand-made partial tails equals an
** uninterrupted run (no duplicate, no loss), shards 0/3 + 1/3 + 2/3 equal the unsharded run,
** failed debates go to the errors file and are retried by the next run, the one-writer lock,
** and CLI errors. Nothing here waits for a time to pass: the kill comes at a byte count and the
** lock is tested against a run that cannot finish (docs/simulate.md "Output files and
** resume"). */
#include "sim/sim.h"
#include "data/data.h"
#include "testutil.h"

#include <signal.h>
#include <unistd.h>

static const char *bin, *dir;

struct lines {
    char  **v;
    size_t  n;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* All lines of the given files, sorted; the set to compare runs by. */
static struct lines read_lines(const char *const *paths, size_t n_paths)
{
    struct lines L = {0};
    size_t cap = 0;
    for (size_t i = 0; i < n_paths; i++) {
        struct sn_lines *r;
        struct sn_err err = {0};
        if (sn_lines_open(paths[i], 0, &r, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            continue;
        }
        const char *line;
        size_t len;
        bool complete;
        while (sn_lines_next(r, &line, &len, &complete, &err) == SN_OK && line) {
            CHECK(complete);
            if (L.n == cap) {
                cap = cap ? cap * 2 : 256;
                L.v = realloc(L.v, cap * sizeof *L.v);
            }
            L.v[L.n++] = strdup(line);
        }
        CHECK_MSG(err.code == SN_OK, "%s", err.msg);
        sn_lines_close(r);
    }
    qsort(L.v, L.n, sizeof *L.v, cmp_str);
    return L;
}

static void free_lines(struct lines *L)
{
    for (size_t i = 0; i < L->n; i++)
        free(L->v[i]);
    free(L->v);
    memset(L, 0, sizeof *L);
}

static bool same_lines(const struct lines *a, const struct lines *b)
{
    if (a->n != b->n) {
        fprintf(stderr, "line counts differ: %zu vs %zu\n", a->n, b->n);
        return false;
    }
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0) {
            fprintf(stderr, "line %zu differs:\n%.300s\n%.300s\n", i, a->v[i], b->v[i]);
            return false;
        }
    return true;
}

static size_t count_dup_ids(const struct lines *L)
{
    size_t d = 0;
    char **ids = calloc(L->n + 1, sizeof *ids);
    for (size_t i = 0; i < L->n; i++) {
        cJSON *o = cJSON_Parse(L->v[i]);
        ids[i] = strdup(cJSON_GetObjectItem(o, "id")->valuestring);
        cJSON_Delete(o);
    }
    qsort(ids, L->n, sizeof *ids, cmp_str);
    for (size_t i = 1; i < L->n; i++)
        d += !strcmp(ids[i - 1], ids[i]);
    for (size_t i = 0; i < L->n; i++)
        free(ids[i]);
    free(ids);
    return d;
}

static void write_recipe(const char *path, const char *endpoint_extra)
{
    FILE *f = fopen(path, "w");
    fprintf(f,
            "{\"simulate\":{\"endpoints\":{\"sim\":{\"kind\":\"sim\"%s}},\n"
            " \"defaults\":{\"dataset\":{\"kind\":\"synthetic\",\"n\":20,\"seed\":4},"
            "\"rounds\":3,\"n_agents\":5,\"replicates\":2,\"backend\":\"sim\"},\n"
            " \"experiments\":[\n"
            "  {\"name\":\"c\",\"scenario\":\"collaboration\",\"n_adversaries\":2},\n"
            "  {\"name\":\"a\",\"scenario\":\"aitm\",\"n_adversaries\":2,\"strategy\":\"one_by_one\"},\n"
            "  {\"name\":\"n\",\"scenario\":\"netsafe\",\"n_adversaries\":1,\"topology\":\"ring\"}]}}\n",
            endpoint_extra ? endpoint_extra : "");
    fclose(f);
}

static const char *p1(const char *sub)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, sub);
    return buf[k];
}

static struct lines run_lines(const char *out)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/trajectories-0of1.jsonl.gz", out);
    const char *ps[1] = {path};
    return read_lines(ps, 1);
}

static void validate(const char *path, uint64_t want)
{
    struct sn_traj_reader *r;
    struct sn_err err = {0};
    struct sn_traj_reader_params p = sn_traj_reader_default_params();
    CHECK(sn_traj_reader_open(path, &p, &r, &err) == SN_OK);
    struct sn_traj *t;
    uint64_t n = 0;
    while (sn_traj_reader_next(r, &t, &err) == SN_OK && t) {
        n++;
        sn_traj_free(t);
    }
    CHECK_MSG(err.code == SN_OK, "trajectory reader: %s", err.msg);
    CHECK_MSG(n == want, "%s: %llu trajectories, want %llu", path, (unsigned long long)n,
              (unsigned long long)want);
    sn_traj_reader_close(r);
}

int main(void)
{
    bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN not set\n");
        return 2;
    }
    /* the kill test needs SIGXFSZ to end a process: undo an inherited SIG_IGN (a shell may
    ** not reset a signal ignored on entry) */
    signal(SIGXFSZ, SIG_DFL);
    dir = sn_test_dir("data_sim_run");
    const char *recipe = strdup(p1("r.json"));
    write_recipe(recipe, NULL);
    const size_t total = 20 * 2 * 3;

    /* reference: uninterrupted, one thread; the same with three threads is identical */
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/ref --progress none 2>/dev/null", bin,
                     recipe, dir) == 0);
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/thr --threads 3 --progress none "
                     "2>/dev/null", bin, recipe, dir) == 0);
    struct lines ref = run_lines(p1("ref")), thr = run_lines(p1("thr"));
    CHECK(ref.n == total);
    CHECK(same_lines(&ref, &thr));
    CHECK(count_dup_ids(&ref) == 0);
    validate(p1("ref/trajectories-0of1.jsonl.gz"), total);
    free_lines(&thr);
    /* a re-run of a finished job writes nothing new */
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/ref --progress none 2>/dev/null", bin,
                     recipe, dir) == 0);
    struct lines again = run_lines(p1("ref"));
    CHECK(same_lines(&ref, &again));
    free_lines(&again);

    /* shards: disjoint, and together the unsharded run */
    for (int i = 0; i < 3; i++)
        CHECK(sn_test_sh("%s simulate --recipe %s -o %s/shards --shard %d/3 --progress none "
                         "2>/dev/null", bin, recipe, dir, i) == 0);
    {
        char a[1100], b[1100], c[1100];
        snprintf(a, sizeof a, "%s/shards/trajectories-0of3.jsonl.gz", dir);
        snprintf(b, sizeof b, "%s/shards/trajectories-1of3.jsonl.gz", dir);
        snprintf(c, sizeof c, "%s/shards/trajectories-2of3.jsonl.gz", dir);
        const char *ps[3] = {a, b, c};
        for (int i = 0; i < 3; i++) {
            struct lines one = read_lines(&ps[i], 1);
            CHECK(one.n > total / 6 && one.n < total / 2); /* roughly a third each */
            free_lines(&one);
        }
        struct lines un = read_lines(ps, 3);
        CHECK(same_lines(&ref, &un));
        CHECK(count_dup_ids(&un) == 0);
        free_lines(&un);
    }
    free_lines(&ref);

    /* Killed mid-write, then resumed: equal to the uninterrupted run with the same endpoint
    ** (a simulated latency keeps four threads' debates interleaved; it is recorded in each
    ** line). The kill comes at a byte count, not a moment: under a file-size limit of a few
    ** KiB (the whole output is about 170 KiB) the write that crosses it is cut short and the
    ** next raises SIGXFSZ, which ends the process as SIGKILL would (no handler, no cleanup),
    ** mid-record and whatever the machine's load. */
    const char *slow = strdup(p1("slow.json"));
    write_recipe(slow, ",\"delay_ms\":3");
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/slowref --threads 4 --progress none "
                     "2>/dev/null", bin, slow, dir) == 0);
    struct lines sref = run_lines(p1("slowref"));
    CHECK(sref.n == total);
    int killed = sn_test_sh("(ulimit -c 0 && ulimit -f 8 && exec %s simulate --recipe %s -o "
                            "%s/killed --threads 4 --progress none 2>/dev/null); st=$?; "
                            "echo \"exit status $st\" >&2; [ $st -gt 128 ] && "
                            "[ \"$(kill -l $st)\" = XFSZ ]", bin, slow, dir);
    CHECK_MSG(killed == 0, "the run did not die of SIGXFSZ at the file-size limit");
    {
        /* what the kill left: complete records (at most one partial member) */
        struct sn_traj_reader *r;
        struct sn_err err = {0};
        struct sn_traj_reader_params p = sn_traj_reader_default_params();
        p.skip_bad = true;
        uint64_t ok = 0;
        if (sn_traj_reader_open(p1("killed/trajectories-0of1.jsonl.gz"), &p, &r, &err) ==
            SN_OK) {
            struct sn_traj *t;
            while (sn_traj_reader_next(r, &t, &err) == SN_OK && t) {
                ok++;
                sn_traj_free(t);
            }
            CHECK(sn_traj_reader_n_skipped(r) <= 1);
            sn_traj_reader_close(r);
        }
        fprintf(stderr, "killed run left %llu complete debates of %zu\n",
                (unsigned long long)ok, total);
        CHECK(ok < total); /* the kill landed mid-run (always: the limit is far below) */
    }
    /* the resume drops the member the kill cut short and does the rest */
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/killed --threads 4 --progress none "
                     "2>/dev/null", bin, slow, dir) == 0);
    /* and two hand-made partial tails after the last complete record: a lone gzip magic
    ** byte, then half of a real member (each dropped by the next run) */
    CHECK(sn_test_sh("printf '\\037' >> %s/killed/trajectories-0of1.jsonl.gz", dir) == 0);
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/killed --threads 4 --progress none "
                     "2>/dev/null", bin, slow, dir) == 0);
    CHECK(sn_test_sh("cd %s/killed && f=trajectories-0of1.jsonl.gz && "
                     "head -c 200 %s/slowref/trajectories-0of1.jsonl.gz >> $f", dir, dir) == 0);
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/killed --threads 4 --progress none "
                     "2>/dev/null", bin, slow, dir) == 0);
    struct lines res = run_lines(p1("killed"));
    CHECK(same_lines(&sref, &res));
    CHECK(count_dup_ids(&res) == 0);
    validate(p1("killed/trajectories-0of1.jsonl.gz"), total);
    free_lines(&res);
    free_lines(&sref);

    /* failures: the first 7 requests fail -> 7 debates in the errors file, exit 1; the next
    ** run (without the fault) retries them and the errors file goes away */
    const char *flaky = strdup(p1("flaky.json"));
    write_recipe(flaky, ",\"fail_calls\":7");
    int st = sn_test_sh("%s simulate --recipe %s -o %s/flaky --progress none 2>%s/flaky.err",
                        bin, flaky, dir, dir);
    CHECK(st == 1);
    CHECK(sn_test_sh("grep -q 'errors-0of1.jsonl' %s/flaky.err", dir) == 0);
    CHECK(sn_test_sh("test $(wc -l < %s/flaky/errors-0of1.jsonl) -eq 7", dir) == 0);
    CHECK(sn_test_sh("grep -q 'injected failure' %s/flaky/errors-0of1.jsonl", dir) == 0);
    CHECK(sn_test_sh("grep -q '\"item_id\"' %s/flaky/errors-0of1.jsonl", dir) == 0);
    struct lines part = run_lines(p1("flaky"));
    CHECK(part.n == total - 7);
    free_lines(&part);
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/flaky --progress none "
                     "--set simulate.endpoints.sim.fail_calls=0 2>/dev/null", bin, flaky,
                     dir) == 0);
    CHECK(sn_test_sh("test ! -e %s/flaky/errors-0of1.jsonl", dir) == 0);
    struct lines full = run_lines(p1("flaky")), ref2 = run_lines(p1("ref"));
    CHECK(same_lines(&ref2, &full));
    free_lines(&full);
    free_lines(&ref2);

    /* heterogeneous panels: per-slot endpoints and per-role endpoints are recorded */
    {
        const char *het = p1("het.json");
        FILE *f = fopen(het, "w");
        fprintf(f, "{\"simulate\":{\"endpoints\":{\"small\":{\"kind\":\"sim\",\"model\":"
                   "\"small-1b\",\"competence\":0.5},\"big\":{\"kind\":\"sim\",\"model\":"
                   "\"big-70b\",\"competence\":0.9}},\"experiments\":[\n"
                   "{\"name\":\"slots\",\"n_agents\":4,\"rounds\":2,\"backends\":[\"big\","
                   "\"small\",\"big\",\"small\"],\"dataset\":{\"kind\":\"synthetic\",\"n\":3}},\n"
                   "{\"name\":\"roles\",\"scenario\":\"collaboration\",\"n_agents\":5,"
                   "\"rounds\":2,\"backend\":\"small\",\"role_backends\":{\"adversary\":"
                   "\"big\"},\"dataset\":{\"kind\":\"synthetic\",\"n\":3}}]}}\n");
        fclose(f);
        CHECK(sn_test_sh("%s simulate --recipe %s -o %s/het --progress none 2>/dev/null", bin,
                         het, dir) == 0);
        struct lines hl = run_lines(p1("het"));
        CHECK(hl.n == 6);
        for (size_t i = 0; i < hl.n; i++) {
            cJSON *o = cJSON_Parse(hl.v[i]);
            const char *exp = cJSON_GetObjectItem(o, "experiment")->valuestring;
            const cJSON *a;
            int k = 0;
            cJSON_ArrayForEach(a, cJSON_GetObjectItem(o, "agents"))
            {
                const char *model = cJSON_GetObjectItem(a, "model")->valuestring;
                const char *be = cJSON_GetObjectItem(a, "backend")->valuestring;
                const char *role = cJSON_GetObjectItem(a, "role")->valuestring;
                if (!strcmp(exp, "slots")) {
                    CHECK_STR(model, k % 2 ? "small-1b" : "big-70b");
                    CHECK_STR(be, k % 2 ? "small" : "big");
                } else {
                    CHECK_STR(model, strcmp(role, "adversary") ? "small-1b" : "big-70b");
                }
                k++;
            }
            const char *desc = cJSON_GetObjectItem(o, "backend")->valuestring;
            CHECK(strstr(desc, "big-70b") && strstr(desc, "small-1b"));
            cJSON_Delete(o);
        }
        free_lines(&hl);
    }

    /* one writer per shard: a second run on the same output is refused while the first runs.
    ** The first cannot finish (every request waits 600 s) and holds the lock from before it
    ** creates its trajectory file, so once that file exists the second run must meet the lock;
    ** the wait for it is polled (up to 120 s), and the first is killed afterwards. The second
    ** has no delay: were the lock broken, it would finish, not hang. */
    const char *stuck = strdup(p1("stuck.json"));
    write_recipe(stuck, ",\"delay_ms\":600000");
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/locked --threads 4 --progress none "
                     "2>/dev/null & pid=$!; f=%s/locked/trajectories-0of1.jsonl.gz; i=0; "
                     "while [ ! -e $f ] && kill -0 $pid 2>/dev/null && [ $i -lt 12000 ]; do "
                     "sleep 0.01; i=$((i+1)); done; "
                     "%s simulate --recipe %s -o %s/locked --progress none 2>%s/lock.err; "
                     "st=$?; kill -0 $pid 2>/dev/null; alive=$?; kill -9 $pid; wait $pid; "
                     "test -e $f && test $alive -eq 0 && test $st -eq 1 && "
                     "grep -q 'another' %s/lock.err", bin, stuck, dir, dir, bin, recipe, dir,
                     dir, dir) == 0);
    /* a file that is not ours is never truncated or skipped silently */
    CHECK(sn_test_sh("mkdir -p %s/foreign && printf 'hello\\n' | gzip > "
                     "%s/foreign/trajectories-0of1.jsonl.gz && %s simulate --recipe %s -o "
                     "%s/foreign --progress none 2>%s/foreign.err; test $? -eq 1 && grep -q "
                     "'trajectories-0of1.jsonl.gz:1: not a trajectory line' %s/foreign.err",
                     dir, dir, bin, recipe, dir, dir, dir) == 0);

    /* a plain (not gzip) file under the trajectory name is refused and left intact */
    CHECK(sn_test_sh("mkdir -p %s/plain && printf '{\"id\":\"x\"}\\n' > "
                     "%s/plain/trajectories-0of1.jsonl.gz && %s simulate --recipe %s -o "
                     "%s/plain --progress none 2>%s/plain.err; test $? -eq 1 && grep -q "
                     "'not a gzip record' %s/plain.err && test $(wc -c < "
                     "%s/plain/trajectories-0of1.jsonl.gz) -eq 11", dir, dir, bin, recipe, dir,
                     dir, dir, dir) == 0);

    /* CLI and recipe errors */
    CHECK(sn_test_sh("%s simulate --help >/dev/null", bin) == 0);
    CHECK(sn_test_sh("%s simulate --recipe %s 2>/dev/null", bin, recipe) == 2); /* no -o */
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/x --shard 3/3 2>/dev/null", bin, recipe,
                     dir) == 2);
    CHECK(sn_test_sh("%s simulate --bogus 2>/dev/null", bin) == 2);
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/x --set simulate.defaults.roundz=2 "
                     "2>%s/e1 ; test $? -eq 2 && grep -q \"did you mean 'rounds'\" %s/e1", bin,
                     recipe, dir, dir, dir) == 0);
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/x --set simulate.defaults.backend=vllm "
                     "2>%s/e2 ; test $? -eq 2 && grep -q \"not an endpoint\" %s/e2", bin, recipe,
                     dir, dir, dir) == 0);
    CHECK(sn_test_sh("%s simulate --recipe %s -o %s/x --set simulate.defaults.defense=sentinel "
                     "2>%s/e3 ; test $? -eq 2 && grep -q \"needs .detector\" %s/e3", bin, recipe,
                     dir, dir, dir) == 0);
    /* quickstart from the source tree works as documented */
    CHECK(sn_test_sh("cd %s && %s simulate --recipe %s/recipes/quickstart.json -o qs "
                     "--progress none 2>/dev/null", dir, bin, getenv("SENTINEL_SRC")) == 0);
    free((void *)recipe);
    free((void *)slow);
    free((void *)stuck);
    free((void *)flaky);
    return sn_test_done();
}
