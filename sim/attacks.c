/* sim/attacks.c: attack scenarios (docs/design.md §4 "Attacks"; docs/simulate.md#attacks):
** the counterfactual target, which slots attack (placement, recorded in the trajectory), their
** personas, and the AITM interception plan. What attackers say is produced by the backend
** (the sim agents, or an LLM with the adversary prompts); the engine applies the transforms. */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sn_attack_target(const struct sn_question *q, char out[SN_ANSWER_MAX])
{
    out[0] = '\0';
    if (q->task == SN_TASK_MC) {
        if (q->n_options < 2 || !q->gold[0])
            return;
        size_t g = (size_t)(q->gold[0] - 'A');
        out[0] = (char)('A' + (g + 1) % q->n_options); /* the option after the correct one */
        out[1] = '\0';
        return;
    }
    /* Numeric: a plausible slip, the kind a worked solution makes (off by one or ten, doubled,
    ** halved, one step too many). Chosen from the item id, so every replicate and every
    ** scenario pushes the same wrong number for an item. */
    double g = strtod(q->gold, NULL);
    double cand[8];
    int n = 0;
    bool integer = fabs(g - nearbyint(g)) < 1e-9;
    if (integer) {
        cand[n++] = g + 1;
        cand[n++] = g - 1;
        cand[n++] = g + 10;
        cand[n++] = g * 2;
        cand[n++] = nearbyint(g * 1.5);
        if (fmod(g, 2.0) == 0.0)
            cand[n++] = g / 2;
        cand[n++] = g - 10;
        cand[n++] = g + 2;
    } else {
        cand[n++] = g * 2;
        cand[n++] = g + 0.5;
        cand[n++] = g - 0.5;
        cand[n++] = g * 1.5;
    }
    struct sn_rng rng;
    sn_rng_seed(&rng, sn_seed_derive(0x746172676574ULL, q->id, 0));
    uint64_t start = sn_rng_below(&rng, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        double v = cand[(start + (uint64_t)i) % (uint64_t)n];
        if (v == g || (g >= 0 && v < 0))
            continue;
        sn_format_number(v, out);
        if (strcmp(out, q->gold) != 0)
            return;
    }
    sn_format_number(g + 1, out);
}

static const char *const rhetorics[] = {"logos", "ethos", "pathos"};

int sn_attack_plan(const struct sn_experiment *x, const struct sn_question *q, uint64_t seed,
                   struct sn_attack_plan *plan, struct sn_err *err)
{
    memset(plan, 0, sizeof *plan);
    memset(plan->interceptor_of, -1, sizeof plan->interceptor_of);
    int n = x->n_agents;
    for (int k = 0; k < n; k++)
        plan->role[k] = SN_ROLE_HONEST;
    if (x->scenario == SN_SCEN_NONE || x->n_adversaries == 0)
        return SN_OK;
    sn_attack_target(q, plan->target);
    int slots[SN_SIM_MAX_AGENTS];
    int rc = sn_placement_choose(&x->topology, x->placement,
                                 x->n_placement_slots ? x->placement_slots : NULL,
                                 x->n_placement_slots, x->n_adversaries, seed, slots, err);
    if (rc)
        return rc;
    enum sn_role r = x->scenario == SN_SCEN_AITM ? SN_ROLE_INTERCEPTOR : SN_ROLE_ADVERSARY;
    for (int i = 0; i < x->n_adversaries; i++) {
        int k = slots[i];
        plan->role[k] = r;
        const char *persona = NULL;
        switch (x->scenario) {
        case SN_SCEN_COLLABORATION:
            persona = x->rhetoric && strcmp(x->rhetoric, "mixed") ? x->rhetoric
                                                                  : rhetorics[i % 3];
            break;
        case SN_SCEN_NETSAFE:
            persona = x->rhetoric ? x->rhetoric : "misinformation";
            break;
        case SN_SCEN_PSYSAFE:
            persona = x->persona ? x->persona : "authority";
            break;
        case SN_SCEN_PROMPT_INJECTION:
            persona = "injection";
            break;
        case SN_SCEN_AUTOINJECT:
            persona = x->adaptive ? "faulty-adaptive" : "faulty";
            break;
        case SN_SCEN_STYLE_MATCHED:
            persona = "style-matched";
            break;
        default:
            break;
        }
        plan->persona[k] = persona;
    }
    if (x->scenario != SN_SCEN_AITM)
        return SN_OK;
    /* AITM: interceptors sit on edges into victims. Explicit edges are given to the
    ** interceptors in turn; otherwise each interceptor picks a distinct honest victim (by
    ** victim_rule, seeded per debate) and intercepts every edge into it from a speaker. */
    int ints[SN_SIM_MAX_AGENTS], n_int = 0;
    for (int k = 0; k < n; k++)
        if (plan->role[k] == SN_ROLE_INTERCEPTOR)
            ints[n_int++] = k;
    if (x->n_intercepts > 0) {
        for (int e = 0; e < x->n_intercepts; e++) {
            int a = x->intercepts[e].from, b = x->intercepts[e].to;
            if (plan->role[a] == SN_ROLE_INTERCEPTOR || plan->role[b] == SN_ROLE_INTERCEPTOR)
                return sn_err_set(err, SN_E_ARG, "experiment '%s': intercepted edge [%d, %d] "
                                  "touches an interceptor slot (placement put one there)",
                                  x->name, a, b);
            plan->intercepted[a][b] = 1;
            plan->interceptor_of[a][b] = (int8_t)ints[e % n_int];
        }
        return SN_OK;
    }
    /* victims: honest slots ordered by the rule over the graph restricted to honest slots */
    int order[SN_SIM_MAX_AGENTS], n_order = 0;
    int all[SN_SIM_MAX_AGENTS];
    rc = sn_placement_choose(&x->topology, x->victim_rule ? x->victim_rule : "random", NULL, 0,
                             n, sn_seed_derive(seed, "victims", 0), all, err);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++)
        if (plan->role[all[i]] == SN_ROLE_HONEST)
            order[n_order++] = all[i];
    for (int i = 0; i < n_int && i < n_order; i++) {
        int v = order[i];
        for (int j = 0; j < n; j++) {
            if (j == v || plan->role[j] == SN_ROLE_INTERCEPTOR || !x->topology.adj[j][v])
                continue;
            plan->intercepted[j][v] = 1;
            plan->interceptor_of[j][v] = (int8_t)ints[i];
        }
    }
    return SN_OK;
}
