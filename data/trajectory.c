/* data/trajectory.c: the writer, and the reader and validator, of sentinel.trajectory/1
** (docs/formats.md#trajectory): the format's one home. The writer appends one line's object to
** a buffer, fields in the documented order. A line is parsed with cJSON into a tree that the struct sn_traj keeps; the struct's strings
** point into it, so nothing is copied. Validation walks the tree once, naming the first field
** that is missing or has the wrong type. */
#include "data/data.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const role_names[] = {"honest", "adversary", "interceptor"};
_Static_assert(sizeof role_names / sizeof role_names[0] == SN_ROLE_COUNT, "roles out of sync");

const char *sn_role_name(enum sn_role role)
{
    return (unsigned)role < SN_ROLE_COUNT ? role_names[role] : "?";
}

/* ---- validation helpers ---- */

struct ctx {
    const char    *where; /* "file:line", formatted only when a message needs it */
    const char    *path;  /* with lineno: the reader's position (where is built lazily) */
    uint64_t       lineno;
    char           where_buf[600];
    struct sn_err *err;
    /* path of the object being read ("", "final", "rounds[2][1]"): a format and its indices,
    ** printed only when a message needs it (this runs for every message of every line) */
    const char    *pfx_fmt;
    long           pa, pb, pc;
    char           pfx[96];
    /* a message object's members, indexed in one pass (see msg_key) */
    const cJSON   *ix_obj;
    const cJSON   *ix_val[11];
};

static const char *where_of(struct ctx *c)
{
    if (!c->where) {
        snprintf(c->where_buf, sizeof c->where_buf, "%s:%llu", c->path,
                 (unsigned long long)c->lineno);
        c->where = c->where_buf;
    }
    return c->where;
}
#define WHERE(c) where_of(c)

static const char *type_name(const cJSON *v)
{
    if (!v)
        return "missing";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsBool(v))
        return "bool";
    if (cJSON_IsNumber(v))
        return "number";
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsArray(v))
        return "array";
    if (cJSON_IsObject(v))
        return "object";
    return "invalid";
}

static const char *pfx_of(struct ctx *c)
{
    snprintf(c->pfx, sizeof c->pfx, c->pfx_fmt ? c->pfx_fmt : "", c->pa, c->pb, c->pc);
    return c->pfx;
}

static int bad(struct ctx *c, const char *key, const char *expected, const cJSON *got)
{
    pfx_of(c);
    const char *dot = c->pfx[0] && key[0] && key[0] != '[' ? "." : "";
    if (!got)
        return sn_err_set(c->err, SN_E_FORMAT, "%s: missing field '%s%s%s' (expected %s)",
                          WHERE(c), c->pfx, dot, key, expected);
    return sn_err_set(c->err, SN_E_FORMAT, "%s: field '%s%s%s': expected %s, got %s", WHERE(c),
                      c->pfx, dot, key, expected, type_name(got));
}

static int bad_value(struct ctx *c, const char *key, const char *what)
{
    pfx_of(c);
    const char *dot = c->pfx[0] && key[0] && key[0] != '[' ? "." : "";
    return sn_err_set(c->err, SN_E_FORMAT, "%s: field '%s%s%s': %s", WHERE(c), c->pfx, dot, key,
                      what);
}

enum { REQ = 1, NULLABLE = 2 };

static const cJSON *lookup(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* The members of a round message. A message has ~7 members and we ask for 11 names: one pass
** over its members with this switch replaces ~60 string compares per message. */
static int msg_key(const char *k)
{
    if (!k)
        return -1;
#define K(i, name) return strcmp(k, name) ? -1 : (i)
    switch (k[0]) {
    case 'a': return !strcmp(k, "agent") ? 0 : !strcmp(k, "answer") ? 2 : -1;
    case 't': return !strcmp(k, "text") ? 1 : !strcmp(k, "tampered") ? 4 : -1;
    case 'p': return !strcmp(k, "parsed") ? 3 : !strcmp(k, "prompt_tokens") ? 7 : -1;
    case 'o': K(5, "original_text");
    case 'l': K(6, "latency_ms");
    case 'c': K(8, "completion_tokens");
    case 'd': K(9, "deliveries");
    case 'b': K(10, "blacklisted");
    default: return -1;
    }
#undef K
}

static void index_msg(struct ctx *c, const cJSON *m)
{
    c->ix_obj = m;
    memset(c->ix_val, 0, sizeof c->ix_val);
    for (const cJSON *ch = m->child; ch; ch = ch->next) {
        int i = msg_key(ch->string);
        if (i >= 0 && !c->ix_val[i]) /* the first of duplicate keys, as cJSON's lookup */
            c->ix_val[i] = ch;
    }
}

static const cJSON *item_c(struct ctx *c, const cJSON *obj, const char *key)
{
    if (obj == c->ix_obj) {
        int i = msg_key(key);
        if (i >= 0)
            return c->ix_val[i];
    }
    return lookup(obj, key);
}

/* A string field. Absent optional fields and null (when NULLABLE) give NULL. */
static int get_str(struct ctx *c, const cJSON *obj, const char *key, int flags, const char **out)
{
    const cJSON *v = item_c(c, obj, key);
    *out = NULL;
    const char *expect = (flags & NULLABLE) ? "string or null" : "string";
    if (!v)
        return (flags & REQ) ? bad(c, key, expect, v) : SN_OK;
    if (cJSON_IsString(v) && v->valuestring) {
        *out = v->valuestring;
        return SN_OK;
    }
    if (cJSON_IsNull(v) && (flags & NULLABLE))
        return SN_OK;
    return bad(c, key, expect, v);
}

static int get_bool(struct ctx *c, const cJSON *obj, const char *key, int flags, bool *out)
{
    const cJSON *v = item_c(c, obj, key);
    *out = false;
    if (!v)
        return (flags & REQ) ? bad(c, key, "bool", v) : SN_OK;
    if (!cJSON_IsBool(v))
        return bad(c, key, "bool", v);
    *out = cJSON_IsTrue(v);
    return SN_OK;
}

/* An integer field (a JSON number with no fractional part, within [lo, hi]). */
static int get_int(struct ctx *c, const cJSON *obj, const char *key, int flags, double lo,
                   double hi, int64_t dflt, int64_t *out)
{
    const cJSON *v = item_c(c, obj, key);
    *out = dflt;
    if (!v || ((flags & NULLABLE) && cJSON_IsNull(v)))
        return (!v && (flags & REQ)) ? bad(c, key, "integer", v) : SN_OK;
    if (!cJSON_IsNumber(v))
        return bad(c, key, "integer", v);
    double d = v->valuedouble;
    if (!(d == floor(d)) || d < lo || d > hi)
        return bad_value(c, key, "expected an integer in range");
    *out = (int64_t)d;
    return SN_OK;
}

static int get_num(struct ctx *c, const cJSON *obj, const char *key, double *out)
{
    const cJSON *v = item_c(c, obj, key);
    *out = 0.0;
    if (!v || cJSON_IsNull(v))
        return SN_OK;
    if (!cJSON_IsNumber(v))
        return bad(c, key, "number", v);
    *out = v->valuedouble;
    return SN_OK;
}

static int get_obj(struct ctx *c, const cJSON *obj, const char *key, int flags, const cJSON **out)
{
    const cJSON *v = item_c(c, obj, key);
    *out = NULL;
    if (!v || ((flags & NULLABLE) && cJSON_IsNull(v)))
        return (!v && (flags & REQ)) ? bad(c, key, "object", v) : SN_OK;
    if (!cJSON_IsObject(v))
        return bad(c, key, "object", v);
    *out = v;
    return SN_OK;
}

static int get_arr(struct ctx *c, const cJSON *obj, const char *key, int flags, const cJSON **out,
                   size_t *n)
{
    const cJSON *v = item_c(c, obj, key);
    *out = NULL;
    *n = 0;
    if (!v)
        return (flags & REQ) ? bad(c, key, "array", v) : SN_OK;
    if (!cJSON_IsArray(v))
        return bad(c, key, "array", v);
    *out = v;
    *n = (size_t)cJSON_GetArraySize(v);
    return SN_OK;
}

static void set_pfx(struct ctx *c, const char *fmt, long a, long b, long d)
{
    c->pfx_fmt = fmt;
    c->pa = a;
    c->pb = b;
    c->pc = d;
}

/* [[from, to], ...] with 0 <= from, to < n. */
static int read_pairs(struct ctx *c, const cJSON *arr, const char *key, size_t n_agents,
                      int (**out)[2], size_t *n_out)
{
    size_t n = (size_t)cJSON_GetArraySize(arr);
    *out = NULL;
    *n_out = 0;
    if (!n)
        return SN_OK;
    int(*p)[2] = sn_calloc(n, sizeof *p);
    if (!p)
        return sn_err_set(c->err, SN_E_NOMEM, "%s: out of memory", WHERE(c));
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsNumber(e->child) ||
            !cJSON_IsNumber(e->child->next)) {
            char k[64];
            snprintf(k, sizeof k, "%s[%zu]", key, i);
            sn_free(p);
            return bad_value(c, k, "expected a pair [from, to] of agent ids");
        }
        for (int j = 0; j < 2; j++) {
            double d = (j ? e->child->next : e->child)->valuedouble;
            if (!(d == floor(d)) || d < 0 || d >= (double)n_agents) {
                char k[64];
                snprintf(k, sizeof k, "%s[%zu]", key, i);
                sn_free(p);
                return bad_value(c, k, "agent id out of range");
            }
            p[i][j] = (int)d;
        }
        i++;
    }
    *out = p;
    *n_out = n;
    return SN_OK;
}

static int read_agent(struct ctx *c, const cJSON *a, size_t i, size_t n_agents,
                      struct sn_traj_agent *ag)
{
    set_pfx(c, "agents[%ld]", (long)i, 0, 0);
    if (!cJSON_IsObject(a))
        return bad_value(c, "", "expected an object");
    int64_t id;
    const char *role;
    int rc = get_int(c, a, "id", REQ, 0, INT_MAX, 0, &id);
    if (!rc && (size_t)id != i)
        rc = bad_value(c, "id", "agents must be listed in id order (agents[i].id == i)");
    if (!rc)
        rc = get_str(c, a, "role", REQ, &role);
    if (rc)
        return rc;
    ag->id = (int)id;
    int r;
    for (r = 0; r < SN_ROLE_COUNT; r++)
        if (!strcmp(role, role_names[r]))
            break;
    if (r == SN_ROLE_COUNT) {
        char what[160];
        snprintf(what, sizeof what,
                 "unknown role '%.60s' (expected honest, adversary or interceptor)", role);
        return bad_value(c, "role", what);
    }
    ag->role = (enum sn_role)r;
    if ((rc = get_str(c, a, "model", NULLABLE, &ag->model)) ||
        (rc = get_str(c, a, "backend", NULLABLE, &ag->backend)) ||
        (rc = get_str(c, a, "persona", NULLABLE, &ag->persona)) ||
        (rc = get_str(c, a, "position", NULLABLE, &ag->position)))
        return rc;
    const cJSON *ic;
    size_t n_ic;
    if ((rc = get_arr(c, a, "intercepts", 0, &ic, &n_ic)))
        return rc;
    if (ic)
        return read_pairs(c, ic, "intercepts", n_agents, &ag->intercepts, &ag->n_intercepts);
    return SN_OK;
}

static int read_msg(struct ctx *c, const cJSON *m, size_t t, size_t k, size_t n_agents,
                    struct sn_traj_msg *msg)
{
    set_pfx(c, "rounds[%ld][%ld]", (long)t, (long)k, 0);
    if (!cJSON_IsObject(m))
        return bad_value(c, "", "expected an object");
    index_msg(c, m);
    int64_t agent;
    int rc;
    if ((rc = get_int(c, m, "agent", REQ, 0, INT_MAX, 0, &agent)))
        return rc;
    if ((size_t)agent >= n_agents)
        return bad_value(c, "agent", "agent id out of range of agents[]");
    msg->agent = (int)agent;
    if ((rc = get_str(c, m, "text", REQ, &msg->text)) ||
        (rc = get_str(c, m, "answer", REQ | NULLABLE, &msg->answer)) ||
        (rc = get_bool(c, m, "parsed", REQ, &msg->parsed)))
        return rc;
    if (msg->parsed != (msg->answer != NULL))
        return bad_value(c, "parsed", msg->parsed ? "true but 'answer' is null"
                                                  : "false but 'answer' is a string");
    int64_t pt, ct;
    if ((rc = get_bool(c, m, "tampered", 0, &msg->tampered)) ||
        (rc = get_str(c, m, "original_text", NULLABLE, &msg->original_text)) ||
        (rc = get_num(c, m, "latency_ms", &msg->latency_ms)) ||
        (rc = get_int(c, m, "prompt_tokens", NULLABLE, 0, 9e15, 0, &pt)) ||
        (rc = get_int(c, m, "completion_tokens", NULLABLE, 0, 9e15, 0, &ct)))
        return rc;
    msg->prompt_tokens = pt;
    msg->completion_tokens = ct;
    if ((rc = get_str(c, m, "finish_reason", NULLABLE, &msg->finish_reason)) ||
        (rc = get_str(c, m, "served_model", NULLABLE, &msg->served_model)) ||
        (rc = get_str(c, m, "system_fingerprint", NULLABLE, &msg->system_fingerprint)) ||
        (rc = get_bool(c, m, "refused", 0, &msg->refused)))
        return rc;
    const cJSON *dl;
    size_t n_dl;
    if ((rc = get_arr(c, m, "deliveries", 0, &dl, &n_dl)))
        return rc;
    if (n_dl) {
        msg->deliveries = sn_calloc(n_dl, sizeof *msg->deliveries);
        if (!msg->deliveries)
            return sn_err_set(c->err, SN_E_NOMEM, "%s: out of memory", WHERE(c));
        msg->n_deliveries = n_dl;
        size_t j = 0;
        const cJSON *d;
        cJSON_ArrayForEach(d, dl) {
            set_pfx(c, "rounds[%ld][%ld].deliveries[%ld]", (long)t, (long)k, (long)j);
            if (!cJSON_IsObject(d))
                return bad_value(c, "", "expected an object");
            int64_t to;
            struct sn_traj_delivery *dv = &msg->deliveries[j++];
            if ((rc = get_int(c, d, "to", REQ, 0, INT_MAX, 0, &to)))
                return rc;
            if ((size_t)to >= n_agents)
                return bad_value(c, "to", "agent id out of range of agents[]");
            dv->to = (int)to;
            if ((rc = get_str(c, d, "text", REQ, &dv->text)) ||
                (rc = get_str(c, d, "answer", NULLABLE, &dv->answer)))
                return rc;
        }
        set_pfx(c, "rounds[%ld][%ld]", (long)t, (long)k, 0);
    }
    const cJSON *bl;
    size_t n_bl;
    if ((rc = get_arr(c, m, "blacklisted", 0, &bl, &n_bl)))
        return rc;
    if (bl) {
        msg->has_blacklist = true;
        if (n_bl) {
            msg->blacklisted = sn_calloc(n_bl, sizeof *msg->blacklisted);
            if (!msg->blacklisted)
                return sn_err_set(c->err, SN_E_NOMEM, "%s: out of memory", WHERE(c));
            const cJSON *b;
            cJSON_ArrayForEach(b, bl) {
                double d = cJSON_IsNumber(b) ? b->valuedouble : -1;
                if (!(d == floor(d)) || d < 0 || d >= (double)n_agents)
                    return bad_value(c, "blacklisted", "expected agent ids");
                msg->blacklisted[msg->n_blacklisted++] = (int)d;
            }
        }
    }
    return SN_OK;
}

static int read_rounds(struct ctx *c, const cJSON *rounds, struct sn_traj *t)
{
    size_t n = (size_t)cJSON_GetArraySize(rounds);
    if (!n)
        return SN_OK;
    t->rounds = sn_calloc(n, sizeof *t->rounds);
    if (!t->rounds)
        return sn_err_set(c->err, SN_E_NOMEM, "%s: out of memory", WHERE(c));
    t->n_rounds = n;
    size_t ti = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, rounds) {
        struct sn_traj_round *rd = &t->rounds[ti];
        if (!cJSON_IsArray(r)) {
            c->pfx_fmt = "";
            char k[48];
            snprintf(k, sizeof k, "rounds[%zu]", ti);
            return bad(c, k, "array", r);
        }
        size_t nm = (size_t)cJSON_GetArraySize(r);
        rd->by_agent = sn_malloc(t->n_agents ? t->n_agents * sizeof *rd->by_agent : 1);
        rd->msgs = sn_calloc(nm ? nm : 1, sizeof *rd->msgs);
        if (!rd->by_agent || !rd->msgs)
            return sn_err_set(c->err, SN_E_NOMEM, "%s: out of memory", WHERE(c));
        for (size_t a = 0; a < t->n_agents; a++)
            rd->by_agent[a] = -1;
        size_t k = 0;
        const cJSON *m;
        cJSON_ArrayForEach(m, r) {
            rd->n_msgs = k + 1; /* counted first: a failed message may hold allocations */
            int rc = read_msg(c, m, ti, k, t->n_agents, &rd->msgs[k]);
            if (rc)
                return rc;
            int a = rd->msgs[k].agent;
            if (rd->by_agent[a] >= 0)
                return bad_value(c, "agent", "agent speaks twice in one round");
            rd->by_agent[a] = (int)k;
            k++;
        }
        ti++;
    }
    return SN_OK;
}

static int read_final(struct ctx *c, const cJSON *f, struct sn_traj_final *fin)
{
    c->pfx_fmt = "final";
    int rc;
    if ((rc = get_str(c, f, "rule", NULLABLE, &fin->rule)) ||
        (rc = get_str(c, f, "answer", REQ | NULLABLE, &fin->answer)) ||
        (rc = get_bool(c, f, "correct", REQ, &fin->correct)) ||
        (rc = get_str(c, f, "judge_answer", NULLABLE, &fin->judge_answer)) ||
        (rc = get_bool(c, f, "stopped_early", 0, &fin->stopped_early)) ||
        (rc = get_int(c, f, "n_rounds", NULLABLE, 0, INT_MAX, -1, &fin->n_rounds)))
        return rc;
    return SN_OK;
}

static int validate(struct ctx *c, struct sn_traj *t)
{
    const cJSON *root = t->root_;
    int rc;
    c->pfx_fmt = "";
    if (!cJSON_IsObject(root))
        return sn_err_set(c->err, SN_E_FORMAT, "%s: expected a JSON object, got %s", WHERE(c),
                          type_name(root));
    const char *schema;
    if ((rc = get_str(c, root, "schema", REQ, &schema)))
        return rc;
    if (strcmp(schema, SN_TRAJ_SCHEMA) != 0)
        return sn_err_set(c->err, SN_E_FORMAT,
                          "%s: unknown schema '%.80s' (this reader knows '" SN_TRAJ_SCHEMA "')",
                          WHERE(c), schema);
    if ((rc = get_str(c, root, "id", REQ, &t->id)) ||
        (rc = get_str(c, root, "experiment", NULLABLE, &t->experiment)) ||
        (rc = get_str(c, root, "scenario", REQ, &t->scenario)) ||
        (rc = get_str(c, root, "dataset", REQ, &t->dataset)) ||
        (rc = get_str(c, root, "item_id", REQ, &t->item_id)) ||
        (rc = get_str(c, root, "subject", NULLABLE, &t->subject)) ||
        (rc = get_str(c, root, "task", REQ, &t->task_name)) ||
        (rc = get_str(c, root, "question", REQ, &t->question)) ||
        (rc = get_str(c, root, "gold", REQ, &t->gold)) ||
        (rc = get_str(c, root, "gold_explanation", NULLABLE, &t->gold_explanation)) ||
        (rc = get_str(c, root, "adversarial_target", REQ | NULLABLE, &t->adversarial_target)) ||
        (rc = get_str(c, root, "strategy", REQ, &t->strategy)))
        return rc;
    if (!strcmp(t->task_name, "mc"))
        t->task = SN_TASK_MC;
    else if (!strcmp(t->task_name, "numeric"))
        t->task = SN_TASK_NUMERIC;
    else
        return bad_value(c, "task", "expected 'mc' or 'numeric'");

    const cJSON *opts;
    size_t n_opts;
    if ((rc = get_arr(c, root, "options", REQ, &opts, &n_opts)))
        return rc;
    if (n_opts) {
        t->options = sn_calloc(n_opts, sizeof *t->options);
        if (!t->options)
            return sn_err_set(c->err, SN_E_NOMEM, "%s: out of memory", WHERE(c));
        const cJSON *o;
        cJSON_ArrayForEach(o, opts) {
            if (!cJSON_IsString(o) || !o->valuestring) {
                char k[48];
                snprintf(k, sizeof k, "options[%zu]", t->n_options);
                return bad(c, k, "string", o);
            }
            t->options[t->n_options++] = o->valuestring;
        }
    }

    /* agents first: every id elsewhere is checked against them */
    const cJSON *agents;
    size_t n_agents;
    if ((rc = get_arr(c, root, "agents", REQ, &agents, &n_agents)))
        return rc;
    if (!n_agents)
        return bad_value(c, "agents", "expected at least one agent");
    t->agents = sn_calloc(n_agents, sizeof *t->agents);
    if (!t->agents)
        return sn_err_set(c->err, SN_E_NOMEM, "%s: out of memory", WHERE(c));
    t->n_agents = n_agents;
    size_t i = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, agents) {
        if ((rc = read_agent(c, a, i, n_agents, &t->agents[i])))
            return rc;
        switch (t->agents[i].role) {
        case SN_ROLE_HONEST: t->n_honest++; break;
        case SN_ROLE_ADVERSARY: t->n_adversary++; break;
        default: t->n_interceptor++; break;
        }
        i++;
    }
    c->pfx_fmt = "";

    const cJSON *topo;
    if ((rc = get_obj(c, root, "topology", REQ, &topo)))
        return rc;
    c->pfx_fmt = "topology";
    const cJSON *edges;
    size_t n_edges;
    if ((rc = get_str(c, topo, "name", REQ, &t->topology_name)) ||
        (rc = get_int(c, topo, "n_agents", REQ, 1, INT_MAX, 0, &t->topology_n_agents)) ||
        (rc = get_arr(c, topo, "edges", REQ, &edges, &n_edges)))
        return rc;
    if ((size_t)t->topology_n_agents != n_agents)
        return bad_value(c, "n_agents", "does not match the length of agents[]");
    if ((rc = read_pairs(c, edges, "edges", n_agents, &t->edges, &t->n_edges)))
        return rc;
    c->pfx_fmt = "";

    if ((rc = get_obj(c, root, "attack", NULLABLE, &t->attack)) ||
        (rc = get_obj(c, root, "defense", NULLABLE, &t->defense)) ||
        (rc = get_obj(c, root, "labels", NULLABLE, &t->labels)))
        return rc;
    if (t->attack) {
        c->pfx_fmt = "attack";
        if ((rc = get_str(c, t->attack, "name", NULLABLE, &t->attack_name)))
            return rc;
    }
    t->defense_name = "none";
    if (t->defense) {
        c->pfx_fmt = "defense";
        if ((rc = get_str(c, t->defense, "name", NULLABLE, &t->defense_name)))
            return rc;
        if (!t->defense_name)
            t->defense_name = "none";
    }
    c->pfx_fmt = "";

    const cJSON *rounds;
    size_t n_rounds;
    if ((rc = get_arr(c, root, "rounds", REQ, &rounds, &n_rounds)) ||
        (rc = read_rounds(c, rounds, t)))
        return rc;
    c->pfx_fmt = "";

    const cJSON *fin;
    if ((rc = get_obj(c, root, "final", REQ, &fin)) || (rc = read_final(c, fin, &t->final)))
        return rc;
    c->pfx_fmt = "";

    const cJSON *sv = lookup(root, "seed");
    /* seeds are unsigned 64-bit; JSON numbers above 2^53 lose precision, so a seed may also
    ** be written as a decimal string. */
    if (sv && cJSON_IsString(sv) && sv->valuestring) {
        char *end;
        errno = 0;
        unsigned long long u = strtoull(sv->valuestring, &end, 10);
        if (errno || end == sv->valuestring || *end)
            return bad_value(c, "seed", "expected an unsigned integer");
        t->seed = u;
    } else {
        if (!sv || !cJSON_IsNumber(sv))
            return bad(c, "seed", "integer", sv);
        double d = sv->valuedouble;
        if (!(d == floor(d)) || d < 0 || d >= 18446744073709551616.0)
            return bad_value(c, "seed", "expected an unsigned 64-bit integer");
        t->seed = (uint64_t)d;
    }
    if ((rc = get_int(c, root, "replicate", REQ, 0, INT_MAX, 0, &t->replicate)) ||
        (rc = get_str(c, root, "backend", NULLABLE, &t->backend)) ||
        (rc = get_str(c, root, "prompt_version", NULLABLE, &t->prompt_version)) ||
        (rc = get_str(c, root, "sentinel_version", NULLABLE, &t->sentinel_version)))
        return rc;
    return SN_OK;
}

static int parse_at(const char *json, size_t len, struct ctx *c, struct sn_traj **out)
{
    struct sn_err *err = c->err;
    *out = NULL;
    /* Texts are carried as C strings from here on (cJSON, shards, prompts): a NUL would cut
    ** them silently. Refused, positioned. (Invalid UTF-8 is named by field: sn_traj_utf8_valid.) */
    size_t bad;
    const char *nul = memchr(json, 0, len);
    if (nul)
        return sn_err_set(err, SN_E_FORMAT, "%s: NUL byte at column %zu (not valid JSON text)",
                          WHERE(c), (size_t)(nul - json) + 1);
    if ((bad = sn_json_nul_escape(json, len)) != (size_t)-1)
        return sn_err_set(err, SN_E_FORMAT, "%s: \\u0000 (U+0000) at column %zu: texts holding "
                          "U+0000 are not supported (they would be cut at it)", WHERE(c),
                          bad + 1);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        if (!end)
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory parsing JSON", WHERE(c));
        size_t off = (size_t)(end - json);
        if (off >= len)
            return sn_err_set(err, SN_E_FORMAT, "%s: not valid JSON: unexpected end of line",
                              WHERE(c));
        char near[24];
        size_t k = 0;
        for (size_t i = off; i < len && k < sizeof near - 1; i++)
            near[k++] = (json[i] >= 32 && json[i] < 127) ? json[i] : '?';
        near[k] = '\0';
        return sn_err_set(err, SN_E_FORMAT, "%s: not valid JSON at column %zu near '%s'",
                          WHERE(c), off + 1, near);
    }
    struct sn_traj *t = sn_calloc(1, sizeof *t);
    if (!t) {
        cJSON_Delete(root);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", WHERE(c));
    }
    t->root_ = root;
    int rc = validate(c, t);
    if (rc) {
        sn_traj_free(t);
        return rc;
    }
    *out = t;
    return SN_OK;
}

int sn_traj_parse(const char *json, size_t len, const char *where, struct sn_traj **out,
                  struct sn_err *err)
{
    struct ctx c = {.where = where ? where : "<trajectory>", .err = err};
    return parse_at(json, len, &c, out);
}

void sn_traj_free(struct sn_traj *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_agents; i++)
        sn_free(t->agents[i].intercepts);
    sn_free(t->agents);
    for (size_t r = 0; t->rounds && r < t->n_rounds; r++) {
        struct sn_traj_round *rd = &t->rounds[r];
        for (size_t k = 0; rd->msgs && k < rd->n_msgs; k++) {
            sn_free(rd->msgs[k].deliveries);
            sn_free(rd->msgs[k].blacklisted);
        }
        sn_free(rd->msgs);
        sn_free(rd->by_agent);
    }
    sn_free(t->rounds);
    sn_free(t->options);
    sn_free(t->edges);
    cJSON_Delete(t->root_);
    sn_free(t);
}

const struct sn_traj_msg *sn_traj_msg_of(const struct sn_traj *t, size_t round, int agent)
{
    if (round >= t->n_rounds || agent < 0 || (size_t)agent >= t->n_agents)
        return NULL;
    int k = t->rounds[round].by_agent[agent];
    return k < 0 ? NULL : &t->rounds[round].msgs[k];
}

const char *sn_traj_label(const struct sn_traj *t, const char *key, char *buf, size_t buf_size)
{
    const cJSON *v = t->labels ? lookup(t->labels, key) : NULL;
    if (!v)
        return NULL;
    if (cJSON_IsString(v) && v->valuestring)
        return v->valuestring;
    if (!buf || !buf_size)
        return NULL;
    if (cJSON_IsNumber(v))
        snprintf(buf, buf_size, "%.17g", v->valuedouble);
    else if (cJSON_IsBool(v))
        snprintf(buf, buf_size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v))
        snprintf(buf, buf_size, "null");
    else
        snprintf(buf, buf_size, "<%s>", type_name(v));
    return buf;
}

/* ---- reader ---- */

struct sn_traj_reader {
    struct sn_lines *lines;
    struct sn_traj_reader_params p;
    uint64_t n_ok, n_skipped;
    bool     done;
    char     first_skip[512];
};

struct sn_traj_reader_params sn_traj_reader_default_params(void)
{
    struct sn_traj_reader_params p = {.skip_bad = false, .max_line = 0};
    return p;
}

int sn_traj_reader_open(const char *path, const struct sn_traj_reader_params *params,
                        struct sn_traj_reader **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_traj_reader *r = sn_calloc(1, sizeof *r);
    if (!r)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    r->p = params ? *params : sn_traj_reader_default_params();
    int rc = sn_lines_open(path, r->p.max_line, &r->lines, err);
    if (rc) {
        sn_free(r);
        return rc;
    }
    *out = r;
    return SN_OK;
}

static void note_skip(struct sn_traj_reader *r, const struct sn_err *e)
{
    if (!r->n_skipped)
        snprintf(r->first_skip, sizeof r->first_skip, "%s", e->msg);
    r->n_skipped++;
}

int sn_traj_reader_next(struct sn_traj_reader *r, struct sn_traj **out, struct sn_err *err)
{
    *out = NULL;
    while (!r->done) {
        const char *line;
        size_t len;
        bool complete;
        struct sn_err e = {0};
        int rc = sn_lines_next(r->lines, &line, &len, &complete, &e);
        if (rc) {
            if (rc == SN_E_FORMAT && r->p.skip_bad) { /* corrupt gzip: nothing after it */
                note_skip(r, &e);
                r->done = true;
                return SN_OK;
            }
            return sn_err_set(err, rc, "%s", e.msg);
        }
        if (!line) {
            r->done = true;
            return SN_OK;
        }
        struct ctx c = {.path = sn_lines_path(r->lines), .lineno = sn_lines_lineno(r->lines),
                        .err = &e};
        size_t b = 0;
        while (b < len && (line[b] == ' ' || line[b] == '\t'))
            b++;
        if (b == len && complete)
            continue; /* blank line */
        if (!complete) {
            sn_err_set(&e, SN_E_FORMAT,
                       "%s: truncated last line (no newline at end of file; a killed writer?)",
                       WHERE(&c));
            r->done = true;
        } else {
            rc = parse_at(line, len, &c, out);
            if (!rc) {
                r->n_ok++;
                return SN_OK;
            }
            if (rc == SN_E_NOMEM)
                return sn_err_set(err, rc, "%s", e.msg);
        }
        if (!r->p.skip_bad)
            return sn_err_set(err, e.code ? e.code : SN_E_FORMAT, "%s", e.msg);
        note_skip(r, &e);
    }
    return SN_OK;
}

uint64_t sn_traj_reader_n_ok(const struct sn_traj_reader *r) { return r->n_ok; }
uint64_t sn_traj_reader_n_skipped(const struct sn_traj_reader *r) { return r->n_skipped; }
const char *sn_traj_reader_first_skip(const struct sn_traj_reader *r) { return r->first_skip; }
uint64_t sn_traj_reader_lineno(const struct sn_traj_reader *r)
{
    return sn_lines_lineno(r->lines);
}

const char *sn_traj_reader_path(const struct sn_traj_reader *r)
{
    return sn_lines_path(r->lines);
}

void sn_traj_reader_close(struct sn_traj_reader *r)
{
    if (!r)
        return;
    sn_lines_close(r->lines);
    sn_free(r);
}

/* ---- writing ---- */

/* s as a JSON string (NULL: null). Bytes >= 0x80 are copied as they are (UTF-8 passes). */
static int js(struct sn_buf *b, const char *s, struct sn_err *err)
{
    if (!s)
        return sn_buf_puts(b, "null", err);
    char tmp[256];
    size_t k = 0;
    tmp[k++] = '"';
    for (const unsigned char *p = (const unsigned char *)s;; p++) {
        if (k > sizeof tmp - 8 || !*p) {
            if (!*p)
                tmp[k++] = '"';
            if (sn_buf_append(b, tmp, k, err))
                return err->code;
            k = 0;
            if (!*p)
                break;
        }
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            tmp[k++] = '\\';
            tmp[k++] = (char)c;
        } else if (c == '\n') {
            tmp[k++] = '\\';
            tmp[k++] = 'n';
        } else if (c == '\t') {
            tmp[k++] = '\\';
            tmp[k++] = 't';
        } else if (c == '\r') {
            tmp[k++] = '\\';
            tmp[k++] = 'r';
        } else if (c < 0x20) {
            k += (size_t)snprintf(tmp + k, 8, "\\u%04x", c);
        } else {
            tmp[k++] = (char)c;
        }
    }
    return SN_OK;
}

#define PUTS(s)                                                                              \
    do {                                                                                     \
        if (sn_buf_puts(out, (s), err))                                                      \
            return err->code;                                                                \
    } while (0)
#define PRINTF(...)                                                                          \
    do {                                                                                     \
        if (sn_buf_printf(out, err, __VA_ARGS__))                                            \
            return err->code;                                                                \
    } while (0)
#define JS(s)                                                                                \
    do {                                                                                     \
        if (js(out, (s), err))                                                               \
            return err->code;                                                                \
    } while (0)

/* Writes ,"key":"value" when value is set: the optional fields of docs/formats.md that readers
 * ignore when absent. */
static int opt_str(struct sn_buf *out, const char *key, const char *value, struct sn_err *err)
{
    if (!value)
        return SN_OK;
    PRINTF(",\"%s\":", key);
    JS(value);
    return SN_OK;
}

#define OPT(key, value)                                                                      \
    do {                                                                                     \
        if (opt_str(out, (key), (value), err))                                               \
            return err->code;                                                                \
    } while (0)

static int write_msg(const struct sn_traj_out_msg *m, struct sn_buf *out, struct sn_err *err)
{
    PRINTF("{\"agent\":%d,\"text\":", m->agent);
    JS(m->text);
    PUTS(",\"answer\":");
    JS(m->answer);
    PRINTF(",\"parsed\":%s,\"latency_ms\":%.3f,\"prompt_tokens\":%ld,\"completion_tokens\":%ld",
           m->parsed ? "true" : "false", m->latency_ms, m->prompt_tokens,
           m->completion_tokens);
    if (m->answer_from_llm)
        PUTS(",\"answer_source\":\"llm\"");
    OPT("answer_rule", m->answer_rule);
    OPT("finish_reason", m->finish_reason);
    if (m->refused)
        PUTS(",\"refused\":true");
    OPT("served_model", m->served_model);
    OPT("system_fingerprint", m->system_fingerprint);
    OPT("draft", m->draft);
    if (m->original_text) {
        PUTS(",\"injected\":true,\"original_text\":");
        JS(m->original_text);
        PUTS(",\"injected_target\":");
        JS(m->injected_target);
    }
    if (m->candidates > 1)
        PRINTF(",\"candidates\":%d", m->candidates);
    if (m->n_deliveries) {
        PUTS(",\"tampered\":true,\"deliveries\":[");
        for (size_t v = 0; v < m->n_deliveries; v++) {
            PRINTF("%s{\"to\":%d,\"text\":", v ? "," : "", m->deliveries[v].to);
            JS(m->deliveries[v].text);
            PUTS(",\"answer\":");
            JS(m->deliveries[v].answer);
            PUTS("}");
        }
        PUTS("]");
    }
    if (m->has_blacklist) {
        PUTS(",\"blacklisted\":[");
        bool first = true;
        for (int j = 0; j < 64; j++)
            if ((m->blacklist >> j) & 1) {
                PRINTF("%s%d", first ? "" : ",", j);
                first = false;
            }
        PUTS("]");
    }
    PUTS("}");
    return SN_OK;
}

static int write_agent(const struct sn_traj_out_agent *a, int k, struct sn_buf *out,
                       struct sn_err *err)
{
    PRINTF("%s{\"id\":%d,\"role\":", k ? "," : "", k);
    JS(sn_role_name(a->role));
    PUTS(",\"model\":");
    JS(a->model);
    PUTS(",\"backend\":");
    JS(a->backend);
    PUTS(",\"persona\":");
    JS(a->persona);
    OPT("position", a->position);
    if (a->role == SN_ROLE_INTERCEPTOR) {
        PUTS(",\"intercepts\":[");
        for (size_t e = 0; e < a->n_intercepts; e++)
            PRINTF("%s[%d,%d]", e ? "," : "", a->intercepts[e][0], a->intercepts[e][1]);
        PUTS("]");
    }
    PUTS("}");
    return SN_OK;
}

int sn_traj_write(const struct sn_traj_out *t, struct sn_buf *out, struct sn_err *err)
{
    PUTS("{\"schema\":\"" SN_TRAJ_SCHEMA "\",\"id\":");
    JS(t->id);
    PUTS(",\"experiment\":");
    JS(t->experiment);
    PUTS(",\"scenario\":");
    JS(t->scenario);
    PUTS(",\"dataset\":");
    JS(t->dataset);
    PUTS(",\"item_id\":");
    JS(t->item_id);
    PUTS(",\"subject\":");
    JS(t->subject);
    PUTS(",\"task\":");
    JS(t->task_name);
    PUTS(",\"question\":");
    JS(t->question);
    PUTS(",\"options\":[");
    for (size_t i = 0; i < t->n_options; i++) {
        if (i)
            PUTS(",");
        JS(t->options[i]);
    }
    PUTS("],\"gold\":");
    JS(t->gold);
    PUTS(",\"gold_explanation\":");
    JS(t->gold_explanation);
    PUTS(",\"adversarial_target\":");
    JS(t->adversarial_target);
    PUTS(",\"strategy\":");
    JS(t->strategy);
    PUTS(",\"topology\":{\"name\":");
    JS(t->topology_name);
    PRINTF(",\"n_agents\":%d,\"edges\":[", t->n_agents);
    for (size_t e = 0; e < t->n_edges; e++)
        PRINTF("%s[%d,%d]", e ? "," : "", t->edges[e][0], t->edges[e][1]);
    PUTS("]},\"agents\":[");
    for (int k = 0; k < t->n_agents; k++)
        if (write_agent(&t->agents[k], k, out, err))
            return err->code;
    PUTS("],\"attack\":{\"name\":");
    JS(t->attack.name);
    OPT("rhetoric", t->attack.rhetoric);
    if (t->attack.placement) {
        PUTS(",\"placement\":");
        JS(t->attack.placement);
        PRINTF(",\"n_attackers\":%d", t->attack.n_attackers);
    }
    if (t->attack.best_of_n > 0)
        PRINTF(",\"best_of_n\":%d", t->attack.best_of_n);
    OPT("persona", t->attack.persona);
    if (t->attack.has_injection)
        PRINTF(",\"injection_rate\":%g,\"adaptive\":%s", t->attack.injection_rate,
               t->attack.adaptive ? "true" : "false");
    PUTS("},\"defense\":{\"name\":");
    JS(t->defense_name);
    if (t->bottom_k >= 0)
        PRINTF(",\"bottom_k\":%d", t->bottom_k);
    PUTS("},\"rounds\":[");
    const struct sn_traj_out_msg *m = t->msgs;
    for (size_t r = 0; r < t->n_rounds; r++) {
        PUTS(r ? ",[" : "[");
        for (size_t k = 0; k < t->round_len[r]; k++, m++) {
            if (k)
                PUTS(",");
            if (write_msg(m, out, err))
                return err->code;
        }
        PUTS("]");
    }
    PUTS("],\"final\":{\"rule\":");
    JS(t->final.rule);
    PUTS(",\"answer\":");
    JS(t->final.answer);
    PRINTF(",\"correct\":%s,\"judge_answer\":", t->final.correct ? "true" : "false");
    JS(t->final.judge_answer);
    PRINTF(",\"stopped_early\":%s,\"n_rounds\":%lld},\"labels\":",
           t->final.stopped_early ? "true" : "false", (long long)t->final.n_rounds);
    if (t->labels) {
        char *l = cJSON_PrintUnformatted(t->labels);
        if (!l)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        int rc = sn_buf_puts(out, l, err);
        cJSON_free(l);
        if (rc)
            return rc;
    } else {
        PUTS("{}");
    }
    if (t->import) {
        PUTS(",\"import\":");
        char *l = cJSON_PrintUnformatted(t->import);
        if (!l)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        int rc = sn_buf_puts(out, l, err);
        cJSON_free(l);
        if (rc)
            return rc;
    }
    PRINTF(",\"seed\":%llu,\"replicate\":%d,\"backend\":", (unsigned long long)t->seed,
           t->replicate);
    JS(t->backend);
    PUTS(",\"prompt_version\":");
    JS(t->prompt_version);
    PUTS(",\"sentinel_version\":");
    JS(t->sentinel_version);
    PUTS("}");
    return SN_OK;
}

/* ---- the files of a run directory --------------------------------------------------------- */

static bool is_errors_file(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "errors-", 7) == 0;
}

int sn_traj_paths(const char *const *inputs, size_t n_inputs, char ***out, size_t *n_out,
                  size_t *n_errors_files, struct sn_err *err)
{
    static const char *const suffixes[] = {".jsonl", ".jsonl.gz", NULL};
    char **paths = NULL;
    size_t n = 0, w = 0, n_err = 0;
    *out = NULL;
    *n_out = 0;
    if (n_errors_files)
        *n_errors_files = 0;
    int rc = sn_paths_expand(inputs, n_inputs, suffixes, &paths, &n, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        bool named = false;
        for (size_t k = 0; k < n_inputs && !named; k++)
            named = strcmp(paths[i], inputs[k]) == 0;
        if (!named && is_errors_file(paths[i])) {
            n_err++;
            sn_free(paths[i]);
        } else {
            paths[w++] = paths[i];
        }
    }
    if (!w) {
        sn_paths_free(paths, w);
        return sn_err_set(err, SN_E_ARG, "no trajectory files (*.jsonl, *.jsonl.gz) in %s%s%s",
                          n_inputs ? inputs[0] : "the inputs", n_inputs > 1 ? " and the other "
                          "inputs" : "", n_err ? " (only simulate's errors files, which list "
                          "failed debates)" : "");
    }
    *out = paths;
    *n_out = w;
    if (n_errors_files)
        *n_errors_files = n_err;
    return SN_OK;
}

bool sn_traj_utf8_valid(const struct sn_traj *t, char *where, size_t n)
{
    if (!sn_utf8_valid_str(t->question)) {
        snprintf(where, n, "question");
        return false;
    }
    if (!sn_utf8_valid_str(t->gold_explanation) || !sn_utf8_valid_str(t->gold)) {
        snprintf(where, n, sn_utf8_valid_str(t->gold) ? "gold_explanation" : "gold");
        return false;
    }
    for (size_t i = 0; i < t->n_options; i++)
        if (!sn_utf8_valid_str(t->options[i])) {
            snprintf(where, n, "options[%zu]", i);
            return false;
        }
    for (size_t r = 0; r < t->n_rounds; r++)
        for (size_t k = 0; k < t->rounds[r].n_msgs; k++) {
            const struct sn_traj_msg *m = &t->rounds[r].msgs[k];
            if (!sn_utf8_valid_str(m->text) || !sn_utf8_valid_str(m->answer)) {
                snprintf(where, n, "rounds[%zu][%zu].text", r, k);
                return false;
            }
            for (size_t d = 0; d < m->n_deliveries; d++)
                if (!sn_utf8_valid_str(m->deliveries[d].text)) {
                    snprintf(where, n, "rounds[%zu][%zu].deliveries[%zu].text", r, k, d);
                    return false;
                }
        }
    return true;
}

