/* data/sim/defense.c: the per-round defense hook (docs/simulate.md#defense-hook;
** docs/design.md §4 "Runtime (Algorithm 1)"). `none` keeps every message. `sentinel` scores each
** incoming message with the scorer callback, adds the bottom-k senders to the receiver's
** cumulative blacklist, and drops blacklisted senders' messages from then on. The scorer is
** the runtime detector (export/); until `simulate` is wired to it, selecting `sentinel` in a
** recipe fails with SN_E_UNSUPPORTED instead of producing unfiltered debates. */
#include "data/sim/sim.h"

#include <string.h>

struct sn_defense {
    struct sn_defense_config cfg;
    int      n;
    uint64_t blacklist[SN_SIM_MAX_AGENTS]; /* per receiver, bit j = sender j */
};

int sn_defense_config_parse(const cJSON *spec, const char *where, struct sn_defense_config *out,
                            struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "none");
    out->bottom_k = 1;
    if (!spec)
        return SN_OK;
    const char *name = NULL;
    if (cJSON_IsString(spec)) {
        name = spec->valuestring;
    } else if (cJSON_IsObject(spec)) {
        static const char *const keys[] = {"name", "bottom_k", "detector", NULL};
        int64_t k;
        int rc = sn_recipe_check_keys(spec, where, keys, err);
        if (rc || (rc = sn_json_get_string(spec, where, "name", "none", &name, err)) ||
            (rc = sn_json_get_int(spec, where, "bottom_k", 1, &k, err)))
            return rc;
        if (k < 1 || k >= SN_SIM_MAX_AGENTS)
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.bottom_k' must be >= 1", where);
        out->bottom_k = (int)k;
    } else {
        return sn_err_set(err, SN_E_ARG, "recipe: '%s' must be \"none\", \"sentinel\" or an "
                          "object", where);
    }
    if (strcmp(name, "none") != 0 && strcmp(name, "sentinel") != 0)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s': unknown defense '%s' (none, sentinel)",
                          where, name);
    snprintf(out->name, sizeof out->name, "%s", name);
    return SN_OK;
}

int sn_defense_create(const struct sn_defense_config *cfg, int n_agents,
                      struct sn_defense **out, struct sn_err *err)
{
    *out = NULL;
    if (strcmp(cfg->name, "sentinel") == 0 && !cfg->scorer.score)
        return sn_err_set(err, SN_E_UNSUPPORTED, "defense 'sentinel' needs the runtime detector, "
                          "which is not available to simulate in this build (use "
                          "\"defense\": \"none\")");
    struct sn_defense *d = sn_calloc(1, sizeof *d);
    if (!d)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    d->cfg = *cfg;
    d->n = n_agents;
    *out = d;
    return SN_OK;
}

void sn_defense_free(struct sn_defense *d) { sn_free(d); }

uint64_t sn_defense_blacklist(const struct sn_defense *d, int receiver)
{
    return d && receiver >= 0 && receiver < d->n ? d->blacklist[receiver] : 0;
}

int sn_defense_filter(struct sn_defense *d, int receiver, int round, const char *context,
                      const struct sn_sim_peer *msgs, size_t n, bool *keep, struct sn_err *err)
{
    (void)round;
    for (size_t i = 0; i < n; i++)
        keep[i] = true;
    if (!d || strcmp(d->cfg.name, "sentinel") != 0 || n == 0)
        return SN_OK;
    /* score the messages of senders not yet blacklisted */
    float score[SN_SIM_MAX_AGENTS * 2];
    size_t idx[SN_SIM_MAX_AGENTS * 2], m = 0;
    for (size_t i = 0; i < n && m < SN_SIM_MAX_AGENTS * 2; i++) {
        if (msgs[i].ally || (d->blacklist[receiver] >> msgs[i].agent) & 1)
            continue;
        int rc = d->cfg.scorer.score(d->cfg.scorer.ctx, context ? context : "", msgs[i].text,
                                     &score[m], err);
        if (rc)
            return sn_err_wrap(err, "sentinel defense, agent %d scoring agent %d", receiver,
                               msgs[i].agent);
        idx[m++] = i;
    }
    /* bottom-k: the k lowest scores (ties to the lower position) join the blacklist */
    for (int k = 0; k < d->cfg.bottom_k && m > 0; k++) {
        size_t lo = 0;
        for (size_t j = 1; j < m; j++)
            if (score[j] < score[lo])
                lo = j;
        d->blacklist[receiver] |= 1ULL << msgs[idx[lo]].agent;
        score[lo] = score[m - 1];
        idx[lo] = idx[m - 1];
        m--;
    }
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].ally && ((d->blacklist[receiver] >> msgs[i].agent) & 1))
            keep[i] = false;
    return SN_OK;
}
