/* cli/cmd_report.c: `sentinel report RUN_DIR`: the figures of a run directory without Jupyter
** (docs/run.md, "Report"). The drawing is matplotlib's, in scripts/report.py, run with the
** system Python; this command finds the script and the interpreter, checks the directory, and
** passes the script's exit status on. `sentinel run` calls it after its summary. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SN_REPORT_SCRIPT
#define SN_REPORT_SCRIPT "scripts/report.py"
#endif

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel report RUN_DIR\n"
"\n"
"Draws the figures of a `sentinel run` output directory and writes a self-contained\n"
"RUN_DIR/report.html (figures inlined, then summary.txt):\n"
"  RUN_DIR/figures/training.png   loss, pairwise accuracy and learning rate per step, with\n"
"                                 the validation points (train/metrics.jsonl)\n"
"  RUN_DIR/figures/detection.png  detection accuracy per round: every ranker, the oracle and\n"
"                                 the detector (eval/report.json)\n"
"  RUN_DIR/figures/scores.png     score histograms, adversarial vs honest, per ranker\n"
"                                 (eval/items.csv)\n"
"A figure whose input is missing is left out. The same run gives the same bytes. `sentinel\n"
"run` writes them at its end. Drawn by scripts/report.py with python3 and matplotlib\n"
"(Debian: python3-matplotlib); without matplotlib report.html says what to install.\n"
"\n"
"options:\n"
"  -h, --help   this help\n"
"\n"
"Environment: SENTINEL_PYTHON (default /usr/bin/python3, else python3 on PATH),\n"
"SENTINEL_REPORT_SCRIPT (default the source tree's scripts/report.py).\n"
"Exit status: 0 ok (also without matplotlib), 1 failure, 2 usage error, 3 no Python.\n");
}

int sn_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return SN_EXIT_OK;
        }
        return sn_cli_bad_option("report", argv[optind - 1], opts);
    }
    if (optind + 1 != argc)
        return sn_cli_usage_error("report", optind < argc ? "one RUN_DIR expected"
                                                          : "RUN_DIR missing");
    const char *dir = argv[optind];
    if (!sn_path_is_dir(dir)) {
        fprintf(stderr, "sentinel report: %s: not a directory\n", dir);
        return SN_EXIT_FAIL;
    }
    const char *script = getenv("SENTINEL_REPORT_SCRIPT");
    if (!script || !*script)
        script = SN_REPORT_SCRIPT;
    if (access(script, R_OK)) {
        fprintf(stderr, "sentinel report: %s: not found (set SENTINEL_REPORT_SCRIPT to "
                        "scripts/report.py of the source tree)\n", script);
        return SN_EXIT_FAIL;
    }
    const char *py = getenv("SENTINEL_PYTHON");
    char found[4096] = "";
    if (py && *py) {
        snprintf(found, sizeof found, "%s", py);
    } else if (!access("/usr/bin/python3", X_OK)) {
        snprintf(found, sizeof found, "/usr/bin/python3");
    } else { /* python3 on PATH */
        const char *path = getenv("PATH");
        while (path && *path && !found[0]) {
            size_t n = strcspn(path, ":");
            snprintf(found, sizeof found, "%.*s/python3", (int)n, path);
            if (access(found, X_OK))
                found[0] = '\0';
            path += n + (path[n] == ':');
        }
    }
    if (!found[0] || access(found, X_OK))
        return sn_cli_unavailable("report", "no python3 to run scripts/report.py: install "
                                  "python3 and python3-matplotlib (scripts/deps.sh)");
    char *args[] = {found, (char *)script, (char *)dir, NULL};
    int st = sn_cli_spawn("report", args, NULL, NULL);
    return st == SN_EXIT_USAGE ? SN_EXIT_FAIL : st;
}
