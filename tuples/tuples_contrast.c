/* tuples/tuples_contrast.c: content-contrastive texts for the tuple builder (tuples/tuples.h;
** docs/formats.md "Tuple selection", "Content-contrastive pairs"): a message rewritten so that
** its answer (its option letter, the option's text, its numbers) is another one while every
** other word stays, and the wrong answer such a rewrite uses. A pair of such texts differs in
** content only, so a detector trained on it must look at whether a fact or a step is right,
** not at the wording (SentinelNet §4.2 "Key Insights"; §6 "Possible Adaptive Attacks"). */
#include "context/context.h"
#include "tuples/tuples.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *option_text(enum sn_task task, const char *const *options, size_t n_options,
                               const char *letter)
{
    if (task != SN_TASK_MC || !letter || !letter[0] || letter[1])
        return "";
    size_t k = (size_t)(letter[0] - 'A');
    return k < n_options ? options[k] : "";
}

int sn_tuples_swap_answer(enum sn_task task, const char *const *options, size_t n_options,
                          const char *text, const char *from, const char *to,
                          struct sn_buf *out, struct sn_err *err)
{
    const char *ft = option_text(task, options, n_options, from);
    const char *tt = option_text(task, options, n_options, to);
    size_t fl = strlen(from), ftl = strlen(ft);
    int rc;
    for (size_t i = 0; text[i];) {
        /* the option's text, as a whole phrase */
        if (ftl > 0 && strncmp(text + i, ft, ftl) == 0 &&
            (i == 0 || !isalnum((unsigned char)text[i - 1])) &&
            !isalnum((unsigned char)text[i + ftl])) {
            if ((rc = sn_buf_puts(out, tt, err)))
                return rc;
            i += ftl;
            continue;
        }
        /* the letter where it is not an English word ("A good point"), the number where it is
        ** not part of a longer one */
        if (fl > 0 && strncmp(text + i, from, fl) == 0) {
            char prev = i ? text[i - 1] : ' ', next = text[i + fl];
            bool ok;
            if (task == SN_TASK_MC)
                ok = !isalnum((unsigned char)prev) && !isalnum((unsigned char)next) &&
                     next != '\'' && !(next == ' ' && islower((unsigned char)text[i + fl + 1]));
            else
                ok = !isdigit((unsigned char)prev) && prev != '.' && prev != ',' &&
                     !isdigit((unsigned char)next) &&
                     !(next == '.' && isdigit((unsigned char)text[i + fl + 1]));
            if (ok) {
                if ((rc = sn_buf_puts(out, to, err)))
                    return rc;
                i += fl;
                continue;
            }
        }
        if ((rc = sn_buf_append(out, text + i, 1, err)))
            return rc;
        i++;
    }
    if (!out->data && (rc = sn_buf_append(out, "", 0, err)))
        return rc;
    char got[SN_ANSWER_MAX];
    if (!sn_extract_answer(out->data, task, n_options, got) || !sn_answer_equal(got, to, task))
        return sn_buf_printf(out, err, "\n\nFINAL ANSWER: %s", to);
    return SN_OK;
}

void sn_tuples_wrong_answer(enum sn_task task, size_t n_options, const char *gold,
                            const char *target, uint64_t seed, char out[32])
{
    if (target && target[0] && !sn_answer_equal(target, gold, task)) {
        snprintf(out, SN_ANSWER_MAX, "%s", target);
        return;
    }
    struct sn_rng r;
    sn_rng_seed(&r, seed);
    if (task == SN_TASK_MC) {
        size_t g = gold[0] >= 'A' && gold[0] <= 'Z' ? (size_t)(gold[0] - 'A') : 0;
        size_t n = n_options > 1 ? n_options : 2;
        size_t k = (size_t)sn_rng_below(&r, n - 1);
        if (k >= g)
            k++;
        out[0] = (char)('A' + k);
        out[1] = '\0';
        return;
    }
    /* the slips of docs/simulate.md "Attacks": off by one or ten, doubled, halved */
    static const double d[] = {1, -1, 10, -10};
    double g = strtod(gold, NULL), v;
    switch (sn_rng_below(&r, 6)) {
    case 4: v = g * 2; break;
    case 5: v = g / 2; break;
    default: v = g + d[sn_rng_below(&r, 4)];
    }
    if (g >= 0 && v < 0)
        v = g + 1;
    sn_format_number(v, out);
    if (sn_answer_equal(out, gold, task))
        sn_format_number(g + 1, out);
}
