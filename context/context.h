/* context/context.h: the context c a sentinel sees, R(response ⊕ c) (docs/design.md §4 "Tuple";
** the exact text is specified in docs/formats.md "Tuple selection"), and the answer extraction
** that labels messages (docs/design.md §4 "Labels"; docs/simulate.md#answers-and-extraction).
** The tuple builder (tuples/tuples.h), the debate engine's defense (sim/) and `sentinel eval`
** all render contexts through this one module, so a detector sees at run time, byte for byte,
** what it was trained on.
**
**   task text  "Question: <q>" and, for multiple choice, "\nOptions:\nA. <o0>\nB. <o1>...";
**   entry      "Round <t>, agent <k> (answer <X|none>): <gist>": the first history_sentences
**              sentences of the message, lines starting "FINAL ANSWER" skipped, at most
**              history_chars bytes (cut at a character boundary, then "...");
**   context    sn_template_context (tokenizer/template.h) of the task text and the entries.
**
** Answers have one normal form (docs/formats.md "Trajectory" `answer`): multiple choice is an
** upper-case letter "A".."Z"; numeric is the shortest decimal string of the value ("3", "0.5",
** "-12"). Extraction never guesses: an answer it cannot find is reported as unparsed.
**
** Uses common/ and tokenizer/ only (no trajectories, no HDF5, libcurl or libtorch) and holds no
** state: every call is a pure function of its arguments. Strings are borrowed for the call. */
#ifndef SN_CONTEXT_H
#define SN_CONTEXT_H
#include "common/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kind of task a question is (trajectories, datasets, extraction). */
enum sn_task { SN_TASK_MC, SN_TASK_NUMERIC, SN_TASK_COUNT };

#define SN_ANSWER_MAX 32 /* normal-form answers fit in this many bytes including the NUL */
#define SN_OPTIONS_MAX 26 /* multiple-choice options "A".."Z" */

/* ---- the context text (context/context.c) ------------------------------------------------ */

/* Size of each history entry; 0 in a field means its default. */
struct sn_context_params {
    size_t history_sentences;   /* sentences per history entry; default 2 */
    size_t history_chars;       /* cap per history entry, in bytes; default 300 */
};
struct sn_context_params sn_context_default_params(void);

/* Task text: "Question: <q>" and, for multiple choice, "\nOptions:\nA. <o0>\nB. <o1>...",
** appended to out. */
int sn_context_task_text(enum sn_task task, const char *question, const char *const *options,
                         size_t n_options, struct sn_buf *out, struct sn_err *err);
/* The gist of a message: its first n_sent sentences (a sentence ends at . ! ? followed by white
** space or the end, or at a line break), skipping any line that starts with "FINAL ANSWER",
** newlines folded into spaces, at most cap bytes (cut at a character boundary, marked "..."),
** appended to out. Appends nothing for a text without reasoning. */
int sn_context_gist(const char *text, size_t n_sent, size_t cap, struct sn_buf *out,
                    struct sn_err *err);
/* One extractive history entry, "Round <round+1>, agent <agent> (answer <answer|none>): <gist>",
** with p's history_sentences and history_chars (0 = the defaults) and "(no reasoning given)"
** for an empty gist, appended to out. */
int sn_context_history_entry(size_t round, int agent, const char *answer, const char *text,
                             const struct sn_context_params *p, struct sn_buf *out,
                             struct sn_err *err);
/* One message of the history (answer NULL when none parsed). */
struct sn_context_msg {
    size_t      round;
    int         agent;
    const char *answer;
    const char *text;
};
/* The context from the task text and the history messages in record order (one entry each,
** sn_context_history_entry), appended to out: the one assembly behind the tuple builder's
** sn_tuples_context and the debate engine's defense. */
int sn_context_from_msgs(const char *task, const struct sn_context_msg *msgs, size_t n,
                         const struct sn_context_params *p, struct sn_buf *out,
                         struct sn_err *err);

/* ---- answer extraction (context/extract.c) ------------------------------------------------ */

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

#ifdef __cplusplus
}
#endif
#endif
