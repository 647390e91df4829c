/* sim/run_recipe.c: the recipe of a `simulate` job (recipe.simulate: endpoints,
** experiments, defaults, threads; docs/simulate.md#output-files-and-resume): validated key by key, with the
** experiment's path in every message ("simulate.experiments[2].rounds ..."). */
#include "sim/run_internal.h"

#include <string.h>

static const char *const sim_keys[] = {"endpoints", "experiments", "defaults", "threads", NULL};
static const char *const exp_keys[] = {
    "name", "scenario", "dataset", "n_agents", "n_adversaries", "rounds", "strategy",
    "topology", "placement", "rhetoric", "persona", "backend", "backends", "role_backends",
    "judge_backend", "replicates", "seed", "early_stop", "self_reflection", "decision",
    "defense", "prompts", "labels", "best_of_n", "intercepts", "victims", "injection_rate",
    "adaptive", "llm_extract", "temperature", "top_p", "max_tokens", "adversaries_join",
    NULL};

static int find_endpoint(struct run *R, const char *name, const char *where, int *out,
                         struct sn_err *err)
{
    for (int i = 0; i < R->n_eps; i++)
        if (!strcmp(R->eps[i].name, name)) {
            *out = i;
            R->eps[i].used = true;
            return SN_OK;
        }
    if (!strcmp(name, "sim")) { /* the built-in sim endpoint needs no declaration */
        if (R->n_eps == 32)
            return sn_err_set(err, SN_E_ARG, "recipe: too many endpoints (32 max)");
        if (!R->implicit_sim) {
            R->implicit_sim = cJSON_CreateObject();
            if (!R->implicit_sim || !cJSON_AddStringToObject(R->implicit_sim, "kind", "sim"))
                return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        R->eps[R->n_eps] = (struct endpoint){"sim", R->implicit_sim, NULL, "sim", true, 1};
        *out = R->n_eps++;
        return SN_OK;
    }
    const char *best = NULL;
    size_t bd = (size_t)-1;
    for (int i = 0; i < R->n_eps; i++) {
        size_t dd = sn_edit_distance(name, R->eps[i].name);
        if (dd < bd) {
            bd = dd;
            best = R->eps[i].name;
        }
    }
    if (best)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s' = '%s' is not an endpoint in "
                          "simulate.endpoints (did you mean '%s'?)", where, name, best);
    return sn_err_set(err, SN_E_ARG, "recipe: '%s' = '%s' is not an endpoint in "
                      "simulate.endpoints (declare it there, or use \"sim\")", where, name);
}

static int get_enum_str(const cJSON *o, const char *where, const char *key, const char *dflt,
                        const char **out, struct sn_err *err)
{
    return sn_json_get_string(o, where, key, dflt, out, err);
}

/* The scalar settings: names, counts, enums, ranges (the first part of an experiment). */
static int parse_settings(struct run *R, const char *where, const cJSON *o,
                          struct sn_experiment *x, struct sn_err *err)
{
    int rc;
    const char *scen, *strat, *decision;
    int64_t n_agents, n_adv, rounds, reps, seed, bon, max_tokens;
    double inj;
    if ((rc = get_enum_str(o, where, "scenario", "none", &scen, err)) ||
        (rc = get_enum_str(o, where, "strategy", "simultaneous", &strat, err)) ||
        (rc = get_enum_str(o, where, "decision", "majority", &decision, err)) ||
        (rc = sn_json_get_string(o, where, "name", NULL, &x->name, err)) ||
        (rc = sn_json_get_int(o, where, "n_agents", 5, &n_agents, err)) ||
        (rc = sn_json_get_int(o, where, "rounds", 3, &rounds, err)) ||
        (rc = sn_json_get_int(o, where, "replicates", 1, &reps, err)) ||
        (rc = sn_json_get_int(o, where, "seed", 1, &seed, err)) ||
        (rc = sn_json_get_int(o, where, "best_of_n", 1, &bon, err)) ||
        (rc = sn_json_get_int(o, where, "max_tokens", 0, &max_tokens, err)) ||
        (rc = sn_json_get_double(o, where, "injection_rate", 0.5, &inj, err)) ||
        (rc = sn_json_get_double(o, where, "temperature", -1.0, &x->temperature, err)) ||
        (rc = sn_json_get_double(o, where, "top_p", -1.0, &x->top_p, err)) ||
        (rc = sn_json_get_bool(o, where, "early_stop", false, &x->early_stop, err)) ||
        (rc = sn_json_get_bool(o, where, "self_reflection", false, &x->self_reflection, err)) ||
        (rc = sn_json_get_bool(o, where, "adaptive", false, &x->adaptive, err)) ||
        (rc = sn_json_get_bool(o, where, "llm_extract", false, &x->llm_extract, err)) ||
        (rc = sn_json_get_string(o, where, "rhetoric", NULL, &x->rhetoric, err)) ||
        (rc = sn_json_get_string(o, where, "persona", NULL, &x->persona, err)) ||
        (rc = sn_json_get_string(o, where, "victims", "random", &x->victim_rule, err)))
        return rc;
    {   /* "adversaries_join": "start" (default) or "after_consensus" (joins by round 3) */
        const char *join;
        if ((rc = sn_json_get_string(o, where, "adversaries_join", "start", &join, err)))
            return rc;
        if (strcmp(join, "start") != 0 && strcmp(join, "after_consensus") != 0)
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.adversaries_join' = '%s' (expected "
                              "start or after_consensus)", where, join);
        x->join_by = strcmp(join, "after_consensus") == 0 ? 3 : 0;
    }
    if (sn_scenario_parse(scen, &x->scenario))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.scenario' = '%s' (expected none, "
                          "collaboration, netsafe, aitm, prompt_injection, psysafe, autoinject, "
                          "style_matched)",
                          where, scen);
    if (sn_strategy_parse(strat, &x->strategy))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.strategy' = '%s' (expected simultaneous, "
                          "one_by_one, sc_one_by_one)", where, strat);
    if (!strcmp(decision, "majority"))
        x->decision = SN_DECIDE_MAJORITY;
    else if (!strcmp(decision, "judge"))
        x->decision = SN_DECIDE_JUDGE;
    else
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.decision' = '%s' (majority or judge)",
                          where, decision);
    if (!x->name)
        x->name = sn_scenario_name(x->scenario);
    for (const char *c = x->name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.name' = '%s': use letters, digits, "
                              "'-', '_' and '.'", where, x->name);
    int64_t dflt_adv = x->scenario == SN_SCEN_NONE ? 0 : (x->scenario == SN_SCEN_NETSAFE ? 1 : 2);
    if ((rc = sn_json_get_int(o, where, "n_adversaries", dflt_adv, &n_adv, err)))
        return rc;
    if (n_agents < 2 || n_agents > SN_SIM_MAX_AGENTS)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.n_agents' must be 2-%d", where,
                          SN_SIM_MAX_AGENTS);
    if (n_adv < 0 || n_adv >= n_agents || (x->scenario == SN_SCEN_AITM && n_adv > n_agents - 2))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.n_adversaries' = %lld must leave honest "
                          "agents (0-%lld)", where, (long long)n_adv,
                          (long long)(x->scenario == SN_SCEN_AITM ? n_agents - 2 : n_agents - 1));
    if (x->scenario == SN_SCEN_NONE && n_adv != 0)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s': scenario 'none' has no adversaries", where);
    if (x->scenario != SN_SCEN_NONE && n_adv == 0)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s': scenario '%s' needs n_adversaries >= 1",
                          where, scen);
    if (rounds < 1 || rounds > 100 || reps < 1 || reps > 100000 || bon < 1 || bon > 16 ||
        seed < 0 || max_tokens < 0 || !(inj >= 0.0 && inj <= 1.0))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s': rounds must be 1-100, replicates >= 1, "
                          "best_of_n 1-16, seed >= 0, injection_rate in [0, 1]", where);
    x->n_agents = (int)n_agents;
    x->n_adversaries = (int)n_adv;
    x->rounds = (int)rounds;
    x->replicates = R->p->replicates > 0 ? R->p->replicates : (int)reps;
    x->seed = (uint64_t)seed;
    x->best_of_n = (int)bon;
    x->max_tokens = (int)max_tokens;
    x->injection_rate = inj;
    if (x->rhetoric && strcmp(x->rhetoric, "ethos") && strcmp(x->rhetoric, "pathos") &&
        strcmp(x->rhetoric, "logos") && strcmp(x->rhetoric, "mixed") &&
        strcmp(x->rhetoric, "misinformation"))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.rhetoric' = '%s' (ethos, pathos, logos, "
                          "mixed, misinformation)", where, x->rhetoric);
    if (x->persona && strcmp(x->persona, "authority") && strcmp(x->persona, "bandwagon") &&
        strcmp(x->persona, "overconfidence"))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.persona' = '%s' (authority, bandwagon, "
                          "overconfidence)", where, x->persona);
    return SN_OK;
}

/* The dataset, the topology, the placement of the adversaries and the AITM intercepts. */
static int parse_graph(const char *where, const cJSON *o, struct sn_experiment *x,
                       struct sn_err *err)
{
    int rc;
    x->dataset = cJSON_GetObjectItemCaseSensitive(o, "dataset");
    if (!x->dataset)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.dataset' is missing (e.g. "
                          "{\"kind\":\"synthetic\",\"n\":20})", where);
    char w2[128];
    snprintf(w2, sizeof w2, "%s.topology", where);
    x->topology_spec = cJSON_GetObjectItemCaseSensitive(o, "topology");
    if ((rc = sn_topology_build(x->topology_spec, w2, x->n_agents, x->seed, &x->topology, err)))
        return rc;
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(o, "placement");
    if (cJSON_IsArray(pl)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, pl)
        {
            if (!cJSON_IsNumber(e) || x->n_placement_slots == SN_SIM_MAX_AGENTS)
                return sn_err_set(err, SN_E_ARG, "recipe: '%s.placement' must be a rule name or "
                                  "a list of slot numbers", where);
            x->placement_slots[x->n_placement_slots++] = e->valueint;
        }
        x->placement = "explicit";
        int tmp[SN_SIM_MAX_AGENTS];
        if ((rc = sn_placement_choose(&x->topology, NULL, x->placement_slots,
                                      x->n_placement_slots, x->n_adversaries, 0, tmp, err)))
            return sn_err_wrap(err, "recipe: '%s.placement'", where);
    } else {
        if ((rc = sn_json_get_string(o, where, "placement", "random", &x->placement, err)))
            return rc;
        int tmp[SN_SIM_MAX_AGENTS];
        if ((rc = sn_placement_choose(&x->topology, x->placement, NULL, 0, x->n_adversaries, 0,
                                      tmp, err)))
            return sn_err_wrap(err, "recipe: '%s.placement'", where);
    }
    const cJSON *ic = cJSON_GetObjectItemCaseSensitive(o, "intercepts");
    if (ic) {
        const cJSON *e;
        if (!cJSON_IsArray(ic) || x->scenario != SN_SCEN_AITM)
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.intercepts' is a list of [from, to] "
                              "edges, for scenario aitm", where);
        cJSON_ArrayForEach(e, ic)
        {
            const cJSON *a = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
            if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || a->valueint < 0 ||
                b->valueint < 0 || a->valueint >= x->n_agents || b->valueint >= x->n_agents ||
                !x->topology.adj[a->valueint][b->valueint] ||
                x->n_intercepts == SN_SIM_MAX_AGENTS * 4)
                return sn_err_set(err, SN_E_ARG, "recipe: '%s.intercepts': each must be an edge "
                                  "[from, to] of the topology", where);
            x->intercepts[x->n_intercepts++] = (struct sn_edge){a->valueint, b->valueint};
        }
    }
    return SN_OK;
}

/* The defense, the prompt overrides and the labels. */
static int parse_defense_prompts(struct run *R, const char *where, const cJSON *o,
                                 struct sn_experiment *x, struct sn_err *err)
{
    int rc;
    char w2[128];
    snprintf(w2, sizeof w2, "%s.defense", where);
    if ((rc = sn_defense_config_parse(cJSON_GetObjectItemCaseSensitive(o, "defense"), w2,
                                      &x->defense, err)))
        return rc;
    if (strcmp(x->defense.name, "sentinel") == 0) {
        /* the runtime detector, opened by the caller (data/ may not use export/) */
        if (R->p && R->p->scorer_open) {
            if (!x->defense.detector[0])
                return sn_err_set(err, SN_E_ARG, "recipe: '%s': the sentinel defense needs "
                                  "\"detector\": \"D.gguf\" (a GGUF of `sentinel export`)", w2);
            if ((rc = R->p->scorer_open(R->p->scorer_user, x->defense.detector,
                                        &x->defense.scorer, err)))
                return sn_err_wrap(err, "recipe: '%s.detector'", w2);
        }
        struct sn_defense *probe;
        if ((rc = sn_defense_create(&x->defense, x->n_agents, &probe, err)))
            return sn_err_wrap(err, "recipe: '%s'", w2);
        sn_defense_free(probe);
    }
    snprintf(w2, sizeof w2, "%s.prompts", where);
    if ((rc = sn_prompts_init(&x->prompts, cJSON_GetObjectItemCaseSensitive(o, "prompts"), w2,
                              err)))
        return rc;
    x->labels = cJSON_GetObjectItemCaseSensitive(o, "labels");
    if (x->labels && !cJSON_IsObject(x->labels))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.labels' must be an object", where);
    return SN_OK;
}

/* The endpoints per slot: backend, backends, judge_backend, role_backends. */
static int parse_endpoints(struct run *R, const char *where, const cJSON *o,
                           struct sn_experiment *x, struct sn_err *err)
{
    int rc;
    char w2[128];
    const char *backend;
    if ((rc = sn_json_get_string(o, where, "backend", "sim", &backend, err)))
        return rc;
    int def;
    snprintf(w2, sizeof w2, "%s.backend", where);
    if ((rc = find_endpoint(R, backend, w2, &def, err)))
        return rc;
    for (int k = 0; k < x->n_agents; k++)
        x->slot_endpoint[k] = def;
    const cJSON *bl = cJSON_GetObjectItemCaseSensitive(o, "backends");
    if (bl) {
        if (!cJSON_IsArray(bl) || cJSON_GetArraySize(bl) != x->n_agents)
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.backends' must list one endpoint name "
                              "per agent slot (%d)", where, x->n_agents);
        for (int k = 0; k < x->n_agents; k++) {
            const cJSON *e = cJSON_GetArrayItem(bl, k);
            snprintf(w2, sizeof w2, "%s.backends[%d]", where, k);
            if (!cJSON_IsString(e))
                return sn_err_set(err, SN_E_ARG, "recipe: '%s' must be a string", w2);
            if ((rc = find_endpoint(R, e->valuestring, w2, &x->slot_endpoint[k], err)))
                return rc;
        }
    }
    const char *judge;
    if ((rc = sn_json_get_string(o, where, "judge_backend", NULL, &judge, err)))
        return rc;
    x->judge_endpoint = x->slot_endpoint[0];
    if (judge) {
        snprintf(w2, sizeof w2, "%s.judge_backend", where);
        if ((rc = find_endpoint(R, judge, w2, &x->judge_endpoint, err)))
            return rc;
    }
    const cJSON *rb = cJSON_GetObjectItemCaseSensitive(o, "role_backends");
    if (rb) {
        static const char *const rk[] = {"honest", "adversary", "interceptor", NULL};
        snprintf(w2, sizeof w2, "%s.role_backends", where);
        if ((rc = sn_recipe_check_keys(rb, w2, rk, err)))
            return rc;
        for (const cJSON *e = rb->child; e; e = e->next) {
            int idx;
            if (!cJSON_IsString(e))
                return sn_err_set(err, SN_E_ARG, "recipe: '%s.%s' must be an endpoint name", w2,
                                  e->string);
            if ((rc = find_endpoint(R, e->valuestring, w2, &idx, err)))
                return rc;
        }
    }
    return SN_OK;
}

static int parse_experiment(struct run *R, int xi, const cJSON *o, struct sn_experiment *x,
                            struct sn_err *err)
{
    char where[96];
    snprintf(where, sizeof where, "simulate.experiments[%d]", xi);
    int rc = sn_recipe_check_keys(o, where, exp_keys, err);
    if (rc)
        return rc;
    memset(x, 0, sizeof *x);
    if ((rc = parse_settings(R, where, o, x, err)) || (rc = parse_graph(where, o, x, err)) ||
        (rc = parse_defense_prompts(R, where, o, x, err)) ||
        (rc = parse_endpoints(R, where, o, x, err)))
        return rc;
    return SN_OK;
}

void sn_sim_run_free(struct run *R)
{
    for (int i = 0; i < R->n_eps; i++)
        sn_llm_backend_close(R->eps[i].b);
    if (R->qsets)
        for (int i = 0; i < R->n_xs; i++)
            sn_qset_free(R->qsets[i]);
    sn_free(R->qsets);
    sn_free(R->xs);
    sn_free(R->setups);
    sn_free(R->slot_b);
    sn_free(R->slot_model);
    sn_free(R->slot_name);
    sn_free(R->descs);
    cJSON_Delete(R->merged);
    cJSON_Delete(R->implicit_sim);
}

static int endpoint_index(const struct run *R, const char *name)
{
    for (int i = 0; i < R->n_eps; i++)
        if (!strcmp(R->eps[i].name, name))
            return i;
    return -1;
}

int sn_sim_run_setup(struct run *R, const cJSON *recipe, struct sn_err *err)
{
    const cJSON *sim = cJSON_GetObjectItemCaseSensitive(recipe, "simulate");
    if (!cJSON_IsObject(sim))
        return sn_err_set(err, SN_E_ARG, "recipe: no 'simulate' section (an object with "
                          "\"experiments\": [...])");
    int rc = sn_recipe_check_keys(sim, "simulate", sim_keys, err);
    if (rc)
        return rc;
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(sim, "endpoints");
    if (eps && !cJSON_IsObject(eps))
        return sn_err_set(err, SN_E_ARG, "recipe: 'simulate.endpoints' must be an object "
                          "{name: {\"kind\": ...}}");
    for (const cJSON *e = eps ? eps->child : NULL; e; e = e->next) {
        if (R->n_eps == 31)
            return sn_err_set(err, SN_E_ARG, "recipe: too many endpoints (31 max)");
        if (!cJSON_IsObject(e))
            return sn_err_set(err, SN_E_ARG, "recipe: 'simulate.endpoints.%s' must be an object "
                              "with \"kind\"", e->string);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "model");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(e, "kind");
        const cJSON *conc = cJSON_GetObjectItemCaseSensitive(e, "concurrency");
        bool is_sim = cJSON_IsString(kind) && !strcmp(kind->valuestring, "sim");
        R->eps[R->n_eps++] = (struct endpoint){
            e->string, e, NULL,
            cJSON_IsString(m) ? m->valuestring : (cJSON_IsString(kind) ? kind->valuestring
                                                                       : "?"),
            false, cJSON_IsNumber(conc) ? conc->valueint : (is_sim ? 1 : 64)};
    }
    const cJSON *exps = cJSON_GetObjectItemCaseSensitive(sim, "experiments");
    const cJSON *defaults = cJSON_GetObjectItemCaseSensitive(sim, "defaults");
    if (!cJSON_IsArray(exps) || cJSON_GetArraySize(exps) == 0)
        return sn_err_set(err, SN_E_ARG, "recipe: 'simulate.experiments' must be a non-empty "
                          "list");
    if (defaults && !cJSON_IsObject(defaults))
        return sn_err_set(err, SN_E_ARG, "recipe: 'simulate.defaults' must be an object");
    if (defaults && (rc = sn_recipe_check_keys(defaults, "simulate.defaults", exp_keys, err)))
        return rc;
    R->n_xs = cJSON_GetArraySize(exps);
    R->merged = cJSON_CreateArray();
    R->xs = sn_calloc((size_t)R->n_xs, sizeof *R->xs);
    R->qsets = sn_calloc((size_t)R->n_xs, sizeof *R->qsets);
    R->setups = sn_calloc((size_t)R->n_xs, sizeof *R->setups);
    R->slot_b = sn_calloc((size_t)R->n_xs * SN_SIM_MAX_AGENTS, sizeof *R->slot_b);
    R->slot_model = sn_calloc((size_t)R->n_xs * SN_SIM_MAX_AGENTS, sizeof *R->slot_model);
    R->slot_name = sn_calloc((size_t)R->n_xs * SN_SIM_MAX_AGENTS, sizeof *R->slot_name);
    R->descs = sn_calloc((size_t)R->n_xs, sizeof *R->descs);
    if (!R->merged || !R->xs || !R->qsets || !R->setups || !R->slot_b || !R->slot_model ||
        !R->slot_name || !R->descs)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (int i = 0; i < R->n_xs; i++) {
        const cJSON *e = cJSON_GetArrayItem(exps, i);
        if (!cJSON_IsObject(e))
            return sn_err_set(err, SN_E_ARG, "recipe: 'simulate.experiments[%d]' must be an "
                              "object", i);
        cJSON *m = defaults ? cJSON_Duplicate(defaults, 1) : cJSON_CreateObject();
        if (!m)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        cJSON_AddItemToArray(R->merged, m);
        for (const cJSON *c = e->child; c; c = c->next) {
            cJSON *dup = cJSON_Duplicate(c, 1);
            if (!dup)
                return sn_err_set(err, SN_E_NOMEM, "out of memory");
            if (cJSON_GetObjectItemCaseSensitive(m, c->string))
                cJSON_ReplaceItemInObjectCaseSensitive(m, c->string, dup);
            else
                cJSON_AddItemToObject(m, c->string, dup);
        }
        if ((rc = parse_experiment(R, i, m, &R->xs[i], err)))
            return rc;
        for (int j = 0; j < i; j++)
            if (!strcmp(R->xs[j].name, R->xs[i].name))
                return sn_err_set(err, SN_E_ARG, "recipe: experiments %d and %d are both named "
                                  "'%s' (ids derive from the name: give each a distinct "
                                  "\"name\")", j, i, R->xs[i].name);
    }
    /* open the endpoints; one that no experiment uses is opened too, so its errors (a bad
    ** base_url, an unknown key) are not left to the day it is used, then closed */
    for (int i = 0; i < R->n_eps; i++) {
        if ((rc = sn_sim_endpoint_open(R->eps[i].config, &R->eps[i].b, err)))
            return sn_err_wrap(err, "simulate.endpoints.%s", R->eps[i].name);
        if (!R->eps[i].used) {
            sn_llm_backend_close(R->eps[i].b);
            R->eps[i].b = NULL;
        }
    }
    /* datasets and setups */
    for (int i = 0; i < R->n_xs; i++) {
        struct sn_experiment *x = &R->xs[i];
        char where[96];
        snprintf(where, sizeof where, "simulate.experiments[%d].dataset", i);
        if ((rc = sn_qset_load(x->dataset, where, R->p->limit, &R->qsets[i], err)))
            return rc;
        struct sn_llm_backend **sb = R->slot_b + (size_t)i * SN_SIM_MAX_AGENTS;
        const char **sm = R->slot_model + (size_t)i * SN_SIM_MAX_AGENTS;
        const char **sname = R->slot_name + (size_t)i * SN_SIM_MAX_AGENTS;
        size_t dl = 0;
        R->descs[i][0] = '\0';
        uint8_t seen[32] = {0};
        for (int k = 0; k < x->n_agents; k++) {
            struct endpoint *ep = &R->eps[x->slot_endpoint[k]];
            sb[k] = ep->b;
            sm[k] = ep->model;
            sname[k] = ep->name;
            if (!seen[x->slot_endpoint[k]]) {
                seen[x->slot_endpoint[k]] = 1;
                dl += (size_t)snprintf(R->descs[i] + dl, dl < 512 ? 512 - dl : 0, "%s%s",
                                       dl ? "; " : "", sn_llm_backend_describe(ep->b));
            }
        }
        struct sn_debate_setup *s = &R->setups[i];
        s->x = x;
        s->backend = sb;
        s->model = sm;
        s->backend_name = sname;
        s->judge = R->eps[x->judge_endpoint].b;
        const cJSON *rb = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(R->merged, i),
                                                           "role_backends");
        static const char *const rk[SN_ROLE_COUNT] = {"honest", "adversary", "interceptor"};
        for (int r = 0; r < SN_ROLE_COUNT; r++) {
            const cJSON *e = rb ? cJSON_GetObjectItemCaseSensitive(rb, rk[r]) : NULL;
            if (!e)
                continue;
            int idx = endpoint_index(R, e->valuestring);
            s->role_backend[r] = R->eps[idx].b;
            s->role_model[r] = R->eps[idx].model;
            s->role_backend_name[r] = R->eps[idx].name;
            if (!seen[idx]) {
                seen[idx] = 1;
                dl += (size_t)snprintf(R->descs[i] + dl, dl < 512 ? 512 - dl : 0, "; %s",
                                       sn_llm_backend_describe(R->eps[idx].b));
            }
        }
        s->backend_desc = R->descs[i];
    }
    return SN_OK;
}
