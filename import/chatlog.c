/* import/chatlog.c: the generic chat-log reader, schema sentinel.chatlog/1 (docs/formats.md
** "Chat log"): one debate per line with its question, gold, agents (with roles) and per-round
** messages, for users who bring logs from their own agent frameworks. */
#include "import/import_internal.h"
#include "data/data.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>

#define CL_SCHEMA "sentinel.chatlog/1"
#define CL_MAX_AGENTS 64
#define CL_MAX_ROUNDS 1000

static int cl_open(struct imp_file *f, const char *root, struct sn_err *err)
{
    (void)err;
    size_t k = strlen(root);
    while (k > 1 && root[k - 1] == '/')
        k--;
    f->rel = (k && !strncmp(f->path, root, k) && f->path[k] == '/') ? f->path + k + 1 : f->path;
    return SN_OK;
}

static void cl_close(struct imp_file *f) { (void)f; }

/* An optional string field: absent or null -> dflt; another type -> error. */
static int opt_str(const cJSON *o, const char *key, const char *dflt, const char **out,
                   const char *where, struct sn_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) {
        *out = dflt;
        return SN_OK;
    }
    if (!cJSON_IsString(j))
        return imp_fail(err, where, "field '%s': expected string or null", key);
    *out = j->valuestring;
    return SN_OK;
}

/* Normalises an answer of the task: MC letters (any case) within the options, numbers. */
static bool norm_answer(const char *s, enum sn_task task, size_t n_opt, char out[SN_ANSWER_MAX])
{
    if (task == SN_TASK_MC) {
        if (strlen(s) != 1 || !isalpha((unsigned char)s[0]))
            return false;
        char c = (char)toupper((unsigned char)s[0]);
        if (c >= 'A' + (int)n_opt)
            return false;
        out[0] = c;
        out[1] = '\0';
        return true;
    }
    return sn_normalize_number(s, out);
}

static int cl_record(struct imp_file *f, const char *json, size_t len, uint64_t line,
                     const char *where, struct sn_buf *out, struct sn_err *err)
{
    cJSON *root = NULL, *prov = NULL;
    struct sn_err jerr = {0};
    if (sn_json_parse(json, len, where, &root, &jerr))
        return sn_err_set(err, SN_E_FORMAT, "%s", jerr.msg);
    int rc = SN_OK;
    const char **opts = NULL;
    struct imp_agent *agents = NULL;
    struct imp_msg *msgs = NULL;
    char (*ans)[SN_ANSWER_MAX] = NULL;
    const char **last = NULL;
    char *item_buf = NULL;
    size_t n_opt = 0;
    if (!cJSON_IsObject(root)) {
        rc = imp_fail(err, where, "expected a JSON object");
        goto out;
    }
    const char *schema, *question, *gold_s, *task_s, *experiment, *dataset, *item_id, *subject,
        *expl, *target_s, *id_s;
    if ((rc = opt_str(root, "format", NULL, &schema, where, err)) ||
        (rc = opt_str(root, "question", NULL, &question, where, err)) ||
        (rc = opt_str(root, "gold", NULL, &gold_s, where, err)) ||
        (rc = opt_str(root, "task", "mc", &task_s, where, err)) ||
        (rc = opt_str(root, "experiment", "chatlog", &experiment, where, err)) ||
        (rc = opt_str(root, "dataset", "chatlog", &dataset, where, err)) ||
        (rc = opt_str(root, "item_id", NULL, &item_id, where, err)) ||
        (rc = opt_str(root, "subject", NULL, &subject, where, err)) ||
        (rc = opt_str(root, "gold_explanation", NULL, &expl, where, err)) ||
        (rc = opt_str(root, "adversarial_target", NULL, &target_s, where, err)) ||
        (rc = opt_str(root, "id", NULL, &id_s, where, err)))
        goto out;
    if (!schema || strcmp(schema, CL_SCHEMA)) {
        rc = imp_fail(err, where, "field 'format': expected \"" CL_SCHEMA "\"");
        goto out;
    }
    if (!question || !gold_s) {
        rc = imp_fail(err, where, "fields 'question' and 'gold' are required strings");
        goto out;
    }
    enum sn_task task;
    if (!strcmp(task_s, "mc"))
        task = SN_TASK_MC;
    else if (!strcmp(task_s, "numeric"))
        task = SN_TASK_NUMERIC;
    else {
        rc = imp_fail(err, where, "field 'task': expected \"mc\" or \"numeric\"");
        goto out;
    }
    const cJSON *jo = cJSON_GetObjectItemCaseSensitive(root, "options");
    if (task == SN_TASK_MC) {
        if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) < 2 || cJSON_GetArraySize(jo) > 26) {
            rc = imp_fail(err, where, "field 'options': expected 2 to 26 strings for task mc");
            goto out;
        }
        n_opt = (size_t)cJSON_GetArraySize(jo);
        opts = sn_calloc(n_opt, sizeof *opts);
        if (!opts) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            goto out;
        }
        size_t i = 0;
        for (const cJSON *e = jo->child; e; e = e->next, i++)
            if (!(opts[i] = cJSON_IsString(e) ? e->valuestring : NULL)) {
                rc = imp_fail(err, where, "field 'options[%zu]': expected string", i);
                goto out;
            }
    } else if (jo && !(cJSON_IsArray(jo) && cJSON_GetArraySize(jo) == 0) && !cJSON_IsNull(jo)) {
        rc = imp_fail(err, where, "field 'options': expected [] or absent for task numeric");
        goto out;
    }
    char gold[SN_ANSWER_MAX], target[SN_ANSWER_MAX];
    if (!norm_answer(gold_s, task, n_opt, gold)) {
        rc = imp_fail(err, where, "field 'gold': '%.40s' is not an answer of the task", gold_s);
        goto out;
    }
    if (target_s && !norm_answer(target_s, task, n_opt, target)) {
        rc = imp_fail(err, where, "field 'adversarial_target': '%.40s' is not an answer of the task",
                  target_s);
        goto out;
    }
    /* agents */
    const cJSON *ja = cJSON_GetObjectItemCaseSensitive(root, "agents");
    int n_agents = cJSON_IsArray(ja) ? cJSON_GetArraySize(ja) : 0;
    if (n_agents < 1 || n_agents > CL_MAX_AGENTS) {
        rc = imp_fail(err, where, "field 'agents': expected an array of 1 to %d agents",
                  CL_MAX_AGENTS);
        goto out;
    }
    agents = sn_calloc((size_t)n_agents, sizeof *agents);
    if (!agents) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto out;
    }
    int n_adv = 0, k = 0;
    for (const cJSON *a = ja->child; a; a = a->next, k++) {
        char w2[64];
        snprintf(w2, sizeof w2, "agents[%d]", k);
        const char *role, *model, *persona;
        if (!cJSON_IsObject(a)) {
            rc = imp_fail(err, where, "field '%s': expected object", w2);
            goto out;
        }
        if ((rc = opt_str(a, "role", "honest", &role, where, err)) ||
            (rc = opt_str(a, "model", "unknown", &model, where, err)) ||
            (rc = opt_str(a, "persona", NULL, &persona, where, err)))
            goto out;
        if (strcmp(role, "honest") && strcmp(role, "adversary")) {
            rc = imp_fail(err, where, "field '%s.role': expected \"honest\" or \"adversary\"", w2);
            goto out;
        }
        agents[k].role = role;
        agents[k].model = model;
        agents[k].persona = persona;
        agents[k].backend = "import";
        if (!strcmp(role, "adversary")) {
            n_adv++;
            agents[k].position = "explicit";
        }
    }
    if (target_s && !n_adv) {
        rc = imp_fail(err, where, "field 'adversarial_target' given but no agent is an adversary");
        goto out;
    }
    /* rounds: every agent speaks once per round */
    const cJSON *jr = cJSON_GetObjectItemCaseSensitive(root, "rounds");
    int R = cJSON_IsArray(jr) ? cJSON_GetArraySize(jr) : 0;
    if (R < 1 || R > CL_MAX_ROUNDS) {
        rc = imp_fail(err, where, "field 'rounds': expected an array of 1 to %d rounds",
                  CL_MAX_ROUNDS);
        goto out;
    }
    size_t nm = (size_t)R * (size_t)n_agents;
    msgs = sn_calloc(nm, sizeof *msgs);
    ans = sn_calloc(nm, sizeof *ans);
    last = sn_calloc((size_t)n_agents, sizeof *last);
    if (!msgs || !ans || !last) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto out;
    }
    bool force_extract = f->p->answers == SN_IMPORT_ANSWERS_SENTINEL;
    int t = 0;
    for (const cJSON *r = jr->child; r; r = r->next, t++) {
        if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != n_agents) {
            rc = imp_fail(err, where, "field 'rounds[%d]': expected one message per agent (%d)", t,
                      n_agents);
            goto out;
        }
        int j = 0;
        for (const cJSON *m = r->child; m; m = m->next, j++) {
            const cJSON *ag = cJSON_GetObjectItemCaseSensitive(m, "agent");
            const cJSON *tx = cJSON_GetObjectItemCaseSensitive(m, "text");
            if (!cJSON_IsNumber(ag) || ag->valuedouble != (int)ag->valuedouble ||
                ag->valuedouble < 0 || ag->valuedouble >= n_agents || !cJSON_IsString(tx)) {
                rc = imp_fail(err, where, "field 'rounds[%d][%d]': expected {\"agent\": 0..%d, "
                          "\"text\": string}", t, j, n_agents - 1);
                goto out;
            }
            int a = (int)ag->valuedouble;
            struct imp_msg *mm = &msgs[(size_t)t * (size_t)n_agents + (size_t)a];
            if (mm->text) {
                rc = imp_fail(err, where, "field 'rounds[%d]': agent %d speaks twice", t, a);
                goto out;
            }
            mm->agent = a;
            mm->text = tx->valuestring;
            char *an = ans[(size_t)t * (size_t)n_agents + (size_t)a];
            const cJSON *ja2 = cJSON_GetObjectItemCaseSensitive(m, "answer");
            bool extracted = sn_extract_answer(tx->valuestring, task, n_opt, an);
            if (ja2 && !force_extract) {
                if (cJSON_IsNull(ja2)) {
                    mm->answer = NULL;
                } else if (cJSON_IsString(ja2) && norm_answer(ja2->valuestring, task, n_opt,
                                                              an)) {
                    mm->answer = an;
                } else {
                    rc = imp_fail(err, where, "field 'rounds[%d][%d].answer': expected an answer "
                              "of the task or null", t, j);
                    goto out;
                }
                mm->answer_rule = "given";
            } else {
                mm->answer = extracted ? an : NULL;
                mm->answer_rule = "sentinel";
            }
            if (ja2 && !cJSON_IsNull(ja2) && cJSON_IsString(ja2)) {
                char g2[SN_ANSWER_MAX];
                bool gok = norm_answer(ja2->valuestring, task, n_opt, g2);
                char ex[SN_ANSWER_MAX];
                bool eok = sn_extract_answer(tx->valuestring, task, n_opt, ex);
                if (!(gok && eok && sn_answer_equal(g2, ex, task)))
                    f->sum->n_answers_differ++;
            }
            if (!mm->answer)
                f->sum->n_unparsed++;
            f->sum->n_messages++;
        }
    }
    /* final: strict plurality of the last round's parsed answers (unparsed abstain) */
    size_t nv = 0;
    for (int a = 0; a < n_agents; a++) {
        const char *v = msgs[(size_t)(R - 1) * (size_t)n_agents + (size_t)a].answer;
        if (v)
            last[nv++] = v;
    }
    int w = nv == 1 ? 0 : imp_plurality(last, nv);
    const char *final = w >= 0 && nv ? last[w] : NULL;
    if (!item_id) {
        char h[17];
        imp_hash16(question, h);
        struct sn_buf ib = {0};
        if (sn_buf_printf(&ib, err, "%s-%s", dataset, h)) {
            rc = err->code;
            goto out;
        }
        item_buf = ib.data;
        item_id = item_buf;
    }
    const cJSON *jrep = cJSON_GetObjectItemCaseSensitive(root, "replicate");
    int64_t rep = 0;
    if (jrep) {
        if (!cJSON_IsNumber(jrep) || jrep->valuedouble < 0 || jrep->valuedouble > 1e9 ||
            jrep->valuedouble != (double)(int64_t)jrep->valuedouble) {
            rc = imp_fail(err, where, "field 'replicate': expected a non-negative integer");
            goto out;
        }
        rep = (int64_t)jrep->valuedouble;
    }
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(root, "labels");
    if (labels && !cJSON_IsObject(labels)) {
        rc = imp_fail(err, where, "field 'labels': expected object");
        goto out;
    }
    prov = cJSON_CreateObject();
    if (!prov || !cJSON_AddStringToObject(prov, "format", "chatlog") ||
        !cJSON_AddStringToObject(prov, "path", f->rel) ||
        !cJSON_AddNumberToObject(prov, "line", (double)line) ||
        !cJSON_AddStringToObject(prov, "answer_rule", force_extract ? "sentinel" : "given") ||
        (f->p->repo && !cJSON_AddStringToObject(prov, "repo", f->p->repo)) ||
        (f->p->commit && !cJSON_AddStringToObject(prov, "commit", f->p->commit))) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto out;
    }
    char id[600];
    if (id_s)
        snprintf(id, sizeof id, "%s", id_s);
    else
        imp_debate_id(experiment, item_id, rep, id, sizeof id);
    struct imp_traj tr = {
        .id = id, .experiment = experiment, .scenario = n_adv ? "collaboration" : "none",
        .dataset = dataset, .item_id = item_id, .subject = subject, .task = task_s,
        .question = question, .options = opts, .n_options = n_opt, .gold = gold,
        .gold_explanation = expl, .adversarial_target = target_s ? target : NULL,
        .strategy = "simultaneous", .n_agents = n_agents, .agents = agents,
        .attack_name = n_adv ? "collaboration" : "none", .n_attackers = n_adv,
        .best_of_n = n_adv ? 1 : 0, .placement = n_adv ? "explicit" : NULL, .msgs = msgs,
        .n_rounds = (size_t)R, .final_answer = final,
        .final_correct = final && sn_answer_equal(final, gold, task),
        .labels = labels, .import = prov, .replicate = rep,
        .backend = "import: chat log imported (sentinel.chatlog/1); latency and token counts "
                   "are unknown (written as 0)",
        .prompt_version = "chatlog"};
    rc = imp_write_traj(&tr, out, err);
out:
    cJSON_Delete(root);
    cJSON_Delete(prov);
    sn_free(opts);
    sn_free(agents);
    sn_free(msgs);
    sn_free(ans);
    sn_free(last);
    sn_free(item_buf);
    return rc;
}

const struct imp_format imp_format_chatlog = {
    .name = "chatlog", .file_open = cl_open, .record = cl_record, .file_close = cl_close};
