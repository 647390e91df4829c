/* tests/test_train_dist.c: data parallelism. `sentinel train --nproc 2` (two processes, Gloo on
** loopback, each taking half of every step's tuples, gradients all-reduced) with micro-batch 4
** must train the same model as one process with micro-batch 8: the same global batch. In
** float64 the losses of every step agree to 1e-12 and the weights after 4 AdamW steps to 1e-9
** (eps 1e-4 keeps AdamW's update a smooth function of the gradient, so summation-order
** rounding cannot flip the sign of a near-zero element's step). Also: rank 0 alone writes; the
** same equality for train.objective "lm". */
#include "hf/hf.h"
#include "tests/testutil.h"
#include "tests/testutil_train.h"

#include <sys/stat.h>


int main(void)
{
    struct sn_err err = {0};
    const char *bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN is not set\n");
        return 1;
    }
    char root[512], p1[800], p2[800];
    snprintf(root, sizeof root, "%s", sn_test_dir("train_dist"));
    snprintf(p1, sizeof p1, "%s/shards", root);
    CHECK_MSG(make_shards(p1, 48, 8, &err) == SN_OK, "%s", err.msg);
    snprintf(p1, sizeof p1, "%s/r.json", root);
    FILE *f = fopen(p1, "w");
    if (f) {
        fputs("{\"train\": {\"base\": \"tiny\", \"max_steps\": 4, \"micro_batch\": 8,\n"
              " \"grad_accum\": 1, \"lr\": 1e-3, \"eps\": 1e-4, \"dtype\": \"float64\",\n"
              " \"alpha\": 0.5, \"warmup_steps\": 0, \"eval_every\": 0, \"save_every\": 2,\n"
              " \"threads\": 1, \"seed\": 3}}\n", f);
        fclose(f);
    }
    CHECK(sn_test_sh("cd '%s' && '%s' train -r r.json -i shards -o one --progress none "
                     "> one.log 2>&1", root, bin) == 0);
    CHECK(sn_test_sh("cd '%s' && '%s' train -r r.json -i shards -o two --progress none "
                     "--nproc 2 --set train.micro_batch=4 > two.log 2>&1", root, bin) == 0);
    double worst = train_same_runs(root, "one", "two", 4);
    struct sn_st_file *fa = NULL;
    snprintf(p1, sizeof p1, "%s/one/checkpoint-4/model.safetensors", root);
    CHECK_MSG(sn_st_open(p1, &fa, &err) == SN_OK, "%s", err.msg);
    double moved = 0;
    /* the weights did move: compare with the seeded base */
    snprintf(p2, sizeof p2, "%s/one/base/model.safetensors", root);
    struct sn_st_file *f0 = NULL;
    CHECK(sn_st_open(p2, &f0, &err) == SN_OK);
    const struct sn_st_tensor *x = fa ? sn_st_find(fa, "score.weight") : NULL;
    const struct sn_st_tensor *y = f0 ? sn_st_find(f0, "score.weight") : NULL;
    if (x && y && x->n_elements == y->n_elements) {
        float u[4096], v[4096];
        CHECK(x->n_elements <= 4096 && sn_st_to_f32(x, u, &err) == SN_OK &&
              sn_st_to_f32(y, v, &err) == SN_OK);
        for (uint64_t j = 0; j < x->n_elements && j < 4096; j++)
            moved = fmax(moved, fabs((double)u[j] - v[j]));
    }
    printf("2 processes vs 1: max weight difference %.3g after 4 steps (head moved by %.3g)\n",
           worst, moved);
    CHECK_MSG(worst <= 1e-9, "max weight difference %g", worst);
    CHECK(moved > 1e-4);
    sn_st_close(fa);
    sn_st_close(f0);
    /* one writer: a single metrics line per step and the usual checkpoints */
    snprintf(p1, sizeof p1, "%s/two/metrics.jsonl", root);
    CHECK(sn_test_sh("test $(grep -c '\"learning_rate\"' '%s') = 4", p1) == 0);
    snprintf(p1, sizeof p1, "%s/two/checkpoint-2/trainer_state.json", root);
    struct stat st;
    CHECK(stat(p1, &st) == 0);
    /* the process count is part of the run's identity */
    CHECK(sn_test_sh("cd '%s' && '%s' train -r r.json -i shards -o two --progress none "
                     "--set train.micro_batch=4 > again.log 2>&1", root, bin) == 2);
    snprintf(p1, sizeof p1, "%s/again.log", root);
    char *log = NULL;
    size_t len = 0;
    CHECK(sn_file_read(p1, 1 << 20, &log, &len, &err) == SN_OK && log &&
          strstr(log, "world_size"));
    sn_free(log);
    /* the lm objective (docs/train.md "Domain-adaptive pretraining (objective lm)"): each
    ** rank's micro-batch is weighted by its share of the step's predicted tokens over both
    ** ranks, so two processes train the same model as one */
    CHECK(sn_test_sh("cd '%s' && '%s' train -r r.json -i shards -o lm1 --progress none "
                     "--set train.objective=lm > lm1.log 2>&1", root, bin) == 0);
    CHECK(sn_test_sh("cd '%s' && '%s' train -r r.json -i shards -o lm2 --progress none "
                     "--nproc 2 --set train.micro_batch=4 --set train.objective=lm "
                     "> lm2.log 2>&1", root, bin) == 0);
    worst = train_same_runs(root, "lm1", "lm2", 4);
    printf("objective lm, 2 processes vs 1: max weight difference %.3g after 4 steps\n", worst);
    CHECK_MSG(worst <= 1e-9, "objective lm: max weight difference %g", worst);
    return sn_test_done();
}
