/* fuzz/fuzz_preference.c: one row of TRL preference data (tuples/tuples.h sn_pref_parse;
** docs/formats.md "Preference data") from arbitrary bytes. Invariants (abort on violation): a
** parsed row has a task (maybe empty) and non-blank, valid UTF-8 responses that differ, history
** entries on one line each, and parsing it again gives the same row; a refused row is
** SN_E_FORMAT with a message that starts with the row's "file:line", never anything else. */
#include "tuples/tuples.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static bool blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

static void check_same(const struct sn_pref_row *a, const struct sn_pref_row *b)
{
    if (a->kind != b->kind || strcmp(a->task, b->task) || strcmp(a->chosen, b->chosen) ||
        strcmp(a->rejected, b->rejected) || a->n_history != b->n_history ||
        !a->reference != !b->reference || (a->reference && strcmp(a->reference, b->reference)))
        abort();
    for (size_t i = 0; i < a->n_history; i++)
        if (strcmp(a->history[i], b->history[i]))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    struct sn_pref_row row, again;
    struct sn_err err = {0};
    int rc = sn_pref_parse((const char *)data, size, "f.jsonl:7", &row, &err);
    if (rc) {
        if (rc != SN_E_FORMAT || strncmp(err.msg, "f.jsonl:7: ", 11))
            abort();
        sn_pref_row_free(&row);
        return 0;
    }
    if (!row.task || !row.chosen || !row.rejected || blank(row.chosen) || blank(row.rejected) ||
        !strcmp(row.chosen, row.rejected) || !sn_utf8_valid_str(row.task) ||
        !sn_utf8_valid_str(row.chosen) || !sn_utf8_valid_str(row.rejected))
        abort();
    for (size_t i = 0; i < row.n_history; i++)
        if (strchr(row.history[i], '\n') || strchr(row.history[i], '\r'))
            abort();
    struct sn_err e2 = {0};
    if (sn_pref_parse((const char *)data, size, "f.jsonl:7", &again, &e2) != SN_OK)
        abort();
    check_same(&row, &again);
    sn_pref_row_free(&again);
    sn_pref_row_free(&row);
    return 0;
}
