/* tuples/build_questions.c: content keys of a trajectory's question (tuples/tuples.h), which
** `sentinel build` records for the train split in the manifest (`train_questions`,
** docs/formats.md "Manifest") and `sentinel eval` looks evaluated debates up by (docs/eval.md
** "Leakage"): a question is the same question whatever its dataset or item id is called. */
#include "tuples/tuples.h"
#include "tokenizer/tokenizer.h"

#include <inttypes.h>
#include <string.h>

static int fold_line(struct sn_buf *b, const char *s, struct sn_err *err)
{
    int rc = sn_text_fold(s ? s : "", s ? strlen(s) : 0, b, err);
    return rc ? rc : sn_buf_puts(b, "\n", err);
}

int sn_question_keys(const struct sn_traj *t, char question[65], char item[65],
                     struct sn_err *err)
{
    struct sn_buf b = {0};
    int rc = sn_buf_puts(&b, SN_QUESTION_KEY_ID "\n", err);
    if (!rc)
        rc = sn_text_fold(t->question ? t->question : "", t->question ? strlen(t->question) : 0,
                          &b, err);
    if (!rc)
        sn_sha256_hex(b.data, b.len, question);
    /* the folded question again, then the options (counted, so no option can pass for the
    ** gold line) and the gold answer; a folded text holds no line break */
    if (!rc)
        rc = sn_buf_printf(&b, err, "\n%zu\n", t->n_options);
    for (size_t i = 0; !rc && i < t->n_options; i++)
        rc = fold_line(&b, t->options[i], err);
    if (!rc)
        rc = fold_line(&b, t->gold, err);
    if (!rc)
        sn_sha256_hex(b.data, b.len, item);
    sn_buf_free(&b);
    if (rc)
        sn_err_wrap(err, "trajectory %s: question key", t->id ? t->id : "?");
    return rc;
}
