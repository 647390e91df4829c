/* cli/main.c: `sentinel` entry point and subcommand table (docs/design.md §1). */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"run",      sn_cmd_run,      "the whole pipeline from one recipe, each stage cached and resumable"},
    {"import",   sn_cmd_import,   "published debate logs or chat logs -> trajectories"},
    {"simulate", sn_cmd_simulate, "debates under attack -> trajectories (JSONL.gz)"},
    {"build",    sn_cmd_build,    "trajectories -> (context, chosen, rejected, reference) HDF5 shards"},
    {"train",    sn_cmd_train,    "LoRA + reward head on a Qwen2-family base -> checkpoints"},
    {"export",   sn_cmd_export,   "checkpoint -> GGUF detector (+ PEFT adapter)"},
    {"eval",     sn_cmd_eval,     "detection accuracy, FPR, FNR and accuracy recovery"},
    {"score",    sn_cmd_score,    "reward of responses given a context"},
    {"serve",    sn_cmd_serve,    "the detector and Algorithm 1 over HTTP (score, rerank, debate sessions)"},
    {"stats",    sn_cmd_stats,    "group-dynamics metrics on trajectories (SDI, FAT, NAC, DC/DM, ...)"},
    {"tokenize", sn_cmd_tokenize, "text -> token ids (or back with --decode); `tokenize train` learns a tokenizer"},
    {"inspect",  sn_cmd_inspect,  "what is inside a shard, checkpoint, GGUF or trajectory file"},
    {"report",   sn_cmd_report,   "figures (PNG) and report.html of a `sentinel run` directory"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: sentinel [--version] [--help] <command> [options]\n\n"
               "Trains and runs detectors of malicious agents in multi-agent LLM debates.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'sentinel <command> --help' describes a command's options.\n"
               "Exit status: 0 ok, 1 failure, 2 usage error, 3 command not in this build, 130/143\n"
               "interrupted by SIGINT/SIGTERM after saving what resumes the job.\n"
               "Environment: SENTINEL_LOG=error|warn|info|debug sets the log level.\n");
}

/* Results printed to stdout are only delivered once flushed: a full device (`> /dev/full`) or a
** closed pipe shows up here at the latest, and must not leave exit status 0 (README "Errors and
** exit codes"). One check for every command; files a command writes go through
** sn_atomic_commit or sn_stream_finish, which check the same. */
static int finish_stdout(const char *cmd, int status)
{
    struct sn_err err = {0};
    if (sn_stream_finish(stdout, "standard output", &err)) {
        int st = sn_cli_fail(cmd, &err);
        return status ? status : st;
    }
    return status;
}

int main(int argc, char **argv)
{
    const char *lvl = getenv("SENTINEL_LOG");
    if (lvl) {
        if (!strcmp(lvl, "error")) sn_log_set_level(SN_LOG_ERROR);
        else if (!strcmp(lvl, "warn")) sn_log_set_level(SN_LOG_WARN);
        else if (!strcmp(lvl, "debug")) sn_log_set_level(SN_LOG_DEBUG);
    }
#if defined(SENTINEL_WITH_TORCH) && !defined(SN_CLI_TORCH_HELPER)
    /* sentinel-torch: training-sized activations are allocated and freed every step; keep the
    ** freed blocks instead of re-faulting fresh pages (common.h, sn_tune_host_allocator). */
    sn_tune_host_allocator((size_t)1 << 30);
#endif
    if (argc < 2) {
        usage(stderr);
        return SN_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return finish_stdout("help", SN_EXIT_OK);
    }
    if (!strcmp(argv[1], "--version")) {
        printf("sentinel %s (%s libtorch)\n", SENTINEL_VERSION,
#ifdef SENTINEL_WITH_TORCH
               "with"
#else
               "without"
#endif
        );
        return SN_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return finish_stdout(commands[i].name, commands[i].fn(argc - 1, argv + 1));
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        names[i] = commands[i].name;
    const char *near = sn_cli_nearest(argv[1], names, sizeof names / sizeof names[0]);
    if (near)
        fprintf(stderr, "sentinel: unknown command '%s' (did you mean '%s'?); try 'sentinel "
                        "--help'\n", argv[1], near);
    else
        fprintf(stderr, "sentinel: unknown command '%s'; try 'sentinel --help'\n", argv[1]);
    return SN_EXIT_USAGE;
}
