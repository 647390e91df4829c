/* sim/sim.h: the debate engine, attack scenarios, the per-round defense hook, the
** structured `sim_hint` read by the built-in simulated agents, and `simulate` runs
** (docs/design.md §2, §4). Behaviour model, visibility rules and recipe keys:
** docs/simulate.md. Trajectory format: docs/formats.md "Trajectory".
**
** Layers, bottom up:
**   topology.c  who receives whom (directed adjacency) and attacker placement rules
**   prompts.c   versioned prompt templates (recipe-overridable) -> chat messages
**   attacks.c   adversarial targets, rhetoric/persona names, AITM interception plans
**   simagent.c  the `sim` backend: reads struct sn_sim_hint, writes real sentences
**   engine.c    one debate: rounds, strategies, attacks, defense filter, final decision,
**               serialised as one trajectory line
**   run.c       a `simulate` job: recipe -> experiments -> work list -> worker threads ->
**               append-only gzip trajectories, resume, shards, errors file
** The engine talks to LLMs only through llm/llm.h. A debate is a pure function of
** (experiment, item, replicate, seed, backend replies): thread timing never changes it. */
#ifndef SN_SIM_H
#define SN_SIM_H
#include "common/common.h"
#include "data/data.h"
#include "defense/defense.h"
#include "llm/llm.h"

#define SN_PROMPT_VERSION "sentinel-prompts/1"
#define SN_SIM_MAX_AGENTS 64

/* enum sn_role and sn_role_name() come from data/data.h. */
enum sn_scenario {
    SN_SCEN_NONE, SN_SCEN_COLLABORATION, SN_SCEN_NETSAFE, SN_SCEN_AITM,
    SN_SCEN_PROMPT_INJECTION, SN_SCEN_PSYSAFE, SN_SCEN_AUTOINJECT,
    SN_SCEN_STYLE_MATCHED, /* evaluation: argues the target in the honest agents' own style */
    SN_SCEN_COUNT
};
enum sn_strategy { SN_STRAT_SIMULTANEOUS, SN_STRAT_ONE_BY_ONE, SN_STRAT_SC_ONE_BY_ONE,
                   SN_STRAT_COUNT };
enum sn_decision { SN_DECIDE_MAJORITY, SN_DECIDE_JUDGE };

const char *sn_scenario_name(enum sn_scenario s);
const char *sn_strategy_name(enum sn_strategy s);
int sn_scenario_parse(const char *s, enum sn_scenario *out);
int sn_strategy_parse(const char *s, enum sn_strategy *out);

/* ---- topology (topology.c) ------------------------------------------------------------ */

struct sn_topology {
    char  name[16];      /* complete chain star wheel tree ring random edges */
    int   n;
    uint8_t adj[SN_SIM_MAX_AGENTS][SN_SIM_MAX_AGENTS]; /* adj[from][to]: `to` receives `from` */
};
/* spec: a name string, or {"name":..., "p":0.5, "seed":1} (random), or
** {"name":"edges","edges":[[0,1],...],"undirected":false}. All named graphs are undirected
** (both directions); star's hub and tree's root are agent 0; wheel = star + ring of spokes. */
int sn_topology_build(const cJSON *spec, const char *where, int n, uint64_t seed,
                      struct sn_topology *out, struct sn_err *err);
int sn_topology_degree(const struct sn_topology *t, int k); /* out-degree */

/* Attacker placement: chooses n_attackers distinct slots. rule: "random" (seeded per debate),
** "hub" (highest degree, ties to lower id), "leaf" (lowest degree, ties to higher id), "root"
** (agent 0 first, then by BFS order), "first", "last", or explicit slots (explicit != NULL). */
int sn_placement_choose(const struct sn_topology *t, const char *rule, const int *explicit_slots,
                        int n_explicit, int n_attackers, uint64_t seed, int *slots,
                        struct sn_err *err);

/* ---- the sim agents' view (simagent.c reads it) --------------------------------------- */

enum sn_sim_call {
    SN_SIM_CALL_ANSWER,  /* speak in a round */
    SN_SIM_CALL_REFLECT, /* self-reflection on one's own draft */
    SN_SIM_CALL_REWRITE, /* interceptor / faulty-agent transform of original_text */
    SN_SIM_CALL_JUDGE,   /* final decision by a judge over the last round */
    SN_SIM_CALL_SCORE,   /* best-of-N: rate the persuasiveness of original_text in [0,1] */
    SN_SIM_CALL_EXTRACT, /* second-pass extraction: state the final answer of original_text */
};

/* One message an agent has in view (what was delivered to it, after the defense). */
struct sn_sim_peer {
    int         agent;
    int         round;     /* the round the message was said in */
    const char *text;      /* delivered text */
    const char *answer;    /* parsed answer of the delivered text; NULL if unparsed */
    bool        ally;      /* a fellow adversary's reply (collaboration) */
};

#define SN_SIM_HINT_MAGIC 0x53484e54u /* "SHNT" */
struct sn_sim_hint {
    uint32_t magic;
    enum sn_sim_call call;
    const struct sn_question *q;
    const char *target;          /* adversarial target (NULL without attack) */
    enum sn_role role;
    enum sn_scenario scenario;
    const char *persona;         /* rhetoric (ethos/pathos/logos), bias persona, or NULL */
    int agent, round, n_rounds;
    const char *own_prev;        /* own parsed answer of the previous turn; NULL at round 0 */
    const char *own_text;        /* REFLECT: the draft being reviewed */
    const struct sn_sim_peer *peers;
    size_t n_peers;
    bool reflected;              /* the agent went through self-reflection earlier */
    bool consensus_prev;         /* all of its view agreed with own_prev last turn */
    const char *original_text;   /* REWRITE/SCORE: the message in transit or candidate */
    const char *original_answer; /* REWRITE: its parsed answer */
    int original_sender;
    int candidate;               /* best-of-N candidate index */
    bool injected;               /* autoinject faulty message */
};

/* The `sim` backend kind (llm/llm.h), e.g. {"kind":"sim","competence":0.8,...}; keys:
** docs/simulate.md#the-sim-backend-behaviour-model. Unknown keys are an error naming the nearest valid one. */
int sn_sim_backend_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err);
/* Opens a recipe endpoint of any kind a debate can use: "sim" here, "openai" (and whatever
** else llm/ builds in) through sn_llm_backend_open_with. */
int sn_sim_endpoint_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err);

/* The sim backend's persuasiveness estimate of a text in [0, 1] (cue-word model,
** docs/simulate.md#the-sim-backend-behaviour-model). Deterministic; used by sim agents and the sim judge. */
double sn_sim_persuasion(const char *text);

/* ---- prompts (prompts.c) --------------------------------------------------------------- */

enum sn_prompt_id {
    SN_PROMPT_NONE = -1, /* no system message */
    SN_PROMPT_SYSTEM_HONEST, SN_PROMPT_SYSTEM_ADVERSARY, SN_PROMPT_FIRST_ROUND,
    SN_PROMPT_DEBATE_ROUND, SN_PROMPT_REFLECT, SN_PROMPT_REWRITE, SN_PROMPT_JUDGE,
    SN_PROMPT_SCORE, SN_PROMPT_EXTRACT,
    SN_PROMPT_SYSTEM_STYLE_MATCHED, /* the style-matched adversary's system message */
    SN_PROMPT_COUNT
};
struct sn_prompts {
    const char *text[SN_PROMPT_COUNT]; /* borrowed: defaults or recipe strings */
};
/* Defaults, then overrides from a recipe object {"system_honest": "...", ...} (unknown keys
** are an error). `obj` must outlive the prompts. */
int sn_prompts_init(struct sn_prompts *p, const cJSON *obj, const char *where,
                    struct sn_err *err);
/* Renders template id with {placeholders} from vars (NULL-terminated name/value pairs). */
int sn_prompt_render(const struct sn_prompts *p, enum sn_prompt_id id, const char *const *vars,
                     struct sn_buf *out, struct sn_err *err);

/* ---- defense hook ---------------------------------------------------------------------- */

/* Called for each receiver before it speaks, with the messages in its view; clears keep[i] to
** drop message i. A `sentinel` defense runs Algorithm 1 of the SentinelNet paper (section 4.3
** "Defense Integration"; docs/design.md §4 "Runtime (Algorithm 1)"; docs/eval.md): the
** receiver, when it is a sentinel, scores each incoming message with `score` (higher = more
** trustworthy; the runtime detector's R(response ⊕ context)), adds the bottom-k senders to its
** cumulative blacklist and drops blacklisted senders from then on. */
struct sn_defense_scorer {
    int (*score)(void *ctx, const char *context, const char *response, float *out,
                 struct sn_err *err);
    void *ctx;
    /* The context the scorer was trained on: the tuple builder's (context/context.h, as
    ** sn_tuples_context renders it) with these history settings (0 = the defaults of struct
    ** sn_context_params); the runtime detector's GGUF stores them. */
    unsigned history_sentences, history_chars;
};
struct sn_defense_config {
    char name[16];     /* "none" or "sentinel" */
    int  bottom_k;     /* sentinel: senders blacklisted per round per receiver (default 1) */
    enum sn_defense_rule rule;       /* recipe "rule": "all" (default) or "unlisted" */
    bool every_receiver;             /* recipe "sentinels": "honest" (default: only the honest
                                     ** agents run the defense, as in the paper) or "all" */
    char detector[1024];             /* sentinel: recipe "detector", the GGUF path ("" = none) */
    struct sn_defense_scorer scorer; /* sentinel: filled by sn_simulate_params.scorer_open;
                                     ** NULL score = no detector available (create fails) */
};
int sn_defense_config_parse(const cJSON *spec, const char *where, struct sn_defense_config *out,
                            struct sn_err *err);

/* The bottom-k step itself (sn_defense_bottom_k, the tie rule, the round seed) and the rule
** enum are defense/defense.h's: the runtime library ships the same code. */


struct sn_defense; /* per-debate state (blacklists) */
int  sn_defense_create(const struct sn_defense_config *cfg, int n_agents,
                       struct sn_defense **out, struct sn_err *err);
void sn_defense_free(struct sn_defense *d);
/* Which receivers are sentinels (bit k = agent k) and the seed of the tie rule. Until called:
** every receiver, tie seed 0. The engine sets the honest agents and the debate seed; with
** `every_receiver` the mask is ignored. */
void sn_defense_set_sentinels(struct sn_defense *d, uint64_t sentinels, uint64_t tie_seed);
int  sn_defense_filter(struct sn_defense *d, int receiver, int round, const char *context,
                       const struct sn_sim_peer *msgs, size_t n, bool *keep,
                       struct sn_err *err);
/* The receiver's blacklist (bitmask over agent ids) for the trajectory; 0 under `none`. */
uint64_t sn_defense_blacklist(const struct sn_defense *d, int receiver);

/* ---- experiments ----------------------------------------------------------------------- */

struct sn_edge { int from, to; };

/* One simulate experiment, parsed from the recipe (run.c). Strings are borrowed from the
** recipe tree, which must outlive the experiment. */
struct sn_experiment {
    const char *name;
    enum sn_scenario scenario;
    const cJSON *dataset;          /* dataset spec (data/data.h) */
    int  n_agents, n_adversaries, rounds;
    enum sn_strategy strategy;
    const cJSON *topology_spec;
    struct sn_topology topology;
    const char *placement;         /* placement rule name */
    int  placement_slots[SN_SIM_MAX_AGENTS];
    int  n_placement_slots;        /* > 0: explicit slots */
    const char *rhetoric;          /* ethos/pathos/logos/mixed/none */
    const char *persona;           /* psysafe bias persona */
    int  slot_endpoint[SN_SIM_MAX_AGENTS]; /* index into the run's endpoints, per slot */
    int  judge_endpoint;
    int  replicates;
    uint64_t seed;
    bool early_stop, self_reflection;
    /* "adversaries_join": 0 = from round 0 (default); > 0 = adversary slots stay silent until
    ** the honest agents' round answers agree (consensus) or round join_by is reached, as the
    ** prior-consensus experiment of "Allies Turn Foes" §3.2 holds the adversary back (T <= 3) */
    int  join_by;
    enum sn_decision decision;
    struct sn_defense_config defense;
    struct sn_prompts prompts;
    const cJSON *labels;           /* object or NULL */
    int  best_of_n;
    struct sn_edge intercepts[SN_SIM_MAX_AGENTS * 4];
    int  n_intercepts;             /* explicit AITM edges; 0 = default (see attacks.c) */
    const char *victim_rule;       /* AITM: how victims are chosen when edges are not given */
    double injection_rate;         /* autoinject: share of a faulty agent's messages rewritten */
    bool adaptive;                 /* autoinject: adaptive mode */
    bool llm_extract;              /* ask the speaker's endpoint to extract an unparsed answer */
    double temperature, top_p;
    int  max_tokens;
};

/* What the engine needs besides the experiment: per-slot backends and how to record them. */
struct sn_debate_setup {
    const struct sn_experiment *x;
    struct sn_llm_backend *const *backend; /* n_agents entries (per slot) */
    const char *const *model;              /* n_agents entries: recorded agents[].model */
    const char *const *backend_name;       /* n_agents entries: recorded agents[].backend */
    /* Per-role overrides (heterogeneous panels whose roles are placed per debate): when
    ** role_backend[r] is set, every slot that gets role r uses it and its model/name. */
    struct sn_llm_backend *role_backend[SN_ROLE_COUNT];
    const char *role_model[SN_ROLE_COUNT];
    const char *role_backend_name[SN_ROLE_COUNT];
    struct sn_llm_backend *judge;          /* judge / best-of-N scorer */
    const char *backend_desc;              /* recorded "backend" string */
};

/* Deterministic debate id: "<experiment>-<16 hex of sha256(experiment, item, replicate,
** seed)>". out must hold 64 + strlen(experiment) bytes. */
void sn_debate_id(const char *experiment, const char *item_id, int replicate, uint64_t seed,
                  char *out, size_t cap);
/* Seed of one debate (from the experiment seed, item id and replicate). */
uint64_t sn_debate_seed(uint64_t exp_seed, const char *item_id, int replicate);

/* Counters a debate reports (for progress and benchmarks). */
struct sn_debate_stats {
    uint64_t calls, prompt_tokens, completion_tokens;
};

/* Runs one debate and appends its trajectory line (JSON, no newline) to `line`. On failure
** (a backend error after its retries) nothing is appended and err says which agent/round. */
int sn_debate_run(const struct sn_debate_setup *s, const struct sn_question *q, int replicate,
                  struct sn_buf *line, struct sn_debate_stats *stats, struct sn_err *err);

/* ---- attacks (attacks.c) --------------------------------------------------------------- */

/* The counterfactual target: MC = the option after gold (wrapping); numeric = a plausible
** perturbation of gold that differs from it, chosen from the item id. */
void sn_attack_target(const struct sn_question *q, char out[SN_ANSWER_MAX]);
/* Role of each slot for the experiment's scenario and placement (seeded per debate), plus
** the AITM interception plan: intercepted[from][to] set for edges an interceptor rewrites,
** interceptor_of[from][to] the interceptor's slot. */
struct sn_attack_plan {
    enum sn_role role[SN_SIM_MAX_AGENTS];
    const char  *persona[SN_SIM_MAX_AGENTS];
    uint8_t      intercepted[SN_SIM_MAX_AGENTS][SN_SIM_MAX_AGENTS];
    int8_t       interceptor_of[SN_SIM_MAX_AGENTS][SN_SIM_MAX_AGENTS];
    char         target[SN_ANSWER_MAX];
};
int sn_attack_plan(const struct sn_experiment *x, const struct sn_question *q, uint64_t seed,
                   struct sn_attack_plan *plan, struct sn_err *err);

/* ---- simulate runs (run.c) ------------------------------------------------------------- */

struct sn_simulate_params {
    const char *out_dir;
    int  shard_index, shard_count;   /* 0/1 = everything */
    int  replicates;                 /* > 0 overrides every experiment's */
    size_t limit;                    /* > 0 caps items per experiment */
    int  threads;                    /* 0 = 1 for sim-only runs, else the largest concurrency */
    int  progress_mode;              /* sn_progress force_mode */
    volatile int *cancel;            /* set to non-zero (e.g. by SIGINT) to stop cleanly */
    /* The `sentinel` defense's scorer: called once per experiment with that defense, with its
    ** recipe "detector" path; fills *out (called from every worker thread at once: the scorer
    ** must be thread-safe) and keeps it alive until sn_simulate_run returns; the caller frees
    ** what it opened. data/ cannot open a detector (export/ is above it): `sentinel simulate`
    ** (cli/cmd_simulate.c) passes the runtime detector. NULL = `sentinel` is refused. */
    int (*scorer_open)(void *user, const char *detector, struct sn_defense_scorer *out,
                       struct sn_err *err);
    void *scorer_user;
};
struct sn_simulate_report {
    uint64_t planned, skipped, done, failed;
    char traj_path[1024], errors_path[1024];
};
struct sn_simulate_params sn_simulate_default_params(void);
/* Runs the recipe's `simulate` section. Returns SN_OK when every planned debate is written
** (then failed == 0); when some failed, returns SN_E_BACKEND with the count, the failures
** are in the errors file and the next run retries them. */
int sn_simulate_run(const cJSON *recipe, const struct sn_simulate_params *p,
                    struct sn_simulate_report *rep, struct sn_err *err);
/* Decodes recipe.simulate exactly as sn_simulate_run does before its first debate (every key,
** type and range, the endpoints opened and closed again, the datasets loaded, one debate
** setup per experiment) and runs nothing: the check `sentinel run` makes of the section before
** any stage runs (docs/run.md "Checking a recipe"). Writes no file (an endpoint's cache_dir is
** created, as simulate would). */
int sn_simulate_check_recipe(const cJSON *recipe, struct sn_err *err);

#endif
