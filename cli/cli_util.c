/* cli/cli_util.c: how every subcommand reports a failure, a usage error or a command this build
** does not have (cli/cli.h). Below the entry point (main.c) and the cmd_*.c it dispatches to,
** which all call these. */
#include "cli/cli.h"
#include "llm/llm.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sn_cli_fail(const char *cmd, const struct sn_err *err)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : sn_status_name(err->code));
    sn_llm_redact(msg, sizeof msg); /* no credential reaches the terminal or a log */
    fprintf(stderr, "sentinel %s: %s\n", cmd, msg);
    return err->code == SN_E_ARG ? SN_EXIT_USAGE : SN_EXIT_FAIL;
}

int sn_cli_interrupted(const char *cmd, const struct sn_err *err, int sig)
{
    sn_cli_fail(cmd, err);
    return SN_EXIT_SIGNAL_BASE + (sig > 0 ? sig : SIGINT);
}

int sn_cli_progress_mode(const char *cmd, const char *arg, int *mode)
{
    static const char *const names[] = {"auto", "bar", "plain", "none"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(arg, names[i])) {
            *mode = i;
            return SN_EXIT_OK;
        }
    return sn_cli_usage_error(cmd, "--progress '%s': expected auto, bar, plain or none", arg);
}

const char *sn_cli_nearest(const char *s, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = sn_edit_distance(s, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    return best && best_d <= 2 + strlen(s) / 4 ? best : NULL;
}

int sn_cli_bad_option(const char *cmd, const char *arg, const struct option *opts)
{
    if (!arg || strncmp(arg, "--", 2) || !arg[2])
        return sn_cli_usage_error(cmd, "unknown option '%s'", arg ? arg : "?");
    char name[128];
    snprintf(name, sizeof name, "%s", arg + 2);
    name[strcspn(name, "=")] = '\0';
    const char *names[128];
    size_t n = 0;
    for (const struct option *o = opts; o->name && n < 128; o++) {
        if (!strcmp(o->name, name) && o->has_arg == required_argument)
            return sn_cli_usage_error(cmd, "option '--%s' needs a value", name);
        names[n++] = o->name;
    }
    const char *near = sn_cli_nearest(name, names, n);
    if (near && strcmp(near, name))
        return sn_cli_usage_error(cmd, "unknown option '--%s' (did you mean '--%s'?)", name,
                                  near);
    return sn_cli_usage_error(cmd, "unknown option '%s'", arg);
}

int sn_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sentinel %s: %s; try 'sentinel %s --help'\n", cmd, msg, cmd);
    return SN_EXIT_USAGE;
}

int sn_cli_unavailable(const char *cmd, const char *why)
{
    fprintf(stderr, "sentinel %s: %s\n", cmd, why);
    return SN_EXIT_UNAVAILABLE;
}
