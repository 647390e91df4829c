/* data/question.h: question datasets and answer extraction (docs/design.md §2 "questions", §4
** "Labels"). Input formats are described in docs/simulate.md#datasets.
**
** A dataset is loaded from a recipe spec object, e.g.
**   {"kind":"mmlu","path":"data/mmlu/test","n":200,"seed":1,"subjects":["anatomy"]}
**   {"kind":"synthetic","n":40,"seed":7,"numeric_share":0.5}
** into an owned struct sn_qset. Kinds: mmlu (header-less CSV, or JSONL), commonsenseqa,
** gsm8k, truthfulqa (mc1_targets), medmcqa, jsonl (our neutral form), synthetic (built in).
** Errors name file:line and what was expected.
**
** Answers have one normal form (docs/formats.md "Trajectory" `answer`): multiple choice is an
** upper-case letter "A".."Z"; numeric is the shortest decimal string of the value ("3", "0.5",
** "-12"). Extraction never guesses: an answer it cannot find is reported as unparsed. */
#ifndef SN_DATA_QUESTION_H
#define SN_DATA_QUESTION_H
#include "common/common.h"
#include "data/trajectory.h" /* enum sn_task (SN_TASK_MC, SN_TASK_NUMERIC), shared with readers */

#define SN_ANSWER_MAX 32 /* normal-form answers fit in this many bytes including the NUL */
#define SN_OPTIONS_MAX 26
/* The most questions one dataset spec may ask for (`n`): every question is held in memory and
** each becomes at least one debate of many LLM calls, so a larger n is a typo, not a plan. */
#define SN_QSET_MAX_N 1000000

struct sn_question {
    char  *id;               /* unique within the dataset, e.g. "mmlu-anatomy-00012" */
    char  *dataset;          /* the spec's kind, or its "name" when given */
    char  *subject;          /* NULL when the dataset has none */
    enum sn_task task;
    char  *question;
    char **options;          /* n_options strings (MC); NULL/0 for numeric */
    size_t n_options;
    char  *gold;             /* normal form */
    char  *gold_explanation; /* NULL when the dataset has none */
};

struct sn_qset {
    struct sn_question *items;
    size_t n;
};

/* Loads the dataset described by spec (a recipe object; `where` names it in errors, e.g.
** "simulate.experiments[0].dataset"). Relative paths are taken as given (from the cwd).
** Sampling: with "n" > 0 and fewer items than available, n items are drawn with "seed" and
** kept in file order. `limit` > 0 caps n further (the CLI's --limit). */
int  sn_qset_load(const cJSON *spec, const char *where, size_t limit, struct sn_qset **out,
                  struct sn_err *err);
void sn_qset_free(struct sn_qset *qs);
/* Built-in synthetic generator (data/synthetic.c): n items from seed; numeric_share in [0,1]
** is the share of arithmetic word problems. Appends to qs. */
int  sn_synthetic_generate(struct sn_qset *qs, size_t n, uint64_t seed, double numeric_share,
                           const char *name, struct sn_err *err);
/* Internal helpers shared by the loaders; exposed for tests. */
int  sn_qset_push(struct sn_qset *qs, const struct sn_question *q, struct sn_err *err);
void sn_question_clear(struct sn_question *q);
const char *sn_task_name(enum sn_task t); /* "mc" / "numeric" */
/* Reads one file of the given on-disk kind (data/datasets.c) and appends its items; name is
** the dataset name written into each item. spec supplies format options (cop_base). */
int  sn_dataset_read_file(const char *kind, const char *path, const char *name,
                          const cJSON *spec, struct sn_qset *qs, struct sn_err *err);

/* ---- answer extraction (data/extract.c) ------------------------------------------------- */

/* Extracts the final answer from a model response. For SN_TASK_MC, n_options bounds the valid
** letters. Returns true and writes the normal form to out (SN_ANSWER_MAX bytes) when an
** answer is found; false (out = "") when not. Rules, in order (the first rule that matches
** anywhere wins; within a rule the LAST occurrence wins):
**   MC:      "FINAL ANSWER: X" · "answer is X" / "answer: X" (also "(X)", "**X**") ·
**            \boxed{X} · the last "(X)" or "[X]" · the last standalone letter that is not
**            an English word in context ("I think", "A good").
**   numeric: \boxed{...} · "#### n" · "FINAL ANSWER: n" · "answer is n" / "answer: n" ·
**            the last number in the text. */
bool sn_extract_answer(const char *text, enum sn_task task, size_t n_options,
                       char out[SN_ANSWER_MAX]);
/* Normalises a numeric answer string: strips $, \$, %, thousands separators (1,000), spaces
** and a trailing period; evaluates a/b, \frac{a}{b}, \dfrac{a}{b}, \boxed{...}; prints the
** value in shortest form (3.0 -> "3", 12/4 -> "3", 0.50 -> "0.5"). False when s is not a
** single number in one of these forms. */
bool sn_normalize_number(const char *s, char out[SN_ANSWER_MAX]);
/* Prints a double in the normal form ("%.10g" rounded, no trailing zeros, no "-0"). */
void sn_format_number(double v, char out[SN_ANSWER_MAX]);
/* true when a and b are the same answer (both parsed; numeric compares values). */
bool sn_answer_equal(const char *a, const char *b, enum sn_task task);

#endif
