/* cli/detector_scorer.c: the runtime detector (export/export.h) as the (context, response)
** scorer of sim/sim.h, for `sentinel eval --detector` and the `sentinel` defense of
** `sentinel simulate` (docs/eval.md "Context"; docs/simulate.md "Defense").
**
** The context a sentinel gets is the tuple builder's (sn_tuples_context: the task, then
** "\n\nDiscussion so far:\n" and one history entry per line). Training truncated such a prompt
** by dropping the oldest history entries first (tokenizer/template.h); scoring the whole context
** as the task would never drop them. So the context is split back into its task and entries
** (entries hold no newline: the builder folds them; the header is taken at its last occurrence,
** which no entry can contain) and encoded with the template's policy, the GGUF's system prompt
** and max_len, like the tuple builder's sequences. Re-rendering an already rendered context is
** byte-identical (the template's escaping of "<|" is idempotent). A mutex serialises scoring:
** the simulation's worker threads share one detector. */
#include "cli/cli.h"
#include "export/export.h"
#include "tokenizer/template.h"

#include <pthread.h>
#include <string.h>

#define HIST_HEADER "\n\nDiscussion so far:\n" /* tokenizer/template.h */

struct sn_cli_scorer {
    struct sn_detector *d;
    char  *system;
    size_t max_len;
    unsigned hist_sentences, hist_chars;
    pthread_mutex_t mu;
    struct sn_buf text;   /* the context, cut into NUL-separated pieces */
    const char **hist;
    size_t cap_hist;
    struct sn_ids ids;
};

static int score(void *ctx, const char *context, const char *response, float *out,
                 struct sn_err *err)
{
    struct sn_cli_scorer *s = ctx;
    pthread_mutex_lock(&s->mu);
    sn_buf_reset(&s->text);
    int rc = sn_buf_puts(&s->text, context ? context : "", err);
    size_t n = 0;
    char *task = s->text.data ? s->text.data : "";
    char *h = NULL;
    for (char *p = strstr(task, HIST_HEADER); p; p = strstr(p + 1, HIST_HEADER))
        h = p;
    if (!rc && h) {
        *h = '\0';
        char *e = h + strlen(HIST_HEADER);
        size_t need = 1;
        for (const char *q = e; *q; q++)
            need += *q == '\n';
        if (need > s->cap_hist) {
            const char **v = sn_realloc(s->hist, need * sizeof *v);
            if (!v)
                rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            else {
                s->hist = v;
                s->cap_hist = need;
            }
        }
        while (!rc && e) {
            char *nl = strchr(e, '\n');
            if (nl)
                *nl = '\0';
            s->hist[n++] = e;
            e = nl ? nl + 1 : NULL;
        }
    }
    if (!rc) {
        struct sn_prompt pr = {s->system, task, s->hist, n};
        rc = sn_template_encode(sn_detector_tokenizer(s->d), &pr, response ? response : "",
                                s->max_len, &s->ids, NULL, NULL, err);
    }
    if (!rc)
        rc = sn_detector_score_ids(s->d, s->ids.v, s->ids.n, out, NULL, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sn_cli_scorer_open(const char *path, int n_threads, struct sn_cli_scorer **out,
                       struct sn_err *err)
{
    *out = NULL;
    struct sn_cli_scorer *s = sn_calloc(1, sizeof *s);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    struct sn_detector_params dp = sn_detector_default_params();
    dp.n_threads = n_threads;
    struct sn_gguf *g = NULL;
    const char *system = NULL;
    uint64_t max_len = 0, hs = 0, hc = 0;
    int rc = sn_detector_open(path, &dp, &s->d, err);
    if (!rc)
        rc = sn_gguf_open(path, &g, err);
    if (!rc)
        rc = sn_gguf_get_str(g, SN_GGUF_KEY_SYSTEM, false, SN_TEMPLATE_SYSTEM, &system, err);
    if (!rc)
        rc = sn_gguf_get_u64(g, SN_GGUF_KEY_MAX_LEN, false, 1024, &max_len, err);
    if (!rc)
        rc = sn_gguf_get_u64(g, SN_GGUF_KEY_HIST_SENT, false, 0, &hs, err);
    if (!rc)
        rc = sn_gguf_get_u64(g, SN_GGUF_KEY_HIST_CHARS, false, 0, &hc, err);
    if (!rc && (hs > 1000 || hc > 1000000 || max_len < 1 || max_len > (1u << 24)))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: out-of-range settings (max_len %llu, history "
                        "%llu sentences, %llu bytes)", path, (unsigned long long)max_len,
                        (unsigned long long)hs, (unsigned long long)hc);
    if (!rc && !(s->system = sn_strdup(system)))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    sn_gguf_close(g);
    if (rc) {
        sn_cli_scorer_free(s);
        return rc;
    }
    s->max_len = (size_t)max_len;
    s->hist_sentences = (unsigned)hs;
    s->hist_chars = (unsigned)hc;
    *out = s;
    return SN_OK;
}

void sn_cli_scorer_free(struct sn_cli_scorer *s)
{
    if (!s)
        return;
    sn_detector_free(s->d);
    sn_free(s->system);
    sn_buf_free(&s->text);
    sn_free(s->hist);
    sn_ids_free(&s->ids);
    pthread_mutex_destroy(&s->mu);
    sn_free(s);
}

struct sn_defense_scorer sn_cli_scorer_callback(struct sn_cli_scorer *s)
{
    return (struct sn_defense_scorer){score, s, s->hist_sentences, s->hist_chars};
}
