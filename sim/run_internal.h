/* sim/run_internal.h: what the `simulate` job (run.c) and its recipe parser
** (run_recipe.c) share: the endpoints opened once per run, and the experiments parsed from
** recipe.simulate with their question sets and debate setups (docs/simulate.md#output-files-and-resume). */
#ifndef SN_SIM_RUN_INTERNAL_H
#define SN_SIM_RUN_INTERNAL_H
#include "sim/sim.h"

struct endpoint {
    const char *name;
    const cJSON *config;
    struct sn_llm_backend *b;
    const char *model;
    bool used;
    int concurrency;
};

struct run {
    const struct sn_simulate_params *p;
    cJSON *merged;                 /* array of merged experiment objects (owned) */
    cJSON *implicit_sim;           /* {"kind":"sim"} when the recipe names none */
    struct endpoint eps[32];
    int n_eps;
    struct sn_experiment *xs;
    int n_xs;
    struct sn_qset **qsets;
    struct sn_debate_setup *setups;
    struct sn_llm_backend **slot_b;   /* n_xs * MAX */
    const char **slot_model, **slot_name;
    char (*descs)[512];
};

/* Parses recipe.simulate into R (R->p set by the caller, the rest zeroed): endpoints opened,
** experiments validated, question sets loaded, one debate setup per experiment. On failure R
** holds what was built so far; sn_sim_run_free releases it either way. */
int  sn_sim_run_setup(struct run *R, const cJSON *recipe, struct sn_err *err);
void sn_sim_run_free(struct run *R);

#endif
