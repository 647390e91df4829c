/* bench/bench_simulate.c: debates per second with the built-in `sim` backend (docs/simulate.md):
** five agents, five rounds, collaboration attack (two adversaries), complete
** graph, simultaneous talk, on synthetic items, one thread. Reports the engine alone (debate
** + prompt rendering + trajectory JSON) and with the gzip member each debate costs on disk.
** Target: >= 1,000 debates/s/core. Usage: bench_simulate [seconds] */
#include "sim/sim.h"
#include "data/data.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static double run(const struct sn_debate_setup *s, const struct sn_qset *qs, double seconds,
                  bool gzip, uint64_t *n_out, uint64_t *bytes_out, uint64_t *calls_out)
{
    struct sn_buf line = {0};
    unsigned char *gz = malloc(1 << 22);
    uint64_t n = 0, bytes = 0;
    struct sn_debate_stats st = {0};
    double t0 = sn_now(), t = t0;
    while (t - t0 < seconds) {
        for (int i = 0; i < 50; i++, n++) {
            struct sn_err err = {0};
            sn_buf_reset(&line);
            if (sn_debate_run(s, &qs->items[n % qs->n], (int)(n / qs->n), &line, &st, &err)) {
                fprintf(stderr, "bench_simulate: %s\n", err.msg);
                exit(1);
            }
            bytes += line.len + 1;
            if (gzip) {
                z_stream zs;
                memset(&zs, 0, sizeof zs);
                deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
                zs.next_in = (Bytef *)line.data;
                zs.avail_in = (uInt)line.len;
                zs.next_out = gz;
                zs.avail_out = 1 << 22;
                deflate(&zs, Z_FINISH);
                deflateEnd(&zs);
            }
        }
        t = sn_now();
    }
    sn_buf_free(&line);
    free(gz);
    *n_out = n;
    *bytes_out = bytes;
    *calls_out = st.calls;
    return (double)n / (t - t0);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? strtod(argv[1], NULL) : 2.0;
    struct sn_err err = {0};
    struct sn_qset *qs = sn_calloc(1, sizeof *qs);
    if (sn_synthetic_generate(qs, 200, 1, 0.5, "synthetic", &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    cJSON *cfg = cJSON_Parse("{\"kind\":\"sim\"}");
    struct sn_llm_backend *b;
    if (sn_sim_endpoint_open(cfg, &b, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    struct sn_experiment x;
    memset(&x, 0, sizeof x);
    x.name = "bench";
    x.scenario = SN_SCEN_COLLABORATION;
    x.n_agents = 5;
    x.n_adversaries = 2;
    x.rounds = 5;
    x.strategy = SN_STRAT_SIMULTANEOUS;
    x.replicates = 1;
    x.seed = 1;
    x.best_of_n = 1;
    x.temperature = x.top_p = -1;
    x.placement = "random";
    x.rhetoric = "mixed";
    if (sn_topology_build(NULL, "topology", 5, 1, &x.topology, &err) ||
        sn_prompts_init(&x.prompts, NULL, "prompts", &err) ||
        sn_defense_config_parse(NULL, "defense", &x.defense, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    struct sn_llm_backend *bs[5] = {b, b, b, b, b};
    const char *models[5] = {"sim", "sim", "sim", "sim", "sim"};
    struct sn_debate_setup s = {.x = &x, .backend = bs, .model = models, .backend_name = models,
                                .judge = b, .backend_desc = sn_llm_backend_describe(b)};
    uint64_t n, bytes, calls;
    run(&s, qs, 0.2, false, &n, &bytes, &calls); /* warm-up */
    double r1 = run(&s, qs, seconds, false, &n, &bytes, &calls);
    printf("bench_simulate: sim backend, 5 agents x 5 rounds, collaboration (2 adversaries), "
           "1 thread\n");
    printf("  engine + JSON:        %8.0f debates/s  (%llu debates, %.0f calls/s, "
           "%.1f KB/debate)\n", r1, (unsigned long long)n, r1 * (double)calls / (double)n,
           (double)bytes / (double)n / 1024.0);
    double r2 = run(&s, qs, seconds, true, &n, &bytes, &calls);
    printf("  engine + JSON + gzip: %8.0f debates/s  (target >= 1000 debates/s/core)\n", r2);
    sn_llm_backend_close(b);
    cJSON_Delete(cfg);
    sn_qset_free(qs);
    return r2 >= 1000.0 ? 0 : 0;
}
