/* cli/cmd_train.c: `sentinel train` (docs/design.md §1): the recipe's `train` section plus
** command-line overrides into the trainer (train/train.h). Keys, defaults and the output
** directory: docs/train.md. SIGINT/SIGTERM ask the trainer to write a checkpoint and stop (a
** second one kills). */
#include "cli/cli.h"
#include "cli/recipe_check.h"
#include "train/train.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel train [--recipe RECIPE] -i SHARDS_DIR -o OUT_DIR [options]\n"
"\n"
"Trains the reward model R(r + c) on the (context, chosen, rejected, reference) tuples of a\n"
"`sentinel build` directory: LoRA + reward head on a Hugging Face base, or every parameter of\n"
"a seeded `tiny`/`mini`/`small` model (train.mode full). Writes OUT_DIR/metrics.jsonl (one\n"
"JSON line per step, TRL names), OUT_DIR/checkpoint-N/ (PEFT adapter or HF model directory,\n"
"optimizer state, HF's trainer_state.json, sentinel_state.json with SHA-256s), OUT_DIR/latest\n"
"and OUT_DIR/final_metrics.json; with train.report_to \"tensorboard\" also TensorBoard event\n"
"files in OUT_DIR/runs/. Re-running on OUT_DIR resumes from its latest good checkpoint when\n"
"the settings are equal.\n"
"\n"
"options:\n"
"  -r, --recipe FILE      recipe JSON; its `train` section (see docs/train.md)\n"
"  -i, --input DIR        shards directory (default train.shards, else <out_dir>/shards)\n"
"  -o, --out DIR          output directory (default train.out, else <out_dir>/train)\n"
"      --tokenizer FILE   tokenizer.json of the shards (default train.tokenizer, then\n"
"                         build.tokenizer); copied beside a seeded base and checkpoints\n"
"      --max-steps N      stop after N optimizer steps (overrides train.max_steps)\n"
"      --save-every N     checkpoint every N steps (overrides train.save_every)\n"
"      --init-adapter DIR continue from an existing PEFT adapter (lora mode)\n"
"      --restart          delete OUT_DIR's checkpoints and metrics and start over\n"
"      --nproc N          data parallel on this machine: N processes (Gloo on the CPU), each\n"
"                         taking 1/N of every step's tuples; the global batch is\n"
"                         micro_batch x grad_accum x N. Under torchrun / srun, leave it out:\n"
"                         RANK/WORLD_SIZE (or SLURM_PROCID/SLURM_NTASKS) + MASTER_ADDR/PORT\n"
"                         are read from the environment\n"
"      --device D         cpu (default), cuda (under a launcher: cuda:LOCAL_RANK) or cuda:N\n"
"                         (overrides train.device; CUDA needs a CUDA libtorch)\n"
"      --set KEY=VALUE    override a recipe key (e.g. --set train.lr=1e-4)\n"
"      --progress MODE    auto, bar, plain or none (default auto: a bar on a terminal)\n"
"  -h, --help             this help\n"
"\n"
"Domain-adaptive pretraining: train.objective \"lm\" trains the model as a causal language\n"
"model (next-token cross-entropy, metrics loss and perplexity) on the chosen and rejected\n"
"sequences of the train split only, every weight, the LM head tied to the embedding; a\n"
"reward run then starts from its checkpoint with --set train.base=OUT_DIR/checkpoint-N.\n"
"`sentinel run` chains the two with train.pretrain_steps (docs/train.md 'Domain-adaptive\n"
"pretraining (objective lm)').\n"
"\n"
"Batches: train.batching padded, packed or shared_prefix; train.dtype bfloat16 for bf16\n"
"matrix products with f32 master weights (docs/train.md); with --nproc N or a launcher and a\n"
"CUDA device the ranks all-reduce with NCCL, or with Gloo given --set train.dist_backend=gloo\n"
"(several processes sharing one GPU: --device cuda:0) (docs/train.md, 'GPUs').\n"
"Hugging Face TrainingArguments / TRL RewardConfig names are accepted in the train section\n"
"and --set for their sentinel keys (learning_rate -> lr, per_device_train_batch_size ->\n"
"micro_batch, bf16 -> dtype, save_total_limit -> keep_last, ...; both names of one setting\n"
"is an error; docs/train.md 'Hugging Face names'); `sentinel inspect RECIPE` shows them.\n"
"\n"
"Exit status: 0 ok, 1 failure, 2 usage or recipe error, 3 not in this build, 130/143 stopped\n"
"by SIGINT/SIGTERM after writing a checkpoint at the current step (re-run to resume).\n");
}

static int parse_count(const char *opt, const char *s, int64_t *out)
{
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < 0)
        return sn_cli_usage_error("train", "%s '%s': expected a non-negative integer", opt, s);
    *out = v;
    return SN_EXIT_OK;
}

/* Tests: SENTINEL_TEST_KILL_AFTER=N kills the process with SIGKILL right after step N, the
** way a crash or an OOM kill would (no checkpoint, no cleanup); SENTINEL_TEST_TERM_AFTER=N
** sends SIGTERM to itself after step N (the handler's checkpoint-and-stop path). */
static void kill_after(void *user, int64_t step)
{
    const int64_t *at = user;
    if (step == at[0])
        raise(SIGKILL);
    if (step == at[1])
        raise(SIGTERM);
}

/* --nproc N: runs N copies of this command (without --nproc) as ranks 0..N-1 of a local
** Gloo group on a free loopback port; returns the worst exit status. A failing rank makes the
** launcher stop the others (SIGTERM: each writes nothing unless it is rank 0). */
static pid_t *launched;
static int     n_launched;

static void forward_signal(int sig) /* the launcher passes SIGTERM on to every rank */
{
    for (int i = 0; i < n_launched; i++)
        kill(launched[i], sig);
}

static int launch(int nproc, int argc, char **argv)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        getsockname(fd, (struct sockaddr *)&a, &al)) {
        if (fd >= 0)
            close(fd);
        fprintf(stderr, "sentinel train: --nproc: no free loopback port: %s\n", strerror(errno));
        return SN_EXIT_FAIL;
    }
    int port = ntohs(a.sin_port);
    close(fd);
    char **args = calloc((size_t)argc + 3, sizeof *args);
    pid_t *pids = calloc((size_t)nproc, sizeof *pids);
    if (!args || !pids) {
        free(args);
        free(pids);
        return SN_EXIT_FAIL;
    }
    int k = 0;
    args[k++] = "sentinel";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--nproc")) {
            i++;
            continue;
        }
        if (!strncmp(argv[i], "--nproc=", 8))
            continue;
        args[k++] = argv[i];
    }
    fflush(NULL);
    int status = SN_EXIT_OK, started = 0;
    for (int r = 0; r < nproc; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            char rb[16], wb[16], pb[16];
            snprintf(rb, sizeof rb, "%d", r);
            snprintf(wb, sizeof wb, "%d", nproc);
            snprintf(pb, sizeof pb, "%d", port);
            setenv("RANK", rb, 1);
            setenv("LOCAL_RANK", rb, 1);
            setenv("WORLD_SIZE", wb, 1);
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            setenv("MASTER_PORT", pb, 1);
            execv("/proc/self/exe", args);
            _exit(127);
        }
        if (pid < 0) {
            fprintf(stderr, "sentinel train: --nproc: fork: %s\n", strerror(errno));
            status = SN_EXIT_FAIL;
            break;
        }
        pids[started++] = pid;
    }
    launched = pids;
    n_launched = started;
    /* Ctrl-C reaches the whole process group (every rank) from the terminal: forwarding it
    ** would be a second signal, which kills; SIGTERM (a scheduler's) comes to us alone. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, forward_signal);
    for (int left = started; left > 0; left--) {
        int st = 0;
        pid_t done = wait(&st);
        if (done < 0)
            break;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : SN_EXIT_FAIL;
        if (code && !status) {
            status = code;
            for (int i = 0; i < started; i++) /* the others would wait in a collective */
                if (pids[i] != done)
                    kill(pids[i], SIGTERM);
        }
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    n_launched = 0;
    launched = NULL;
    free(args);
    free(pids);
    return status;
}

/* The trainer a SIGINT or SIGTERM asks to stop, set while sn_trainer_run runs: the command
** owns its signal state (the library keeps none). A lock-free atomic pointer: besides a
** volatile sig_atomic_t, the only kind of static object C lets a signal handler read. */
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "the signal handler needs a lock-free pointer");
static _Atomic(struct sn_trainer *) running;
static volatile sig_atomic_t stop_signal; /* the signal that asked, for the exit status */

static void on_signal(int sig)
{
    stop_signal = sig;
    sn_trainer_request_stop(atomic_load(&running));
    signal(sig, SIG_DFL); /* a second one kills */
}

int sn_cmd_train(int argc, char **argv)
{
    static const struct option opts[] = {
        {"recipe", required_argument, NULL, 'r'},    {"input", required_argument, NULL, 'i'},
        {"out", required_argument, NULL, 'o'},       {"tokenizer", required_argument, NULL, 'T'},
        {"max-steps", required_argument, NULL, 'M'}, {"save-every", required_argument, NULL, 'S'},
        {"init-adapter", required_argument, NULL, 'A'},
        {"restart", no_argument, NULL, 'R'},         {"set", required_argument, NULL, 's'},
        {"nproc", required_argument, NULL, 'N'},     {"device", required_argument, NULL, 'D'},
        {"progress", required_argument, NULL, 'p'},  {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *recipe_path = NULL, *in = NULL, *out = NULL, *tokenizer = NULL, *init = NULL;
    const char *device = NULL;
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    size_t n_sets = 0;
    int64_t max_steps = -1, save_every = -1, nproc = 1;
    bool restart = false;
    int progress = 0, c, status = SN_EXIT_OK;
    if (!sets) {
        fprintf(stderr, "sentinel train: out of memory\n");
        return SN_EXIT_FAIL;
    }
    opterr = 0;
    optind = 1;
    while (!status && (c = getopt_long(argc, argv, ":r:i:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': recipe_path = optarg; break;
        case 'i': in = optarg; break;
        case 'o': out = optarg; break;
        case 'T': tokenizer = optarg; break;
        case 'A': init = optarg; break;
        case 'D': device = optarg; break;
        case 'R': restart = true; break;
        case 's': sets[n_sets++] = optarg; break;
        case 'M': status = parse_count("--max-steps", optarg, &max_steps); break;
        case 'S': status = parse_count("--save-every", optarg, &save_every); break;
        case 'N':
            status = parse_count("--nproc", optarg, &nproc);
            if (!status && (nproc < 1 || nproc > 256))
                status = sn_cli_usage_error("train", "--nproc %lld: expected 1..256",
                                            (long long)nproc);
            break;
        case 'p':
            if (!strcmp(optarg, "auto")) progress = 0;
            else if (!strcmp(optarg, "bar")) progress = 1;
            else if (!strcmp(optarg, "plain")) progress = 2;
            else if (!strcmp(optarg, "none")) progress = 3;
            else status = sn_cli_usage_error("train", "--progress '%s': expected auto, bar, "
                                             "plain or none", optarg);
            break;
        case 'h':
            usage(stdout);
            free(sets);
            return SN_EXIT_OK;
        case ':':
            status = sn_cli_usage_error("train", "option '%s' needs a value", argv[optind - 1]);
            break;
        default:
            status = sn_cli_bad_option("train", argv[optind - 1], opts);
            break;
        }
    }
    if (!status && optind < argc)
        status = sn_cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
    if (!status && nproc > 1) {
        if (getenv("WORLD_SIZE") || getenv("SLURM_NTASKS")) {
            status = sn_cli_usage_error("train", "--nproc inside a torchrun/srun launch: leave "
                                        "it out (WORLD_SIZE/SLURM_NTASKS are set)");
        } else {
            free(sets);
            return launch((int)nproc, argc, argv);
        }
    }
    struct sn_err err = {0};
    cJSON *recipe = NULL;
    struct sn_train_params p = sn_train_default_params();
    char in_buf[1024], out_buf[1024];
    if (!status && recipe_path && sn_recipe_load(recipe_path, sets, n_sets, &recipe, &err))
        status = sn_cli_fail("train", &err);
    if (!status && recipe) /* a --set wins over the file, whichever name of a setting each uses */
        sn_train_recipe_sets_win(recipe, sets, n_sets);
    if (!status && !recipe_path && n_sets)
        status = sn_cli_usage_error("train", "--set needs --recipe");
    if (!status && recipe && sn_train_params_from_recipe(recipe, &p, &err))
        status = err.code == SN_E_UNSUPPORTED ? sn_cli_unavailable("train", err.msg)
                                              : sn_cli_recipe_fail("train", recipe_path, &err);
    const cJSON *sec = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "train") : NULL;
    const cJSON *od = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "out_dir") : NULL;
    if (!status && !in) {
        const cJSON *v = sec ? cJSON_GetObjectItemCaseSensitive(sec, "shards") : NULL;
        if (cJSON_IsString(v))
            in = v->valuestring;
        else if (cJSON_IsString(od)) {
            snprintf(in_buf, sizeof in_buf, "%s/shards", od->valuestring);
            in = in_buf;
        } else
            status = sn_cli_usage_error("train", "-i SHARDS_DIR is required");
    }
    if (!status && !out) {
        const cJSON *v = sec ? cJSON_GetObjectItemCaseSensitive(sec, "out") : NULL;
        if (cJSON_IsString(v))
            out = v->valuestring;
        else if (cJSON_IsString(od)) {
            snprintf(out_buf, sizeof out_buf, "%s/train", od->valuestring);
            out = out_buf;
        } else
            status = sn_cli_usage_error("train", "-o OUT_DIR is required");
    }
    if (!status) {
        if (tokenizer)
            p.tokenizer = tokenizer;
        if (!p.tokenizer && recipe) {
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(recipe, "build");
            const cJSON *v = b ? cJSON_GetObjectItemCaseSensitive(b, "tokenizer") : NULL;
            if (cJSON_IsString(v))
                p.tokenizer = v->valuestring;
        }
        if (max_steps >= 0)
            p.max_steps = max_steps;
        if (save_every >= 0)
            p.save_every = save_every;
        if (init)
            p.init_adapter = init;
        if (device)
            p.device = device;
        p.progress_mode = progress;
    }
    static int64_t kill_at[2] = {-1, -1};
    const char *ka = getenv("SENTINEL_TEST_KILL_AFTER"), *ta = getenv("SENTINEL_TEST_TERM_AFTER");
    if ((ka && *ka) || (ta && *ta)) {
        kill_at[0] = ka && *ka ? strtoll(ka, NULL, 10) : -1;
        kill_at[1] = ta && *ta ? strtoll(ta, NULL, 10) : -1;
        p.on_step = kill_after;
        p.user = kill_at;
    }
    struct sn_trainer *t = NULL;
    if (!status && sn_trainer_open(&p, in, out, restart, &t, &err))
        status = err.code == SN_E_UNSUPPORTED ? sn_cli_unavailable("train", err.msg)
                                              : sn_cli_fail("train", &err);
    if (!status) {
        atomic_store(&running, t);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        if (sn_trainer_run(t, &err))
            status = err.code == SN_E_CANCELLED ? sn_cli_interrupted("train", &err, stop_signal)
                                                : sn_cli_fail("train", &err);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        atomic_store(&running, NULL);
    }
    if (!status)
        printf("trained %lld steps into %s\n", (long long)sn_trainer_step(t), out);
    sn_trainer_free(t);
    cJSON_Delete(recipe);
    free(sets);
    return status;
}
