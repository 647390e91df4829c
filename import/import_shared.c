/* import/import_shared.c: the helpers every format shares (import/import_internal.h):
** debate ids, the plurality vote of a round, the trajectory writer and the one message shape of a
** format error. Below both the driver (import.c) and the formats, so that neither reaches back
** into the other. */
#include "import/import_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers shared by the formats ---- */

void imp_hash16(const char *s, char out[17])
{
    char hex[65];
    sn_sha256_hex(s, strlen(s), hex);
    memcpy(out, hex, 16);
    out[16] = '\0';
}

void imp_debate_id(const char *experiment, const char *item_id, int64_t replicate, char *out,
                   size_t cap)
{
    struct sn_sha256 h;
    uint8_t dig[32];
    char rep[32];
    int n = snprintf(rep, sizeof rep, "%lld", (long long)replicate);
    sn_sha256_init(&h);
    sn_sha256_update(&h, experiment, strlen(experiment) + 1);
    sn_sha256_update(&h, item_id, strlen(item_id) + 1);
    sn_sha256_update(&h, rep, (size_t)n);
    sn_sha256_final(&h, dig);
    char hex[17];
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", dig[i]);
    snprintf(out, cap, "%s-%s", experiment, hex);
}

static bool val_eq(const char *a, const char *b)
{
    if (!a)
        a = "";
    if (!b)
        b = "";
    return strcmp(a, b) == 0;
}

int imp_plurality(const char *const *vals, size_t n)
{
    size_t best = 0;
    int win = -1;
    bool tie = false;
    for (size_t i = 0; i < n; i++) {
        size_t c = 0;
        bool seen = false;
        for (size_t j = 0; j < n; j++) {
            if (val_eq(vals[i], vals[j])) {
                c++;
                if (j < i)
                    seen = true;
            }
        }
        if (seen)
            continue;
        if (c > best) {
            best = c;
            win = (int)i;
            tie = false;
        } else if (c == best) {
            tie = true;
        }
    }
    if (best <= 1 || tie)
        return -1;
    return win;
}

/* ---- the writer: the project's one trajectory writer (data/data.h) ---- */

int imp_write_traj(const struct imp_traj *t, struct sn_buf *out, struct sn_err *err)
{
    size_t n = (size_t)t->n_agents, nm = t->n_rounds * n;
    size_t n_edges = n * (n - 1);
    int (*edges)[2] = sn_calloc(n_edges ? n_edges : 1, sizeof *edges);
    struct sn_traj_out_agent *agents = sn_calloc(n, sizeof *agents);
    struct sn_traj_out_msg *msgs = sn_calloc(nm ? nm : 1, sizeof *msgs);
    size_t *round_len = sn_calloc(t->n_rounds ? t->n_rounds : 1, sizeof *round_len);
    int rc = SN_OK;
    if (!edges || !agents || !msgs || !round_len) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto out;
    }
    size_t e = 0;
    for (int a = 0; a < t->n_agents; a++)
        for (int b = 0; b < t->n_agents; b++)
            if (a != b) {
                edges[e][0] = a;
                edges[e][1] = b;
                e++;
            }
    for (size_t k = 0; k < n; k++) {
        const struct imp_agent *a = &t->agents[k];
        agents[k] = (struct sn_traj_out_agent){
            .role = strcmp(a->role, "adversary") ? SN_ROLE_HONEST : SN_ROLE_ADVERSARY,
            .model = a->model, .backend = a->backend, .persona = a->persona,
            .position = a->position};
    }
    for (size_t i = 0; i < nm; i++)
        msgs[i] = (struct sn_traj_out_msg){.agent = t->msgs[i].agent, .text = t->msgs[i].text,
                                           .answer = t->msgs[i].answer,
                                           .parsed = t->msgs[i].answer != NULL,
                                           .answer_rule = t->msgs[i].answer_rule};
    for (size_t r = 0; r < t->n_rounds; r++)
        round_len[r] = n;
    struct sn_traj_out o = {
        .id = t->id, .experiment = t->experiment, .scenario = t->scenario,
        .dataset = t->dataset, .item_id = t->item_id, .subject = t->subject,
        .task_name = t->task, .question = t->question, .options = t->options,
        .n_options = t->n_options, .gold = t->gold, .gold_explanation = t->gold_explanation,
        .adversarial_target = t->adversarial_target, .strategy = t->strategy,
        .topology_name = "complete", .n_agents = t->n_agents,
        .edges = (const int(*)[2])edges, .n_edges = n_edges, .agents = agents,
        .defense_name = "none", .bottom_k = -1, .msgs = msgs, .round_len = round_len,
        .n_rounds = t->n_rounds,
        .final = {.rule = "majority", .answer = t->final_answer, .correct = t->final_correct,
                  .n_rounds = (int64_t)t->n_rounds},
        .labels = t->labels, .import = t->import, .seed = 0, .replicate = (int)t->replicate,
        .backend = t->backend, .prompt_version = t->prompt_version,
        .sentinel_version = SENTINEL_VERSION};
    o.attack.name = t->attack_name;
    o.attack.placement = t->placement;
    o.attack.n_attackers = t->n_attackers;
    o.attack.best_of_n = t->best_of_n;
    rc = sn_traj_write(&o, out, err);
out:
    sn_free(edges);
    sn_free(agents);
    sn_free(msgs);
    sn_free(round_len);
    return rc;
}

int imp_fail(struct sn_err *err, const char *where, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sn_err_set(err, SN_E_FORMAT, "%s: %s", where, msg);
}
