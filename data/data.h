/* data/data.h: questions and datasets, trajectories, and the panel's plurality vote: what a
** debate is about and what it recorded (docs/design.md §2, §5). Three sections below:
**   questions   datasets loaded from recipe specs into a struct sn_qset (data/question.c,
**               data/qset.c, data/datasets.c, data/synthetic.c, data/facts.c);
**   trajectory  the trajectory file format, reader and writer (data/trajectory.c);
**   vote        the one plurality vote of the project (data/vote.c).
** Answer extraction and enum sn_task live one module down, in context/context.h (included
** here), so the runtime detector can label messages without this module.
** Uses common/ and context/ (and zlib); no HDF5, libcurl or libtorch. */
#ifndef SN_DATA_H
#define SN_DATA_H
#include "common/common.h"
#include "context/context.h" /* enum sn_task, SN_ANSWER_MAX, answer extraction */

/* ---- trajectories (data/trajectory.c) -----------------------------------------------------
** Writing and reading trajectory files, schema sentinel.trajectory/1
** (docs/formats.md#trajectory; docs/design.md §5). One debate per line of gzip-compressed or plain
** JSON Lines. The reader streams: one line in memory at a time, so a file of any size reads in
** bounded memory.
**
** Ownership: a struct sn_traj owns everything it points to; its strings are borrowed from the
** parsed JSON tree it holds (valid until sn_traj_free). `attack`, `defense` and `labels` are
** cJSON subtrees of that same tree (read-only, same lifetime).
**
** Validation: the schema string must be exactly "sentinel.trajectory/1"; every required field
** must be present with its type; optional fields, when present, must have their type; ids are
** checked against the agent table. Errors name "file:line: field 'rounds[2][1].answer':
** expected string or null". One reader, one thread at a time. */

#define SN_TRAJ_SCHEMA "sentinel.trajectory/1"

enum sn_role { SN_ROLE_HONEST, SN_ROLE_ADVERSARY, SN_ROLE_INTERCEPTOR, SN_ROLE_COUNT };
const char *sn_role_name(enum sn_role role); /* "honest", "adversary", "interceptor" */

/* An AITM rewrite: what receiver `to` got instead of the message's own text. */
struct sn_traj_delivery {
    int         to;
    const char *text;
    const char *answer;         /* parsed answer of the delivered text; NULL = unparsed */
};

/* rounds[t][k]: one message. `answer` is the agent's own parsed answer (NULL when the
** reply could not be parsed; then parsed is false). */
struct sn_traj_msg {
    int         agent;          /* slot id, 0 <= agent < n_agents */
    const char *text;
    const char *answer;         /* normal form ("A", "3", "-0.5") or NULL */
    bool        parsed;
    bool        tampered;       /* AITM: some receivers got a rewritten copy (deliveries) */
    const char *original_text;  /* optional; NULL when absent */
    double      latency_ms;     /* 0 when absent */
    int64_t     prompt_tokens, completion_tokens; /* 0 when absent */
    struct sn_traj_delivery *deliveries;
    size_t      n_deliveries;
    int        *blacklisted;    /* sentinel defense: cumulative blacklist held when speaking */
    size_t      n_blacklisted;
    bool        has_blacklist;  /* the "blacklisted" key was present */
    /* optional, as the endpoint reported them (docs/formats.md#trajectory); NULL when absent */
    const char *finish_reason;  /* "stop", "length" (cut off), "content_filter", ... */
    const char *served_model;   /* the model the endpoint says it served */
    const char *system_fingerprint;
    bool        refused;        /* the text is the model's refusal */
};

struct sn_traj_round {
    struct sn_traj_msg *msgs;   /* speaking order */
    size_t              n_msgs;
    int                *by_agent; /* (n_agents) index into msgs, -1 when the agent did not speak */
};

struct sn_traj_agent {
    int          id;
    enum sn_role role;
    const char  *model, *backend, *persona, *position; /* NULL when absent or null */
    int        (*intercepts)[2];                        /* [from, to] edges it rewrites */
    size_t       n_intercepts;
};

struct sn_traj_final {
    const char *rule;           /* "majority" or "judge"; NULL when absent */
    const char *answer;         /* NULL when no decision */
    bool        correct;
    const char *judge_answer;   /* NULL when absent or null */
    bool        stopped_early;
    int64_t     n_rounds;       /* -1 when absent */
};

struct sn_traj {
    const char *id, *experiment, *scenario, *dataset, *item_id, *subject, *task_name;
    enum sn_task task;
    const char *question;
    const char **options;       /* (n_options) */
    size_t       n_options;
    const char  *gold, *gold_explanation, *adversarial_target; /* last two may be NULL */
    const char  *strategy;
    const char  *topology_name;
    int64_t      topology_n_agents;
    int        (*edges)[2];     /* (n_edges) [from, to]: `to` receives what `from` says */
    size_t       n_edges;
    struct sn_traj_agent *agents; /* (n_agents) agents[i].id == i */
    size_t       n_agents;
    size_t       n_honest, n_adversary, n_interceptor;
    const cJSON *attack, *defense, *labels; /* objects or NULL when absent */
    const char  *attack_name, *defense_name; /* NULL / "none" when absent */
    struct sn_traj_round *rounds; /* (n_rounds) */
    size_t       n_rounds;
    struct sn_traj_final final;
    uint64_t     seed;
    int64_t      replicate;
    const char  *backend, *prompt_version, *sentinel_version; /* NULL when absent */
    cJSON       *root_;         /* private: the tree the strings live in */
};

/* Parses and validates one trajectory (one JSON line). where = "file:line" prefixes every
** message. On success *out is the caller's (sn_traj_free); on failure *out is NULL. */
int  sn_traj_parse(const char *json, size_t len, const char *where, struct sn_traj **out,
                   struct sn_err *err);
void sn_traj_free(struct sn_traj *t); /* NULL is fine */
/* Whether every text of t (question, gold, options, messages, deliveries) is valid UTF-8; on
** false `where` names the first bad field ("rounds[0][2].text"). The parser keeps raw bytes, so
** each reader that uses texts (build, stats, inspect) asks this and reports the field. */
bool sn_traj_utf8_valid(const struct sn_traj *t, char *where, size_t n);

/* Agent `agent`'s message in round t, or NULL when it did not speak (or t/agent out of
** range). Borrowed from t. */
const struct sn_traj_msg *sn_traj_msg_of(const struct sn_traj *t, size_t round, int agent);
/* A label's value as text (strings as is, numbers/bools printed into buf), or NULL when the
** trajectory has no such label. buf must hold at least 64 bytes for non-strings. */
const char *sn_traj_label(const struct sn_traj *t, const char *key, char *buf, size_t buf_size);

/* The trajectory files of inputs (files, or run directories searched for *.jsonl and
** *.jsonl.gz). A run directory also holds simulate's errors-<i>of<n>.jsonl (failed debates,
** not trajectories): those found in a directory are left out and counted in *n_errors_files
** (may be NULL) so the caller can mention them; a file named on its own is always taken.
** No trajectory file at all is SN_E_ARG "no trajectory files (*.jsonl, *.jsonl.gz) in DIR".
** Free with sn_paths_free. */
int  sn_traj_paths(const char *const *inputs, size_t n_inputs, char ***out, size_t *n_out,
                   size_t *n_errors_files, struct sn_err *err);

struct sn_traj_reader;
struct sn_traj_reader_params {
    bool   skip_bad;  /* count bad lines (and a truncated gzip tail) instead of failing */
    size_t max_line;  /* 0 = 256 MiB */
};
struct sn_traj_reader_params sn_traj_reader_default_params(void);
int  sn_traj_reader_open(const char *path, const struct sn_traj_reader_params *params,
                         struct sn_traj_reader **out, struct sn_err *err);
/* Next trajectory: SN_OK with *out set (caller frees), SN_OK with *out = NULL at end of file,
** or an error naming file:line. A final line without a newline is an error ("truncated last
** line"; a killed writer leaves one). Blank lines are skipped. With skip_bad, bad lines are
** counted and skipped, and a corrupt gzip tail ends the file and counts as one skipped line. */
int  sn_traj_reader_next(struct sn_traj_reader *r, struct sn_traj **out, struct sn_err *err);
uint64_t    sn_traj_reader_n_ok(const struct sn_traj_reader *r);
uint64_t    sn_traj_reader_n_skipped(const struct sn_traj_reader *r);
/* The first skipped line's error ("" when none). Borrowed, valid until close. */
const char *sn_traj_reader_first_skip(const struct sn_traj_reader *r);
const char *sn_traj_reader_path(const struct sn_traj_reader *r);
/* The line of the trajectory last returned (counts from 1). */
uint64_t    sn_traj_reader_lineno(const struct sn_traj_reader *r);
void sn_traj_reader_close(struct sn_traj_reader *r); /* NULL is fine */

/* ---- writing ------------------------------------------------------------------------------ */

/* What the writer needs of a debate: the same fields the reader gives back, plus those it does
** not read (answer_source, draft, injected_target, candidates). Strings NULL where the field is
** optional mean "absent"; required ones NULL are written as null. All borrowed. */
struct sn_traj_out_msg {
    int         agent;
    const char *text;
    const char *answer;          /* NULL when unparsed */
    bool        parsed;
    double      latency_ms;
    long        prompt_tokens, completion_tokens;
    bool        answer_from_llm; /* "answer_source":"llm": from the second-pass extraction */
    const char *draft;           /* self-reflection draft, or NULL */
    const char *original_text;   /* set: "injected":true, original_text, injected_target */
    const char *injected_target;
    int         candidates;      /* written when > 1 */
    const struct sn_traj_delivery *deliveries; /* n_deliveries > 0: "tampered":true */
    size_t      n_deliveries;
    bool        has_blacklist;   /* write "blacklisted" (a defense ran) */
    uint64_t    blacklist;       /* bit j: agent j */
    const char *answer_rule;     /* importers: how `answer` was obtained; NULL = absent */
    const char *finish_reason;   /* NULL: absent (sim agents report none) */
    const char *served_model;
    const char *system_fingerprint;
    bool        refused;         /* "refused":true */
};

struct sn_traj_out_agent {
    enum sn_role role;
    const char  *model, *backend, *persona;
    const char  *position;          /* NULL: absent (honest agents) */
    const int  (*intercepts)[2];    /* written for interceptors */
    size_t       n_intercepts;
};

struct sn_traj_out {
    const char *id, *experiment, *scenario, *dataset, *item_id, *subject, *task_name;
    const char *question;
    const char *const *options;
    size_t      n_options;
    const char *gold, *gold_explanation, *adversarial_target, *strategy, *topology_name;
    int         n_agents;
    const int (*edges)[2];
    size_t      n_edges;
    const struct sn_traj_out_agent *agents; /* n_agents */
    struct {
        const char *name;
        const char *rhetoric;       /* NULL: absent */
        const char *placement;      /* NULL: absent, and n_attackers with it */
        int         n_attackers;
        int         best_of_n;      /* 0: absent */
        const char *persona;        /* NULL: absent */
        bool        has_injection;  /* injection_rate and adaptive */
        double      injection_rate;
        bool        adaptive;
    } attack;
    const char *defense_name;
    int         bottom_k;           /* < 0: absent */
    const struct sn_traj_out_msg *msgs; /* all rounds back to back, speaking order */
    const size_t *round_len;            /* (n_rounds) messages per round */
    size_t      n_rounds;
    struct sn_traj_final final;
    const cJSON *labels;            /* NULL: {} */
    const cJSON *import;            /* importers: provenance object "import"; NULL = absent */
    uint64_t    seed;
    int         replicate;
    const char *backend, *prompt_version, *sentinel_version;
};

/* Appends t as one JSON object (no newline) to out, starting with "schema":SN_TRAJ_SCHEMA.
** On failure out may hold a partial object: the caller cuts it back. */
int sn_traj_write(const struct sn_traj_out *t, struct sn_buf *out, struct sn_err *err);

/* ---- questions and datasets (data/question.c, data/qset.c, data/datasets.c) ---------------
** Question datasets (answer extraction: context/context.h; docs/design.md §2 "questions", §4
** "Labels"). Input formats are described in docs/simulate.md#datasets.
**
** A dataset is loaded from a recipe spec object, e.g.
**   {"kind":"mmlu","path":"data/mmlu/test","n":200,"seed":1,"subjects":["anatomy"]}
**   {"kind":"synthetic","n":40,"seed":7,"numeric_share":0.5}
** into an owned struct sn_qset. Kinds: mmlu (header-less CSV, or JSONL), commonsenseqa,
** gsm8k, truthfulqa (mc1_targets), medmcqa, jsonl (our neutral form), synthetic and facts
** (built in).
** Errors name file:line and what was expected.
**
** Answers have one normal form (docs/formats.md "Trajectory" `answer`): multiple choice is an
** upper-case letter "A".."Z"; numeric is the shortest decimal string of the value ("3", "0.5",
** "-12"). Extraction never guesses: an answer it cannot find is reported as unparsed. */

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
/* The built-in `facts` dataset (data/facts.c; docs/simulate.md "The fact base"): an invented
** world of SN_FACT_TYPES x SN_FACTS_PER_TYPE facts with a fixed known / novel split. */
#define SN_FACT_TYPES        8
#define SN_FACTS_PER_TYPE    25
#define SN_FACTS_NOVEL_SHARE 0.25 /* of the facts; the rest are known */
struct sn_fact {
    int         type;            /* 0 .. SN_FACT_TYPES-1 */
    const char *subject_name;    /* the items' subject ("geography", ...); static */
    char        subject[48];     /* the entity asked about */
    char        answer[48];
    char        distractors[3][48]; /* answers of other facts of the same type */
    bool        novel;           /* never asked in the train part */
    int         heldout_phrasing; /* the question phrasing (0-3) kept for the eval part */
};
/* The whole world, in fact order (the same on every call and platform); *out is freed with
** sn_free. */
int  sn_facts_world(struct sn_fact **out, size_t *n, struct sn_err *err);
/* Question phrasing `phrasing` (0-3) of fact f into out; SN_E_ARG for another phrasing. */
int  sn_facts_question(const struct sn_fact *f, int phrasing, char *out, size_t cap);
struct sn_facts_params {
    size_t   n;
    uint64_t seed;
    double   numeric_share; /* share of arithmetic word problems */
    bool     eval;          /* false: the train part (known facts, training phrasings);
                            ** true: the eval part (held-out phrasings, novel facts) */
    double   novel_share;   /* eval part: share of its multiple-choice items on novel facts */
};
/* Appends n items; each item's dataset is "<name>-known", "<name>-novel" or
** "<name>-numeric" (the group evaluation reports), its id "<name>-<group>-<i>-<hash>". */
int  sn_facts_generate(struct sn_qset *qs, const struct sn_facts_params *p, const char *name,
                       struct sn_err *err);
/* Internal helpers shared by the loaders; exposed for tests. */
int  sn_qset_push(struct sn_qset *qs, const struct sn_question *q, struct sn_err *err);
void sn_question_clear(struct sn_question *q);
const char *sn_task_name(enum sn_task t); /* "mc" / "numeric" */
/* Reads one file of the given on-disk kind (data/datasets.c) and appends its items; name is
** the dataset name written into each item. spec supplies format options (cop_base). */
int  sn_dataset_read_file(const char *kind, const char *path, const char *name,
                          const cJSON *spec, struct sn_qset *qs, struct sn_err *err);

/* ---- the plurality vote (data/vote.c) ------------------------------------------------------
** The one plurality vote of the project (docs/formats.md "Panel decision";
** docs/design.md §4 "Final decision by majority vote"). The debate engine's recorded final
** decision (sim/engine.c) and `sentinel stats` (eval/) both call sn_vote_plurality, so a
** tie is settled the same way wherever a panel decides.
**
** Tie rules. With adversaries placed in the low slots, "the lowest agent id wins a tie" hands
** every 2-2 tie to the adversary; so the default rule favours no slot: a tie is no decision,
** scored wrong, as the published collaboration-attack evaluation scores its final-round vote
** (Amayuelas et al., "MultiAgent Collaboration Attack"). The others stay selectable for
** comparison with older reports. */

enum sn_vote_tie {
    SN_VOTE_TIE_NONE,      /* default: a tie for the top count is no decision */
    SN_VOTE_TIE_LOWEST_ID, /* the tied answer whose first holder has the lowest slot id */
    SN_VOTE_TIE_RANDOM,    /* uniform among the tied answers, seeded by sn_vote_seed */
    SN_VOTE_TIE_COUNT
};
const char *sn_vote_tie_name(enum sn_vote_tie rule); /* "none", "lowest-id", "random" */
int sn_vote_tie_parse(const char *s, enum sn_vote_tie *out, struct sn_err *err);

/* The seed of the random tie-break for round `round` of the debate with id `debate_id`
** (the trajectory's "id"): the engine and `sentinel stats` derive the same one. */
uint64_t sn_vote_seed(const char *debate_id, size_t round);

/* Answer equality for votes; ctx is passed through. NULL eq = strcmp equality. */
typedef bool (*sn_vote_eq_fn)(const char *a, const char *b, void *ctx);

/* Plurality over votes[0..n) in slot order (NULL = no vote: silent, unparsed or not a voter).
** Returns the slot of the winning answer's first holder, or -1 for no decision (no votes, or a
** tie under SN_VOTE_TIE_NONE). *tie (may be NULL) is set when the top count was shared by
** two or more distinct answers, whatever the rule did with it. Never allocates. */
int sn_vote_plurality(const char *const *votes, size_t n, enum sn_vote_tie rule, uint64_t seed,
                      sn_vote_eq_fn eq, void *ctx, bool *tie);

#endif
