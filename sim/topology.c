/* sim/topology.c: communication graphs and attacker placement (docs/design.md §4 "Topology";
** docs/simulate.md#topologies). adj[from][to] = 1 means `to` receives what `from` says.
** Also the enum name tables of sim.h. */
#include "sim/sim.h"

#include <string.h>

static const char *const scen_names[] = {"none", "collaboration", "netsafe", "aitm",
                                         "prompt_injection", "psysafe", "autoinject",
                                         "style_matched"};
_Static_assert(sizeof scen_names / sizeof scen_names[0] == SN_SCEN_COUNT, "scenarios");
static const char *const strat_names[] = {"simultaneous", "one_by_one", "sc_one_by_one"};
_Static_assert(sizeof strat_names / sizeof strat_names[0] == SN_STRAT_COUNT, "strategies");

const char *sn_scenario_name(enum sn_scenario s)
{
    return s < SN_SCEN_COUNT ? scen_names[s] : "?";
}
const char *sn_strategy_name(enum sn_strategy s)
{
    return s < SN_STRAT_COUNT ? strat_names[s] : "?";
}

int sn_scenario_parse(const char *s, enum sn_scenario *out)
{
    for (int i = 0; i < SN_SCEN_COUNT; i++)
        if (s && strcmp(s, scen_names[i]) == 0) {
            *out = (enum sn_scenario)i;
            return SN_OK;
        }
    return SN_E_ARG;
}

int sn_strategy_parse(const char *s, enum sn_strategy *out)
{
    for (int i = 0; i < SN_STRAT_COUNT; i++)
        if (s && strcmp(s, strat_names[i]) == 0) {
            *out = (enum sn_strategy)i;
            return SN_OK;
        }
    return SN_E_ARG;
}

static void link2(struct sn_topology *t, int a, int b)
{
    if (a == b)
        return;
    t->adj[a][b] = 1;
    t->adj[b][a] = 1;
}

int sn_topology_degree(const struct sn_topology *t, int k)
{
    int d = 0;
    for (int j = 0; j < t->n; j++)
        d += t->adj[k][j];
    return d;
}

int sn_topology_build(const cJSON *spec, const char *where, int n, uint64_t seed,
                      struct sn_topology *out, struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 1 || n > SN_SIM_MAX_AGENTS)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s': %d agents (1-%d supported)", where, n,
                          SN_SIM_MAX_AGENTS);
    out->n = n;
    const char *name = "complete";
    double p = 0.5;
    int64_t tseed = (int64_t)seed;
    bool undirected = false;
    const cJSON *edges = NULL;
    if (cJSON_IsString(spec)) {
        name = spec->valuestring;
    } else if (cJSON_IsObject(spec)) {
        static const char *const keys[] = {"name", "p", "seed", "edges", "undirected", NULL};
        int rc = sn_recipe_check_keys(spec, where, keys, err);
        if (rc || (rc = sn_json_get_string(spec, where, "name", "complete", &name, err)) ||
            (rc = sn_json_get_double(spec, where, "p", 0.5, &p, err)) ||
            (rc = sn_json_get_int(spec, where, "seed", (int64_t)seed, &tseed, err)) ||
            (rc = sn_json_get_bool(spec, where, "undirected", false, &undirected, err)))
            return rc;
        edges = cJSON_GetObjectItemCaseSensitive(spec, "edges");
        if (edges && strcmp(name, "edges") != 0 && strcmp(name, "complete") != 0)
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.edges' is only for name \"edges\"",
                              where);
        if (edges)
            name = "edges";
    } else if (spec) {
        return sn_err_set(err, SN_E_ARG, "recipe: '%s' must be a topology name or an object",
                          where);
    }
    snprintf(out->name, sizeof out->name, "%s", name);
    if (!strcmp(name, "complete")) {
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                out->adj[a][b] = a != b;
    } else if (!strcmp(name, "chain")) {
        for (int a = 0; a + 1 < n; a++)
            link2(out, a, a + 1);
    } else if (!strcmp(name, "ring")) {
        for (int a = 0; a < n && n > 1; a++)
            link2(out, a, (a + 1) % n);
    } else if (!strcmp(name, "star")) {
        for (int a = 1; a < n; a++)
            link2(out, 0, a);
    } else if (!strcmp(name, "wheel")) {
        for (int a = 1; a < n; a++)
            link2(out, 0, a);
        for (int a = 1; a < n && n > 3; a++)
            link2(out, a, a + 1 < n ? a + 1 : 1);
    } else if (!strcmp(name, "tree")) {
        for (int a = 1; a < n; a++)
            link2(out, a, (a - 1) / 2);
    } else if (!strcmp(name, "random")) {
        if (!(p >= 0.0 && p <= 1.0))
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.p' must be in [0, 1]", where);
        struct sn_rng rng;
        sn_rng_seed(&rng, sn_seed_derive((uint64_t)tseed, "topology-random", (uint64_t)n));
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                if (sn_rng_uniform(&rng) < p)
                    link2(out, a, b);
        /* no isolated agent: one that drew no edge is linked to a random other agent */
        for (int a = 0; a < n && n > 1; a++)
            if (sn_topology_degree(out, a) == 0) {
                int b = (int)sn_rng_below(&rng, (uint64_t)n - 1);
                link2(out, a, b >= a ? b + 1 : b);
            }
    } else if (!strcmp(name, "edges")) {
        if (!cJSON_IsArray(edges))
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.edges' must be a list of [from, to] "
                              "pairs", where);
        int i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, edges)
        {
            const cJSON *a = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
            if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsNumber(a) ||
                !cJSON_IsNumber(b) || a->valueint < 0 || a->valueint >= n || b->valueint < 0 ||
                b->valueint >= n || a->valueint == b->valueint)
                return sn_err_set(err, SN_E_ARG, "recipe: '%s.edges[%d]' must be [from, to] "
                                  "with distinct agent ids in 0-%d", where, i, n - 1);
            out->adj[a->valueint][b->valueint] = 1;
            if (undirected)
                out->adj[b->valueint][a->valueint] = 1;
            i++;
        }
    } else {
        return sn_err_set(err, SN_E_ARG, "recipe: '%s': unknown topology '%s' (complete, chain, "
                          "star, wheel, tree, ring, random, edges)", where, name);
    }
    return SN_OK;
}

/* BFS order from agent 0 over the undirected view of the graph. */
static int bfs_order(const struct sn_topology *t, int *order)
{
    uint8_t seen[SN_SIM_MAX_AGENTS] = {0};
    int head = 0, tail = 0;
    for (int s = 0; s < t->n; s++) {
        if (seen[s])
            continue;
        seen[s] = 1;
        order[tail++] = s;
        while (head < tail) {
            int u = order[head++];
            for (int v = 0; v < t->n; v++)
                if (!seen[v] && (t->adj[u][v] || t->adj[v][u])) {
                    seen[v] = 1;
                    order[tail++] = v;
                }
        }
    }
    return tail;
}

int sn_placement_choose(const struct sn_topology *t, const char *rule, const int *explicit_slots,
                        int n_explicit, int n_attackers, uint64_t seed, int *slots,
                        struct sn_err *err)
{
    int n = t->n;
    if (n_attackers < 0 || n_attackers > n)
        return sn_err_set(err, SN_E_ARG, "%d attackers for %d agents", n_attackers, n);
    if (n_attackers == 0)
        return SN_OK;
    int order[SN_SIM_MAX_AGENTS];
    if (n_explicit > 0) {
        if (n_explicit != n_attackers)
            return sn_err_set(err, SN_E_ARG, "placement lists %d slots for %d attackers",
                              n_explicit, n_attackers);
        uint8_t used[SN_SIM_MAX_AGENTS] = {0};
        for (int i = 0; i < n_explicit; i++) {
            int s = explicit_slots[i];
            if (s < 0 || s >= n || used[s])
                return sn_err_set(err, SN_E_ARG, "placement slot %d is out of range 0-%d or "
                                  "repeated", s, n - 1);
            used[s] = 1;
            slots[i] = s;
        }
        return SN_OK;
    }
    if (!rule || !strcmp(rule, "random")) {
        for (int i = 0; i < n; i++)
            order[i] = i;
        struct sn_rng rng;
        sn_rng_seed(&rng, sn_seed_derive(seed, "placement", 0));
        sn_rng_shuffle(&rng, order, (size_t)n, sizeof order[0]);
    } else if (!strcmp(rule, "first")) {
        for (int i = 0; i < n; i++)
            order[i] = i;
    } else if (!strcmp(rule, "last")) {
        for (int i = 0; i < n; i++)
            order[i] = n - 1 - i;
    } else if (!strcmp(rule, "hub") || !strcmp(rule, "leaf")) {
        bool hub = !strcmp(rule, "hub");
        for (int i = 0; i < n; i++)
            order[i] = hub ? i : n - 1 - i;
        /* stable insertion sort by degree (hub: descending, leaf: ascending) */
        for (int i = 1; i < n; i++) {
            int v = order[i], j = i, dv = sn_topology_degree(t, v);
            while (j > 0) {
                int du = sn_topology_degree(t, order[j - 1]);
                if (hub ? du >= dv : du <= dv)
                    break;
                order[j] = order[j - 1];
                j--;
            }
            order[j] = v;
        }
    } else if (!strcmp(rule, "root")) {
        bfs_order(t, order);
    } else {
        return sn_err_set(err, SN_E_ARG, "unknown placement '%s' (random, hub, leaf, root, first, "
                          "last, or a list of slots)", rule);
    }
    for (int i = 0; i < n_attackers; i++)
        slots[i] = order[i];
    return SN_OK;
}
