/* tests/test_export_repro.c: the runtime detector's reproducibility contract (docs/export.md
** "Reproducibility"), on a random Qwen2 large enough that OpenBLAS splits its products among
** threads (E 256, F 768, sequences up to 300 tokens):
**   1. in one process, the same ids and n_threads give the same bits on every call, also when
**      a detector with another thread count runs in between (OpenBLAS keeps one count per
**      process; each detector applies its own before each forward);
**   2. in other processes, `sentinel score --detector --exact` gives this process's bits for
**      --threads 1 and 2, and without --threads the bits of n_threads = 0 here; with
**      OPENBLAS_NUM_THREADS=1 in its environment, the bits of n_threads = 1 here (n_threads = 0
**      resolves from the environment by one rule in every process); token ids and a shared
**      context (score_shared) both;
**   3. against float64 (tests/ref/qwen2_ref.py, an independent forward of the HF directory):
**      every hidden value and reward, for each thread count, within 1e-4 · (1 + |r64|), the
**      bound docs/export.md states across environments; the largest error and the largest
**      difference between thread counts are printed.
** Labelled numerics: .ci/run runs it once more with the OpenBLAS variables flipped. */
#include "testutil.h"
#include "export/export.h"
#include "export/write.h"
#include "tests/testutil_qwen2.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

static struct sn_err E;
#define OK(x) CHECK_MSG((x) == SN_OK, "%s", E.msg)

enum { N_SEQ = 5, MAX_T = 300, N_EMBD = 256, N_RESP = 3 };
static const int LENS[N_SEQ] = {1, 17, 64, 150, 300};

struct run {
    float r[N_SEQ], h[N_SEQ][N_EMBD];
    float shared[N_RESP];
};

static int32_t ids[N_SEQ][MAX_T];
static const char *CTX = "Question: which planet is largest? Options: (A) Mars (B) Jupiter "
                         "(C) Venus. Round 0, agent 1 (answer B): Jupiter is the largest.";
static const char *RESP[N_RESP] = {"The answer is (B) Jupiter, the largest planet.",
                                   "I think (A) Mars.", "(C) Venus, since it is the hottest."};

static void score_all(struct sn_detector *d, struct run *out)
{
    for (int i = 0; i < N_SEQ; i++)
        OK(sn_detector_score_ids(d, ids[i], (size_t)LENS[i], &out->r[i], out->h[i], &E));
    OK(sn_detector_score_shared(d, CTX, RESP, N_RESP, out->shared, &E));
}

static int same_bits(const struct run *a, const struct run *b)
{
    return !memcmp(a->r, b->r, sizeof a->r) && !memcmp(a->h, b->h, sizeof a->h) &&
           !memcmp(a->shared, b->shared, sizeof a->shared);
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]) / (1 + fabs((double)b[i])));
    return m;
}

/* `sentinel score --detector --exact` in a child process (env: extra variables or ""): the
** ids' rewards, then the shared context's. Returns the number of values read. */
static int cli_scores(const char *dir, const char *gguf, const char *env, const char *threads,
                      float *out)
{
    char ids_path[1100], jsonl[1100], outp[1100];
    snprintf(ids_path, sizeof ids_path, "%s/ids.txt", dir);
    snprintf(jsonl, sizeof jsonl, "%s/shared.jsonl", dir);
    snprintf(outp, sizeof outp, "%s/cli.txt", dir);
    if (sn_test_sh("env %s '%s' score --detector '%s' --ids --exact %s < '%s' > '%s' && "
                   "env %s '%s' score --detector '%s' --jsonl '%s' --exact %s >> '%s'",
                   env, sn_test_bin(), gguf, threads, ids_path, outp, env, sn_test_bin(), gguf,
                   jsonl, threads, outp))
        return -1;
    return sn_test_read_floats(outp, out, N_SEQ + N_RESP);
}

static void check_cli(const char *dir, const char *gguf, const char *env, const char *threads,
                      const struct run *want)
{
    float got[N_SEQ + N_RESP];
    int n = cli_scores(dir, gguf, env, threads, got);
    CHECK_MSG(n == N_SEQ + N_RESP, "sentinel score %s %s: %d values", env, threads, n);
    if (n != N_SEQ + N_RESP)
        return;
    CHECK_MSG(!memcmp(got, want->r, sizeof want->r) &&
              !memcmp(got + N_SEQ, want->shared, sizeof want->shared),
              "sentinel score [%s] %s: not the bits of this process (first reward %.9g vs "
              "%.9g, first shared %.9g vs %.9g)", env, threads, got[0], want->r[0],
              got[N_SEQ], want->shared[0]);
}

/* qwen2_ref.py on the HF directory in float64: rows right-padded to MAX_T with mask 0. */
static void check_f64(const char *dir, const char *mdir, const char *name, const struct run *r)
{
    cJSON *j = cJSON_CreateObject(), *ji = cJSON_AddArrayToObject(j, "ids");
    cJSON *jm = cJSON_AddArrayToObject(j, "mask"), *jh = cJSON_AddArrayToObject(j, "hidden");
    cJSON_AddStringToObject(j, "name", name);
    cJSON_AddStringToObject(j, "model", mdir);
    cJSON_AddNullToObject(j, "adapter");
    for (int i = 0; i < N_SEQ; i++) {
        int row[MAX_T], mask[MAX_T];
        for (int k = 0; k < MAX_T; k++) {
            row[k] = k < LENS[i] ? ids[i][k] : 0;
            mask[k] = k < LENS[i];
        }
        cJSON_AddItemToArray(ji, cJSON_CreateIntArray(row, MAX_T));
        cJSON_AddItemToArray(jm, cJSON_CreateIntArray(mask, MAX_T));
        cJSON_AddItemToArray(jh, cJSON_CreateFloatArray(r->h[i], N_EMBD));
    }
    cJSON_AddItemToObject(j, "rewards", cJSON_CreateFloatArray(r->r, N_SEQ));
    cJSON_AddNumberToObject(j, "rtol", 1e-4);
    char path[1100];
    snprintf(path, sizeof path, "%s/ref_%s.json", dir, name);
    OK(sn_json_save(path, j, &E));
    cJSON_Delete(j);
    const char *src = getenv("SENTINEL_SRC");
    int st = sn_test_sh(SN_TEST_PY " '%s/tests/ref/qwen2_ref.py' '%s'", src ? src : "..",
                        path);
    CHECK_MSG(st == 0 || st == 77, "%s: float64 reference exit %d", name, st);
    if (st == 77)
        printf("%s: python3-torch missing, float64 check skipped\n", name);
}

int main(void)
{
    const char *dir = sn_test_dir("export_repro");
    char mdir[1100], gguf[1100];
    snprintf(mdir, sizeof mdir, "%s/model", dir);
    snprintf(gguf, sizeof gguf, "%s/model.gguf", dir);
    struct sn_test_qwen2 c = {N_EMBD, 2, 4, 2, 768, SN_TOKENIZER_DEMO_VOCAB, 1024, 1e6, 0.06,
                              11, NULL};
    OK(sn_test_qwen2_write(&c, mdir, NULL, &E));
    struct sn_export_params ep = sn_export_default_params();
    ep.base_dir = mdir;
    ep.max_len = 512;
    OK(sn_export_gguf(&ep, gguf, &E));

    struct sn_rng rng;
    sn_rng_seed(&rng, 5);
    for (int i = 0; i < N_SEQ; i++)
        for (int k = 0; k < LENS[i]; k++)
            ids[i][k] = (int32_t)(sn_rng_u64(&rng) % SN_TOKENIZER_DEMO_VOCAB);
    {
        char p[1100];
        snprintf(p, sizeof p, "%s/ids.txt", dir);
        FILE *f = fopen(p, "w");
        CHECK(f != NULL);
        for (int i = 0; f && i < N_SEQ; i++) {
            for (int k = 0; k < LENS[i]; k++)
                fprintf(f, "%s%d", k ? " " : "", ids[i][k]);
            fputc('\n', f);
        }
        if (f)
            fclose(f);
        cJSON *j = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(j, "responses");
        cJSON_AddStringToObject(j, "context", CTX);
        for (int i = 0; i < N_RESP; i++)
            cJSON_AddItemToArray(a, cJSON_CreateString(RESP[i]));
        char *line = cJSON_PrintUnformatted(j);
        snprintf(p, sizeof p, "%s/shared.jsonl", dir);
        f = fopen(p, "w");
        CHECK(f != NULL && line != NULL);
        if (f && line)
            fprintf(f, "%s\n", line);
        if (f)
            fclose(f);
        cJSON_free(line);
        cJSON_Delete(j);
    }

    /* 1. one process: each detector keeps its bits whatever ran in between */
    struct sn_detector_params p1 = sn_detector_default_params(), p2 = p1, p0 = p1;
    p1.n_threads = 1;
    p2.n_threads = 2;
    struct sn_detector *d1 = NULL, *d2 = NULL, *d0 = NULL;
    OK(sn_detector_open(gguf, &p1, &d1, &E));
    OK(sn_detector_open(gguf, &p2, &d2, &E));
    OK(sn_detector_open(gguf, &p0, &d0, &E));
    if (!d1 || !d2 || !d0)
        return sn_test_done();
    CHECK(sn_detector_n_threads(d1) == 1 && sn_detector_n_threads(d2) == 2);
    CHECK(sn_detector_n_threads(d0) >= 1);
    printf("n_threads = 0 resolved to %d here\n", sn_detector_n_threads(d0));
    static struct run r1, r2, r0, again;
    score_all(d1, &r1);
    score_all(d2, &r2);
    score_all(d0, &r0);
    score_all(d1, &again);
    CHECK_MSG(same_bits(&r1, &again), "n_threads 1: other bits after a 2-thread detector ran");
    score_all(d2, &again);
    CHECK_MSG(same_bits(&r2, &again), "n_threads 2: other bits on a second call");
    if (sn_detector_n_threads(d0) == 1)
        CHECK(same_bits(&r0, &r1));
    if (sn_detector_n_threads(d0) == 2)
        CHECK(same_bits(&r0, &r2));
    printf("1 vs 2 threads: rewards differ by %.3g, hidden by %.3g of 1 + |value| (%s)\n",
           rel_diff(r1.r, r2.r, N_SEQ), rel_diff(r1.h[0], r2.h[0], (size_t)N_SEQ * N_EMBD),
           same_bits(&r1, &r2) ? "the same bits in this environment" : "other last bits");
    {
        struct sn_detector *bad = NULL;
        struct sn_detector_params pb = p1;
        pb.n_threads = -1;
        CHECK(sn_detector_open(gguf, &pb, &bad, &E) == SN_E_ARG && bad == NULL);
        CHECK(strstr(E.msg, "n_threads -1") != NULL);
    }
    sn_detector_free(d1);
    sn_detector_free(d2);
    sn_detector_free(d0);

    /* 2. other processes: the same bits for the same thread count */
    check_cli(dir, gguf, "", "--threads 1", &r1);
    check_cli(dir, gguf, "", "--threads 2", &r2);
    check_cli(dir, gguf, "", "", &r0);
    check_cli(dir, gguf, "OPENBLAS_NUM_THREADS=1", "", &r1);

    /* 3. float64: each thread count within the stated bound */
    check_f64(dir, mdir, "threads1", &r1);
    check_f64(dir, mdir, "threads2", &r2);
    return sn_test_done();
}
