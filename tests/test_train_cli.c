/* tests/test_train_cli.c: `sentinel train` end to end on shards made by `sentinel simulate` +
** `sentinel build` (sim agents, synthetic questions, the demo tokenizer):
**   - learning: the tiny model (seeded init, full fine-tuning, seed 42, 40 steps of 8 tuples)
**     reaches pairwise accuracy >= 0.70 on the held-out test split (chance: 0.5), and its
**     last checkpoint is an HF directory `sentinel score --model` reads;
**   - metrics.jsonl carries TRL's names and ours, one line per step;
**   - exact resume: 20 steps straight vs a run SIGKILLed after step 12 (last checkpoint: 10)
**     and resumed to 20 give byte-identical weights and optimizer state, and metrics.jsonl
**     holds each step once;
**   - trainer_state.json is transformers' TrainerState (tests/hf_trainer_state.py check);
**   - SIGTERM writes a checkpoint at the current step and exits 143 (128 + SIGTERM); that
**     checkpoint rewritten in the layout before sentinel.trainer_state/2 (hf_trainer_state.py
**     to-v1) still resumes, to the same weights; a changed setting is refused naming the key.
** Threads fixed (train.threads = 2) so the runs are bit-comparable. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

static const char *bin;
static char root[512];

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b)
        b[n] = '\0';
    fclose(f);
    return b;
}

static bool same_file(const char *a, const char *b)
{
    return sn_test_sh("cmp -s '%s' '%s'", a, b) == 0;
}

static int count_train_lines(const char *metrics, int *dups, double *first, double *last_mean)
{
    char *s = slurp(metrics);
    int n = 0, seen[1000] = {0};
    double sum = 0;
    int n_last = 0;
    *dups = 0;
    for (char *line = s ? strtok(s, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "step");
        const cJSON *loss = cJSON_GetObjectItemCaseSensitive(o, "loss");
        if (o && cJSON_IsNumber(st) && cJSON_IsNumber(loss)) {
            int k = (int)st->valuedouble;
            if (k >= 0 && k < 1000)
                *dups += seen[k]++ > 0;
            n++;
            static const char *const keys[] = {
                "loss", "accuracy", "margin", "mean_reward", "min_reward", "max_reward",
                "num_tokens", "learning_rate", "grad_norm", "epoch", "step", "loss_pref",
                "loss_align", "align_accuracy", "tokens_per_s", "step_time", "data_wait",
                "peak_rss"};
            for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
                CHECK_MSG(cJSON_HasObjectItem(o, keys[i]), "metrics line lacks %s", keys[i]);
            if (k == 1 && first)
                *first = loss->valuedouble;
            if (k > 30) {
                sum += loss->valuedouble;
                n_last++;
            }
        }
        cJSON_Delete(o);
    }
    free(s);
    if (last_mean)
        *last_mean = n_last ? sum / n_last : NAN;
    return n;
}

static void write_recipe(const char *path, int max_steps, int save_every, int micro_batch)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f,
            "{\"simulate\": {\"endpoints\": {\"sim\": {\"kind\": \"sim\", \"competence\": 0.8}},\n"
            "  \"defaults\": {\"dataset\": {\"kind\": \"synthetic\", \"n\": 40, \"seed\": 7,\n"
            "               \"numeric_share\": 0.4}, \"backend\": \"sim\", \"n_agents\": 5,\n"
            "               \"rounds\": 3, \"seed\": 1},\n"
            "  \"experiments\": [\n"
            "   {\"name\": \"c\", \"scenario\": \"collaboration\", \"n_adversaries\": 2,\n"
            "    \"topology\": \"complete\", \"strategy\": \"simultaneous\"},\n"
            "   {\"name\": \"n\", \"scenario\": \"netsafe\", \"n_adversaries\": 1,\n"
            "    \"topology\": \"star\", \"placement\": \"hub\", \"strategy\": \"one_by_one\"}]},\n"
            " \"build\": {\"max_len\": 256, \"validation_fraction\": 0.15,\n"
            "           \"test_fraction\": 0.15},\n"
            " \"train\": {\"base\": \"tiny\", \"max_steps\": %d, \"micro_batch\": %d,\n"
            "           \"grad_accum\": 1, \"lr\": 1e-3, \"warmup_steps\": 3, \"seed\": 42,\n"
            "           \"eval_every\": 20, \"save_every\": %d, \"keep_last\": 0,\n"
            "           \"threads\": 2}}\n",
            max_steps, micro_batch, save_every);
    fclose(f);
}

static int train(const char *env, const char *recipe, const char *out, const char *extra)
{
    return sn_test_sh("cd '%s' && %s '%s' train -r '%s' -i shards -o '%s' --tokenizer tok.json "
                      "--progress none %s > '%s.log' 2>&1", root, env, bin, recipe, out, extra,
                      out);
}

int main(void)
{
    bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN is not set\n");
        return 1;
    }
    snprintf(root, sizeof root, "%s", sn_test_dir("train_cli"));
    char recipe[600], p1[800], p2[800];
    snprintf(recipe, sizeof recipe, "%s/learn.json", root);
    write_recipe(recipe, 40, 20, 8);
    CHECK(sn_test_sh("cd '%s' && '%s' simulate -r learn.json -o traj --progress none > /dev/null "
                     "&& '%s' tokenize --write-demo tok.json && '%s' build -r learn.json -i traj "
                     "-o shards --tokenizer tok.json --progress none > /dev/null", root, bin, bin,
                     bin) == 0);

    /* learning */
    CHECK(train("", "learn.json", "learn", "") == 0);
    snprintf(p1, sizeof p1, "%s/learn/final_metrics.json", root);
    char *fm = slurp(p1);
    cJSON *j = fm ? cJSON_Parse(fm) : NULL;
    const cJSON *test = cJSON_GetObjectItemCaseSensitive(j, "test");
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(test, "accuracy");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(test, "samples");
    CHECK(cJSON_IsNumber(acc) && cJSON_IsNumber(n) && n->valuedouble >= 50);
    if (cJSON_IsNumber(acc))
        printf("held-out test pairwise accuracy after 40 steps: %.3f over %.0f tuples\n",
               acc->valuedouble, cJSON_IsNumber(n) ? n->valuedouble : 0.0);
    CHECK_MSG(cJSON_IsNumber(acc) && acc->valuedouble >= 0.70, "test accuracy %g",
              cJSON_IsNumber(acc) ? acc->valuedouble : -1.0);
    cJSON_Delete(j);
    free(fm);
    int dups = 0;
    double first = NAN, last = NAN;
    snprintf(p1, sizeof p1, "%s/learn/metrics.jsonl", root);
    CHECK(count_train_lines(p1, &dups, &first, &last) == 40 && dups == 0);
    CHECK_MSG(last < first - 0.1, "loss %g at step 1, mean %g over steps 31..40", first, last);
    /* the checkpoint is an HF directory with the tokenizer: `sentinel score` reads it */
    CHECK(sn_test_sh("cd '%s' && printf 'The answer is B.\\nI am sure it is C.\\n' | '%s' score "
                     "--model learn/checkpoint-40 > score.txt && test $(wc -l < score.txt) = 2",
                     root, bin) == 0);
    snprintf(p1, sizeof p1, "%s/learn/checkpoint-40/config.json", root);
    char *cfg = slurp(p1);
    CHECK(cfg && strstr(cfg, "Qwen2ForSequenceClassification"));
    free(cfg);
    snprintf(p1, sizeof p1, "%s/learn/base/tokenizer.json", root);
    snprintf(p2, sizeof p2, "%s/tok.json", root);
    CHECK(same_file(p1, p2));
    /* HF's TrainerState loads trainer_state.json; with evaluations at 20 and 40, a best */
    CHECK(sn_test_sh(SN_TEST_PY " '%s/tests/hf_trainer_state.py' check "
                     "'%s/learn/checkpoint-40'", getenv("SENTINEL_SRC"), root) == 0);

    /* exact resume after SIGKILL */
    snprintf(recipe, sizeof recipe, "%s/resume.json", root);
    write_recipe(recipe, 20, 5, 4); /* smaller steps: the resume runs are many */
    CHECK(train("", "resume.json", "straight", "") == 0);
    int st = train("SENTINEL_TEST_KILL_AFTER=12", "resume.json", "killed", "");
    CHECK_MSG(st != 0, "the killed run exited %d", st);
    snprintf(p1, sizeof p1, "%s/killed/checkpoint-15", root);
    struct stat sb;
    CHECK(stat(p1, &sb) != 0); /* it really stopped before step 15 */
    CHECK(train("", "resume.json", "killed", "") == 0);
    snprintf(p1, sizeof p1, "%s/killed.log", root);
    char *log = slurp(p1);
    CHECK_MSG(log && strstr(log, "checkpoint-10 (step 10)"), "%s", log ? log : "");
    free(log);
    static const char *const files[] = {"model.safetensors", "optimizer.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(p1, sizeof p1, "%s/straight/checkpoint-20/%s", root, files[i]);
        snprintf(p2, sizeof p2, "%s/killed/checkpoint-20/%s", root, files[i]);
        CHECK_MSG(same_file(p1, p2), "%s differs after the resume", files[i]);
    }
    snprintf(p1, sizeof p1, "%s/killed/metrics.jsonl", root);
    CHECK(count_train_lines(p1, &dups, NULL, NULL) == 20 && dups == 0);

    /* SIGTERM: checkpoint at the current step, exit 128 + SIGTERM; a re-run finishes, also
    ** from that checkpoint rewritten in the layout of sentinel.trainer_state/1 */
    st = train("SENTINEL_TEST_TERM_AFTER=7", "resume.json", "term", "");
    CHECK_MSG(st == 143, "exit %d after SIGTERM", st);
    snprintf(p1, sizeof p1, "%s/term/checkpoint-7/sentinel_state.json", root);
    CHECK(stat(p1, &sb) == 0);
    CHECK(sn_test_sh(SN_TEST_PY " '%s/tests/hf_trainer_state.py' check "
                     "'%s/term/checkpoint-7' > /dev/null && " SN_TEST_PY " "
                     "'%s/tests/hf_trainer_state.py' to-v1 '%s/term/checkpoint-7'",
                     getenv("SENTINEL_SRC"), root, getenv("SENTINEL_SRC"), root) == 0);
    CHECK(train("", "resume.json", "term", "") == 0);
    snprintf(p1, sizeof p1, "%s/straight/checkpoint-20/model.safetensors", root);
    snprintf(p2, sizeof p2, "%s/term/checkpoint-20/model.safetensors", root);
    CHECK(same_file(p1, p2));

    /* a changed setting is refused (usage error) naming the key; --restart accepts it */
    st = train("", "resume.json", "term", "--set train.alpha=0.5");
    CHECK(st == 2);
    snprintf(p1, sizeof p1, "%s/term.log", root);
    log = slurp(p1);
    CHECK_MSG(log && strstr(log, "alpha (was 1, now 0.5)"), "%s", log ? log : "");
    free(log);
    CHECK(train("", "resume.json", "term", "--set train.alpha=0.5 --max-steps 2 --restart") == 0);
    return sn_test_done();
}
