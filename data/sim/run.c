/* data/sim/run.c: a `simulate` job (DESIGN.md §1, §2; issue #6 "Runs at scale";
** docs/simulate.md#runs, docs/formats.md "Trajectory", "Errors file").
**
** recipe.simulate -> endpoints (opened once) + experiments -> work list of (experiment, item,
** replicate) units with deterministic ids -> this shard's units (by id hash) minus the ids
** already in the output -> a pool of worker threads running debates -> one gzip member per
** debate appended to <out>/trajectories-<i>of<n>.jsonl.gz under a lock.
**
** Resume: the existing file is scanned member by member with zlib's inflate (not gzread,
** which silently ignores bytes after the last member that do not start a new one, so a
** header cut short by a kill would hide every later append). Everything after the last
** complete member that ends a line is a partial record from a kill: the file is atomically
** rewritten without it. Failures go to <out>/errors-<i>of<n>.jsonl and, as they are not in
** the trajectory file, are retried by the next run. */
#include "data/sim/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ---- id set (open addressing) ---- */

struct idset {
    char  **keys;
    size_t  cap, n;
};

static bool idset_has(const struct idset *s, const char *id)
{
    if (!s->cap)
        return false;
    size_t h = (size_t)sn_hash64(id, strlen(id)) & (s->cap - 1);
    while (s->keys[h]) {
        if (!strcmp(s->keys[h], id))
            return true;
        h = (h + 1) & (s->cap - 1);
    }
    return false;
}

static int idset_add(struct idset *s, const char *id, struct sn_err *err)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        char **k = sn_calloc(cap, sizeof *k);
        if (!k)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        for (size_t i = 0; i < s->cap; i++)
            if (s->keys[i]) {
                size_t h = (size_t)sn_hash64(s->keys[i], strlen(s->keys[i])) & (cap - 1);
                while (k[h])
                    h = (h + 1) & (cap - 1);
                k[h] = s->keys[i];
            }
        sn_free(s->keys);
        s->keys = k;
        s->cap = cap;
    }
    size_t h = (size_t)sn_hash64(id, strlen(id)) & (s->cap - 1);
    while (s->keys[h]) {
        if (!strcmp(s->keys[h], id))
            return SN_OK;
        h = (h + 1) & (s->cap - 1);
    }
    s->keys[h] = sn_strdup(id);
    if (!s->keys[h])
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    s->n++;
    return SN_OK;
}

static void idset_free(struct idset *s)
{
    for (size_t i = 0; i < s->cap; i++)
        sn_free(s->keys[i]);
    sn_free(s->keys);
    memset(s, 0, sizeof *s);
}

/* ---- existing output ---- */

/* The id of a trajectory line: our writer puts it second ("schema" first); any valid JSON
** object with a string "id" is accepted. */
static int line_id(const char *line, size_t len, const char *path, uint64_t lineno,
                   struct idset *ids, struct sn_err *err)
{
    cJSON *o = cJSON_ParseWithLength(line, len);
    const cJSON *id = o ? cJSON_GetObjectItemCaseSensitive(o, "id") : NULL;
    int rc;
    if (!cJSON_IsString(id))
        rc = sn_err_set(err, SN_E_FORMAT, "%s:%llu: not a trajectory line (expected a JSON "
                        "object with a string \"id\"); move the file away to start afresh",
                        path, (unsigned long long)lineno);
    else
        rc = idset_add(ids, id->valuestring, err);
    cJSON_Delete(o);
    return rc;
}

/* Scans path (gzip members), adds the ids of complete lines, and reports the byte offset
** where the valid prefix ends (*good_end) and the file size (*size). */
static int scan_existing(const char *path, struct idset *ids, uint64_t *n_lines,
                         long long *good_end, long long *size, struct sn_err *err)
{
    *good_end = 0;
    *size = 0;
    *n_lines = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_err_set(err, SN_E_IO, "%s: %s", path, strerror(errno));
    enum { IN = 1 << 16, OUTB = 1 << 16 };
    unsigned char *in = sn_malloc(IN), *outb = sn_malloc(OUTB);
    struct sn_buf line = {.max = 256u << 20};
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    int rc = SN_OK;
    if (!in || !outb) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto done;
    }
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        rc = sn_err_set(err, SN_E_NOMEM, "zlib: inflateInit2 failed");
        goto done;
    }
    long long consumed = 0; /* file bytes handed to inflate and used */
    bool in_member = false, eof = false;
    size_t avail = 0;
    for (;;) {
        if (avail == 0 && !eof) {
            avail = fread(in, 1, IN, f);
            if (avail < IN) {
                if (ferror(f)) {
                    rc = sn_err_set(err, SN_E_IO, "%s: read error", path);
                    goto done_z;
                }
                eof = true;
            }
            zs.next_in = in;
            zs.avail_in = (uInt)avail;
            *size += (long long)avail;
        }
        if (zs.avail_in == 0 && eof)
            break; /* clean end, or a member cut short (in_member) */
        if (!in_member && zs.avail_in < 2 && !eof) {
            /* keep it simple: refill after this chunk is used up */
        }
        zs.next_out = outb;
        zs.avail_out = OUTB;
        uInt before = zs.avail_in;
        int z = inflate(&zs, Z_NO_FLUSH);
        consumed += (long long)(before - zs.avail_in);
        avail = zs.avail_in;
        in_member = true;
        size_t got = OUTB - zs.avail_out;
        for (size_t i = 0; i < got; i++) {
            if (outb[i] == '\n') {
                (*n_lines)++;
                if ((rc = line_id(line.data ? line.data : "", line.len, path, *n_lines, ids,
                                  err)))
                    goto done_z;
                sn_buf_reset(&line);
            } else if (sn_buf_append(&line, &outb[i], 1, err)) {
                rc = err->code;
                goto done_z;
            }
        }
        if (z == Z_STREAM_END) {
            in_member = false;
            if (line.len == 0)
                *good_end = consumed; /* a member boundary at a line boundary */
            inflateReset(&zs);
            continue;
        }
        if (z == Z_BUF_ERROR && zs.avail_in == 0 && eof)
            break; /* truncated member */
        if (z != Z_OK && z != Z_BUF_ERROR)
            break; /* corrupt bytes (e.g. a partial header): the tail from good_end goes */
    }
    (void)in_member;
done_z:
    inflateEnd(&zs);
done:
    fclose(f);
    sn_free(in);
    sn_free(outb);
    sn_buf_free(&line);
    return rc;
}

/* A tail left by a kill is the start of one gzip member: its first bytes are the gzip magic
** (1f 8b), or it is a single 1f. Anything else was not written by us and is not dropped. */
static int check_tail(const char *path, long long good_end, long long size, struct sn_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_err_set(err, SN_E_IO, "%s: %s", path, strerror(errno));
    unsigned char m[2] = {0, 0};
    size_t want = size - good_end >= 2 ? 2 : 1;
    int rc = SN_OK;
    if (fseek(f, (long)good_end, SEEK_SET) != 0 || fread(m, 1, want, f) != want)
        rc = sn_err_set(err, SN_E_IO, "%s: cannot read at offset %lld", path, good_end);
    else if (m[0] != 0x1f || (want == 2 && m[1] != 0x8b))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: the %lld bytes from offset %lld are not a gzip "
                        "record (not written by sentinel simulate?); move the file away to start "
                        "afresh", path, size - good_end, good_end);
    fclose(f);
    return rc;
}

/* Rewrites path atomically with its first n bytes. */
static int truncate_atomic(const char *path, long long n, struct sn_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_err_set(err, SN_E_IO, "%s: %s", path, strerror(errno));
    struct sn_atomic_file *a;
    int rc = sn_atomic_open(path, &a, err);
    if (rc) {
        fclose(f);
        return rc;
    }
    char buf[1 << 16];
    long long left = n;
    while (left > 0 && !rc) {
        size_t want = left < (long long)sizeof buf ? (size_t)left : sizeof buf;
        size_t got = fread(buf, 1, want, f);
        if (got != want || fwrite(buf, 1, got, sn_atomic_stream(a)) != got)
            rc = sn_err_set(err, SN_E_IO, "%s: copy failed while dropping the partial tail",
                            path);
        left -= (long long)got;
    }
    fclose(f);
    if (rc) {
        sn_atomic_abort(a);
        return rc;
    }
    return sn_atomic_commit(a, err);
}

/* ---- gzip member writer ---- */

static int gz_member(const char *data, size_t n, struct sn_buf *out, struct sn_err *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* level 6, gzip wrapper (15 + 16): one self-contained member per record */
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return sn_err_set(err, SN_E_NOMEM, "zlib: deflateInit2 failed");
    size_t bound = (size_t)deflateBound(&zs, (uLong)n);
    if (out->cap < bound + 1) {
        char *p = sn_realloc(out->data, bound + 1);
        if (!p) {
            deflateEnd(&zs);
            return sn_err_set(err, SN_E_NOMEM, "out of memory compressing a record");
        }
        out->data = p;
        out->cap = bound + 1;
    }
    zs.next_in = (Bytef *)data;
    zs.avail_in = (uInt)n;
    zs.next_out = (Bytef *)out->data;
    zs.avail_out = (uInt)bound;
    int z = deflate(&zs, Z_FINISH);
    out->len = bound - zs.avail_out;
    deflateEnd(&zs);
    if (z != Z_STREAM_END)
        return sn_err_set(err, SN_E_NOMEM, "zlib: deflate failed (%d)", z);
    return SN_OK;
}

/* ---- recipe ---- */

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

static const char *const sim_keys[] = {"endpoints", "experiments", "defaults", "threads", NULL};
static const char *const exp_keys[] = {
    "name", "scenario", "dataset", "n_agents", "n_adversaries", "rounds", "strategy",
    "topology", "placement", "rhetoric", "persona", "backend", "backends", "role_backends",
    "judge_backend", "replicates", "seed", "early_stop", "self_reflection", "decision",
    "defense", "prompts", "labels", "best_of_n", "intercepts", "victims", "injection_rate",
    "adaptive", "llm_extract", "temperature", "top_p", "max_tokens", NULL};

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

static int parse_experiment(struct run *R, int xi, const cJSON *o, struct sn_experiment *x,
                            struct sn_err *err)
{
    char where[96];
    snprintf(where, sizeof where, "simulate.experiments[%d]", xi);
    int rc = sn_recipe_check_keys(o, where, exp_keys, err);
    if (rc)
        return rc;
    const char *scen, *strat, *decision;
    int64_t n_agents, n_adv, rounds, reps, seed, bon, max_tokens;
    double inj;
    memset(x, 0, sizeof *x);
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
    if (sn_scenario_parse(scen, &x->scenario))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.scenario' = '%s' (expected none, "
                          "collaboration, netsafe, aitm, prompt_injection, psysafe, autoinject)",
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
    snprintf(w2, sizeof w2, "%s.defense", where);
    if ((rc = sn_defense_config_parse(cJSON_GetObjectItemCaseSensitive(o, "defense"), w2,
                                      &x->defense, err)))
        return rc;
    if (strcmp(x->defense.name, "sentinel") == 0) {
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
    /* endpoints per slot */
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

static void run_free(struct run *R)
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

static int setup_run(struct run *R, const cJSON *recipe, struct sn_err *err)
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
    /* open the endpoints that are used */
    for (int i = 0; i < R->n_eps; i++) {
        if (!R->eps[i].used)
            continue;
        if ((rc = sn_sim_endpoint_open(R->eps[i].config, &R->eps[i].b, err)))
            return sn_err_wrap(err, "simulate.endpoints.%s", R->eps[i].name);
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

/* ---- work ---- */

struct unit {
    int    x;
    size_t item;
    int    rep;
    char   id[160];
};

struct job {
    struct run *R;
    struct unit *units;
    size_t n_units;
    _Atomic size_t next;
    _Atomic uint64_t done, failed, active, calls, tokens;
    pthread_mutex_t lock;
    FILE *traj, *errs;
    const char *traj_path, *errors_path;
    struct sn_err first_err;
    _Atomic int write_rc;
    struct sn_err write_err;
    struct idset failed_ids;
    volatile int *cancel;
    double last_sync;
};

static void iso_time(char *out, size_t cap)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void *worker(void *arg)
{
    struct job *J = arg;
    struct sn_buf line = {.max = 256u << 20}, gz = {.max = 256u << 20};
    for (;;) {
        if (J->cancel && *J->cancel)
            break;
        size_t i = atomic_fetch_add(&J->next, 1);
        if (i >= J->n_units)
            break;
        if (J->write_rc)
            break;
        struct unit *u = &J->units[i];
        struct sn_err err = {0};
        struct sn_debate_stats st = {0};
        sn_buf_reset(&line);
        atomic_fetch_add(&J->active, 1);
        int rc = sn_debate_run(&J->R->setups[u->x], &J->R->qsets[u->x]->items[u->item],
                               u->rep, &line, &st, &err);
        atomic_fetch_sub(&J->active, 1);
        atomic_fetch_add(&J->calls, st.calls);
        atomic_fetch_add(&J->tokens, st.prompt_tokens + st.completion_tokens);
        if (!rc) {
            rc = sn_buf_append(&line, "\n", 1, &err);
            if (!rc)
                rc = gz_member(line.data, line.len, &gz, &err);
            if (rc) { /* our own failure (memory): record as a failed item */
            } else {
                pthread_mutex_lock(&J->lock);
                if (fwrite(gz.data, 1, gz.len, J->traj) != gz.len || fflush(J->traj) != 0) {
                    J->write_rc = sn_err_set(&J->write_err, SN_E_IO, "%s: write failed: %s",
                                             J->traj_path, strerror(errno));
                } else {
                    atomic_fetch_add(&J->done, 1);
                    double now = sn_now();
                    if (now - J->last_sync > 5.0) { /* bound the loss on power failure */
                        fsync(fileno(J->traj));
                        J->last_sync = now;
                    }
                }
                pthread_mutex_unlock(&J->lock);
                continue;
            }
        }
        /* failure: errors file + counters */
        struct sn_buf e = {0};
        struct sn_err e2 = {0};
        cJSON *o = cJSON_CreateObject();
        char when[32];
        iso_time(when, sizeof when);
        const struct sn_experiment *x = &J->R->xs[u->x];
        char *s = NULL;
        if (o && cJSON_AddStringToObject(o, "id", u->id) &&
            cJSON_AddStringToObject(o, "experiment", x->name) &&
            cJSON_AddStringToObject(o, "item_id", J->R->qsets[u->x]->items[u->item].id) &&
            cJSON_AddNumberToObject(o, "replicate", u->rep) &&
            cJSON_AddStringToObject(o, "error", err.msg) &&
            cJSON_AddStringToObject(o, "time", when))
            s = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        pthread_mutex_lock(&J->lock);
        if (!J->first_err.code)
            J->first_err = err;
        idset_add(&J->failed_ids, u->id, &e2);
        if (s && J->errs) {
            fputs(s, J->errs);
            fputc('\n', J->errs);
            fflush(J->errs);
        }
        atomic_fetch_add(&J->failed, 1);
        pthread_mutex_unlock(&J->lock);
        cJSON_free(s);
        sn_buf_free(&e);
    }
    sn_buf_free(&line);
    sn_buf_free(&gz);
    return NULL;
}

/* Rewrites the errors file to hold, for every id that is still not in the trajectory file,
** its newest entry (the latest reason), in file order. Removed when nothing is left. */
static int finish_errors(const char *path, const struct idset *done, struct sn_err *err)
{
    if (!sn_path_exists(path))
        return SN_OK;
    char *text;
    size_t len;
    int rc = sn_file_read(path, 0, &text, &len, err);
    if (rc)
        return rc;
    struct sn_buf out = {0};
    struct idset kept = {0};
    /* newest entry of an id wins: walk lines from the end */
    size_t end = len;
    while (end > 0 && !rc) {
        size_t s = end;
        if (text[s - 1] == '\n')
            s--;
        size_t b = s;
        while (b > 0 && text[b - 1] != '\n')
            b--;
        cJSON *o = s > b ? cJSON_ParseWithLength(text + b, s - b) : NULL;
        const cJSON *id = o ? cJSON_GetObjectItemCaseSensitive(o, "id") : NULL;
        if (cJSON_IsString(id) && !idset_has(done, id->valuestring) &&
            !idset_has(&kept, id->valuestring)) {
            rc = idset_add(&kept, id->valuestring, err);
            if (!rc) {
                rc = sn_buf_append(&out, text + b, s - b, err);
                if (!rc)
                    rc = sn_buf_append(&out, "\n", 1, err);
            }
        }
        cJSON_Delete(o);
        end = b;
    }
    sn_free(text);
    idset_free(&kept);
    if (!rc) {
        if (out.len == 0) {
            unlink(path);
        } else {
            /* lines were collected newest first; reverse their order */
            struct sn_buf rev = {0};
            size_t e2 = out.len;
            while (e2 > 0 && !rc) {
                size_t b = e2 - 1; /* at '\n' */
                while (b > 0 && out.data[b - 1] != '\n')
                    b--;
                rc = sn_buf_append(&rev, out.data + b, e2 - b, err);
                e2 = b;
            }
            if (!rc)
                rc = sn_atomic_write(path, rev.data, rev.len, err);
            sn_buf_free(&rev);
        }
    }
    sn_buf_free(&out);
    return rc;
}

struct sn_simulate_params sn_simulate_default_params(void)
{
    struct sn_simulate_params p = {0};
    p.shard_index = 0;
    p.shard_count = 1;
    return p;
}

static uint64_t id_hash(const char *id)
{
    uint8_t d[32];
    struct sn_sha256 h;
    sn_sha256_init(&h);
    sn_sha256_update(&h, id, strlen(id));
    sn_sha256_final(&h, d);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | d[i];
    return v;
}

int sn_simulate_run(const cJSON *recipe, const struct sn_simulate_params *p,
                    struct sn_simulate_report *rep, struct sn_err *err)
{
    memset(rep, 0, sizeof *rep);
    if (!p->out_dir || !*p->out_dir)
        return sn_err_set(err, SN_E_ARG, "simulate: no output directory (-o DIR)");
    if (p->shard_count < 1 || p->shard_index < 0 || p->shard_index >= p->shard_count)
        return sn_err_set(err, SN_E_ARG, "simulate: shard %d/%d: need 0 <= i < n", p->shard_index,
                          p->shard_count);
    struct run R = {.p = p};
    struct job J = {0};
    int rc = setup_run(&R, recipe, err);
    if (rc) {
        run_free(&R);
        return rc;
    }
    if ((rc = sn_mkdirs(p->out_dir, err))) {
        run_free(&R);
        return rc;
    }
    snprintf(rep->traj_path, sizeof rep->traj_path, "%s/trajectories-%dof%d.jsonl.gz",
             p->out_dir, p->shard_index, p->shard_count);
    snprintf(rep->errors_path, sizeof rep->errors_path, "%s/errors-%dof%d.jsonl", p->out_dir,
             p->shard_index, p->shard_count);
    /* one writer per output file: a second `simulate` on the same shard and directory is
    ** refused instead of interleaving records (the lock dies with the process) */
    char lock_path[1100];
    snprintf(lock_path, sizeof lock_path, "%s/.trajectories-%dof%d.lock", p->out_dir,
             p->shard_index, p->shard_count);
    int lock_fd = open(lock_path, O_RDWR | O_CREAT, 0644);
    if (lock_fd < 0) {
        rc = sn_err_set(err, SN_E_IO, "%s: %s", lock_path, strerror(errno));
        run_free(&R);
        return rc;
    }
    if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = sn_err_set(err, SN_E_IO, "%s: another `sentinel simulate` is writing shard %d/%d "
                        "in this directory", rep->traj_path, p->shard_index, p->shard_count);
        close(lock_fd);
        run_free(&R);
        return rc;
    }
    /* resume: ids already written */
    struct idset done = {0}, attempted = {0};
    if (sn_path_exists(rep->traj_path)) {
        uint64_t n_lines;
        long long good_end, size;
        rc = scan_existing(rep->traj_path, &done, &n_lines, &good_end, &size, err);
        if (!rc && good_end < size)
            rc = check_tail(rep->traj_path, good_end, size, err);
        if (!rc && good_end < size) {
            SN_WARN("%s: dropping %lld bytes after the last complete record (an interrupted "
                    "run); %llu records kept", rep->traj_path, size - good_end,
                    (unsigned long long)n_lines);
            rc = truncate_atomic(rep->traj_path, good_end, err);
            if (!rc) { /* the ids were counted from complete lines before the cut only */
                idset_free(&done);
                rc = scan_existing(rep->traj_path, &done, &n_lines, &good_end, &size, err);
            }
        }
    }
    /* work list */
    size_t cap = 0;
    for (int i = 0; !rc && i < R.n_xs; i++)
        cap += R.qsets[i]->n * (size_t)R.xs[i].replicates;
    J.units = rc ? NULL : sn_calloc(cap ? cap : 1, sizeof *J.units);
    if (!rc && !J.units)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory for %zu work units", cap);
    for (int i = 0; !rc && i < R.n_xs; i++) {
        for (size_t it = 0; it < R.qsets[i]->n; it++)
            for (int r = 0; r < R.xs[i].replicates; r++) {
                struct unit u = {.x = i, .item = it, .rep = r};
                sn_debate_id(R.xs[i].name, R.qsets[i]->items[it].id, r, R.xs[i].seed, u.id,
                             sizeof u.id);
                if (id_hash(u.id) % (uint64_t)p->shard_count != (uint64_t)p->shard_index)
                    continue;
                rep->planned++;
                if (idset_has(&done, u.id)) {
                    rep->skipped++;
                    continue;
                }
                if ((rc = idset_add(&attempted, u.id, err)))
                    break;
                J.units[J.n_units++] = u;
            }
    }
    if (!rc) {
        J.traj = fopen(rep->traj_path, "ab");
        if (!J.traj)
            rc = sn_err_set(err, SN_E_IO, "%s: %s", rep->traj_path, strerror(errno));
    }
    if (!rc) {
        J.errs = fopen(rep->errors_path, "ab");
        if (!J.errs)
            rc = sn_err_set(err, SN_E_IO, "%s: %s", rep->errors_path, strerror(errno));
    }
    int threads = p->threads;
    int64_t rthreads = 0;
    if (!rc && threads <= 0) {
        rc = sn_json_get_int(cJSON_GetObjectItemCaseSensitive(recipe, "simulate"), "simulate",
                             "threads", 0, &rthreads, err);
        if (!rc && (rthreads < 0 || rthreads > 1024))
            rc = sn_err_set(err, SN_E_ARG, "recipe: 'simulate.threads' must be 0-1024");
        threads = (int)rthreads;
    }
    if (threads <= 0) {
        /* Twice the largest endpoint concurrency: a debate thread spends part of its time
        ** building its next request, and with exactly one thread per slot the slots sit idle
        ** meanwhile (measured: 0.85 of the concurrency/latency bound at 1x, 0.92 at 2x). */
        threads = 1;
        for (int i = 0; i < R.n_eps; i++)
            if (R.eps[i].used && R.eps[i].b && strcmp(sn_llm_backend_kind(R.eps[i].b), "sim") != 0 &&
                2 * R.eps[i].concurrency > threads)
                threads = 2 * R.eps[i].concurrency;
    }
    if (threads > 1024)
        threads = 1024;
    if ((size_t)threads > J.n_units)
        threads = J.n_units ? (int)J.n_units : 1;
    struct sn_progress *prog = NULL;
    if (!rc) {
        J.R = &R;
        J.cancel = p->cancel;
        J.traj_path = rep->traj_path;
        J.errors_path = rep->errors_path;
        J.last_sync = sn_now();
        pthread_mutex_init(&J.lock, NULL);
        struct sn_progress_params pp = sn_progress_default_params();
        pp.label = "simulate";
        pp.unit = "debates";
        pp.total = J.n_units;
        pp.force_mode = p->progress_mode;
        if (sn_progress_create(&pp, &prog, err) != SN_OK) {
            prog = NULL;
            sn_err_clear(err);
        }
        if (rep->skipped)
            SN_INFO("simulate: %llu of %llu debates already in %s; running the remaining %zu",
                    (unsigned long long)rep->skipped, (unsigned long long)rep->planned,
                    rep->traj_path, J.n_units);
        pthread_t *tids = sn_calloc((size_t)threads, sizeof *tids);
        int started = 0;
        if (!tids) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        } else {
            for (int i = 0; i < threads; i++) {
                if (pthread_create(&tids[i], NULL, worker, &J) != 0)
                    break;
                started++;
            }
            if (started == 0)
                rc = sn_err_set(err, SN_E_IO, "cannot start worker threads");
        }
        double t0 = sn_now();
        while (started > 0) {
            uint64_t fin = atomic_load(&J.done) + atomic_load(&J.failed);
            if (fin >= J.n_units || (p->cancel && *p->cancel && atomic_load(&J.active) == 0) ||
                J.write_rc)
                break;
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
            if (prog) {
                int in_flight = 0;
                for (int i = 0; i < R.n_eps; i++)
                    if (R.eps[i].b)
                        in_flight += sn_llm_backend_stats(R.eps[i].b).in_flight;
                double el = sn_now() - t0;
                char extra[160];
                snprintf(extra, sizeof extra, "tok/s %.0f  in-flight %d  active %llu  errors %llu",
                         el > 0 ? (double)atomic_load(&J.tokens) / el : 0.0, in_flight,
                         (unsigned long long)atomic_load(&J.active),
                         (unsigned long long)atomic_load(&J.failed));
                sn_progress_update(prog, atomic_load(&J.done) + atomic_load(&J.failed), extra);
            }
        }
        for (int i = 0; i < started; i++)
            pthread_join(tids[i], NULL);
        sn_free(tids);
        double el = sn_now() - t0;
        rep->done = atomic_load(&J.done);
        rep->failed = atomic_load(&J.failed);
        if (prog) {
            char summary[256];
            snprintf(summary, sizeof summary, "%llu debates written, %llu failed, %.1f debates/s, "
                     "%.0f tok/s", (unsigned long long)rep->done, (unsigned long long)rep->failed,
                     el > 0 ? (double)rep->done / el : 0.0,
                     el > 0 ? (double)atomic_load(&J.tokens) / el : 0.0);
            sn_progress_finish(prog, summary);
        }
        pthread_mutex_destroy(&J.lock);
    }
    if (J.traj) {
        if (fflush(J.traj) != 0 || fsync(fileno(J.traj)) != 0) {
            if (!rc)
                rc = sn_err_set(err, SN_E_IO, "%s: flush failed: %s", rep->traj_path,
                                strerror(errno));
        }
        fclose(J.traj);
    }
    if (J.errs)
        fclose(J.errs);
    if (!rc && J.write_rc) {
        *err = J.write_err;
        rc = J.write_rc;
    }
    /* the errors file keeps exactly the ids that are not done */
    if (J.traj || J.errs) {
        struct idset now_done = {0};
        struct sn_err e2 = {0};
        uint64_t nl;
        long long ge, sz;
        if (sn_path_exists(rep->traj_path) &&
            scan_existing(rep->traj_path, &now_done, &nl, &ge, &sz, &e2) == SN_OK)
            finish_errors(rep->errors_path, &now_done, &e2);
        idset_free(&now_done);
    }
    if (!rc && rep->failed)
        rc = sn_err_set(err, SN_E_BACKEND, "%llu of %zu debates failed (first: %s); they are "
                        "listed in %s and a re-run retries them", (unsigned long long)rep->failed,
                        J.n_units, J.first_err.msg, rep->errors_path);
    if (!rc && p->cancel && *p->cancel)
        rc = sn_err_set(err, SN_E_CANCELLED, "interrupted after %llu debates; re-run to continue",
                        (unsigned long long)rep->done);
    idset_free(&done);
    idset_free(&attempted);
    idset_free(&J.failed_ids);
    close(lock_fd); /* releases the lock */
    sn_free(J.units);
    run_free(&R);
    return rc;
}
