/* tuples/tuples.h: (context, chosen, rejected, reference) tuples from debate trajectories
** (docs/design.md §4 "Tuple", §5 "Shard"; the shard layout and the selection rules are specified
** in docs/formats.md), and `sentinel build` around the builder (at the end of this header). The
** context text itself (task text, history entries, their assembly) is context/context.h's.
**
** For every round r of every trajectory:
**   context   = task (question + lettered options) + condensed history of rounds < r: one
**               entry per message, "Round t, agent k (answer X): <first sentence(s)>"
**               (extractive), or one LLM summary of rounds < r (hook; sn_tuples_use_llm);
**   chosen    = round r's messages whose own parsed answer is the gold answer, from agents
**               whose role is honest;
**   rejected  = adversary (and interceptor) messages of round r; AITM-tampered deliveries of
**               round r (the rewritten copies); honest messages whose answer is wrong (all of
**               them, only the misled ones, or none: params.rejected);
**   reference = the dataset's gold explanation, else (hook; sn_tuples_use_llm) one written by a
**               reference model when it names the gold answer, else a sentence built from the
**               gold answer; it ends with "FINAL ANSWER: <gold>" like the agents' messages.
** Negatives are ordered hardest first (enum sn_rejected_kind order): adversary and tampered
** messages, then honest agents that were misled (their wrong answer is the adversarial target,
** or they held the gold answer in an earlier round), then other wrong answers.
** Pairs: every (chosen, rejected) pair of the round, hardest negatives first; or at most
** max_pairs per round: the hardest first, ties broken by a seeded shuffle. Then, when asked
** (params.contrast, params.persuasive_correct), content-contrastive pairs: a chosen message
** against itself with its answer made wrong, an adversary's message made right against itself.
** Duplicates (same SHA-256 of the four texts) are dropped, the first one kept. The split is a
** function of one field of the trajectory (sn_tuples_split): by default its item (dataset +
** item id), so every debate and replicate of a question lands on the same side; trajectories
** labelled out-of-domain (labels.split = "ood") go to the ood split only.
** Rows of TRL preference data become tuples through the same template and shards ("preference
** data" below; docs/formats.md "Preference data").
** Ownership: builders own their state; tuples passed to callbacks are borrowed for the call. */
#ifndef SN_TUPLES_H
#define SN_TUPLES_H
#include "common/common.h"
#include "context/context.h"
#include "data/data.h"
#include "shard/shard.h"
#include "tokenizer/template.h"

#define SN_TUPLES_BUILDER_ID "sentinel-tuples/2" /* the selection rules above, versioned */

enum sn_rejected_kind { SN_REJ_ADVERSARY, SN_REJ_TAMPERED, SN_REJ_MISLED, SN_REJ_WRONG,
                        SN_REJ_CONTRAST, /* a chosen message with its answer made wrong */
                        SN_REJ_COUNT };
const char *sn_rejected_kind_name(enum sn_rejected_kind k); /* "adversary", "tampered", ... */

/* How the builder reads an honest agent's message m of round r (docs/formats.md "Tuple
** selection"): unparsed (no parsed answer), correct (its answer is the gold: a chosen
** message), misled (wrong, and its answer is the adversarial target or the agent held the gold
** answer in an earlier round) or wrong (any other wrong answer). Answers compare as exact
** strings. `sentinel eval` types the messages it scores by the same rule (docs/eval.md "By
** message type"). */
enum sn_honest_kind { SN_HONEST_UNPARSED, SN_HONEST_CORRECT, SN_HONEST_MISLED, SN_HONEST_WRONG };
enum sn_honest_kind sn_tuples_honest_kind(const struct sn_traj *t, size_t r,
                                          const struct sn_traj_msg *m);

/* Counters of what was read, made and skipped (and why). Append only. */
enum sn_tuples_count {
    SN_TC_TRAJECTORIES,    /* trajectories read */
    SN_TC_ROUNDS,          /* rounds looked at */
    SN_TC_TUPLES,          /* tuples emitted (after de-duplication) */
    SN_TC_BAD_LINES,       /* malformed lines skipped (--skip-bad) */
    SN_TC_NO_CHOSEN,       /* rounds without a correct honest message */
    SN_TC_NO_REJECTED,     /* rounds without a negative */
    SN_TC_UNPARSED,        /* honest messages without a parsed answer (neither side) */
    SN_TC_EMPTY,           /* messages or deliveries with empty text */
    SN_TC_CAPPED,          /* pairs beyond max_pairs in their round */
    SN_TC_DUPLICATE,       /* tuples equal to an earlier one */
    SN_TC_TASK_TOO_LONG,   /* trajectories whose task leaves no room in max_len */
    SN_TC_NO_TUPLES,       /* trajectories that gave no tuple at all */
    SN_TC_REFERENCE_FALLBACK, /* reference hook gave nothing (a model reference without the
                              ** gold answer): the templated reference was used */
    SN_TC_CONTRAST,        /* content-contrastive pairs emitted: chosen vs its content made wrong */
    SN_TC_PERSUASIVE_CORRECT, /* pairs emitted: an adversary's message made right vs itself */
    SN_TC_NOT_REJECTED,    /* wrong messages the `rejected` setting leaves out */
    SN_TC_PREF_ROWS,       /* preference rows read (docs/formats.md "Preference data") */
    SN_TC_TRUNCATED,       /* preference rows with a sequence cut to max_len */
    SN_TC_COUNT
};
const char *sn_tuples_count_name(enum sn_tuples_count k); /* "no_chosen", ... (JSON keys) */

/* The field whose values are held out (docs/formats.md "Tuple selection"). */
enum sn_split_by { SN_SPLIT_BY_ITEM, SN_SPLIT_BY_DATASET, SN_SPLIT_BY_MODEL,
                   SN_SPLIT_BY_SCENARIO, SN_SPLIT_BY_EXPERIMENT, SN_SPLIT_BY_COUNT };
const char *sn_split_by_name(enum sn_split_by b); /* "item", "dataset", ... */
int sn_split_by_parse(const char *name, enum sn_split_by *out, struct sn_err *err);
/* The trajectory's value of the field: item = "<dataset>/<item_id>"; model = the model of its
** first honest agent (else of its first agent, else ""); experiment "" when absent. The
** returned string is borrowed from t or written into buf. */
const char *sn_split_value(const struct sn_traj *t, enum sn_split_by by, char *buf, size_t n);

/* Which wrong messages become rejected (docs/formats.md "Tuple selection"): adversary and
** tampered messages only; those and misled honest agents' messages; every wrong answer. */
enum sn_rejected_from { SN_REJECTED_ALL, SN_REJECTED_ADVERSARY, SN_REJECTED_MISLED,
                        SN_REJECTED_FROM_COUNT };
const char *sn_rejected_from_name(enum sn_rejected_from r); /* "all", "adversary", "misled" */
int sn_rejected_from_parse(const char *name, enum sn_rejected_from *out, struct sn_err *err);

/* Which honest messages become chosen (docs/formats.md "Tuple selection"): those with the gold
** answer (the paper's §3.2 construction), or every honest message with a parsed answer, right
** or wrong, against adversary and tampered messages only (needs SN_REJECTED_ADVERSARY: a
** behaviour label, "an honest agent wrote this", for detectors judged on who the adversary is
** rather than on which answer is right). */
enum sn_chosen_from { SN_CHOSEN_CORRECT, SN_CHOSEN_HONEST, SN_CHOSEN_FROM_COUNT };
const char *sn_chosen_from_name(enum sn_chosen_from c); /* "correct", "honest" */
int sn_chosen_from_parse(const char *name, enum sn_chosen_from *out, struct sn_err *err);

struct sn_tuples_params {
    size_t   max_pairs;            /* per round; 0 = all pairs */
    enum sn_rejected_from rejected; /* default SN_REJECTED_ALL */
    enum sn_chosen_from chosen;     /* default SN_CHOSEN_CORRECT; HONEST needs rejected ADVERSARY */
    /* Content-contrastive pairs (docs/formats.md "Content-contrastive pairs"), beside the
    ** max_pairs ones: each chosen message gives, with probability `contrast`, a pair whose
    ** rejected is the same text with its answer made wrong (sn_tuples_swap_answer); each
    ** adversary message gives, with probability `persuasive_correct`, a pair whose chosen is
    ** the same text with its answer made right. Both default 0. */
    double   contrast;
    double   persuasive_correct;
    uint64_t seed;                 /* for the max_pairs sample */
    enum sn_split_by split_by;     /* default SN_SPLIT_BY_ITEM */
    double   validation_fraction;  /* of the split_by values; default 0.1 */
    double   test_fraction;        /* default 0.1 */
    uint64_t split_seed;           /* salt of the split hash; default 0 */
    /* Explicit hold-out (borrowed): when either list is non-empty the listed values go to
    ** validation / test, every other value to train, and the fractions are not used. */
    const char *const *validation_values;
    size_t   n_validation_values;
    const char *const *test_values;
    size_t   n_test_values;
    struct sn_context_params context; /* history entries (context/context.h); 2 sentences, 300 B */
    bool     dedup;                /* default true */
    /* Hooks, NULL = the built-in extractive summary / dataset-or-templated reference. A
    ** summarize hook appends history entries for round `round` (one string each, oldest
    ** first) to *entries and *n (strings allocated with sn_malloc; the builder frees them). */
    int (*summarize)(void *user, const struct sn_traj *t, size_t round, char ***entries,
                     size_t *n, struct sn_err *err);
    /* A reference hook appends the reference to out; appending nothing means "use the
    ** built-in one" and is counted as reference_fallback. Called once per trajectory, before
    ** its first tuple (round = that tuple's round, for error messages). */
    int (*reference)(void *user, const struct sn_traj *t, size_t round, struct sn_buf *out,
                     struct sn_err *err);
    void *user;
    /* What the hooks do, recorded in the manifest's settings.summary / settings.reference (so a
    ** resume with other hooks is refused); NULL = "hook". Borrowed. */
    const char *summary_method;
    const char *reference_method;
};
struct sn_tuples_params sn_tuples_default_params(void);

/* One tuple before tokenization. Everything is borrowed for the duration of the callback. */
struct sn_tuple {
    struct sn_prompt     prompt;   /* task + history entries (template input) */
    const char          *text[SN_FIELD_COUNT]; /* context = sn_template_context(prompt) */
    struct sn_tuple_meta meta;     /* split and sha256 set; cut_* zero */
    enum sn_rejected_kind kind;
};
typedef int (*sn_tuple_fn)(void *user, const struct sn_tuple *t, struct sn_err *err);

/* The split of a trajectory: ood when its label split is "ood"; else, with explicit lists,
** validation / test when its split_by value is listed there, train otherwise; else
** u = top 53 bits of SHA-256("sentinel-split/2\n<split_seed>\n<split_by>\n<value>") / 2^53
** and train when u < 1 - v - t, validation when u < 1 - t, else test. */
enum sn_split sn_tuples_split(const struct sn_traj *t, const struct sn_tuples_params *p);
/* The split rule a build recorded in its manifest's settings (split_by, split_seed,
** validation_fraction, test_fraction, validation, test; docs/formats.md "Manifest") into p's
** split fields (tuples/tuples_split.c), so sn_tuples_split(t, p) gives every trajectory the split
** that build gave it. The lists point into settings (valid while it lives); their arrays are
** allocated: release with sn_tuples_split_lists_free. SN_E_FORMAT names a missing or bad key. */
int  sn_tuples_split_from_settings(const cJSON *settings, struct sn_tuples_params *p,
                                   struct sn_err *err);
void sn_tuples_split_lists_free(struct sn_tuples_params *p);
/* SHA-256 (hex) of the four texts, each preceded by its byte length as 8 bytes
** little-endian (so no two different tuples share a preimage). */
void sn_tuples_hash(const char *const text[SN_FIELD_COUNT], char hex[65]);
/* The task text of t (sn_context_task_text: "Question: <q>" and, for multiple choice,
** "\nOptions:\nA. <o0>\nB. <o1>..."). */
int sn_tuples_task(const struct sn_traj *t, struct sn_buf *out, struct sn_err *err);
/* The context text of round `round` exactly as the builder makes it with the extractive
** history (sn_context_from_msgs of the task and one entry per message of rounds < round, in
** record order, with p->context), appended to out: what a sentinel sees at run time
** (`sentinel eval`; the simulation's defense assembles the same from its messages). The
** summarize hook is not called (an LLM summary is not reproduced). */
int sn_tuples_context(const struct sn_traj *t, size_t round, const struct sn_tuples_params *p,
                      struct sn_buf *out, struct sn_err *err);
/* The built-in reference (dataset explanation, else templated), appended to out. */
int sn_tuples_builtin_reference(const struct sn_traj *t, struct sn_buf *out, struct sn_err *err);

/* ---- LLM summary and reference ---------------------------------------------------
** Summary (prompt SN_TUPLES_SUMMARY_PROMPT): for round r > 0 one request with the task and the
** messages of rounds < r (each as "Round t, agent k (answer X): <gist>", up to 8 sentences /
** 1200 bytes), asking for at most `summary_sentences` sentences naming each agent's answer;
** the history of round r is then the single entry "Summary of rounds 1-r: <reply>". Round 0
** has no history and makes no request.
** Reference (prompt SN_TUPLES_REFERENCE_PROMPT): when the trajectory has no gold explanation,
** one request with the task and the gold answer (and its option text), asking for a short
** explanation ending with "FINAL ANSWER: <gold>". The reply is kept when sn_extract_answer
** finds the gold answer in it (a missing "FINAL ANSWER: <gold>" line is appended); otherwise
** the templated reference is used and counted as reference_fallback.
** Sampling: temperature 0, seed = sn_seed_derive(salt, trajectory id, round) & 0x7fffffff
** (salt 0x53554d4d for summaries, 0x52454631 for references), so a re-run is served by the
** openai backend's response cache. A failed request (after the backend's retries) fails the
** build with an error naming the trajectory id and round; an empty reply is an error too.
** The sim backend answers debate-engine requests only: sn_tuples_use_llm refuses it. */
#define SN_TUPLES_SUMMARY_PROMPT   "sentinel-summary/1"
#define SN_TUPLES_REFERENCE_PROMPT "sentinel-reference/1"
struct sn_llm_backend;
struct sn_tuples_llm {
    struct sn_llm_backend *summary;   /* borrowed; NULL = extractive history */
    struct sn_llm_backend *reference; /* borrowed; NULL = dataset-or-template reference */
    size_t summary_sentences;         /* 0 = 3 */
    int    max_tokens;                /* per request; 0 = the endpoint's setting */
    char   summary_method[384];       /* filled by sn_tuples_use_llm */
    char   reference_method[384];
};
/* Points p's hooks (and summary_method / reference_method) at llm for its non-NULL backends.
** llm must outlive every builder made from p. Fails (SN_E_ARG) for a sim backend. */
int sn_tuples_use_llm(struct sn_tuples_params *p, struct sn_tuples_llm *llm, struct sn_err *err);

/* text with the answer `from` turned into `to` (tuples/tuples_contrast.c): the option letter
** where it stands alone and is not an English word, the option's text, or (numeric) the
** number where it is not part of a longer one; every other byte is kept. When the result's
** extracted answer is not `to`, "\n\nFINAL ANSWER: <to>" is appended. Appends to out. */
int  sn_tuples_swap_answer(enum sn_task task, const char *const *options, size_t n_options,
                           const char *text, const char *from, const char *to,
                           struct sn_buf *out, struct sn_err *err);
/* A wrong answer for an item: its adversarial target when it has one that is not gold; else,
** seeded, another option (multiple choice, n_options >= 2) or a slip of the gold number. */
void sn_tuples_wrong_answer(enum sn_task task, size_t n_options, const char *gold,
                            const char *target, uint64_t seed, char out[32]);

struct sn_tuples;
int  sn_tuples_create(const struct sn_tuples_params *p, struct sn_tuples **out,
                      struct sn_err *err);
/* Emits the tuples of one trajectory through fn (rounds in order, pairs in pairing order,
** duplicates dropped); fn's failure stops and is returned. */
int  sn_tuples_add(struct sn_tuples *b, const struct sn_traj *t, sn_tuple_fn fn, void *user,
                   struct sn_err *err);
/* Counts so far (SN_TC_COUNT entries); the caller may add to them (e.g. bad lines). */
uint64_t *sn_tuples_counts(struct sn_tuples *b);
void sn_tuples_free(struct sn_tuples *b); /* NULL is fine */

/* ---- `sentinel build` as a library call (tuples/build.c): trajectory files -> the tuple
** builder above -> tokenized HDF5 shards and manifest.json (shard/shard.h; layout in
** docs/formats.md "Shard").
**
** Ownership: the caller owns params and report; the build owns its tokenizer, builder and shard
** set for the call. Errors: SN_E_ARG for bad params, SN_E_FORMAT/SN_E_IO naming the input file
** and line, SN_E_CANCELLED when progress asks to stop. */

struct sn_build_progress {
    uint64_t tuples;               /* emitted so far in this run (resumed ones included) */
    uint64_t tokenized;            /* of which tokenized in this run */
    uint64_t trajectories;
    const uint64_t *counts;        /* SN_TC_COUNT entries */
};

/* What an input file holds (docs/formats.md "Preference data"): debate trajectories, or rows of
** TRL preference data; auto decides per file from its first row's columns (an object with
** both `chosen` and `rejected` is preference data). */
enum sn_input_format { SN_INPUT_AUTO, SN_INPUT_TRAJECTORY, SN_INPUT_PREFERENCE,
                       SN_INPUT_FORMAT_COUNT };
const char *sn_input_format_name(enum sn_input_format f); /* "auto", "trajectory", "preference" */
int sn_input_format_parse(const char *name, enum sn_input_format *out, struct sn_err *err);

struct sn_build_params {
    const char *const *inputs;     /* files or directories (*.jsonl, *.jsonl.gz) */
    enum sn_input_format format;   /* of every input file; default SN_INPUT_AUTO */
    size_t      n_inputs;
    const char *out_dir;
    const char *tokenizer_path;
    size_t      max_len;           /* default 1024 */
    size_t      shard_size;        /* tuples per shard; default 4096 */
    int         deflate_level;     /* default 1 */
    bool        skip_bad;          /* count and skip malformed lines instead of failing */
    struct sn_tuples_params tuples;
    /* Called after every tuple; a non-zero return cancels the build (SN_E_CANCELLED). */
    int  (*progress)(void *user, const struct sn_build_progress *p);
    void *user;
};
struct sn_build_params sn_build_default_params(void);

struct sn_build_report {
    uint64_t counts[SN_TC_COUNT];
    int64_t  per_split[SN_SPLIT_COUNT];
    size_t   n_shards;
    size_t   n_inputs;
    bool     resumed;              /* an interrupted build in out_dir was continued */
    bool     was_complete;         /* out_dir already held this build, finished */
};

/* Trajectories -> tokenized shards + manifest.json in out_dir (resumable: re-running after a
** kill continues and gives byte-identical shards and manifest). The manifest also records the
** content keys (sn_question_keys) of every train-split trajectory's question under
** `train_questions` (docs/formats.md "Manifest"). */
int sn_tuples_build(const struct sn_build_params *p, struct sn_build_report *report,
                    struct sn_err *err);

/* ---- preference data (tuples/preference.c) ---------------------------------------------
** One row of TRL preference data (standard, implicit prompt, conversational with an explicit or
** implicit prompt; optional `reference`) mapped to the prompt template's input, as specified in
** docs/formats.md "Preference data": the prompt becomes the user turn (a conversation's system
** turns first, then its first user turn, as the task; its later turns as history entries
** "<Role>: <content>"); the last assistant turn of chosen / rejected is the response. */
#define SN_PREF_BUILDER_ID "sentinel-preference/1" /* that mapping, versioned */

enum sn_pref_kind { SN_PREF_STANDARD, SN_PREF_IMPLICIT, SN_PREF_CONVERSATIONAL,
                    SN_PREF_CONVERSATIONAL_IMPLICIT, SN_PREF_KIND_COUNT };
const char *sn_pref_kind_name(enum sn_pref_kind k); /* "standard", "implicit", ... */

struct sn_pref_row {
    enum sn_pref_kind kind;
    char  *task;                   /* never NULL; "" when the prompt is empty */
    char **history;                /* (n_history) later turns of a conversational prompt */
    size_t n_history;
    char  *chosen, *rejected;      /* the responses, never empty */
    char  *reference;              /* the row's `reference`, NULL when it has none */
};
/* Parses one JSON line (len bytes) into row (zeroed first; release with sn_pref_row_free, on
** failure too). Every error is SN_E_FORMAT "<where>: <column>: <what was expected>". */
int  sn_pref_parse(const char *json, size_t len, const char *where, struct sn_pref_row *row,
                   struct sn_err *err);
void sn_pref_row_free(struct sn_pref_row *row);
/* Whether the first non-blank line of a JSON Lines file (plain or gzip) is a preference row
** (an object with `chosen` and `rejected`). A file whose first line is not a JSON object is
** not (the trajectory reader then names what is wrong with it). */
int  sn_pref_file_detect(const char *path, bool *is_pref, struct sn_err *err);

/* ---- question keys (tuples/build_questions.c) ---------------------------------------------
** Content keys of a trajectory's question, so that a question is recognised whatever its
** dataset or item id is called (docs/eval.md "Leakage"). With fold = sn_text_fold (NFC,
** lower case, white space collapsed to one space, none at the ends; no line breaks):
**   question = SHA-256 hex of "sentinel-question/1\n" fold(question)
**   item     = SHA-256 hex of "sentinel-question/1\n" fold(question) "\n" <n_options in
**              decimal> "\n" then fold(option) "\n" per option, then fold(gold) "\n"
** (question + options + gold). SN_E_FORMAT for a text that is not valid UTF-8. The rule's
** name, SN_QUESTION_KEY_ID, is in shard/shard.h beside the manifest that records the keys. */
struct sn_traj;
int sn_question_keys(const struct sn_traj *t, char question[65], char item[65],
                     struct sn_err *err);

#endif
