/* eval/stats_csv.c: one CSV field (eval/stats_internal.h), for the --csv writer
** (stats_output.c) and the --items rows (stats.c): below both, so neither reaches into the
** other for it. */
#include "eval/stats_internal.h"

#include <string.h>

int sn_stats_csv_field(struct sn_buf *b, const char *v, struct sn_err *err)
{
    if (!strpbrk(v, ",\"\n\r"))
        return sn_buf_puts(b, v, err);
    if (sn_buf_puts(b, "\"", err))
        return err->code;
    for (const char *p = v; *p; p++)
        if (sn_buf_append(b, p, 1, err) || (*p == '"' && sn_buf_append(b, "\"", 1, err)))
            return err->code;
    return sn_buf_puts(b, "\"", err);
}
