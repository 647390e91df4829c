/* cli/cmd_eval_defended.h: the defended-debates mode of `sentinel eval` (cli/cmd_eval.c calls
** it; docs/eval.md "Defended debates"). Private to cli/. */
#ifndef SN_CLI_CMD_EVAL_DEFENDED_H
#define SN_CLI_CMD_EVAL_DEFENDED_H
#include "cli/cli.h"
#include "eval/detect.h"

struct sn_eval_arms_params {
    const char *recipe_path;        /* the recipe whose `simulate` section is run four ways */
    const char *const *sets;        /* --set overrides of the recipe */
    size_t      n_sets;
    const char *dir;                /* DIR/clean, DIR/attacked, DIR/defended, DIR/clean_defended */
    const char *detector;           /* the GGUF path recorded in the defended arm's recipe */
    struct sn_defense_scorer scorer; /* its scorer (thread-safe; borrowed) */
    int         k;                  /* bottom-k of the defense */
    enum sn_defense_rule rule;
    size_t      limit;              /* > 0 caps items per experiment */
    bool        quiet;              /* no progress bar */
};
/* Runs every experiment with an attack of the recipe's `simulate` section four times: clean
** (scenario none, no adversaries), attacked (defense none), defended (defense sentinel with
** the detector) and clean_defended (clean, defense sentinel), into DIR/<arm> (resumable like
** `sentinel simulate`; each arm's recipe is written beside its trajectories as
** DIR/<arm>/recipe.json, and the wall time of a simulation that wrote the whole arm as
** DIR/<arm>/wall.json). */
int sn_eval_arms_simulate(const struct sn_eval_arms_params *p, struct sn_err *err);

/* Whether a debate's question was seen in training (cli/cmd_eval.c's leakage check,
** docs/eval.md "Leakage"). */
struct sn_eval_seen {
    int  (*fn)(void *ctx, const struct sn_traj *t, bool *seen, struct sn_err *err);
    void *ctx;
};
/* Reads DIR/clean, DIR/attacked, DIR/defended and (when present) DIR/clean_defended into the
** defended-debates figures; with a scorer, replays the defended arm's received messages
** through it to time the scoring (one thread). With `seen` (NULL: none), every matched debate
** also joins question=seen or question=unseen. Prints the table unless quiet; *out (caller
** frees) is the JSON of the report. */
int sn_eval_arms_report(const char *dir, const struct sn_defended_params *p,
                        const struct sn_defense_scorer *scorer, const struct sn_detect_params *dp,
                        const struct sn_eval_seen *seen, bool quiet, cJSON **out,
                        struct sn_err *err);
#endif
