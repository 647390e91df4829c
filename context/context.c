/* context/context.c: the context c a sentinel sees (context/context.h; docs/formats.md "Tuple
** selection"): the task text, the extractive history entries and their assembly. */
#include "context/context.h"
#include "tokenizer/template.h"

#include <string.h>
#include <strings.h>

struct sn_context_params sn_context_default_params(void)
{
    struct sn_context_params p;
    memset(&p, 0, sizeof p);
    p.history_sentences = 2;
    p.history_chars = 300;
    return p;
}

int sn_context_task_text(enum sn_task task, const char *question, const char *const *options,
                         size_t n_options, struct sn_buf *out, struct sn_err *err)
{
    int rc = sn_buf_printf(out, err, "Question: %s", question ? question : "");
    if (!rc && task == SN_TASK_MC && n_options > 0) {
        rc = sn_buf_puts(out, "\nOptions:", err);
        for (size_t i = 0; i < n_options && !rc; i++) {
            if (i < 26)
                rc = sn_buf_printf(out, err, "\n%c. %s", (char)('A' + i), options[i]);
            else
                rc = sn_buf_printf(out, err, "\n%zu. %s", i + 1, options[i]);
        }
    }
    return rc;
}

/* ---- extractive history ------------------------------------------------------------------ */

/* "FINAL ANSWER: X", also in markdown dress ("**Final Answer: X**", "### Final answer"). */
static bool starts_final_answer(const char *s)
{
    while (*s == '*' || *s == '#' || *s == '>' || *s == '_' || *s == ' ')
        s++;
    return strncasecmp(s, "final answer", 12) == 0;
}

/* The first n sentences of text (a sentence ends at . ! ? followed by white space or the end,
** or at a line break), skipping any line that starts with "FINAL ANSWER", newlines folded
** into spaces, at most cap bytes (cut at a character boundary, marked "..."). */
int sn_context_gist(const char *text, size_t n_sent, size_t cap, struct sn_buf *out,
                    struct sn_err *err)
{
    size_t start = out->len, sentences = 0;
    const char *s = text;
    bool line_start = true, pending_space = false;
    int rc = SN_OK;
    while (*s && sentences < n_sent && !rc) {
        if (line_start) {
            while (*s == ' ' || *s == '\t')
                s++;
            if (starts_final_answer(s)) {
                while (*s && *s != '\n')
                    s++;
                if (*s)
                    s++;
                continue;
            }
            line_start = false;
        }
        char c = *s++;
        if (c == '\n' || c == '\r') {
            line_start = true;
            if (out->len > start) {
                sentences++; /* a line break ends a sentence */
                pending_space = true;
            }
            continue;
        }
        if (pending_space && c != ' ' && c != '\t') {
            rc = sn_buf_puts(out, " ", err);
            pending_space = false;
        }
        if (pending_space)
            continue;
        if (!rc)
            rc = sn_buf_append(out, &c, 1, err);
        if ((c == '.' || c == '!' || c == '?') && (*s == '\0' || *s == ' ' || *s == '\n' ||
                                                   *s == '\t' || *s == '\r'))
            sentences++;
    }
    size_t len = out->len - start;
    while (len > 0 && (out->data[start + len - 1] == ' '))
        len--;
    if (len > cap) {
        len = cap;
        while (len > 0 && (out->data[start + len] & 0xC0) == 0x80)
            len--;
        out->len = start + len;
        if (!rc)
            rc = sn_buf_puts(out, "...", err);
    } else {
        out->len = start + len;
        if (!rc)
            rc = sn_buf_append(out, "", 0, err);
    }
    return rc;
}

int sn_context_history_entry(size_t round, int agent, const char *answer, const char *text,
                             const struct sn_context_params *p, struct sn_buf *out,
                             struct sn_err *err)
{
    size_t n_sent = p->history_sentences ? p->history_sentences : 2;
    size_t cap = p->history_chars ? p->history_chars : 300;
    int rc = sn_buf_printf(out, err, "Round %zu, agent %d (answer %s): ", round + 1, agent,
                           answer ? answer : "none");
    size_t before = out->len;
    if (!rc)
        rc = sn_context_gist(text ? text : "", n_sent, cap, out, err);
    if (!rc && out->len == before)
        rc = sn_buf_puts(out, "(no reasoning given)", err);
    return rc;
}

/* ---- assembly ---------------------------------------------------------------------------- */

int sn_context_from_msgs(const char *task, const struct sn_context_msg *msgs, size_t n,
                         const struct sn_context_params *p, struct sn_buf *out,
                         struct sn_err *err)
{
    struct sn_buf all = {0};
    size_t *off = sn_calloc(n + 1, sizeof *off);
    const char **hist = sn_calloc(n + 1, sizeof *hist);
    int rc = off && hist ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
    /* entries end to end in one buffer (NUL-separated), pointers taken once it stops moving */
    for (size_t i = 0; i < n && !rc; i++) {
        off[i] = all.len;
        rc = sn_context_history_entry(msgs[i].round, msgs[i].agent, msgs[i].answer,
                                      msgs[i].text, p, &all, err);
        if (!rc)
            rc = sn_buf_append(&all, "", 1, err);
    }
    for (size_t i = 0; i < n && !rc; i++)
        hist[i] = all.data + off[i];
    if (!rc) {
        struct sn_prompt prompt = {NULL, task ? task : "", hist, n};
        rc = sn_template_context(&prompt, out, err);
    }
    sn_free(off);
    sn_free(hist);
    sn_buf_free(&all);
    return rc;
}
