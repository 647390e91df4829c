/* bench/bench_tokenizer.c: encoding throughput of sn_tokenizer_encode (driven by
** bench/tokenizer.sh, which also times the JS and Rust references on the same corpus).
**
** usage: bench_tokenizer --tokenizer FILE --input FILE [--threads N] [--repeat R]
**                        [--ids-out FILE]
** The input is split into lines; each line is one encode call (as the references' batch
** encode sees it); with N threads each takes a contiguous run of lines. Prints MB/s of the
** first (cold per-thread cache) pass and of the best of R passes, excluding the load.
** --ids-out writes one line of space-separated ids per input line (from the last pass) so
** the script can check the ids against the references. */
#include "tokenizer/tokenizer.h"

#include <getopt.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

struct span {
    size_t off, len;
};

struct worker {
    const struct sn_tokenizer *tok;
    const char *text;
    const struct span *lines;
    size_t first, count;
    struct sn_ids *ids;    /* one per line */
    int rc;
    struct sn_err err;
};

static double cpu_seconds(void) /* user + system time of all threads of the process */
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    for (size_t i = w->first; i < w->first + w->count && !w->rc; i++) {
        w->ids[i].n = 0;
        w->rc = sn_tokenizer_encode(w->tok, w->text + w->lines[i].off, w->lines[i].len,
                                    &w->ids[i], &w->err);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tokenizer", required_argument, NULL, 't'}, {"input", required_argument, NULL, 'i'},
        {"threads", required_argument, NULL, 'n'},   {"repeat", required_argument, NULL, 'r'},
        {"ids-out", required_argument, NULL, 'o'},   {NULL, 0, NULL, 0},
    };
    const char *tpath = NULL, *ipath = NULL, *opath = NULL;
    int n_threads = 1, repeat = 3, c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 't': tpath = optarg; break;
        case 'i': ipath = optarg; break;
        case 'o': opath = optarg; break;
        case 'n': n_threads = atoi(optarg); break;
        case 'r': repeat = atoi(optarg); break;
        default: return 2;
        }
    }
    if (!tpath || !ipath || n_threads < 1 || n_threads > 64 || repeat < 1) {
        fprintf(stderr, "usage: bench_tokenizer --tokenizer FILE --input FILE [--threads N] "
                        "[--repeat R] [--ids-out FILE]\n");
        return 2;
    }
    struct sn_err err = {0};
    struct sn_tokenizer *tok = NULL;
    char *text = NULL;
    size_t len = 0;
    double t0 = sn_now();
    if (sn_tokenizer_open(tpath, &tok, &err) || sn_file_read(ipath, 0, &text, &len, &err)) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        return 1;
    }
    double t_load = sn_now() - t0;
    size_t n_lines = 0;
    for (size_t i = 0; i < len; i++)
        n_lines += text[i] == '\n';
    if (len && text[len - 1] != '\n')
        n_lines++;
    struct span *lines = calloc(n_lines ? n_lines : 1, sizeof *lines);
    struct sn_ids *ids = calloc(n_lines ? n_lines : 1, sizeof *ids);
    if (!lines || !ids)
        return 1;
    size_t at = 0, k = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t e = nl ? (size_t)(nl - text) : len;
        lines[k].off = at;
        lines[k++].len = e - at;
        at = e + 1;
    }
    double first = 0, best = 1e30, best_cpu = 1e30;
    size_t n_tokens = 0;
    for (int r = 0; r < repeat; r++) {
        struct worker w[64];
        pthread_t th[64];
        size_t per = (n_lines + (size_t)n_threads - 1) / (size_t)n_threads, s = 0;
        double a = sn_now(), ca = cpu_seconds();
        for (int j = 0; j < n_threads; j++) {
            w[j] = (struct worker){tok, text, lines, s, 0, ids, 0, {0, {0}}};
            w[j].count = s >= n_lines ? 0 : n_lines - s < per ? n_lines - s : per;
            s += w[j].count;
            if (j)
                pthread_create(&th[j], NULL, work, &w[j]);
        }
        work(&w[0]);
        for (int j = 1; j < n_threads; j++)
            pthread_join(th[j], NULL);
        double dt = sn_now() - a, dc = cpu_seconds() - ca;
        best_cpu = dc < best_cpu ? dc : best_cpu;
        for (int j = 0; j < n_threads; j++)
            if (w[j].rc) {
                fprintf(stderr, "bench_tokenizer: line %zu: %s\n", w[j].first, w[j].err.msg);
                return 1;
            }
        if (r == 0)
            first = dt;
        best = dt < best ? dt : best;
    }
    for (size_t i = 0; i < n_lines; i++)
        n_tokens += ids[i].n;
    /* wall-clock MB/s, and MB per CPU-second (per core busy): on a shared machine the wall
    ** figure drops when other jobs take the cores, the CPU figure much less */
    printf("sentinel    threads=%d  %.2f MB, %zu lines, %zu tokens; load %.2f s; "
           "cold %.1f MB/s, best of %d %.1f MB/s wall (%.2f M tokens/s), %.1f MB per CPU-s\n",
           n_threads, len / 1e6, n_lines, n_tokens, t_load, len / 1e6 / first, repeat,
           len / 1e6 / best, n_tokens / 1e6 / best, len / 1e6 / best_cpu);
    if (opath) {
        FILE *f = fopen(opath, "w");
        if (!f) {
            perror(opath);
            return 1;
        }
        for (size_t i = 0; i < n_lines; i++) {
            for (size_t j = 0; j < ids[i].n; j++)
                fprintf(f, j ? " %d" : "%d", ids[i].v[j]);
            fputc('\n', f);
        }
        fclose(f);
    }
    for (size_t i = 0; i < n_lines; i++)
        sn_ids_free(&ids[i]);
    free(ids);
    free(lines);
    sn_free(text);
    sn_tokenizer_free(tok);
    return 0;
}
