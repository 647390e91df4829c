/* eval/detect_internal.h: the pieces the detection replay (detect.c) and the defended-debate
** accumulator (detect_defended.c) share: group names, the rate intervals, the JSON of a rate and
** the per-group, per-round layout of their reports (docs/eval.md), and the walk over a shard
** set's train split that the n-gram baseline and the leakage check both make. Not installed;
** eval/ only. */
#ifndef SN_EVAL_DETECT_INTERNAL_H
#define SN_EVAL_DETECT_INTERNAL_H
#include "eval/detect.h"

struct sn_shard_reader;

/* sn_answer_equal under the task *(const enum sn_task *)ctx: the callback of sn_vote_plurality */
bool sn_detect_answer_eq(const char *a, const char *b, void *ctx);
/* The vote of answers[0..n) (NULL = no vote) scored against gold under both tie rules of
** docs/eval.md "Task accuracy": *strict = 1 when the recorded panel decision (sn_vote_plurality,
** SN_VOTE_TIE_NONE: a tie for the top count is no decision) is gold, else 0; *neutral = 1/m when
** the top count is shared by m distinct answers one of which is gold (the expectation of a
** uniform tie-break, not a draw), else 0. Both are 0 without votes or gold. */
void sn_detect_vote_credit(const char *const *answers, size_t n, enum sn_task task,
                           const char *gold, double *strict, double *neutral);
/* The credits of round r of the debate added last to d (sn_detect_add): [0] the vote of the
** agents not excluded, [1] every agent's. SN_E_ARG when there is no such debate or round. */
int sn_detect_last_votes(const struct sn_detect *d, size_t r, double strict[2], double neutral[2],
                         struct sn_err *err);
/* the scenarios the paper trains on (collaboration, netsafe, aitm): domain "in" */
bool sn_detect_in_domain_scenario(const char *scenario);

/* Group names: gname[0..*n) NULL-terminated, gname[0] = "all". The id of "kind=value" (value
** NULL: "unknown"), appended when new. */
int sn_detect_group_id(char ***gname, size_t *n, const char *kind, const char *value, int *id,
                       struct sn_err *err);
/* g[0..3) = the ids of t's "scenario=", "dataset=" and "domain=dom" groups */
int sn_detect_group_ids(char ***gname, size_t *n, const struct sn_traj *t, const char *dom,
                        int g[3], struct sn_err *err);
/* index of group in gname[0..n), -1 when absent */
int sn_detect_find_group(char *const *gname, size_t n, const char *group);

/* k of n with its Wilson 95% interval (k may be fractional: sn_wilson_mean); p = NaN when
** n = 0 */
struct sn_detect_rate sn_detect_wilson(double k, double n);
/* percentile interval of vals[0..n) (NaN dropped; vals reordered): the 2.5% and 97.5% order
** statistics, linear interpolation between neighbours; NaN when none is left */
void sn_detect_percentile(double *vals, size_t n, double *lo, double *hi);

/* {"k","n","p","lo","hi"}, NaN as null; NULL when out of memory */
cJSON *sn_detect_rate_json(const struct sn_detect_rate *r);

/* One row's JSON object of a report: a round (< n_rounds) or one of the rows below. */
typedef int (*sn_detect_round_json_fn)(void *ctx, const char *group, size_t round, cJSON **out,
                                       struct sn_err *err);
/* A row of a report besides the rounds: its key in a group's object and its row code. */
struct sn_detect_row_key {
    const char *key;
    size_t      row;
};
/* Fills groups with {name: {"rounds": [round 0..R), key: ... for every rows[i]}} for every name
** of gname[0..n), R = n_rounds(ctx, name). On failure the caller deletes what it built. */
int sn_detect_report_groups(cJSON *groups, char *const *gname, size_t n,
                            size_t (*n_rounds)(const void *ctx, const char *group),
                            sn_detect_round_json_fn round_json,
                            const struct sn_detect_row_key *rows, size_t n_rows, void *ctx,
                            struct sn_err *err);

/* Calls each(ctx, r, i, err) for every tuple i of every train-split shard of the shard set in
** dir, in manifest order, until one returns nonzero. what != NULL: an error within a shard
** (after it opened) is wrapped as "what: shard path". */
int sn_detect_each_train_tuple(const char *dir, const char *what,
                               int (*each)(void *ctx, struct sn_shard_reader *r, size_t i,
                                           struct sn_err *err),
                               void *ctx, struct sn_err *err);

/* the model's info, for eval/detect_ngram_data.c to add what the data was */
struct sn_ngram_info *sn_ngram_info_mut(struct sn_ngram *m);

#endif
