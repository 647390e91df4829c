/* cli/cli.h: the `sentinel` command (docs/design.md §1). One function per subcommand, each in
** cli/cmd_<name>.c, taking argv after the subcommand name's position (argv[0] = name) and
** returning the process exit status:
**   0 success, 1 the job failed (message printed), 2 usage error, 3 subcommand not in this
**   build (built without libtorch, or a pipeline stage not built yet).
** Subcommands parse options with getopt_long, print `sentinel <cmd>: <one-line reason>` on
** failure (sn_cli_fail), and accept --help. */
#ifndef SN_CLI_H
#define SN_CLI_H
#include "common/common.h"
#include "sim/sim.h"

#include <signal.h>

enum { SN_EXIT_OK = 0, SN_EXIT_FAIL = 1, SN_EXIT_USAGE = 2, SN_EXIT_UNAVAILABLE = 3 };
/* A job stopped by SIGINT or SIGTERM after saving what resumes it exits 128 + the signal (130,
** 143), as a shell reports a process the signal killed, so that job schedulers (Slurm requeue
** logic) tell it from a failure (docs/design.md §1). */
enum { SN_EXIT_SIGNAL_BASE = 128 };

int sn_cmd_run(int argc, char **argv);
int sn_cmd_simulate(int argc, char **argv);
int sn_cmd_import(int argc, char **argv);
int sn_cmd_build(int argc, char **argv);
int sn_cmd_train(int argc, char **argv);
int sn_cmd_export(int argc, char **argv);
int sn_cmd_eval(int argc, char **argv);
int sn_cmd_score(int argc, char **argv);
/* `score --detector`: the runtime detector, in both executables (cli/cmd_score_detector.c). */
int sn_cmd_score_detector(int argc, char **argv);
bool sn_cli_has_option(int argc, char **argv, const char *name);
/* What `sentinel score` scores (context, response) pairs with: the runtime detector, or the
** training-side model in sentinel-torch. Both read pairs the same way (cli/cmd_score_detector.c):
** JSON Lines {"context", "response"} or {"context", "responses": [...]}, or two files. */
struct sn_cli_pair_scorer {
    int  (*score)(void *user, const char *context, const char *response, float *out,
                  struct sn_err *err);
    /* n responses after one context (the detector computes the context once) */
    int  (*score_shared)(void *user, const char *context, const char *const *responses,
                         size_t n, float *out, struct sn_err *err);
    void *user;
    bool  exact;   /* "%.9g" (the float exactly: runs compare bit for bit) instead of "%.6f" */
};
/* Prints one reward per line ("%.6f", or "%.9g" when exact), in input order; errors name the
** file and line. */
int sn_cli_score_jsonl(const char *path, const struct sn_cli_pair_scorer *s,
                       struct sn_err *err);
int sn_cli_score_pair_files(const char *context_file, const char *response_file,
                            const struct sn_cli_pair_scorer *s, struct sn_err *err);
int sn_cmd_serve(int argc, char **argv);
int sn_cmd_stats(int argc, char **argv);
int sn_cmd_tokenize(int argc, char **argv);
/* `sentinel tokenize train` (cli/cmd_tokenize_train.c), reached through sn_cmd_tokenize. */
int sn_cmd_tokenize_train(int argc, char **argv);
int sn_cmd_inspect(int argc, char **argv);
int sn_cmd_report(int argc, char **argv);

/* Prints "sentinel <cmd>: <err->msg>" to stderr and returns SN_EXIT_FAIL (or SN_EXIT_USAGE when
** err->code is SN_E_ARG). */
int sn_cli_fail(const char *cmd, const struct sn_err *err);

/* Child processes and tree removal (cli/proc.c) for commands that drive other commands.
** sn_cli_spawn runs argv (argv[0] an executable path), stdout to out_path when given, and
** returns the child's exit status or 128 + its signal; *child_pid (may be NULL) holds the
** child's pid while it runs, for the caller's signal forwarding. sn_cli_remove_tree is rm -r
** without following links (0, or -1 said on stderr as "sentinel <cmd>: cannot remove ..."). */
int sn_cli_spawn(const char *cmd, char **argv, const char *out_path,
                 volatile sig_atomic_t *child_pid);
int sn_cli_remove_tree(const char *cmd, const char *path);
/* A job stopped by signal sig (0: SIGINT) once its state is saved: prints "sentinel <cmd>:
** <err->msg>" and returns SN_EXIT_SIGNAL_BASE + sig. */
int sn_cli_interrupted(const char *cmd, const struct sn_err *err, int sig);
/* An option getopt_long refused (arg = argv[optind - 1]): "needs a value" for a known long
** option, else "unknown option" with the nearest of opts' long names by edit distance when one
** is close ("did you mean '--max-steps'?"); a usage error (returns SN_EXIT_USAGE). */
struct option;
int sn_cli_bad_option(const char *cmd, const char *arg, const struct option *opts);
/* --progress MODE (auto, bar, plain, none) into *mode (sn_progress force_mode 0..3); a usage
** error otherwise. */
int sn_cli_progress_mode(const char *cmd, const char *arg, int *mode);
/* The name in names[0..n) nearest to s by edit distance, or NULL when none is close enough to
** be what was meant (distance <= 2 + strlen(s) / 4). */
const char *sn_cli_nearest(const char *s, const char *const *names, size_t n);
/* Prints "sentinel <cmd>: <reason>; try 'sentinel <cmd> --help'" and returns SN_EXIT_USAGE. */
int sn_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For subcommands this build does not have: prints why and returns SN_EXIT_UNAVAILABLE. */
int sn_cli_unavailable(const char *cmd, const char *why);

/* The runtime detector as a thread-safe (context, response) scorer (cli/detector_scorer.c):
** `sentinel eval --detector` and the simulation's `sentinel` defense. n_threads: OpenBLAS
** threads (0 = its choice). The callback carries the GGUF's history settings. */
struct sn_cli_scorer;
int  sn_cli_scorer_open(const char *path, int n_threads, struct sn_cli_scorer **out,
                        struct sn_err *err);
void sn_cli_scorer_free(struct sn_cli_scorer *s); /* NULL is fine */
struct sn_defense_scorer sn_cli_scorer_callback(struct sn_cli_scorer *s);

#endif
