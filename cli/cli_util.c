/* cli/cli_util.c: how every subcommand reports a failure, a usage error or a command this build
** does not have (cli/cli.h). Below the entry point (main.c) and the cmd_*.c it dispatches to,
** which all call these. */
#include "cli/cli.h"
#include "llm/llm.h"

#include <stdarg.h>
#include <stdio.h>

int sn_cli_fail(const char *cmd, const struct sn_err *err)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : sn_status_name(err->code));
    sn_llm_redact(msg, sizeof msg); /* no credential reaches the terminal or a log */
    fprintf(stderr, "sentinel %s: %s\n", cmd, msg);
    return err->code == SN_E_ARG ? SN_EXIT_USAGE : SN_EXIT_FAIL;
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
