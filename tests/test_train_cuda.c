/* tests/test_train_cuda.c: the trainer on a CUDA device, held to the CPU (docs/train.md
** "GPUs"). Exits 77 (skipped) where libtorch has no usable CUDA, as on every CPU machine; on a
** GPU machine scripts/gpu-check.sh runs it. The bounds:
**   f32 parity        three optimizer steps on cuda:0 and on the CPU from the same seed: each
**                     step's loss, and then the rewards of a fixed batch, within 1e-4 relative
**                     (max |a - b| <= 1e-4 * max(1, max |a|)): the same math, other summation
**                     orders (cuBLAS f32 without TF32, libtorch's default)
**   bf16              20 steps of bf16 mixed precision on cuda:0: every loss within 2e-2 of the
**                     CPU f32 run's (the CPU bf16 test's bound, tests/test_train_bf16.c), and
**                     falling
**   checkpointing     one step's LoRA gradients in bf16 with and without gradient
**                     checkpointing on cuda:0: within 1e-5 of the largest (as on the CPU)
**   batching          packed and shared-prefix micro-batches against padded ones on cuda:0,
**                     f32: the loss within 1e-5 relative and every gradient within 1e-5 of the
**                     largest (tests/test_train_packing.c's f32 bounds)
**   resume            9 steps straight, and 6 + 3 after a resume, on cuda:0 with libtorch's
**                     deterministic algorithms on (CUBLAS_WORKSPACE_CONFIG=:4096:8): the same
**                     weight and optimizer files byte for byte
**   data parallel     `sentinel train` on cuda:0, float64: two processes over Gloo sharing the
**                     one GPU (NCCL refuses two ranks on one device) against one process, and
**                     one process over NCCL (a group of one, under a launcher's environment)
**                     against no group: every step's loss within 1e-12 and the weights after 4
**                     steps within 1e-9 (tests/test_train_dist.c's bounds). */
#include "aten/aten.h"
#include "hf/hf.h"
#include "tests/testutil.h"
#include "tests/testutil_aten.h"
#include "train/recipe.h"
#include "train/train.h"

#include <stdint.h>

#include "tests/testutil_train.h"

static struct sn_err E;
/* The device under test: cuda:0, or SN_TEST_GPU_DEVICE (scripts/gpu-check.sh --dry sets "cpu"
** to run every comparison's logic on a machine without a GPU; NCCL is then left out). */
static const char *GPU = "cuda:0";

/* the CPU bf16 test's settings (tests/testutil_train.h) on a device */
static struct sn_train_params base_params(const char *device)
{
    return train_test_params(device);
}

/* max |a - b| over n, and max |a| into *mx */
static double max_diff(const double *a, const double *b, size_t n, double *mx)
{
    double w = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        w = fmax(w, fabs(a[i] - b[i]));
        m = fmax(m, fabs(a[i]));
    }
    if (mx)
        *mx = m;
    return w;
}

/* Every trained parameter's gradient, flattened into one host array (caller frees). */
static double *grads_of(struct sn_trainer *t, size_t *total)
{
    const struct sn_param *ps;
    const bool *d;
    size_t np, n = 0, k = 0;
    sn_trainer_params(t, &ps, &d, &np);
    for (size_t i = 0; i < np; i++)
        n += (size_t)sn_tensor_numel(ps[i].t);
    double *g = calloc(n + 1, sizeof *g);
    for (size_t i = 0; g && i < np; i++) {
        struct sn_tensor *gr = NULL;
        OK(sn_aten_grad(ps[i].t, &gr, &E));
        size_t m = (size_t)sn_tensor_numel(ps[i].t);
        if (gr)
            OK(sn_aten_to_host(gr, g + k, SN_DTYPE_F64, m, &E));
        sn_tensor_free(gr);
        k += m;
    }
    *total = n;
    return g;
}

/* ---- f32: cuda:0 against the CPU ------------------------------------------------------------ */

static void test_f32_parity(const char *shards)
{
    struct sn_trainer *t[2] = {NULL, NULL};
    const char *dev[2] = {"cpu", GPU};
    double loss[2][3], worst_loss = 0;
    for (int d = 0; d < 2; d++) {
        struct sn_train_params p = base_params(dev[d]);
        OK(sn_trainer_open(&p, shards, sn_test_dir(d ? "cuda_f32_gpu" : "cuda_f32_cpu"), true,
                           &t[d], &E));
        if (!t[d])
            return;
        for (int s = 0; s < 3; s++) {
            struct sn_train_stats st;
            OK(sn_trainer_accumulate(t[d], &st, &E));
            OK(sn_trainer_update(t[d], 2e-3, NULL, &E));
            loss[d][s] = st.loss;
        }
    }
    for (int s = 0; s < 3; s++) {
        double rel = fabs(loss[1][s] - loss[0][s]) / fmax(1.0, fabs(loss[0][s]));
        worst_loss = fmax(worst_loss, rel);
        CHECK_MSG(isfinite(loss[1][s]) && rel <= 1e-4, "step %d: loss %.9g on cuda, %.9g on cpu",
                  s + 1, loss[1][s], loss[0][s]);
    }
    /* a fixed batch of 6 sequences of 20 tokens, the last 4 of row r padding for odd r */
    enum { B = 6, T = 20 };
    int32_t ids[B * T], mask[B * T];
    struct sn_rng rng;
    sn_rng_seed(&rng, 11);
    for (int i = 0; i < B * T; i++) {
        ids[i] = (int32_t)sn_rng_below(&rng, V);
        mask[i] = (i / T) % 2 && i % T >= T - 4 ? 0 : 1;
    }
    struct sn_model_batch b = {ids, mask, B, T};
    float r[2][B];
    double rd[2][B], mx = 0;
    for (int d = 0; d < 2; d++) {
        OK(sn_model_forward_host(sn_trainer_model(t[d]), &b, r[d], NULL, &E));
        for (int i = 0; i < B; i++)
            rd[d][i] = r[d][i];
    }
    double w = max_diff(rd[0], rd[1], B, &mx);
    printf("f32, 3 steps on %s vs cpu: loss rel diff %.3g; rewards max diff %.3g (max |r| "
           "%.3g)\n", GPU, worst_loss, w, mx);
    CHECK_MSG(w <= 1e-4 * fmax(1.0, mx), "rewards on cuda differ from the cpu by %g", w);
    CHECK_MSG(mx > 1e-3, "rewards all near zero (%g): the check has no teeth", mx);
    sn_trainer_free(t[0]);
    sn_trainer_free(t[1]);
}

/* ---- bf16: 20 steps ----------------------------------------------------------------------- */

enum { STEPS = 20 };

static void losses_of(const char *out, double *loss)
{
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    for (int s = 0; s < STEPS; s++)
        loss[s] = train_step_loss(path, s + 1);
}

static void run_to_end(struct sn_train_params *p, const char *shards, const char *out)
{
    struct sn_trainer *t = NULL;
    OK(sn_trainer_open(p, shards, out, true, &t, &E));
    if (t)
        OK(sn_trainer_run(t, &E));
    sn_trainer_free(t);
}

static void test_bf16_twenty(const char *shards)
{
    double l32[STEPS], l16[STEPS];
    char a[512], b[512];
    snprintf(a, sizeof a, "%s", sn_test_dir("cuda_bf16_ref"));
    snprintf(b, sizeof b, "%s", sn_test_dir("cuda_bf16"));
    struct sn_train_params p = base_params("cpu");
    run_to_end(&p, shards, a);
    p = base_params(GPU);
    p.dtype = SN_DTYPE_BF16;
    run_to_end(&p, shards, b);
    losses_of(a, l32);
    losses_of(b, l16);
    double worst = 0;
    for (int s = 0; s < STEPS; s++) {
        CHECK_MSG(isfinite(l32[s]) && isfinite(l16[s]), "step %d: loss %g / %g", s + 1, l32[s],
                  l16[s]);
        worst = fmax(worst, fabs(l16[s] - l32[s]));
    }
    printf("20 steps, bf16 on %s vs f32 on cpu: loss %.4f -> %.4f vs %.4f -> %.4f, max "
           "|dloss| %.3g\n", GPU, l16[0], l16[STEPS - 1], l32[0], l32[STEPS - 1], worst);
    CHECK_MSG(worst <= 2e-2, "bf16 loss on cuda strays %g from the cpu's f32", worst);
    CHECK_MSG(worst > 1e-7, "bf16 loss equals f32 (%g): the casts did not happen", worst);
    CHECK(l16[STEPS - 1] < l16[0]);
}

/* ---- gradient checkpointing and batching modes on cuda:0 ------------------------------------ */

static double *one_step_grads(struct sn_train_params *p, const char *shards, const char *name,
                              bool lora_b, double *loss, size_t *n)
{
    struct sn_trainer *t = NULL;
    struct sn_train_stats st;
    *n = 0;
    OK(sn_trainer_open(p, shards, sn_test_dir(name), true, &t, &E));
    if (!t)
        return NULL;
    if (lora_b)
        OK(train_fill_lora_b(t, 0.01, &E));
    OK(sn_trainer_accumulate(t, &st, &E));
    *loss = st.loss;
    double *g = grads_of(t, n);
    sn_trainer_free(t);
    return g;
}

static void test_checkpointing(const char *shards)
{
    struct sn_train_params p = base_params(GPU);
    p.dtype = SN_DTYPE_BF16;
    p.mode = SN_TRAIN_LORA;
    double l[2], mx = 0;
    size_t n[2];
    double *g[2];
    for (int c = 0; c < 2; c++) {
        p.grad_checkpoint = c == 1;
        g[c] = one_step_grads(&p, shards, c ? "cuda_ck1" : "cuda_ck0", true, &l[c], &n[c]);
    }
    CHECK(g[0] && g[1] && n[0] == n[1] && n[0] > 0);
    if (g[0] && g[1] && n[0] == n[1]) {
        double w = max_diff(g[0], g[1], n[0], &mx);
        printf("bf16 lora gradients on %s, checkpointing vs not: max diff %.3g (max |g| "
               "%.3g)\n", GPU, w, mx);
        CHECK_MSG(w <= 1e-5 * fmax(1.0, mx) && mx > 1e-4, "checkpointed gradients on cuda "
                  "differ by %g", w);
    }
    free(g[0]);
    free(g[1]);
}

static void test_batching(const char *shards)
{
    struct sn_train_params p = base_params(GPU);
    const enum sn_batching modes[3] = {SN_BATCH_PADDED, SN_BATCH_PACKED, SN_BATCH_SHARED_PREFIX};
    double l[3], mx = 0;
    size_t n[3];
    double *g[3];
    for (int m = 0; m < 3; m++) {
        p.batching = modes[m];
        char name[64];
        snprintf(name, sizeof name, "cuda_batch_%s", sn_batching_name(modes[m]));
        g[m] = one_step_grads(&p, shards, name, false, &l[m], &n[m]);
    }
    for (int m = 1; m < 3; m++) {
        CHECK(g[0] && g[m] && n[m] == n[0]);
        if (!g[0] || !g[m] || n[m] != n[0])
            continue;
        double w = max_diff(g[0], g[m], n[0], &mx);
        double rl = fabs(l[m] - l[0]) / fmax(1.0, fabs(l[0]));
        printf("%s vs padded on %s, f32: loss rel diff %.3g, gradients max diff %.3g (max "
               "|g| %.3g)\n", sn_batching_name(modes[m]), GPU, rl, w, mx);
        CHECK_MSG(rl <= 1e-5, "%s: loss %.9g vs padded %.9g", sn_batching_name(modes[m]), l[m],
                  l[0]);
        CHECK_MSG(w <= 1e-5 * fmax(1.0, mx) && mx > 1e-4, "%s: gradients differ by %g",
                  sn_batching_name(modes[m]), w);
    }
    for (int m = 0; m < 3; m++)
        free(g[m]);
}

/* ---- resume --------------------------------------------------------------------------------- */

static bool same_file(const char *a, const char *b)
{
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    struct sn_err e = {0};
    bool ok = !sn_file_read(a, (size_t)1 << 28, &x, &nx, &e) &&
              !sn_file_read(b, (size_t)1 << 28, &y, &ny, &e) && nx == ny && !memcmp(x, y, nx);
    sn_free(x);
    sn_free(y);
    return ok;
}

/* 9 steps straight, then checkpoint-9 spoiled so that the same settings resume from 6 and
** finish at 9: 0 when both runs went through, with *same_w / *same_o whether the weight and
** optimizer files are byte-identical and *diff the largest weight difference. */
static int resume_once(const char *shards, const char *name, bool *same_w, bool *same_o,
                       double *diff, struct sn_err *err)
{
    char out[512], keep[600], p1[700], p2[700];
    snprintf(out, sizeof out, "%s", sn_test_dir(name));
    struct sn_train_params p = base_params(GPU);
    p.max_steps = 9;
    p.save_every = 3;
    p.keep_last = 0;
    struct sn_trainer *t = NULL;
    int rc = sn_trainer_open(&p, shards, out, true, &t, err);
    if (!rc)
        rc = sn_trainer_run(t, err);
    sn_trainer_free(t);
    t = NULL;
    if (rc)
        return rc;
    snprintf(keep, sizeof keep, "%s.keep", out);
    sn_test_sh("rm -rf '%s' && cp -r '%s/checkpoint-9' '%s'", keep, out, keep);
    snprintf(p1, sizeof p1, "%s/checkpoint-9/model.safetensors", out);
    CHECK(sn_test_sh("printf 'XXXX' | dd of='%s' bs=1 seek=100 conv=notrunc 2>/dev/null",
                     p1) == 0);
    rc = sn_trainer_open(&p, shards, out, false, &t, err);
    CHECK(rc || sn_trainer_step(t) == 6);
    if (!rc)
        rc = sn_trainer_run(t, err);
    sn_trainer_free(t);
    if (rc)
        return rc;
    snprintf(p2, sizeof p2, "%s/model.safetensors", keep);
    *same_w = same_file(p1, p2);
    *diff = st_max_weight_diff(p1, p2);
    snprintf(p1, sizeof p1, "%s/checkpoint-9/optimizer.safetensors", out);
    snprintf(p2, sizeof p2, "%s/optimizer.safetensors", keep);
    *same_o = same_file(p1, p2);
    return SN_OK;
}

/* With deterministic algorithms, byte-identical. Should an op of the step have no
** deterministic kernel in this libtorch (it then fails, naming itself), that is reported and the
** resume is held to a stated bound instead, without them: 1e-5 on the weights. */
static void test_resume(const char *shards)
{
    bool w = false, o = false;
    double diff = -1;
    struct sn_err err = {0};
    OK(sn_aten_set_deterministic(true, &E));
    int rc = resume_once(shards, "cuda_resume", &w, &o, &diff, &err);
    OK(sn_aten_set_deterministic(false, &E));
    if (!rc) {
        printf("resume on %s (deterministic algorithms on): weights %s, optimizer state %s "
               "(max weight diff %.3g)\n", GPU, w ? "byte-identical" : "DIFFER",
               o ? "byte-identical" : "DIFFER", diff);
        CHECK_MSG(w && o, "a resumed run on %s differs from the uninterrupted one", GPU);
        return;
    }
    printf("resume with deterministic algorithms on: not possible here: %s\n", err.msg);
    CHECK_MSG(strstr(err.msg, "determinis") != NULL, "resume failed: %s", err.msg);
    sn_err_clear(&err);
    rc = resume_once(shards, "cuda_resume_nd", &w, &o, &diff, &err);
    CHECK_MSG(rc == SN_OK, "resume without deterministic algorithms: %s", err.msg);
    printf("resume on %s without deterministic algorithms: weights %s, max weight diff %.3g "
           "(bound 1e-5)\n", GPU, w ? "byte-identical" : "differ", diff);
    CHECK_MSG(diff >= 0 && diff <= 1e-5, "resumed weights differ by %g", diff);
}

/* ---- data parallelism through the CLI ------------------------------------------------------- */


static void test_data_parallel(const char *bin)
{
    struct sn_err err = {0};
    char root[512], p1[800];
    snprintf(root, sizeof root, "%s", sn_test_dir("cuda_dist"));
    snprintf(p1, sizeof p1, "%s/shards", root);
    CHECK_MSG(make_shards(p1, 48, 8, &err) == SN_OK, "%s", err.msg);
    snprintf(p1, sizeof p1, "%s/r.json", root);
    FILE *f = fopen(p1, "w");
    if (f) {
        fprintf(f, "{\"train\": {\"base\": \"tiny\", \"max_steps\": 4, \"micro_batch\": 8,\n"
                " \"grad_accum\": 1, \"lr\": 1e-3, \"eps\": 1e-4, \"dtype\": \"float64\",\n"
                " \"alpha\": 0.5, \"warmup_steps\": 0, \"eval_every\": 0, \"save_every\": 2,\n"
                " \"threads\": 1, \"seed\": 3, \"device\": \"%s\"}}\n", GPU);
        fclose(f);
    }
    CHECK(sn_test_sh("cd '%s' && '%s' train -r r.json -i shards -o one --progress none "
                     "> one.log 2>&1", root, bin) == 0);
    CHECK(sn_test_sh("cd '%s' && '%s' train -r r.json -i shards -o gloo2 --progress none "
                     "--nproc 2 --set train.micro_batch=4 --set train.dist_backend=gloo "
                     "> gloo2.log 2>&1", root, bin) == 0);
    double wg = train_same_runs(root, "one", "gloo2", 4);
    printf("%s, 2 processes over Gloo vs 1: max weight difference %.3g after 4 steps\n", GPU,
           wg);
    CHECK_MSG(wg >= 0 && wg <= 1e-9, "Gloo on cuda: max weight difference %g", wg);
    CHECK(sn_test_sh("grep -q 'c10d backend gloo on %s' '%s/gloo2.log'", GPU, root) == 0);
    if (!strcmp(GPU, "cpu"))
        return; /* NCCL needs a CUDA device */
    /* NCCL, a group of one under a torchrun-style environment; the trainer names the backend,
    ** so the log shows the group really was NCCL's */
    CHECK(sn_test_sh("cd '%s' && WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 "
                     "NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} "
                     "MASTER_PORT=$((20000 + $$ %% 20000)) '%s' train -r r.json -i shards "
                     "-o nccl1 --progress none --set train.dist_backend=nccl > nccl1.log 2>&1",
                     root, bin) == 0);
    double wn = train_same_runs(root, "one", "nccl1", 4);
    printf("%s, 1 process over NCCL vs no group: max weight difference %.3g after 4 steps\n",
           GPU, wn);
    CHECK_MSG(wn >= 0 && wn <= 1e-9, "NCCL on cuda: max weight difference %g", wn);
    CHECK(sn_test_sh("grep -q 'c10d backend nccl on %s' '%s/nccl1.log'", GPU, root) == 0);
}

int main(void)
{
    if (getenv("SN_TEST_GPU_DEVICE"))
        GPU = getenv("SN_TEST_GPU_DEVICE");
    if (strncmp(GPU, "cuda", 4) == 0 && !sn_aten_cuda_available()) {
        printf("skipped: this libtorch (%s) has no usable CUDA device\n", sn_aten_version());
        return 77;
    }
    /* before cuBLAS's first use: the resume test turns deterministic algorithms on */
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
    const char *bin = getenv("SENTINEL_BIN");
    char shards[512];
    snprintf(shards, sizeof shards, "%s", sn_test_dir("cuda_shards"));
    CHECK_MSG(make_shards(shards, 80, 8, &E) == SN_OK, "%s", E.msg);
    test_f32_parity(shards);
    test_bf16_twenty(shards);
    test_checkpointing(shards);
    test_batching(shards);
    test_resume(shards);
    if (bin)
        test_data_parallel(bin);
    else
        CHECK_MSG(0, "SENTINEL_BIN is not set");
    return sn_test_done();
}
