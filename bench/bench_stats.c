/* bench/bench_stats.c: throughput of the group-dynamics metrics.
**
**   bench_stats [--n N] [--files F] [--dir DIR] [--text-len L] [--seed S] [--bin SENTINEL]
**
** 1. Generates N synthetic five-agent (3 honest + 2 adversaries), five-round debates with a
**    seeded generator, as gzip JSONL in F files under DIR (not timed). Answers drift towards
**    the adversarial target with some probability per round; ~2% of answers are unparsed.
** 2. Times the library in this process: reader + sn_stats_add for every trajectory + every
**    row (--by strategy,replicate), on one thread: seconds, trajectories/s, CPU seconds.
** 3. With --bin, runs `SENTINEL stats DIR --by strategy --json ...` under /usr/bin/time and
**    reports its wall time, CPU time and peak RSS at N and at N/10 (memory must not grow with N).
** Target: N = 100,000 in < 10 s on one core, bounded memory. */
#include "data/data.h"
#include "eval/eval.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static void filler(struct sn_rng *rng, char *out, size_t len)
{
    static const char *const words[] = {"the", "answer", "because", "evidence", "consider",
                                        "option", "therefore", "agents", "argue", "clearly",
                                        "reasoning", "we", "should", "is", "not", "likely"};
    size_t k = 0;
    while (k + 12 < len) {
        const char *w = words[sn_rng_below(rng, 16)];
        size_t n = strlen(w);
        memcpy(out + k, w, n);
        k += n;
        out[k++] = ' ';
    }
    out[k] = '\0';
}

static int generate(const char *dir, uint64_t n, int n_files, size_t text_len, uint64_t seed)
{
    struct sn_rng rng;
    sn_rng_seed(&rng, seed);
    static const char *const strategies[] = {"simultaneous", "one_by_one", "sc_one_by_one"};
    char *text = malloc(text_len + 64);
    char *line = malloc(64 * 1024 + 40 * text_len);
    if (!text || !line)
        return 1;
    for (int f = 0; f < n_files; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/trajectories-%03d.jsonl.gz", dir, f);
        gzFile gz = gzopen(path, "wb1");
        if (!gz) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        uint64_t lo = n * (uint64_t)f / (uint64_t)n_files, hi = n * (uint64_t)(f + 1) / n_files;
        for (uint64_t i = lo; i < hi; i++) {
            const char letters[] = "ABCD";
            int gold = (int)sn_rng_below(&rng, 4), target = (gold + 1) % 4;
            size_t k = 0, cap = 64 * 1024 + 40 * text_len;
#define W(...) k += (size_t)snprintf(line + k, cap - k, __VA_ARGS__)
            W("{\"schema\":\"sentinel.trajectory/1\",\"id\":\"bench-%llu\","
              "\"experiment\":\"bench\","
              "\"scenario\":\"collaboration\",\"dataset\":\"synthetic\",\"item_id\":\"q-%llu\","
              "\"subject\":null,\"task\":\"mc\",\"question\":\"Which option is right?\","
              "\"options\":[\"one\",\"two\",\"three\",\"four\"],\"gold\":\"%c\","
              "\"gold_explanation\":null,\"adversarial_target\":\"%c\",\"strategy\":\"%s\","
              "\"topology\":{\"name\":\"complete\",\"n_agents\":5,\"edges\":[",
              (unsigned long long)i, (unsigned long long)(i / 3), letters[gold],
              letters[target], strategies[i % 3]);
            for (int a = 0, first = 1; a < 5; a++)
                for (int b = 0; b < 5; b++)
                    if (a != b) {
                        W("%s[%d,%d]", first ? "" : ",", a, b);
                        first = 0;
                    }
            W("]},\"agents\":[");
            for (int a = 0; a < 5; a++)
                W("%s{\"id\":%d,\"role\":\"%s\",\"model\":\"sim\",\"backend\":\"sim\","
                  "\"persona\":%s}", a ? "," : "", a, a < 3 ? "honest" : "adversary",
                  a < 3 ? "null" : "\"logos\"");
            W("],\"attack\":{\"name\":\"collaboration\",\"rhetoric\":\"logos\"},"
              "\"defense\":{\"name\":\"none\"},\"rounds\":[");
            int ans[5];
            for (int a = 0; a < 5; a++) {
                if (a >= 3)
                    ans[a] = target;
                else
                    ans[a] = sn_rng_uniform(&rng) < 0.7 ? gold : (int)sn_rng_below(&rng, 4);
            }
            for (int r = 0; r < 5; r++) {
                W("%s[", r ? "," : "");
                for (int a = 0; a < 5; a++) {
                    if (r && a < 3) { /* honest slots drift toward the target, some come back */
                        double u = sn_rng_uniform(&rng);
                        if (u < 0.15)
                            ans[a] = target;
                        else if (u < 0.25)
                            ans[a] = gold;
                    }
                    bool parsed = sn_rng_uniform(&rng) >= 0.02;
                    filler(&rng, text, text_len);
                    if (parsed)
                        W("%s{\"agent\":%d,\"text\":\"%sFINAL ANSWER: %c\",\"answer\":\"%c\","
                          "\"parsed\":true,\"latency_ms\":0.0,\"prompt_tokens\":0,"
                          "\"completion_tokens\":0}", a ? "," : "", a, text, letters[ans[a]],
                          letters[ans[a]]);
                    else
                        W("%s{\"agent\":%d,\"text\":\"%s\",\"answer\":null,\"parsed\":false,"
                          "\"latency_ms\":0.0,\"prompt_tokens\":0,\"completion_tokens\":0}",
                          a ? "," : "", a, text);
                }
                W("]");
            }
            W("],\"final\":{\"rule\":\"majority\",\"answer\":\"%c\",\"correct\":%s,"
              "\"judge_answer\":null,\"stopped_early\":false,\"n_rounds\":5},"
              "\"labels\":{\"panel\":\"adversarial-mixed\"},\"seed\":%llu,\"replicate\":%llu,"
              "\"backend\":\"sim\",\"prompt_version\":\"p/1\",\"sentinel_version\":\"0.1.0\"}\n",
              letters[ans[0]], ans[0] == gold ? "true" : "false",
              (unsigned long long)seed + i, (unsigned long long)(i % 3));
#undef W
            if (gzwrite(gz, line, (unsigned)k) != (int)k) {
                fprintf(stderr, "write failed: %s\n", path);
                gzclose(gz);
                return 1;
            }
        }
        gzclose(gz);
    }
    free(text);
    free(line);
    return 0;
}

static int time_library(const char *dir, int n_files, uint64_t expect)
{
    static const char *const by[] = {"strategy", "replicate"};
    struct sn_stats_params p = sn_stats_default_params();
    p.by = by;
    p.n_by = 2;
    struct sn_stats *s;
    struct sn_err err = {0};
    if (sn_stats_create(&p, &s, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double t0 = sn_now(), c0 = cpu_seconds();
    uint64_t n = 0;
    for (int f = 0; f < n_files; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/trajectories-%03d.jsonl.gz", dir, f);
        struct sn_traj_reader *r;
        if (sn_traj_reader_open(path, NULL, &r, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        for (;;) {
            struct sn_traj *t;
            if (sn_traj_reader_next(r, &t, &err)) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            if (!t)
                break;
            if (sn_stats_add(s, t, &err)) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            sn_traj_free(t);
            n++;
        }
        sn_traj_reader_close(r);
    }
    double t_read = sn_now() - t0;
    const struct sn_stat_row *rows;
    size_t n_rows;
    if (sn_stats_rows(s, &rows, &n_rows, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double wall = sn_now() - t0, cpu = cpu_seconds() - c0;
    printf("library: %llu trajectories in %.2f s wall (%.2f s CPU, one thread): %.0f "
           "trajectories/s; rows %zu (read+metrics %.2f s, rows %.3f s)\n",
           (unsigned long long)n, wall, cpu, (double)n / wall, n_rows, t_read, wall - t_read);
    sn_stats_free(s);
    return n == expect ? 0 : 1;
}

/* Runs `sentinel stats` under GNU time: a child forked from this (large) process would count
** our resident pages in its ru_maxrss, a child of /usr/bin/time does not. */
static int time_cli(const char *bin, const char *dir, const char *label)
{
    char cmd[4096], rep[1100];
    snprintf(rep, sizeof rep, "%s/time.txt", dir);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/time -o '%s' -f '%%e %%U %%S %%M' '%s' stats '%s' --by strategy "
             "--json '%s/stats.json' --quiet --progress none",
             rep, bin, dir, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "failed: %s\n", cmd);
        return 1;
    }
    FILE *f = fopen(rep, "r");
    double wall, user, sys, kib;
    if (!f || fscanf(f, "%lf %lf %lf %lf", &wall, &user, &sys, &kib) != 4) {
        fprintf(stderr, "cannot read %s\n", rep);
        if (f)
            fclose(f);
        return 1;
    }
    fclose(f);
    printf("cli %s: `sentinel stats` %.2f s wall, %.2f s CPU, peak RSS %.1f MiB\n", label, wall,
           user + sys, kib / 1024.0);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t n = 100000, seed = 20261122;
    int n_files = 4;
    size_t text_len = 160;
    const char *dir = NULL, *bin = NULL;
    bool skip_gen = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--files") && i + 1 < argc)
            n_files = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--text-len") && i + 1 < argc)
            text_len = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--skip-gen"))
            skip_gen = true; /* reuse the files already in --dir (profiling) */
        else if (!strcmp(argv[i], "--bin") && i + 1 < argc)
            bin = argv[++i];
        else {
            fprintf(stderr, "usage: bench_stats [--n N] [--files F] [--dir DIR] [--text-len L] "
                            "[--seed S] [--bin SENTINEL] [--skip-gen]\n");
            return 2;
        }
    }
    if (n_files < 1 || n_files > 999 || n == 0 || text_len < 16 || text_len > 100000) {
        fprintf(stderr, "bench_stats: bad arguments\n");
        return 2;
    }
    char tmpl[] = "/tmp/bench_stats.XXXXXX";
    if (!dir) {
        dir = mkdtemp(tmpl);
        if (!dir)
            return 1;
    }
    double t0 = sn_now();
    if (!skip_gen && generate(dir, n, n_files, text_len, seed))
        return 1;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "du -sh '%s' | cut -f1", dir);
    printf("generated %llu five-agent five-round debates (%zu-char texts) in %d gzip files "
           "under %s in %.1f s (not timed below); size on disk: ", (unsigned long long)n,
           text_len, n_files, dir, sn_now() - t0);
    fflush(stdout);
    if (system(cmd) != 0)
        printf("?\n");
    int rc = time_library(dir, n_files, n);
    if (!rc && bin) {
        rc = time_cli(bin, dir, "full set");
        /* a tenth of the set, in its own directory: the peak RSS should be about the same */
        char sub[1100];
        snprintf(sub, sizeof sub, "%s/tenth", dir);
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", sub);
        if (!rc && system(cmd) == 0 && !generate(sub, n / 10 ? n / 10 : 1, 1, text_len, seed))
            rc = time_cli(bin, sub, "1/10 set");
    }
    if (tmpl[0] && dir == tmpl) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    return rc;
}
