/* defense/defense.h: Algorithm 1 of the SentinelNet paper (section 4.3 "Defense Integration";
** docs/design.md §4 "Runtime (Algorithm 1)"; docs/agents.md "The sentinel"), the part an agent
** runs at run time: each round a sentinel scores the messages it received with the detector
** R(response ⊕ c) on the context c it was trained on (context/context.h), adds the k senders of
** lowest score to its cumulative blacklist and, from then on, ignores blacklisted senders.
**
** Two layers:
**   1. the bottom-k step (lines 8-10) over given scores, with the seeded tie rule: the one
**      implementation, used by the debate engine's defense (sim/), `sentinel eval`'s replay
**      and the sentinel object below;
**   2. the sentinel object: one agent's state (k, rule, tie seed, the task, the history it has
**      seen and the cumulative blacklist), fed one round of received messages at a time, scoring
**      them through a scorer (the runtime detector's sn_detector_score_prompt, export/export.h,
**      or any ranker) and returning the scores and exclusions.
**
** Pure C over common/ and context/ (no OpenBLAS, libtorch, HDF5 or libcurl: the debate engine
** uses the bottom-k step without linking the detector); it ships in the runtime library
** libsentinel_detector. A sentinel is used by one thread at a time. */
#ifndef SN_DEFENSE_H
#define SN_DEFENSE_H
#include "common/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the bottom-k step (defense/bottom_k.c) ----------------------------------------------- */

/* Which messages line 8 of Algorithm 1 ranks. */
enum sn_defense_rule {
    SN_DEFENSE_RULE_ALL,      /* default, the paper: every received message, blacklisted
                              ** senders included; the bottom-k join the blacklist (a sender
                              ** already on it takes one of the k places again) */
    SN_DEFENSE_RULE_UNLISTED, /* the earlier rule: bottom-k among senders not yet blacklisted,
                              ** so every round adds k new senders while there are any */
    SN_DEFENSE_RULE_COUNT
};
const char *sn_defense_rule_name(enum sn_defense_rule r); /* "all", "unlisted" */

/* Lines 8-10 of Algorithm 1 for one sentinel and one round. sender[i], score[i] for i < n: the
** messages received this round (one per sender; a repeated sender counts once, at its lowest
** score). Returns blacklist ∪ B_t, B_t = the min(k, candidates) distinct senders of lowest score,
** candidates = all senders (SN_DEFENSE_RULE_ALL) or those not in blacklist (UNLISTED).
** A NaN score ranks lowest. Ties: equal scores are ordered by sn_defense_tie_key(tie_seed,
** sender), a seeded hash, so no slot is favoured (a rule "lower id first" would hand every tie to
** adversaries placed in the low slots); ties still equal after that go to the lower sender id.
** Senders outside [0, 64) are ignored. Never allocates. */
uint64_t sn_defense_bottom_k(uint64_t blacklist, const int *sender, const double *score, size_t n,
                             int k, enum sn_defense_rule rule, uint64_t tie_seed);
uint64_t sn_defense_tie_key(uint64_t tie_seed, int sender);
/* The tie seed of (receiver, round) given the debate's tie seed: what the debate engine and
** `sentinel eval` pass to sn_defense_bottom_k. */
uint64_t sn_defense_round_seed(uint64_t tie_seed, int receiver, int round);

/* ---- the sentinel object (defense/sentinel.c) ---------------------------------------------- */

#define SN_SENTINEL_MAX_AGENTS 64   /* agent ids are 0..63: the blacklist is a 64-bit mask */

struct sn_sentinel;

/* What ranks a round's messages: R(response ⊕ c) of n responses to the context c given as its
** parts, the task text and the history entries oldest first. The runtime detector's
** sn_detector_score_prompt (export/export.h) is this function with the detector as ctx:
**   static int det_score(void *d, const char *task, const char *const *hist, size_t n_hist,
**                        const char *const *resp, size_t n, float *out, struct sn_err *err)
**   { return sn_detector_score_prompt(d, task, hist, n_hist, resp, n, out, err); }
** Higher = more trustworthy. */
struct sn_sentinel_scorer {
    int  (*score)(void *ctx, const char *task, const char *const *history, size_t n_history,
                  const char *const *responses, size_t n, float *scores, struct sn_err *err);
    void  *ctx;
};

struct sn_sentinel_params {
    int      self;              /* this agent's id, 0..63: the tie rule's per-receiver seed */
    int      k;                 /* senders blacklisted per round; default 1 */
    enum sn_defense_rule rule;  /* default SN_DEFENSE_RULE_ALL */
    uint64_t tie_seed;          /* the debate's tie seed; `sentinel eval` uses
                                ** sn_seed_derive(--seed, debate id, 0); default 0 */
    size_t   history_sentences; /* history entries as in training; 0 = the defaults */
    size_t   history_chars;     /* (context/context.h; a detector GGUF stores its own) */
};
struct sn_sentinel_params sn_sentinel_default_params(void);

/* A sentinel for one debate. task: the task text (sn_context_task_text renders a question and
** its options as training did); copied. */
int  sn_sentinel_create(const struct sn_sentinel_params *p, const char *task,
                        struct sn_sentinel **out, struct sn_err *err);
void sn_sentinel_free(struct sn_sentinel *s);

/* One message of a round: who sent it, its text and its parsed answer (NULL: none parsed). */
struct sn_sentinel_msg {
    int         agent;
    const char *text;
    const char *answer;
};

/* Appends one message to the history the context is rendered from ("Round <round+1>, agent
** <agent> (answer X): <gist>", context/context.h). The context of round r is the task and every
** message of rounds < r, in the order added: add a round's messages (all of them, the
** sentinel's own included, as the trajectory records them) after scoring it. */
int  sn_sentinel_add_history(struct sn_sentinel *s, size_t round,
                             const struct sn_sentinel_msg *m, struct sn_err *err);

/* Algorithm 1 lines 4-10 for one round: scores msgs[i] (i < n: the messages received, from
** other agents) with sc on the context (task and history so far) into scores[i], adds the
** bottom-k senders to the blacklist and sets excluded[i] (may be NULL) for each message whose
** sender is now blacklisted. *added (may be NULL): B_t, the senders the ranking put in the
** bottom k this round (under rule all, a sender already listed may be among them). The history
** is not changed. Senders outside 0..63 are an SN_E_ARG error. */
int  sn_sentinel_round(struct sn_sentinel *s, const struct sn_sentinel_scorer *sc, int round,
                       const struct sn_sentinel_msg *msgs, size_t n, float *scores,
                       bool *excluded, uint64_t *added, struct sn_err *err);
/* Lines 8-10 alone, with scores from elsewhere (another ranker): the same update. */
int  sn_sentinel_update(struct sn_sentinel *s, int round, const int *sender, const float *score,
                        size_t n, uint64_t *added, struct sn_err *err);

/* The cumulative blacklist: bit j = agent j. */
uint64_t sn_sentinel_blacklist(const struct sn_sentinel *s);
bool     sn_sentinel_excludes(const struct sn_sentinel *s, int agent);
/* The context text of the next round (task and history; sn_template_context), appended. */
int      sn_sentinel_context(const struct sn_sentinel *s, struct sn_buf *out,
                             struct sn_err *err);
size_t   sn_sentinel_n_history(const struct sn_sentinel *s);
/* Back to an earlier state: the blacklist and the first n_history history entries (values read
** before a round, to undo it when a caller fails part way). n_history past the end is kept. */
void     sn_sentinel_rewind(struct sn_sentinel *s, uint64_t blacklist, size_t n_history);

#ifdef __cplusplus
}
#endif
#endif
