/* bench/bench_train_step.c: steady-state cost of one full training step of `sentinel train`
** (train/trainer_batches.c, trainer_step.c, trainer_optim.c: batch assembly, forward and
** backward of chosen/rejected/reference sequences, loss, gradient clipping, AdamW in two
** groups), on shards of random token sequences written here. Prints key=value lines: tokens/s
** (processed tokens: padding excluded, a shared prefix counted once), tuples/s, step time,
** data wait as a fraction of the step, peak RSS.
**
**   bench_train_step [--config tiny|small|100m|wide] [--seq N] [--batch B] [--steps N]
**                    [--warmup N] [--ckpt 0|1] [--mode full|lora] [--threads N]
**                    [--batching padded|packed|shared_prefix] [--ctx-ratio R]
**                    [--device cpu|cuda|cuda:N] [--dtype f32|bf16]
**
** --ctx-ratio R > 0: the three sequences of a tuple share a context of R/(R+1) of --seq tokens
** and end in their own response of about --seq/(R+1) tokens (± 1/4, so padded rows pad);
** 0 (default): three unrelated sequences of --seq tokens.
**
** --device: train.device (docs/train.md "GPUs"): the model, batches and optimizer state live
** there. A device this libtorch cannot use (CUDA on a CPU-only build) fails before any work
** with aten's message and exit status 3 (2 for a malformed option). On CUDA each timed step is
** bracketed by device synchronizations, so the clock measures the work the GPU ran, not what
** was queued. --steps 0 only checks the device and prints the device= and libtorch= lines
** (bench/train_step_gpu.sh probes with it).
** --dtype bf16: train.dtype bfloat16 (docs/train.md "bf16"): f32 master weights, the
** projections multiply in bf16 (sn_aten_autocast_enter); f32 (default) everywhere else.
**
** --config 100m: the ~100M decoder of bench_forward_backward (8 layers, hidden 768, 12/4 heads,
** intermediate 2048, vocab 32000), written here as a seeded HF directory and trained from it.
** --config wide: a GPU-sized decoder of the same family and vocabulary (4 layers, hidden 2048,
** 16/4 heads of 128, intermediate 5504; 177M projection parameters, 243M with the embedding),
** written the same way; its GEMMs are wide enough to load a GPU's tensor cores.
** gflop_per_step counts the FLOPs of the matrix products the step computes: 2 N per token
** forward, with N the decoder's projection parameters, and twice that in backward for full
** fine-tuning (input and weight gradients) or once for LoRA (input gradients; the small LoRA
** products are left out); attention 2 T D per token and layer forward (QK^T and PV over the
** causal half of T keys), twice that in backward. The last layer counts as computed: k and v
** on every token, the rest on the three read-out tokens of each tuple (docs/train.md "Speed").
** The count does not depend on --dtype; divide gflops by the device's peak for the MFU.
**
** Runs with sn_tune_host_allocator as `sentinel` does (TS_DEFAULT_MALLOC=1: without).
**
** Not timed in tests; bench/train_step.sh (CPU) and bench/train_step_gpu.sh (CUDA) run the
** configurations. */
#include "shard/shard.h"
#include "tests/testutil_qwen2.h"
#include "train/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int make_shards(const char *dir, int n, int seq, int vocab, int ratio,
                       struct sn_err *err)
{
    struct sn_shard_set_params sp = sn_shard_set_default_params();
    cJSON *settings = cJSON_Parse("{\"bench\": 1}");
    sp.dir = dir;
    sp.writer.info.tokenizer_hash = HASH;
    sp.writer.info.template_id = "sentinel-chatml/1";
    sp.writer.info.max_len = seq;
    sp.writer.info.vocab_size = vocab;
    sp.writer.deflate_level = 0;
    sp.settings = settings;
    struct sn_shard_set *s = NULL;
    int rc = sn_shard_set_open(&sp, &s, err);
    cJSON_Delete(settings);
    struct sn_rng rng;
    sn_rng_seed(&rng, 1);
    int32_t *ids = malloc(3 * (size_t)seq * sizeof *ids);
    for (int i = 0; i < n && !rc && ids; i++) {
        struct sn_shard_tuple t;
        memset(&t, 0, sizeof t);
        int ctx = ratio > 0 ? seq * ratio / (ratio + 1) : 0;
        for (int f = 0; f < 3; f++) {
            int len = seq;
            if (ratio > 0) { /* response of (seq - ctx) · [3/4, 1] tokens */
                int r = seq - ctx, lo = r - r / 4;
                len = ctx + lo + (int)sn_rng_below(&rng, (uint64_t)(r - lo + 1));
            }
            for (int j = 0; j < len; j++)
                ids[f * seq + j] = f > 0 && j < ctx ? ids[j] /* field 0's context */
                                                    : (int32_t)sn_rng_below(&rng,
                                                                            (uint64_t)vocab);
            t.ids[SN_FIELD_CHOSEN + f] = ids + f * seq;
            t.n_ids[SN_FIELD_CHOSEN + f] = (size_t)len;
        }
        for (int f = 0; f < SN_FIELD_COUNT; f++)
            t.text[f] = "x";
        t.meta.split = SN_SPLIT_TRAIN;
        t.meta.chosen_agent = t.meta.rejected_agent = -1;
        t.meta.sha256 = HASH;
        rc = sn_shard_set_add(s, &t, err);
    }
    free(ids);
    if (!rc)
        rc = sn_shard_set_finish(s, err);
    sn_shard_set_close(s);
    return rc;
}

/* Waits for the work queued on dev (nothing on the CPU). sn_aten_cuda_synchronize waits on
** the current CUDA device, which nothing here changes from device 0; for cuda:N with N > 0 a
** blocking one-element copy to the host waits on that device's stream as well, the one every
** op of the step was queued on. */
static int sync_device(struct sn_device dev, struct sn_err *err)
{
    if (dev.type != SN_DEVICE_CUDA)
        return SN_OK;
    int rc = sn_aten_cuda_synchronize(err);
    if (!rc && dev.index != 0) {
        struct sn_tensor *d = NULL, *h = NULL;
        rc = sn_aten_zeros(NULL, 0, SN_DTYPE_F32, dev, &d, err);
        if (!rc)
            rc = sn_aten_to_device(d, SN_CPU, &h, err);
        sn_tensor_free(h);
        sn_tensor_free(d);
    }
    return rc;
}

int main(int argc, char **argv)
{
    const char *config = "tiny", *mode = "full", *batching = "padded";
    const char *device = "cpu", *dtype = "f32";
    int seq = 256, batch = 8, steps = 5, warm = 2, ckpt = 0, threads = 0, ratio = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--config")) config = argv[i + 1];
        else if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
        else if (!strcmp(argv[i], "--seq")) seq = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warm = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ckpt")) ckpt = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batching")) batching = argv[i + 1];
        else if (!strcmp(argv[i], "--ctx-ratio")) ratio = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--dtype")) dtype = argv[i + 1];
        else {
            fprintf(stderr, "bench_train_step: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    struct sn_err err = {0};
    if (strcmp(dtype, "f32") && strcmp(dtype, "bf16")) {
        fprintf(stderr, "bench_train_step: --dtype %s: expected f32 or bf16\n", dtype);
        return 2;
    }
    /* the trainer resolves train.device itself; parsing it here first fails a CUDA request
    ** on a CPU-only libtorch before the shards and the base are written */
    struct sn_device dev = SN_CPU;
    if (sn_aten_device_parse(device, &dev, &err)) {
        fprintf(stderr, "bench_train_step: --device: %s\n", err.msg);
        return err.code == SN_E_UNSUPPORTED ? 3 : 2;
    }
    char devname[32];
    sn_aten_device_name(dev, devname, sizeof devname);
    if (steps <= 0) {
        printf("device=%s\nlibtorch=%s\n", devname, sn_aten_version());
        return 0;
    }
    char dir[256], shards[300], out[400];
    snprintf(dir, sizeof dir, "/tmp/sentinel-bench-train-%d", (int)getpid());
    snprintf(shards, sizeof shards, "%s/shards", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    sn_log_set_level(SN_LOG_ERROR);
    /* as `sentinel` does at start for every command (cli/main.c; common.h:
    ** sn_tune_host_allocator): freed activation blocks are kept and reused, not re-faulted */
    if (!getenv("TS_DEFAULT_MALLOC"))
        sn_tune_host_allocator((size_t)1 << 30);
    struct sn_train_params p = sn_train_default_params();
    int bm;
    for (bm = 0; bm < SN_BATCH_COUNT && strcmp(batching, sn_batching_name((enum sn_batching)bm));
         bm++)
        ;
    if (bm == SN_BATCH_COUNT) {
        fprintf(stderr, "bench_train_step: --batching %s: expected padded, packed or "
                "shared_prefix\n", batching);
        return 2;
    }
    int rc = make_shards(shards, batch * (steps + warm + 1), seq, 512, ratio, &err);
    p.batching = (enum sn_batching)bm;
    p.base = config;
    char hf[320];
    if (!rc && (!strcmp(config, "100m") || !strcmp(config, "wide"))) {
        struct sn_test_qwen2 c = {768, 8, 12, 4, 2048, 32000, 4096, 10000.0, 0.02, 1, NULL};
        if (!strcmp(config, "wide"))
            c = (struct sn_test_qwen2){2048, 4, 16, 4, 5504, 32000, 4096, 10000.0, 0.02, 1, NULL};
        snprintf(hf, sizeof hf, "%s/base%s", dir, config);
        rc = sn_test_qwen2_write(&c, hf, NULL, &err);
        /* the shards carry a placeholder tokenizer hash: no tokenizer.json to compare */
        snprintf(out, sizeof out, "%s/tokenizer.json", hf);
        unlink(out);
        snprintf(out, sizeof out, "%s/out", dir);
        p.base = hf;
    }
    p.mode = !strcmp(mode, "lora") ? SN_TRAIN_LORA : SN_TRAIN_FULL;
    p.lora.r = 16;
    p.lora.alpha = 32;
    p.lora.dropout = 0.0;
    p.micro_batch = batch;
    p.grad_accum = 1;
    p.max_steps = steps + warm;
    p.grad_checkpoint = ckpt != 0;
    p.threads = threads;
    p.sched.lr = 1e-4;
    p.sched.warmup_steps = 0;
    p.device = device;
    p.dtype = !strcmp(dtype, "bf16") ? SN_DTYPE_BF16 : SN_DTYPE_F32;
    p.progress_mode = 3;
    struct sn_trainer *t = NULL;
    if (!rc)
        rc = sn_trainer_open(&p, shards, out, true, &t, &err);
    struct sn_model_profile prof;
    memset(&prof, 0, sizeof prof);
    if (!rc && getenv("TS_PROFILE"))
        sn_model_set_profile(sn_trainer_model(t), &prof);
    double tot_time = 0, tot_wait = 0;
    int64_t tot_tokens = 0;
    for (int s = 0; s < steps + warm && !rc; s++) {
        struct sn_train_stats st;
        rc = sync_device(dev, &err);
        double t0 = sn_now();
        if (!rc)
            rc = sn_trainer_accumulate(t, &st, &err);
        if (!rc)
            rc = sn_trainer_update(t, 1e-4, NULL, &err);
        if (!rc)
            rc = sync_device(dev, &err);
        double dt = sn_now() - t0;
        if (s >= warm) {
            tot_time += dt;
            tot_wait += st.data_wait;
            tot_tokens += st.num_tokens;
        }
    }
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (rc) {
        fprintf(stderr, "bench_train_step: %s\n", err.msg);
        sn_trainer_free(t);
        if (system(cmd)) { /* the wide base alone is 1 GB: do not leave it behind */
        }
        return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("config=%s\nmode=%s\nseq=%d\nbatch=%d\ngrad_checkpoint=%d\nthreads=%d\n", config, mode,
           seq, batch, ckpt, threads);
    printf("batching=%s\nctx_ratio=%d\n", batching, ratio);
    printf("device=%s\ndtype=%s\nlibtorch=%s\nwarmup=%d\nsteps=%d\n", devname, dtype,
           sn_aten_version(), warm, steps);
    const struct sn_param *ps;
    const bool *dec;
    size_t np;
    int64_t n_trained = 0;
    sn_trainer_params(t, &ps, &dec, &np);
    for (size_t i = 0; i < np; i++)
        n_trained += sn_tensor_numel(ps[i].t);
    printf("params_trained=%lld\n", (long long)n_trained);
    {
        const struct sn_model_config *mc = sn_model_get_config(sn_trainer_model(t));
        double D = (double)mc->hidden_size, I = (double)mc->intermediate_size;
        double Dh = D / (double)mc->num_attention_heads;
        double Dkv = Dh * (double)mc->num_key_value_heads;
        double L = (double)mc->num_hidden_layers, Nl = 2 * D * D + 2 * D * Dkv + 3 * D * I;
        double T = (double)seq, toks = (double)tot_tokens / steps, ro = 3.0 * batch;
        double passes = p.mode == SN_TRAIN_FULL ? 3 : 2;
        /* layers 1..L-1 on every token; the last one's k and v on every token and the rest of
        ** it (q, o, the MLP, attention over the row's T keys) on the read-out tokens only */
        double flop = passes * 2 * (toks * ((L - 1) * Nl + 2 * D * Dkv) +
                                    ro * (Nl - 2 * D * Dkv)) +
                      3 * 2 * T * D * (L - 1) * toks + 3 * 4 * T * D * ro;
        printf("gflop_per_step=%.2f\ngflops=%.2f\n", flop / 1e9, flop / 1e9 / (tot_time / steps));
    }
    printf("step_s=%.4f\ntokens_per_s=%.0f\ntuples_per_s=%.2f\ndata_wait_frac=%.5f\n",
           tot_time / steps, tot_tokens / tot_time, batch * steps / tot_time,
           tot_wait / tot_time);
    printf("peak_rss_mb=%.1f\n", ru.ru_maxrss / 1024.0);
    if (getenv("TS_PROFILE"))
        printf("forward_s: linear=%.3f attention=%.3f norm=%.3f other=%.3f (all steps)\n",
               prof.seconds[SN_PROF_LINEAR], prof.seconds[SN_PROF_ATTENTION],
               prof.seconds[SN_PROF_NORM], prof.seconds[SN_PROF_OTHER]);
    sn_trainer_free(t);
    if (system(cmd)) {
    }
    return 0;
}
