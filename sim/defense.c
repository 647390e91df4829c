/* sim/defense.c: the per-round defense hook (docs/simulate.md#defense-hook) of the debate
** engine, Algorithm 1 (SentinelNet paper, section 4.3 "Defense Integration"; docs/design.md §4
** "Runtime (Algorithm 1)"; docs/eval.md "Algorithm 1"). `none` keeps every message.
** `sentinel`: each sentinel scores the messages in its view with the scorer callback, adds the
** bottom-k senders to its cumulative blacklist (sn_defense_bottom_k, defense/defense.h: the one
** implementation, shared with `sentinel eval` and the runtime library's sentinel) and drops
** blacklisted senders' messages from then on. The scorer is the runtime detector (export/);
** `sentinel simulate` opens the recipe's "detector" and hands its scorer in
** (sn_simulate_params.scorer_open); selecting `sentinel` without a scorer fails with
** SN_E_UNSUPPORTED instead of producing unfiltered debates. */
#include "sim/sim.h"

#include <string.h>

struct sn_defense {
    struct sn_defense_config cfg;
    int      n;
    uint64_t sentinels; /* bit k: receiver k runs the defense */
    uint64_t tie_seed;
    uint64_t blacklist[SN_SIM_MAX_AGENTS]; /* per receiver, bit j = sender j */
};

int sn_defense_config_parse(const cJSON *spec, const char *where, struct sn_defense_config *out,
                            struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "none");
    out->bottom_k = 1;
    out->rule = SN_DEFENSE_RULE_ALL;
    if (!spec)
        return SN_OK;
    const char *name = NULL;
    if (cJSON_IsString(spec)) {
        name = spec->valuestring;
    } else if (cJSON_IsObject(spec)) {
        static const char *const keys[] = {"name", "bottom_k", "detector", "rule", "sentinels",
                                           NULL};
        int64_t k;
        const char *rule, *sentinels, *detector;
        int rc = sn_recipe_check_keys(spec, where, keys, err);
        if (rc || (rc = sn_json_get_string(spec, where, "name", "none", &name, err)) ||
            (rc = sn_json_get_int(spec, where, "bottom_k", 1, &k, err)) ||
            (rc = sn_json_get_string(spec, where, "rule", "all", &rule, err)) ||
            (rc = sn_json_get_string(spec, where, "sentinels", "honest", &sentinels, err)) ||
            (rc = sn_json_get_string(spec, where, "detector", "", &detector, err)))
            return rc;
        if (strlen(detector) >= sizeof out->detector)
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.detector': path longer than %zu bytes",
                              where, sizeof out->detector - 1);
        snprintf(out->detector, sizeof out->detector, "%s", detector);
        if (k < 1 || k >= SN_SIM_MAX_AGENTS)
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.bottom_k' must be >= 1", where);
        out->bottom_k = (int)k;
        if (strcmp(rule, "all") == 0)
            out->rule = SN_DEFENSE_RULE_ALL;
        else if (strcmp(rule, "unlisted") == 0)
            out->rule = SN_DEFENSE_RULE_UNLISTED;
        else
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.rule': unknown rule '%s' (all, "
                              "unlisted)", where, rule);
        if (strcmp(sentinels, "all") == 0)
            out->every_receiver = true;
        else if (strcmp(sentinels, "honest") != 0)
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.sentinels': unknown value '%s' "
                              "(honest, all)", where, sentinels);
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
        return sn_err_set(err, SN_E_UNSUPPORTED, "defense 'sentinel' needs the runtime detector "
                          "(\"detector\": \"D.gguf\", opened by `sentinel simulate`); none was "
                          "given to this run");
    if (n_agents < 0 || n_agents > SN_SIM_MAX_AGENTS)
        return sn_err_set(err, SN_E_ARG, "defense: %d agents (at most %d)", n_agents,
                          SN_SIM_MAX_AGENTS);
    struct sn_defense *d = sn_calloc(1, sizeof *d);
    if (!d)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    d->cfg = *cfg;
    d->n = n_agents;
    d->sentinels = ~0ULL;
    *out = d;
    return SN_OK;
}

void sn_defense_free(struct sn_defense *d) { sn_free(d); }

void sn_defense_set_sentinels(struct sn_defense *d, uint64_t sentinels, uint64_t tie_seed)
{
    if (!d)
        return;
    d->sentinels = d->cfg.every_receiver ? ~0ULL : sentinels;
    d->tie_seed = tie_seed;
}

uint64_t sn_defense_blacklist(const struct sn_defense *d, int receiver)
{
    return d && receiver >= 0 && receiver < d->n ? d->blacklist[receiver] : 0;
}

int sn_defense_filter(struct sn_defense *d, int receiver, int round, const char *context,
                      const struct sn_sim_peer *msgs, size_t n, bool *keep, struct sn_err *err)
{
    for (size_t i = 0; i < n; i++)
        keep[i] = true;
    if (!d || strcmp(d->cfg.name, "sentinel") != 0 || n == 0 || receiver < 0 ||
        receiver >= d->n || !((d->sentinels >> receiver) & 1))
        return SN_OK;
    /* score the messages line 8 ranks (allies talk on a private channel: not scored) */
    double score[SN_SIM_MAX_AGENTS * 2];
    int    sender[SN_SIM_MAX_AGENTS * 2];
    size_t m = 0;
    for (size_t i = 0; i < n && m < SN_SIM_MAX_AGENTS * 2; i++) {
        if (msgs[i].ally || msgs[i].agent < 0 || msgs[i].agent >= SN_SIM_MAX_AGENTS)
            continue;
        if (d->cfg.rule == SN_DEFENSE_RULE_UNLISTED &&
            ((d->blacklist[receiver] >> msgs[i].agent) & 1))
            continue;
        float f;
        int rc = d->cfg.scorer.score(d->cfg.scorer.ctx, context ? context : "", msgs[i].text,
                                     &f, err);
        if (rc)
            return sn_err_wrap(err, "sentinel defense, agent %d scoring agent %d", receiver,
                               msgs[i].agent);
        score[m] = f;
        sender[m++] = msgs[i].agent;
    }
    uint64_t seed = sn_defense_round_seed(d->tie_seed, receiver, round);
    d->blacklist[receiver] = sn_defense_bottom_k(d->blacklist[receiver], sender, score, m,
                                                 d->cfg.bottom_k, d->cfg.rule, seed);
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].ally && msgs[i].agent >= 0 && msgs[i].agent < SN_SIM_MAX_AGENTS &&
            ((d->blacklist[receiver] >> msgs[i].agent) & 1))
            keep[i] = false;
    return SN_OK;
}
