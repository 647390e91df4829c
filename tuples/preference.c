/* tuples/preference.c: rows of TRL preference data -> the prompt template's input
** (tuples/tuples.h "preference data"; the mapping and its choices: docs/formats.md "Preference
** data"). */
#include "tuples/tuples.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"standard", "implicit", "conversational",
                                         "conversational-implicit"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == SN_PREF_KIND_COUNT, "kinds");
static const char *const format_names[] = {"auto", "trajectory", "preference"};
_Static_assert(sizeof format_names / sizeof format_names[0] == SN_INPUT_FORMAT_COUNT, "formats");

const char *sn_pref_kind_name(enum sn_pref_kind k)
{
    return (unsigned)k < SN_PREF_KIND_COUNT ? kind_names[k] : "?";
}

const char *sn_input_format_name(enum sn_input_format f)
{
    return (unsigned)f < SN_INPUT_FORMAT_COUNT ? format_names[f] : "?";
}

int sn_input_format_parse(const char *name, enum sn_input_format *out, struct sn_err *err)
{
    for (int k = 0; k < SN_INPUT_FORMAT_COUNT; k++)
        if (name && !strcmp(name, format_names[k])) {
            *out = (enum sn_input_format)k;
            return SN_OK;
        }
    return sn_err_set(err, SN_E_ARG, "format = \"%s\": expected auto (decided per file from "
                      "its first row), trajectory or preference", name ? name : "(null)");
}

void sn_pref_row_free(struct sn_pref_row *row)
{
    if (!row)
        return;
    sn_free(row->task);
    for (size_t i = 0; i < row->n_history; i++)
        sn_free(row->history[i]);
    sn_free(row->history);
    sn_free(row->chosen);
    sn_free(row->rejected);
    sn_free(row->reference);
    memset(row, 0, sizeof *row);
}

static bool blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

/* A text column: a non-blank, valid UTF-8 string. */
static int text_of(const cJSON *v, const char *where, const char *col, const char **out,
                   struct sn_err *err)
{
    if (!cJSON_IsString(v) || !v->valuestring)
        return sn_err_set(err, SN_E_FORMAT, "%s: %s: expected a string", where, col);
    if (blank(v->valuestring))
        return sn_err_set(err, SN_E_FORMAT, "%s: %s: empty text (expected a non-empty string)",
                          where, col);
    if (!sn_utf8_valid_str(v->valuestring))
        return sn_err_set(err, SN_E_FORMAT, "%s: %s: invalid UTF-8", where, col);
    *out = v->valuestring;
    return SN_OK;
}

/* ---- standard rows ------------------------------------------------------------------------- */

/* The implicit prompt of two strings (docs/formats.md "Preference data"): TRL's extract_prompt
** takes their longest common prefix, at most one byte short of the shorter one; the prompt and
** the response are separate template turns here, so the split moves back to just after the last
** white space of that prefix (no word, and no UTF-8 sequence, is cut in two), the prompt loses
** its trailing white space and each response its leading white space. */
static int implicit_split(const char *c, const char *r, const char *where,
                          struct sn_pref_row *row, struct sn_err *err)
{
    size_t nc = strlen(c), nr = strlen(r), k = 0;
    if (!strcmp(c, r))
        return sn_err_set(err, SN_E_FORMAT, "%s: chosen and rejected are the same text "
                          "(expected two different responses)", where);
    size_t lim = (nc < nr ? nc : nr);
    lim = lim ? lim - 1 : 0;
    while (k < lim && c[k] == r[k])
        k++;
    while (k > 0 && !isspace((unsigned char)c[k - 1]))
        k--;
    size_t pe = k, cs = k, rs = k;
    while (pe > 0 && isspace((unsigned char)c[pe - 1]))
        pe--;
    while (c[cs] && isspace((unsigned char)c[cs]))
        cs++;
    while (r[rs] && isspace((unsigned char)r[rs]))
        rs++;
    if (!c[cs] || !r[rs])
        return sn_err_set(err, SN_E_FORMAT, "%s: %s: empty text after the shared prompt "
                          "(expected chosen and rejected to differ in a non-empty response)",
                          where, !c[cs] ? "chosen" : "rejected");
    row->task = sn_strndup(c, pe);
    row->chosen = sn_strndup(c + cs, nc - cs);
    row->rejected = sn_strndup(r + rs, nr - rs);
    return row->task && row->chosen && row->rejected
               ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
}

/* ---- conversational rows ------------------------------------------------------------------- */

struct msg {
    const char *role, *content;
};

/* Checks list `col` of messages and appends them to *m (capacity reserved by the caller). */
static int messages_of(const cJSON *list, const char *where, const char *col, struct msg *m,
                       size_t *n, struct sn_err *err)
{
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, list) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(e, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsObject(e) || !cJSON_IsString(role) || !cJSON_IsString(content))
            return sn_err_set(err, SN_E_FORMAT, "%s: %s[%zu]: expected a message "
                              "{\"role\": string, \"content\": string}", where, col, i);
        if (!*role->valuestring)
            return sn_err_set(err, SN_E_FORMAT, "%s: %s[%zu].role: empty text", where, col, i);
        if (!sn_utf8_valid_str(role->valuestring) || !sn_utf8_valid_str(content->valuestring))
            return sn_err_set(err, SN_E_FORMAT, "%s: %s[%zu]: invalid UTF-8", where, col, i);
        m[(*n)++] = (struct msg){role->valuestring, content->valuestring};
        i++;
    }
    return SN_OK;
}

static bool msg_eq(const struct msg *a, const struct msg *b)
{
    return !strcmp(a->role, b->role) && !strcmp(a->content, b->content);
}

/* One side's conversation: its last message must be the assistant's (the response). */
static int response_of(const struct msg *m, size_t n, const char *where, const char *col,
                       struct sn_err *err)
{
    size_t last = n;
    for (size_t i = n; i-- > 0;)
        if (!strcmp(m[i].role, "assistant")) {
            last = i;
            break;
        }
    if (last == n)
        return sn_err_set(err, SN_E_FORMAT, "%s: %s: no assistant turn (expected the "
                          "conversation to end with the assistant's response)", where, col);
    if (last != n - 1)
        return sn_err_set(err, SN_E_FORMAT, "%s: %s: a '%s' turn follows the last assistant "
                          "turn (expected the conversation to end with the assistant's "
                          "response)", where, col, m[n - 1].role);
    if (blank(m[last].content))
        return sn_err_set(err, SN_E_FORMAT, "%s: %s: the assistant's response is empty text",
                          where, col);
    return SN_OK;
}

/* The context messages (all but the response) into the template's task and history: system
** turns first, their contents joined by a blank line, then the first user turn when it opens
** the rest; every later turn one history entry "<Role>: <content>" (role with its first
** letter capitalised, line breaks as spaces). */
static int context_of(const struct msg *m, size_t n, struct sn_pref_row *row, struct sn_err *err)
{
    struct sn_buf task = {0}, e = {0};
    int rc = SN_OK;
    bool first = true;
    for (size_t i = 0; i < n && !rc; i++)
        if (!strcmp(m[i].role, "system")) {
            rc = sn_buf_printf(&task, err, "%s%s", first ? "" : "\n\n", m[i].content);
            first = false;
        }
    bool user_first = false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].role, "system")) {
            user_first = !strcmp(m[i].role, "user");
            break;
        }
    row->history = sn_calloc(n + 1, sizeof *row->history);
    if (!row->history)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
        if (!strcmp(m[i].role, "system"))
            continue;
        if (user_first) {
            rc = sn_buf_printf(&task, err, "%s%s", first ? "" : "\n\n", m[i].content);
            user_first = false;
            continue;
        }
        sn_buf_reset(&e);
        rc = sn_buf_printf(&e, err, "%c%s: %s", toupper((unsigned char)m[i].role[0]),
                           m[i].role + 1, m[i].content);
        /* one entry, one line: the template joins entries with line breaks and the scorer
        ** splits a context back into entries there (tokenizer/template.h) */
        for (size_t j = 0; !rc && j < e.len; j++)
            if (e.data[j] == '\n' || e.data[j] == '\r')
                e.data[j] = ' ';
        if (!rc && !(row->history[row->n_history++] = sn_strndup(e.data, e.len)))
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    if (!rc && !(row->task = sn_strndup(task.len ? task.data : "", task.len)))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    sn_buf_free(&task);
    sn_buf_free(&e);
    return rc;
}

static int conversational(const cJSON *prompt, const cJSON *chosen, const cJSON *rejected,
                          const char *where, struct sn_pref_row *row, struct sn_err *err)
{
    size_t np = prompt ? (size_t)cJSON_GetArraySize(prompt) : 0;
    size_t ncap = np + (size_t)cJSON_GetArraySize(chosen);
    size_t rcap = np + (size_t)cJSON_GetArraySize(rejected);
    struct msg *c = sn_calloc(ncap + 1, sizeof *c), *r = sn_calloc(rcap + 1, sizeof *r);
    size_t nc = 0, nr = 0;
    int rc = c && r ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (!rc && prompt && !(rc = messages_of(prompt, where, "prompt", c, &nc, err)))
        rc = messages_of(prompt, where, "prompt", r, &nr, err);
    if (!rc)
        rc = messages_of(chosen, where, "chosen", c, &nc, err);
    if (!rc)
        rc = messages_of(rejected, where, "rejected", r, &nr, err);
    if (!rc && nc == np)
        rc = sn_err_set(err, SN_E_FORMAT, "%s: chosen: no message (expected the assistant's "
                        "response)", where);
    if (!rc && nr == np)
        rc = sn_err_set(err, SN_E_FORMAT, "%s: rejected: no message (expected the assistant's "
                        "response)", where);
    if (!rc)
        rc = response_of(c, nc, where, "chosen", err);
    if (!rc)
        rc = response_of(r, nr, where, "rejected", err);
    /* TRL's extract_prompt on message lists (the longest common prefix of messages, at most
    ** one short of the shorter list) and then "all but the last turn" coincide whenever each
    ** side's completion is one assistant turn; completions of several turns would give chosen
    ** and rejected different contexts, which a tuple cannot hold. */
    bool same = !rc && nc == nr;
    for (size_t i = 0; same && i + 1 < nc; i++)
        same = msg_eq(&c[i], &r[i]);
    if (!rc && !same)
        rc = sn_err_set(err, SN_E_FORMAT, "%s: chosen and rejected differ before their last "
                        "turn (expected one shared conversation and two different final "
                        "assistant turns)", where);
    if (!rc && msg_eq(&c[nc - 1], &r[nr - 1]))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: chosen and rejected are the same message "
                        "(expected two different responses)", where);
    if (!rc)
        rc = context_of(c, nc - 1, row, err);
    if (!rc && (!(row->chosen = sn_strndup(c[nc - 1].content, strlen(c[nc - 1].content))) ||
                !(row->rejected = sn_strndup(r[nr - 1].content, strlen(r[nr - 1].content)))))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    sn_free(c);
    sn_free(r);
    return rc;
}

/* ---- rows ---------------------------------------------------------------------------------- */

int sn_pref_parse(const char *json, size_t len, const char *where, struct sn_pref_row *row,
                  struct sn_err *err)
{
    memset(row, 0, sizeof *row);
    const char *end = NULL;
    if (sn_json_nul_escape(json, len) != (size_t)-1)
        return sn_err_set(err, SN_E_FORMAT, "%s: a string holds \\u0000 (expected text without "
                          "NUL characters)", where);
    cJSON *o = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!o)
        return sn_err_set(err, SN_E_FORMAT, "%s: invalid JSON near byte %zu (expected one JSON "
                          "object per line)", where,
                          end && end >= json ? (size_t)(end - json) + 1 : (size_t)1);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return sn_err_set(err, SN_E_FORMAT, "%s: expected a JSON object with the columns chosen "
                          "and rejected (and optionally prompt, reference)", where);
    }
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(o, "prompt");
    const cJSON *chosen = cJSON_GetObjectItemCaseSensitive(o, "chosen");
    const cJSON *rejected = cJSON_GetObjectItemCaseSensitive(o, "rejected");
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(o, "reference");
    const char *s;
    int rc = SN_OK;
    if (cJSON_IsNull(prompt))
        prompt = NULL;
    if (!chosen || !rejected)
        rc = sn_err_set(err, SN_E_FORMAT, "%s: missing column '%s' (expected a string or a list "
                        "of messages)", where, !chosen ? "chosen" : "rejected");
    else if (ref && !cJSON_IsNull(ref) && !(rc = text_of(ref, where, "reference", &s, err)) &&
             !(row->reference = sn_strndup(s, strlen(s))))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (rc)
        goto done;
    if (cJSON_IsArray(chosen) || cJSON_IsArray(rejected)) {
        const char *bad = !cJSON_IsArray(chosen) ? "chosen" : !cJSON_IsArray(rejected)
                          ? "rejected" : prompt && !cJSON_IsArray(prompt) ? "prompt" : NULL;
        if (bad) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: %s: expected a list of messages like the "
                            "other columns (a row is either all strings or all message lists)",
                            where, bad);
            goto done;
        }
        row->kind = prompt ? SN_PREF_CONVERSATIONAL : SN_PREF_CONVERSATIONAL_IMPLICIT;
        rc = conversational(prompt, chosen, rejected, where, row, err);
        goto done;
    }
    const char *c, *r, *pr = NULL;
    if ((rc = text_of(chosen, where, "chosen", &c, err)) ||
        (rc = text_of(rejected, where, "rejected", &r, err)) ||
        (prompt && (rc = text_of(prompt, where, "prompt", &pr, err))))
        goto done;
    if (!pr) {
        row->kind = SN_PREF_IMPLICIT;
        rc = implicit_split(c, r, where, row, err);
        goto done;
    }
    row->kind = SN_PREF_STANDARD;
    if (!strcmp(c, r))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: chosen and rejected are the same text (expected "
                        "two different responses)", where);
    else if (!(row->task = sn_strndup(pr, strlen(pr))) || !(row->chosen = sn_strndup(c, strlen(c))) ||
             !(row->rejected = sn_strndup(r, strlen(r))))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
done:
    cJSON_Delete(o);
    return rc;
}

int sn_pref_file_detect(const char *path, bool *is_pref, struct sn_err *err)
{
    struct sn_lines *lr = NULL;
    const char *line = NULL;
    size_t len = 0;
    bool complete = false;
    *is_pref = false;
    int rc = sn_lines_open(path, 0, &lr, err);
    while (!rc) {
        rc = sn_lines_next(lr, &line, &len, &complete, err);
        if (rc || !line)
            break;
        size_t i = 0;
        while (i < len && isspace((unsigned char)line[i]))
            i++;
        if (i == len)
            continue;
        cJSON *o = cJSON_ParseWithLength(line, len);
        *is_pref = cJSON_IsObject(o) && cJSON_HasObjectItem(o, "chosen") &&
                   cJSON_HasObjectItem(o, "rejected");
        cJSON_Delete(o);
        break;
    }
    sn_lines_close(lr);
    return rc;
}
