/* tests/test_data_sim_util.h: helpers for the debate-engine tests: building an experiment in
** code, and a recording backend that wraps the sim backend and keeps, for every request, what
** the engine showed the agent (the sim_hint's view and the rendered prompt). */
#ifndef SN_TEST_DATA_SIM_UTIL_H
#define SN_TEST_DATA_SIM_UTIL_H
#include "sim/sim.h"
#include "testutil.h"

struct rec_call {
    enum sn_sim_call call;
    int  agent, round, role;
    int  n_peers;
    int  peer_agent[SN_SIM_MAX_AGENTS * 2], peer_round[SN_SIM_MAX_AGENTS * 2];
    bool peer_ally[SN_SIM_MAX_AGENTS * 2];
    char *peer_text[SN_SIM_MAX_AGENTS * 2];
    char *prompt;          /* all messages concatenated */
    char *original;        /* REWRITE: original text */
    int  original_sender;
    char *reply;
};

struct rec_backend {
    struct sn_llm_backend *base; /* the handle around this recorder (sn_llm_backend_create) */
    struct sn_llm_backend *inner;
    struct rec_call *calls;
    size_t n, cap;
};

static char *xdup(const char *s) { return s ? strdup(s) : NULL; }

static int rec_complete(struct sn_llm_backend *b, const struct sn_llm_request *req,
                        struct sn_llm_reply *out, struct sn_err *err)
{
    struct rec_backend *rb = sn_llm_backend_impl(b);
    const struct sn_sim_hint *h = req->sim_hint;
    int rc = sn_llm_complete(rb->inner, req, out, err);
    if (rc)
        return rc;
    if (rb->n == rb->cap) {
        rb->cap = rb->cap ? rb->cap * 2 : 256;
        rb->calls = realloc(rb->calls, rb->cap * sizeof *rb->calls);
    }
    struct rec_call *c = &rb->calls[rb->n++];
    memset(c, 0, sizeof *c);
    c->call = h->call;
    c->agent = h->agent;
    c->round = h->round;
    c->role = h->role;
    c->n_peers = (int)h->n_peers;
    for (size_t i = 0; i < h->n_peers; i++) {
        c->peer_agent[i] = h->peers[i].agent;
        c->peer_round[i] = h->peers[i].round;
        c->peer_ally[i] = h->peers[i].ally;
        c->peer_text[i] = xdup(h->peers[i].text);
    }
    size_t len = 1;
    for (size_t i = 0; i < req->n_messages; i++)
        len += strlen(req->messages[i].content) + 2;
    c->prompt = calloc(1, len);
    for (size_t i = 0; i < req->n_messages; i++) {
        strcat(c->prompt, req->messages[i].content);
        strcat(c->prompt, "\n");
    }
    c->original = xdup(h->original_text);
    c->original_sender = h->original_sender;
    c->reply = xdup(out->text);
    return SN_OK;
}

static void rec_reset(struct rec_backend *rb)
{
    for (size_t i = 0; i < rb->n; i++) {
        struct rec_call *c = &rb->calls[i];
        for (int j = 0; j < c->n_peers; j++)
            free(c->peer_text[j]);
        free(c->prompt);
        free(c->original);
        free(c->reply);
    }
    rb->n = 0;
}

/* ops->close: frees the recorder; close the handle with sn_llm_backend_close(rb->base). */
static void rec_close(struct sn_llm_backend *b)
{
    struct rec_backend *rb = sn_llm_backend_impl(b);
    rec_reset(rb);
    free(rb->calls);
    sn_llm_backend_close(rb->inner);
    free(rb);
}

static const struct sn_llm_backend_ops rec_ops = {"record", rec_complete, rec_close};

static inline struct rec_backend *rec_open(const char *sim_config_json)
{
    struct rec_backend *rb = calloc(1, sizeof *rb);
    struct sn_err err = {0};
    if (sn_llm_backend_create(&rec_ops, rb, "record(sim)", &rb->base, &err)) {
        fprintf(stderr, "record backend: %s\n", err.msg);
        exit(2);
    }
    cJSON *cfg = cJSON_Parse(sim_config_json ? sim_config_json : "{\"kind\":\"sim\"}");
    if (sn_sim_endpoint_open(cfg, &rb->inner, &err)) {
        fprintf(stderr, "sim open: %s\n", err.msg);
        exit(2);
    }
    cJSON_Delete(cfg);
    return rb;
}

/* An experiment built in code. topo: JSON text of the topology spec. */
static cJSON *keep_alive[256];
static int n_keep;

static void mk_exp(struct sn_experiment *x, const char *name, enum sn_scenario sc, int n,
                   int n_adv, int rounds, enum sn_strategy st, const char *topo,
                   const char *placement)
{
    memset(x, 0, sizeof *x);
    x->name = name;
    x->scenario = sc;
    x->n_agents = n;
    x->n_adversaries = n_adv;
    x->rounds = rounds;
    x->strategy = st;
    x->replicates = 1;
    x->seed = 11;
    x->best_of_n = 1;
    x->injection_rate = 0.5;
    x->temperature = -1;
    x->top_p = -1;
    x->placement = placement ? placement : "random";
    x->victim_rule = "random";
    struct sn_err err = {0};
    cJSON *t = cJSON_Parse(topo ? topo : "\"complete\"");
    keep_alive[n_keep++ % 256] = t;
    x->topology_spec = t;
    if (sn_topology_build(t, "topology", n, x->seed, &x->topology, &err) ||
        sn_prompts_init(&x->prompts, NULL, "prompts", &err) ||
        sn_defense_config_parse(NULL, "defense", &x->defense, &err)) {
        fprintf(stderr, "mk_exp: %s\n", err.msg);
        exit(2);
    }
}

static void free_keep_alive(void)
{
    for (int i = 0; i < n_keep && i < 256; i++)
        cJSON_Delete(keep_alive[i]);
}

/* A setup with every slot on backend b. */
struct setup_store {
    struct sn_debate_setup s;
    struct sn_llm_backend *b[SN_SIM_MAX_AGENTS];
    const char *model[SN_SIM_MAX_AGENTS], *name[SN_SIM_MAX_AGENTS];
};

static void mk_setup(struct setup_store *ss, const struct sn_experiment *x,
                     struct sn_llm_backend *b)
{
    memset(ss, 0, sizeof *ss);
    for (int k = 0; k < x->n_agents; k++) {
        ss->b[k] = b;
        ss->model[k] = "sim";
        ss->name[k] = "rec";
    }
    ss->s.x = x;
    ss->s.backend = ss->b;
    ss->s.model = ss->model;
    ss->s.backend_name = ss->name;
    ss->s.judge = b;
    ss->s.backend_desc = "record(sim)";
}

/* Runs one debate and returns its parsed JSON (caller deletes). */
static inline cJSON *run_debate(const struct sn_debate_setup *s, const struct sn_question *q, int rep)
{
    struct sn_buf line = {0};
    struct sn_err err = {0};
    if (sn_debate_run(s, q, rep, &line, NULL, &err)) {
        fprintf(stderr, "debate: %s\n", err.msg);
        sn_buf_free(&line);
        return NULL;
    }
    cJSON *j = cJSON_Parse(line.data);
    if (!j)
        fprintf(stderr, "debate line is not JSON: %.200s\n", line.data);
    sn_buf_free(&line);
    return j;
}

/* rounds[t] message of agent k (NULL if it did not speak). */
static inline const cJSON *msg_of(const cJSON *traj, int t, int k)
{
    const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(traj, "rounds"), t);
    const cJSON *m;
    cJSON_ArrayForEach(m, r)
    {
        if (cJSON_GetObjectItem(m, "agent")->valueint == k)
            return m;
    }
    return NULL;
}

static inline const char *jstr_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

#endif
