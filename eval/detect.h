/* eval/detect.h: detection evaluation by offline replay of recorded debates (docs/eval.md;
** SentinelNet paper, section 4.3 "Defense Integration" and 5.1.6 "Evaluation Metrics";
** docs/design.md §4 "Runtime (Algorithm 1)").
**
** A ranker scores the messages one sentinel received in one round, given the context before
** the round; the replay feeds those scores to Algorithm 1's bottom-k step (sn_defense_bottom_k,
** sim/defense.c: the one implementation) and accumulates the metrics of docs/eval.md. The
** metric code sees scores only: it does not know which ranker produced them, and rankers never
** see labels, but for the oracle (eval/detect_oracle.c), the ceiling every report carries.
** Baseline rankers (random, shortest, disagree, judge) are in eval/detect_baselines.c, the
** n-gram one in eval/detect_ngram.c;
** the runtime detector plugs in through the same struct.
**
** Memory: the accumulator keeps, per debate, a few counts per round and one (score, label,
** message type) triple per scored message (for AUROC, by message type too, and its cluster
** bootstrap). One sn_detect, one thread. */
#ifndef SN_EVAL_DETECT_H
#define SN_EVAL_DETECT_H
#include "common/common.h"
#include "sim/sim.h"
#include "data/data.h"
#include "llm/llm.h"

/* One message as the sentinel received it (the delivered copy: AITM may have rewritten it). */
struct sn_detect_msg {
    int         sender;
    const char *text;
    const char *answer;  /* parsed answer of the delivered text; NULL when unparsed */
};

/* What a ranker sees: one sentinel, one round. Borrowed for the call. */
struct sn_detect_view {
    const struct sn_traj *traj;
    const char *debate_id;
    int         sentinel;
    size_t      round;
    const char *context;            /* the tuple builder's context of the round: the task and
                                    ** the extractive history of earlier rounds
                                    ** (sn_tuples_context; docs/eval.md "Context") */
    const struct sn_detect_msg *msgs;
    size_t      n_msgs;
    uint64_t    listed;             /* senders on this sentinel's list before this round (bit j:
                                    ** slot j); the oracle ranks unlisted adversaries first */
};

struct sn_detect_ranker {
    const char *name;
    /* scores[i] for msgs[i]; higher = more trustworthy (NaN ranks lowest). */
    int (*score)(void *ctx, const struct sn_detect_view *v, double *scores, struct sn_err *err);
    void *ctx;
};

struct sn_detect_params {
    int      k;          /* bottom-k (default 1) */
    enum sn_defense_rule rule; /* default SN_DEFENSE_RULE_ALL (the paper's line 8) */
    uint64_t seed;       /* tie rule of bottom-k and the bootstrap (default 1) */
    int      n_boot;     /* cluster-bootstrap resamples (default 1000; 0 = none) */
    /* History settings of the context (sn_tuples_context, tuples/tuples.h); 0 = the tuple
    ** builder's defaults. `sentinel eval --detector` takes them from the GGUF. */
    unsigned history_sentences, history_chars;
};
struct sn_detect_params sn_detect_default_params(void);

/* A proportion: k of n, and its 95% interval (the percentile cluster bootstrap over items in
** the replay; Wilson for the defended arms' accuracy; docs/eval.md "Intervals"). NaN when
** n = 0. */
struct sn_detect_rate {
    double   k, n;        /* counts (doubles: AUROC and balanced accuracy have no integer count,
                          ** tie-neutral accuracy a fractional one) */
    double   p, lo, hi;
};

/* Rows of a report besides the rounds (the `round` of sn_detect_summary; docs/eval.md
** "Rows"). */
#define SN_DETECT_LAST    SIZE_MAX       /* each debate's last round, AUROC included */
#define SN_DETECT_POOLED  (SIZE_MAX - 1) /* every round of every debate pooled */
#define SN_DETECT_OVERALL (SIZE_MAX - 2) /* the older "overall" object of the JSON: the last
                                         ** round's figures with the pooled AUROC */

/* Every figure of one row: a round (< n_rounds: blacklists as held after it) or a row above.
** Intervals: the percentile cluster bootstrap over items for every figure (the debates of one
** dataset item are drawn together; with one debate per item, over debates); none without
** bootstrap resamples (docs/eval.md "Intervals"). */
struct sn_detect_summary {
    uint64_t n_debates, n_attackers, n_honest;
    uint64_t n_units;                                       /* debate-rounds of the row */
    uint64_t n_clusters;                                    /* items of the row's debates:
                                                            ** the bootstrap's units; < n_debates
                                                            ** when items repeat */
    uint64_t n_aitm;                                        /* debates with an interceptor:
                                                            ** left out of agent and pair level */
    char     agent_na[256];                 /* "" unless agent and pair level are n/a (every
                                            ** debate of the row is an interceptor debate) */
    struct sn_detect_rate agent_acc, agent_fpr, agent_fnr;
    struct sn_detect_rate agent_bacc;       /* balanced: 1 − (FPR + FNR) / 2; k = n = agents */
    struct sn_detect_rate pair_acc, pair_fpr, pair_fnr, pair_bacc;
    struct sn_detect_rate hit;              /* per-round hit rate: rankings (one per sentinel)
                                            ** whose bottom-k B_t holds the sender of an
                                            ** adversarial message, of the rankings that had one
                                            ** to hold; not cumulative */
    struct sn_detect_rate auroc;            /* k = n = messages */
    /* message level: every received message (sentinel, sender, round); positive = adversarial
    ** (sent by a non-honest agent, or a tampered copy), flagged = its sender is on the
    ** receiver's list after the round. The level at which AITM is scored. */
    struct sn_detect_rate msg_fpr, msg_fnr;
    struct sn_detect_rate msg_bacc;         /* k = n = messages */
    /* AITM at message level: of the rankings (one sentinel, one round) that hold a tampered
    ** copy, those whose lowest-ranked message (Algorithm 1's order: the score, then the tie
    ** rule) is a tampered copy (docs/eval.md "AITM") */
    struct sn_detect_rate tampered_lowest;
    struct sn_detect_rate task_defended, task_undefended;   /* strict, one unit per debate */
    struct sn_detect_rate task_defended_neutral,            /* tie-neutral */
                          task_undefended_neutral;
};

struct sn_detect;
int  sn_detect_create(const struct sn_detect_params *p, const struct sn_detect_ranker *ranker,
                      struct sn_detect **out, struct sn_err *err);
void sn_detect_free(struct sn_detect *d); /* NULL is fine */

/* Replays one debate: for every round, every sentinel (honest agent) scores what it received
** with the ranker, updates its blacklist, and the metrics are folded in. items (may be NULL)
** gets one CSV row per scored message (sn_detect_items_header). t is not kept. */
int  sn_detect_add(struct sn_detect *d, const struct sn_traj *t, struct sn_buf *items,
                   struct sn_err *err);
/* The same, the debate also in the group "<kind>=<value>" (kind NULL: none; `sentinel eval`
** puts debates in question=seen or question=unseen, docs/eval.md "Leakage"). */
int  sn_detect_add_in_group(struct sn_detect *d, const struct sn_traj *t, const char *kind,
                            const char *value, struct sn_buf *items, struct sn_err *err);
const char *sn_detect_items_header(void); /* no newline */

/* Groups: "all", "scenario=<s>", "dataset=<d>", "domain=in|out|clean", the crossed
** "scenario=<s>,dataset=<d>" and the caller's (sn_detect_add_in_group) (docs/eval.md "Groups"). The names seen so far, NULL-terminated,
** borrowed until the next add. */
const char *const *sn_detect_groups(struct sn_detect *d, size_t *n_groups);
/* Rounds seen in a group (the longest debate's). */
size_t sn_detect_n_rounds(const struct sn_detect *d, const char *group);
/* The figures of a group and row (a round, SN_DETECT_LAST, SN_DETECT_POOLED or
** SN_DETECT_OVERALL). An unknown group is SN_E_ARG. */
int  sn_detect_summary(struct sn_detect *d, const char *group, size_t round,
                       struct sn_detect_summary *out, struct sn_err *err);
/* The whole report of this ranker as JSON: per group "rounds", "last_round", "pooled", the
** older "overall" and "message_types" (sn_detect_types; docs/eval.md "Report"). Caller frees. */
int  sn_detect_report(struct sn_detect *d, cJSON **out, struct sn_err *err);

/* ---- by message type (docs/eval.md "By message type") ---------------------------------------
** Every scored message is typed as the tuple builder types it (sn_tuples_honest_kind,
** tuples/tuples.h): an adversary's message, an AITM copy an interceptor rewrote (tampered), and
** an honest sender's own message: correct (gold), misled, wrong, unparsed. A pair (above,
** below) is AUROC(above over below): the probability that a message of type `above` scores
** higher than one of type `below`, ties counted 1/2; 0.5 is chance, below 0.5 the ranker puts
** `below` above `above`. Append only: the names are JSON keys. */
enum sn_msg_type { SN_MSG_HONEST_CORRECT, SN_MSG_HONEST_WRONG, SN_MSG_MISLED,
                   SN_MSG_HONEST_UNPARSED, SN_MSG_ADVERSARY, SN_MSG_TAMPERED, SN_MSG_TYPE_COUNT };
const char *sn_msg_type_name(enum sn_msg_type t); /* "honest_correct", ..., "?" when unknown */
/* The pairs reported: honest correct above each other type, and misled above adversary. */
#define SN_DETECT_TYPE_PAIRS 6
struct sn_detect_type_pair {
    enum sn_msg_type above, below;
    const char *key;      /* "honest_correct_above_adversary", ... (the JSON key) */
};
extern const struct sn_detect_type_pair sn_detect_type_pairs[SN_DETECT_TYPE_PAIRS];

/* Every message of a group, all rounds pooled (the pooled row's messages): how many of each
** type, and each pair's AUROC with the pooled row's cluster-bootstrap interval (the same
** resamples as its AUROC: docs/eval.md "Intervals"); p NaN when a type of the pair has no
** message; k = n = the messages of both types. */
struct sn_detect_types {
    uint64_t n[SN_MSG_TYPE_COUNT];
    struct sn_detect_rate auroc[SN_DETECT_TYPE_PAIRS];
};
int sn_detect_types(struct sn_detect *d, const char *group, struct sn_detect_types *out,
                    struct sn_err *err);

/* ---- below chance (eval/detect_chance.c; docs/eval.md "Below chance") ---------------------
** Every group and row (round t, last round, pooled; not the older overall) whose AUROC interval
** lies entirely below 0.5 (hi < 0.5). A crossed group scenario=<s>,dataset=<d> with the same
** debates as scenario=<s> is not repeated. Appends to sentence one line without a newline:
** "detector worse than chance (AUROC interval entirely below 0.5): <group> (<row> p [lo, hi];
** also <rows>), ..." or, when none, "no group where the detector's AUROC interval lies below
** 0.5", or, without intervals (no bootstrap resamples), says so. *json (may be NULL) gets
** {"sentence", "intervals": bool, "groups": [{"group", "rows": [{"row": "round" | "last_round"
** | "pooled", "round": t (rounds only), "auroc": rate}]}]}; caller frees. name is the ranker's
** name as the sentence gives it ("detector"). */
int sn_detect_below_chance(struct sn_detect *d, const char *name, struct sn_buf *sentence,
                           cJSON **json, struct sn_err *err);

/* AUROC of scores, positives = honest messages (label false): P(s_h > s_a) + P(s_h = s_a)/2.
** NaN when either class is empty. Exposed for tests; allocates a sorted copy. */
double sn_detect_auroc(const double *score, const bool *adversarial, size_t n);

/* ---- baseline rankers (eval/detect_baselines.c) ------------------------------------------- */

/* "random" (uniform, seeded per debate id, sentinel, round and sender), "shortest" (score =
** length in bytes: the shortest ranks lowest), "disagree" (score 0 when the sender's answer
** differs from the round's plurality over every agent's own answer, or is unparsed; else 1).
** The returned ranker is static apart from ctx, which the caller owns via
** sn_detect_baseline_free. */
int  sn_detect_baseline(const char *name, uint64_t seed, struct sn_detect_ranker *out,
                        struct sn_err *err);
void sn_detect_baseline_free(struct sn_detect_ranker *r);

/* The oracle (eval/detect_oracle.c; docs/eval.md "Oracle"): a ceiling, not a baseline. It
** reads the labels no other ranker sees: an adversarial message (its sender is not honest, or
** its copy was tampered for the sentinel) scores below every honest one, adversarial messages
** among themselves by slot (the lowest slot lowest); honest messages tie, and the tie rule of
** Algorithm 1 orders them. Static; nothing to free. */
struct sn_detect_ranker sn_detect_oracle_ranker(void);

/* A pointwise ranker named "detector" around a (context, response) scorer: the runtime
** detector's sn_detector_score (export/), wrapped by the caller as a struct sn_defense_scorer,
** the same callback the simulation's defense takes. Each message is scored as
** score(view->context, message text). The scorer is borrowed. */
struct sn_detect_ranker sn_detect_scorer_ranker(const struct sn_defense_scorer *scorer);

/* Items of the train split of a shard set (its manifest.json): one key per distinct
** (dataset, item_id) of its tuples, added to *items (values unused). The evaluation refuses,
** or warns, when evaluated debates share items with it (docs/eval.md "Leakage"). */
int  sn_detect_train_items(const char *shards_dir, struct sn_strmap *items, struct sn_err *err);
/* The key sn_detect_train_items stores for a debate's (dataset, item_id), appended to out. */
int  sn_detect_item_key(const char *dataset, const char *item_id, struct sn_buf *out,
                        struct sn_err *err);

/* ---- the n-gram baseline (eval/detect_ngram.c, eval/detect_ngram_data.c; docs/eval.md
** "Baselines", "ngram") ------------------------------------------------------------------------
** Terms: word and punctuation tokens (a word = a run of ASCII letters and digits and bytes
** >= 0x80, ASCII-lower-cased; every other printable ASCII character is a token of its own, so
** "(B)" is "(", "b", ")"), each token and each pair of neighbouring tokens. Vector: 1 + ln tf
** per term of the training vocabulary, divided by its L2 norm. Model: class-balanced logistic
** regression (weights n / (2 n_class)) with L2 strength 1/C on the weights (not the bias),
** fitted by full-batch L-BFGS to convergence; the score is the logit of "trusted" (label true:
** honest or chosen), higher = more trusted. Deterministic: same texts, same model. */
#define SN_NGRAM_MAX_GRID 16
struct sn_ngram_params {
    double   c;                   /* C of sn_ngram_train, and sn_ngram_select's fallback
                                  ** (default 1) */
    const double *c_grid;         /* sn_ngram_select's candidates, ascending; NULL = 0.01, 0.1,
                                  ** 1, 10, 100 */
    size_t   n_c_grid;            /* at most SN_NGRAM_MAX_GRID */
    double   validation_fraction; /* of the groups held out to choose C (default 0.2) */
    uint64_t seed;                /* salt of the validation split's hash (default 0) */
    int      max_iter;            /* L-BFGS iterations per fit (default 1000) */
    double   tol;                 /* converged when max |gradient| of the mean objective <=
                                  ** tol (default 1e-7) */
};
struct sn_ngram_params sn_ngram_default_params(void);

enum sn_ngram_labels { SN_NGRAM_ROLES, SN_NGRAM_TUPLES, SN_NGRAM_LABELS_COUNT };
const char *sn_ngram_labels_name(enum sn_ngram_labels l);      /* "roles", "tuples" */
int sn_ngram_labels_parse(const char *s, enum sn_ngram_labels *out, struct sn_err *err);

/* What training did (for the report). */
struct sn_ngram_info {
    double c;                     /* the final fit's C */
    size_t n_texts, n_trusted;    /* texts fitted, of which label true */
    size_t n_features;            /* vocabulary terms */
    int    iterations;            /* L-BFGS iterations of the final fit */
    bool   converged;
    bool   selected;              /* C chosen on the validation split */
    size_t n_grid;                /* grid values tried, with their validation loss (the
                                  ** class-balanced mean log loss) */
    double c_grid[SN_NGRAM_MAX_GRID], validation_loss[SN_NGRAM_MAX_GRID];
    size_t n_validation, n_validation_groups; /* texts and groups held out for the choice */
    char   no_selection[192];     /* why C was not chosen ("" when it was) */
    enum sn_ngram_labels labels;  /* sn_ngram_train_data: the data, */
    size_t n_trajectories;        /* train-split trajectories (roles) or those with tuples */
    size_t n_excluded;            /* of them left out as evaluated debates */
};

struct sn_ngram;
/* Fits at C = p->c on texts[0..n) with labels (true = trusted). Both classes needed. */
int  sn_ngram_train(const struct sn_ngram_params *p, const char *const *texts, const bool *label,
                    size_t n, struct sn_ngram **out, struct sn_err *err);
/* Chooses C: the groups (one per text, e.g. the question; NULL = one group "") whose hash
** u = top 53 bits of SHA-256("sentinel-ngram-validation/1\n<seed>\n<group>") / 2^53 is below
** validation_fraction are held out; a model is fitted on the rest for each C of the grid and
** the C of the lowest class-balanced mean log loss on the held-out texts is kept (ties: the
** smaller C); then that C is fitted on every text. When either side lacks a class, C = p->c
** (info.no_selection says why). */
int  sn_ngram_select(const struct sn_ngram_params *p, const char *const *texts,
                     const bool *label, const char *const *groups, size_t n,
                     struct sn_ngram **out, struct sn_err *err);

/* The training data of `sentinel eval`'s n-gram baseline (eval/detect_ngram_data.c): roles =
** the messages of the shard set's train-split trajectories labelled by role (honest trusted;
** adversary messages and AITM-rewritten copies not), validation groups by question content
** (sn_question_keys); tuples = the train split's distinct chosen (trusted) and rejected texts,
** groups by item. */
struct sn_ngram_data {
    enum sn_ngram_labels labels;
    const char *shards_dir;             /* the shard set (its manifest.json) */
    const char *const *trajectories;    /* roles: files or directories where the trajectories
                                        ** are; none = the manifest's settings.inputs (each
                                        ** must have its recorded size) */
    size_t      n_trajectories;
    const struct sn_strmap *exclude;    /* debate ids left out of fitting and validation (the
                                        ** evaluated debates); may be NULL */
    bool        skip_bad;               /* skip malformed trajectory lines */
};
/* Reads the data and trains with sn_ngram_select. Roles: every tuple's trajectory of the train
** split must be among the train-split trajectories read, else SN_E_ARG naming one. */
int  sn_ngram_train_data(const struct sn_ngram_params *p, const struct sn_ngram_data *d,
                         struct sn_ngram **out, struct sn_err *err);

/* logit of "trusted" for text (terms outside the vocabulary are ignored) */
int  sn_ngram_score(const struct sn_ngram *m, const char *text, double *logit,
                    struct sn_err *err);
double sn_ngram_logit(const struct sn_ngram *m, const char *text); /* NaN on failure */
const struct sn_ngram_info *sn_ngram_get_info(const struct sn_ngram *m);
/* The terms of text, one per line, in order (each token, and from the second token on the
** pair "<previous> <token>" after it), appended to out: the tokenisation above, for tests and
** for tests/ref/ngram_sklearn.py to compare against. */
int  sn_ngram_terms(const char *text, struct sn_buf *out, struct sn_err *err);
void sn_ngram_free(struct sn_ngram *m);
struct sn_detect_ranker sn_ngram_ranker(struct sn_ngram *m); /* borrows m; name "ngram" */

/* LLM judge: one chat request per (sentinel, round) with the prompt of docs/eval.md "LLM
** judge"; the reply's "RANKING:" line orders the agent ids from most to least trustworthy.
** A malformed ranking (missing line, unknown or repeated id, an id left out) scores the view
** all-NaN-free ties (0) and is counted; sn_judge_malformed gives the count and first reason. */
struct sn_judge;
int  sn_judge_create(struct sn_llm_backend *b, struct sn_judge **out, struct sn_err *err);
void sn_judge_free(struct sn_judge *j);
struct sn_detect_ranker sn_judge_ranker(struct sn_judge *j);
uint64_t sn_judge_malformed(const struct sn_judge *j, const char **first_reason);
uint64_t sn_judge_calls(const struct sn_judge *j);
/* Parses a judge reply for the given ids: scores[i] = n - position (higher = more trusted).
** SN_E_FORMAT with the reason when malformed. */
int sn_judge_parse(const char *reply, const int *ids, size_t n, double *scores,
                   struct sn_err *err);
/* The prompt for a view (appended to out). */
int sn_judge_prompt(const struct sn_detect_view *v, struct sn_buf *out, struct sn_err *err);

/* ---- defended debates (eval/detect_defended.c; docs/eval.md "Defended debates") -------------
** Four arms of the same debates (same experiment, dataset, item and replicate): *clean* (no
** adversaries), *attacked* (the attack, defense `none`), *defended* (the attack, defense
** `sentinel`) and *clean_defended* (no adversaries, defense `sentinel`: what the defence costs
** when nobody attacks; optional, a debate is matched without it). Per round: task accuracy of
** each arm (plurality over every agent; for the defended arms also over the agents their
** sentinels have not excluded, the defended system's vote; for the attacked arm also over the
** agents the oracle's exclusions leave), under both tie rules (strict: the recorded panel
** decision; tie-neutral: a tie among m answers holding gold counts 1/m); recovery = (defended −
** attacked) / (clean − attacked) on the tie-neutral accuracy, with a seeded cluster bootstrap
** over matched debates (n/a, with the reason, unless clean and attacked differ beyond their
** intervals), the oracle's recovery and the share of it; the cost of the defence = clean −
** clean_defended (tie-neutral); scoring time per round and its overhead over the round's
** generation time; for endpoint debates the measured overhead, the arms' wall time per
** debate-round with minus without the detector (sn_defended_set_wall).
** Memory: a few bytes per (debate, round), and the oracle's replay of the attacked arm (one
** score per scored message). One sn_defended, one thread. */
enum sn_arm { SN_ARM_CLEAN, SN_ARM_ATTACKED, SN_ARM_DEFENDED, SN_ARM_CLEAN_DEFENDED,
              SN_ARM_COUNT };
/* "clean", "attacked", "defended", "clean_defended" (also the arms' folder names) */
const char *sn_arm_name(enum sn_arm a);

struct sn_defended_params {
    uint64_t seed;             /* bootstrap seed and the oracle's tie rule (default 1) */
    int      n_boot;           /* cluster-bootstrap resamples (default 1000; 0 = none) */
    double   gen_tokens_per_s; /* generation speed for debates without a real generation time
                               ** (the sim backend): tokens per second (default 50) */
    int      k;                /* the oracle's bottom-k (default 1: give the defense's) */
    enum sn_defense_rule rule; /* the oracle's rule (default all: give the defense's) */
};
struct sn_defended_params sn_defended_default_params(void);

struct sn_defended_round {
    uint64_t n_units;                       /* matched debates with this round */
    uint64_t n_clusters;                    /* their items: < n_units when items repeat
                                            ** across experiments or replicates */
    /* strict task accuracy (the recorded panel decision); Wilson when every matched debate is
    ** on its own item, else the percentile cluster bootstrap over items */
    struct sn_detect_rate acc[SN_ARM_COUNT]; /* plurality over every agent */
    struct sn_detect_rate acc_kept;         /* defended arm, plurality over the agents not
                                            ** excluded (the defended system's vote) */
    struct sn_detect_rate acc_oracle;       /* attacked arm, plurality over the agents the
                                            ** oracle's exclusions leave (same k and rule) */
    /* the same, tie-neutral; Wilson of a mean, or the cluster bootstrap as above */
    struct sn_detect_rate acc_neutral[SN_ARM_COUNT], acc_kept_neutral, acc_oracle_neutral;
    /* zero attackers: the clean_defended arm's defended system's vote (strict, tie-neutral),
    ** over the n_cost matched debates that have a clean_defended twin (its every-agent vote is
    ** acc[SN_ARM_CLEAN_DEFENDED], over the same debates) */
    struct sn_detect_rate acc_kept_clean, acc_kept_clean_neutral;
    uint64_t n_cost;                        /* matched debates with a clean_defended twin */
    struct sn_detect_rate cost;             /* the cost of the defence: clean − clean_defended
                                            ** (kept vote), tie-neutral, over those debates; lo,
                                            ** hi: cluster-bootstrap percentiles; p NaN when n/a */
    char     cost_na[160];                  /* "" when cost is defined */
    struct sn_detect_rate recovery;         /* tie-neutral, p from acc_kept; lo, hi: bootstrap
                                            ** percentiles; p NaN when n/a (na says why) */
    char     na[256];                       /* "" when recovery is defined */
    uint64_t n_boot_undefined;              /* resamples with clean <= attacked (left out) */
    struct sn_detect_rate recovery_oracle;  /* (oracle − attacked) / (clean − attacked); n/a
                                            ** with recovery */
    struct sn_detect_rate share;            /* recovery / recovery_oracle; p NaN when n/a */
    char     share_na[256];                 /* "" when share is defined */
    uint64_t n_boot_share_undefined;        /* resamples with oracle <= attacked (left out) */
    uint64_t n_timed;                       /* defended debates with a timed round */
    double   score_ms, gen_ms;              /* means per timed debate-round: scoring summed
                                            ** over the round's sentinels, generation summed
                                            ** over its messages */
    double   score_ms_sentinel;             /* mean of one sentinel's scoring time per round */
    double   round_ms;                      /* mean round time with parallel generation: the
                                            ** slowest message (simultaneous), else the sum */
    double   overhead_pct;                  /* the paper's Table 1: 100 · Σ score_ms_sentinel /
                                            ** Σ round_ms */
    double   overhead_pct_serial;           /* 100 · Σ score_ms / Σ gen_ms: everything in
                                            ** series (the older figure) */
    uint64_t n_round_slowest, n_round_sum;  /* timed debate-rounds by round-time basis */
    uint64_t n_gen_latency, n_gen_tokens;   /* timed debate-rounds by generation basis */
};

struct sn_defended;
int  sn_defended_create(const struct sn_defended_params *p, struct sn_defended **out,
                        struct sn_err *err);
void sn_defended_free(struct sn_defended *d); /* NULL is fine */
/* Adds one debate of an arm. The arm is checked against the debate (clean: no adversaries or
** interceptors; attacked: an attack and defense none; defended: an attack and recorded
** blacklists; clean_defended: no attack and recorded blacklists); a second debate with the same key in one arm is SN_E_FORMAT. t is not kept. */
int  sn_defended_add(struct sn_defended *d, enum sn_arm arm, const struct sn_traj *t,
                     struct sn_err *err);
/* The same, and the debate's unit joins the group "<kind>=<value>" too when kind is not NULL
** (the attacked arm's call decides it: e.g. question=seen, docs/eval.md "Leakage"). */
int  sn_defended_add_in_group(struct sn_defended *d, enum sn_arm arm, const struct sn_traj *t,
                              const char *kind, const char *value, struct sn_err *err);
/* A ranker that times `inner` (borrowed) and books the time on the defended debate of the
** view's key and round: replaying the defended arm through sn_detect_add with it measures the
** scoring time per round. The debate must have been added to the defended arm first. */
struct sn_detect_ranker sn_defended_timed_ranker(struct sn_defended *d,
                                                 const struct sn_detect_ranker *inner);
/* The measured overhead of endpoint debates (docs/eval.md "Defended debates", "Overhead"): the
** wall time of an arm's simulation per debate-round it wrote, with the detector (defended,
** clean_defended) minus without it (attacked, clean), over the time without. */
struct sn_defended_measured {
    double wall_ms_without, wall_ms_with;   /* per debate-round; NaN when not known */
    double diff_ms;                         /* with − without */
    double overhead_pct;                    /* 100 · diff_ms / wall_ms_without */
    char   na[200];                         /* "" when measured */
};
/* Records the wall time of the simulation that wrote every debate of an arm (ms); resumed or
** unknown: don't call it, or pass NaN with a reason. */
void sn_defended_set_wall(struct sn_defended *d, enum sn_arm arm, double wall_ms,
                          const char *why_not);
/* pair 0: attacked -> defended; pair 1: clean -> clean_defended. */
void sn_defended_measured(const struct sn_defended *d, int pair,
                          struct sn_defended_measured *out);
/* Debates per arm without the matched three (clean, attacked, defended; counted at summary
** time). */
void sn_defended_unmatched(const struct sn_defended *d, uint64_t out[SN_ARM_COUNT]);
/* Groups as in sn_detect_groups ("all", "scenario=", "dataset=", "domain=", and the group of
** sn_defended_add_in_group; from the attacked arm); rounds of a group; one round's figures (SN_DETECT_LAST = each debate's last round). */
const char *const *sn_defended_groups(struct sn_defended *d, size_t *n_groups);
size_t sn_defended_n_rounds(const struct sn_defended *d, const char *group);
int  sn_defended_summary(struct sn_defended *d, const char *group, size_t round,
                         struct sn_defended_round *out, struct sn_err *err);
/* The whole defended report as JSON: per group "rounds", "last_round" and the older "overall"
** (the same object). Caller frees. */
int  sn_defended_report(struct sn_defended *d, cJSON **out, struct sn_err *err);

#endif
