/* tuples/build.c: `sentinel build` (tuples/tuples.h): trajectories -> the tuple builder ->
** tokenized, resumable shards and their manifest (docs/formats.md "Shard"). */
#include "tuples/tuples.h"
#include "data/data.h"
#include "tokenizer/tokenizer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct sn_build_params sn_build_default_params(void)
{
    struct sn_build_params p;
    memset(&p, 0, sizeof p);
    p.max_len = 1024;
    p.shard_size = 4096;
    p.deflate_level = 1;
    p.tuples = sn_tuples_default_params();
    return p;
}

struct build {
    const struct sn_build_params *p;
    struct sn_tokenizer *tok;
    struct sn_shard_set *set;
    struct sn_tuples *b;
    struct sn_ids ids[SN_FIELD_COUNT];
    struct sn_build_progress prog;
    /* content keys of the train split's questions (sn_question_keys): the manifest's
    ** train_questions */
    struct sn_strmap q_keys, qog_keys;
    uint64_t n_q_trajectories;
    struct sn_strmap pref_hashes;  /* content hashes of the preference tuples (de-duplication) */
    struct sn_buf pref_ctx;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the keys of m sorted (slot order is no order), as a new JSON array; NULL when out of memory */
static cJSON *sorted_keys(const struct sn_strmap *m)
{
    char **v = sn_malloc((m->n ? m->n : 1) * sizeof *v);
    cJSON *a = v ? cJSON_CreateArray() : NULL;
    size_t k = 0;
    for (size_t i = 0; a && i < m->cap; i++)
        if (m->slots[i].key)
            v[k++] = m->slots[i].key;
    if (a)
        qsort(v, k, sizeof *v, cmp_str);
    for (size_t i = 0; a && i < k; i++) {
        cJSON *s = cJSON_CreateString(v[i]);
        if (!s) {
            cJSON_Delete(a);
            a = NULL;
            break;
        }
        cJSON_AddItemToArray(a, s);
    }
    sn_free(v);
    return a;
}

static void annotate(void *user, cJSON *manifest)
{
    struct build *bd = user;
    cJSON *st = cJSON_AddObjectToObject(manifest, "stats");
    for (int k = 0; st && k < SN_TC_COUNT; k++)
        cJSON_AddNumberToObject(st, sn_tuples_count_name((enum sn_tuples_count)k), (double)sn_tuples_counts(bd->b)[k]);
    /* Out of memory here leaves train_questions out, and `sentinel eval` refuses a manifest
    ** without it, naming the fix: nothing half-recorded is ever read as complete. */
    cJSON *q = sorted_keys(&bd->q_keys), *qog = q ? sorted_keys(&bd->qog_keys) : NULL;
    cJSON *tq = qog ? cJSON_CreateObject() : NULL;
    if (tq && cJSON_AddStringToObject(tq, "key", SN_QUESTION_KEY_ID) &&
        cJSON_AddNumberToObject(tq, "trajectories", (double)bd->n_q_trajectories)) {
        cJSON_AddItemToObject(tq, "question_sha256", q);
        cJSON_AddItemToObject(tq, "question_options_gold_sha256", qog);
        cJSON_AddItemToObject(manifest, "train_questions", tq);
        return;
    }
    cJSON_Delete(q);
    cJSON_Delete(qog);
    cJSON_Delete(tq);
}

/* t's question keys into the manifest's train_questions when t is in the train split (the
** split the builder gives it: sn_tuples_split), whether or not it yields tuples */
static int add_train_question(struct build *bd, const struct sn_traj *t, struct sn_err *err)
{
    if (sn_tuples_split(t, &bd->p->tuples) != SN_SPLIT_TRAIN)
        return SN_OK;
    char q[65], qog[65];
    int rc = sn_question_keys(t, q, qog, err);
    if (!rc)
        rc = sn_strmap_put(&bd->q_keys, q, 64, 0, NULL, err);
    if (!rc)
        rc = sn_strmap_put(&bd->qog_keys, qog, 64, 0, NULL, err);
    if (!rc)
        bd->n_q_trajectories++;
    return rc;
}

static int on_tuple(void *user, const struct sn_tuple *t, struct sn_err *err)
{
    struct build *bd = user;
    struct sn_shard_tuple st;
    memset(&st, 0, sizeof st);
    for (int f = 0; f < SN_FIELD_COUNT; f++)
        st.text[f] = t->text[f];
    st.meta = t->meta;
    int rc = SN_OK;
    if (!sn_shard_set_skips_next(bd->set, t->meta.split)) {
        for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT && !rc; f++) {
            struct sn_template_cut cut;
            rc = sn_template_encode(bd->tok, &t->prompt, t->text[f], bd->p->max_len,
                                    &bd->ids[f], &cut, NULL, err);
            if (rc)
                return sn_err_wrap(err, "trajectory %s round %d %s", t->meta.trajectory_id,
                                   (int)t->meta.round, sn_field_name((enum sn_field)f));
            st.ids[f] = bd->ids[f].v;
            st.n_ids[f] = bd->ids[f].n;
            st.meta.cut_history[f] = (int32_t)cut.n_tokens_history;
            st.meta.cut_response[f] = (int32_t)cut.n_tokens_response;
        }
        bd->prog.tokenized++;
    }
    rc = sn_shard_set_add(bd->set, &st, err);
    if (rc)
        return rc;
    bd->prog.tuples++;
    if (bd->p->progress && bd->p->progress(bd->p->user, &bd->prog))
        return sn_err_set(err, SN_E_CANCELLED, "build cancelled");
    return SN_OK;
}

/* ---- preference data (docs/formats.md "Preference data") ------------------------------------ */

/* The file's name without its directory and .jsonl / .jsonl.gz: the rows' dataset. */
static void file_stem(const char *path, char *out, size_t n)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t len = strlen(b);
    static const char *const ext[] = {".jsonl.gz", ".jsonl", ".json.gz", ".json", ".gz"};
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t e = strlen(ext[i]);
        if (len > e && !strcmp(b + len - e, ext[i])) {
            len -= e;
            break;
        }
    }
    snprintf(out, n, "%.*s", (int)len, b);
}

/* One preference row -> one tuple through the same template, truncation and shard set as the
** debates' (on_tuple). Its sequences are always encoded, also when a resumed build skips the
** tuple, so the truncated count (and the manifest) is the same as an uninterrupted build's. */
static int pref_tuple(struct build *bd, const struct sn_pref_row *row, const char *stem,
                      uint64_t lineno, struct sn_err *err)
{
    const struct sn_build_params *p = bd->p;
    uint64_t *counts = sn_tuples_counts(bd->b);
    struct sn_prompt pr = {NULL, row->task, NULL, 0};
    size_t fixed = 0;
    int rc = sn_template_fixed_tokens(bd->tok, &pr, &fixed, err);
    if (rc)
        return rc;
    if (fixed + SN_TEMPLATE_MIN_RESPONSE > p->max_len) {
        counts[SN_TC_TASK_TOO_LONG]++;
        return SN_OK;
    }
    pr.history = (const char *const *)row->history;
    pr.n_history = row->n_history;
    sn_buf_reset(&bd->pref_ctx);
    if ((rc = sn_template_context(&pr, &bd->pref_ctx, err)) ||
        (!bd->pref_ctx.data && (rc = sn_buf_puts(&bd->pref_ctx, "", err))))
        return rc;
    struct sn_shard_tuple st;
    memset(&st, 0, sizeof st);
    st.text[SN_FIELD_CONTEXT] = bd->pref_ctx.data;
    st.text[SN_FIELD_CHOSEN] = row->chosen;
    st.text[SN_FIELD_REJECTED] = row->rejected;
    /* no reference column: the chosen response stands in, so the alignment term compares a
    ** sequence with itself and adds no gradient (docs/formats.md "Preference data") */
    st.text[SN_FIELD_REFERENCE] = row->reference ? row->reference : row->chosen;
    char hex[65], item[17], id[300];
    sn_tuples_hash(st.text, hex);
    if (p->tuples.dedup) {
        bool added = false;
        if ((rc = sn_strmap_put(&bd->pref_hashes, hex, 64, 0, &added, err)))
            return rc;
        if (!added) {
            counts[SN_TC_DUPLICATE]++;
            return SN_OK;
        }
    }
    {   /* item = the prompt (its hash): rows that share a prompt share a split */
        struct sn_sha256 h;
        uint8_t d[32];
        sn_sha256_init(&h);
        sn_sha256_update(&h, bd->pref_ctx.data, bd->pref_ctx.len);
        sn_sha256_final(&h, d);
        for (int i = 0; i < 8; i++)
            snprintf(item + 2 * i, 3, "%02x", d[i]);
    }
    struct sn_traj t;
    memset(&t, 0, sizeof t);
    t.dataset = stem;
    t.item_id = item;
    snprintf(id, sizeof id, "%s:%" PRIu64, stem, lineno);
    st.meta.scenario = "preference";
    st.meta.dataset = stem;
    st.meta.trajectory_id = id;
    st.meta.item_id = item;
    st.meta.chosen_agent = st.meta.rejected_agent = -1;
    st.meta.rejected_kind = "preference";
    st.meta.split = sn_tuples_split(&t, &p->tuples);
    st.meta.sha256 = hex;
    bool cut_any = false;
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        struct sn_template_cut cut;
        rc = sn_template_encode(bd->tok, &pr, st.text[f], p->max_len, &bd->ids[f], &cut, NULL,
                                err);
        if (rc)
            return sn_err_wrap(err, "%s %s", id, sn_field_name((enum sn_field)f));
        st.ids[f] = bd->ids[f].v;
        st.n_ids[f] = bd->ids[f].n;
        st.meta.cut_history[f] = (int32_t)cut.n_tokens_history;
        st.meta.cut_response[f] = (int32_t)cut.n_tokens_response;
        cut_any |= cut.n_tokens_history || cut.n_tokens_response;
    }
    if (cut_any)
        counts[SN_TC_TRUNCATED]++;
    if (!sn_shard_set_skips_next(bd->set, st.meta.split))
        bd->prog.tokenized++;
    if ((rc = sn_shard_set_add(bd->set, &st, err)))
        return rc;
    counts[SN_TC_TUPLES]++;
    bd->prog.tuples++;
    if (p->progress && p->progress(p->user, &bd->prog))
        return sn_err_set(err, SN_E_CANCELLED, "build cancelled");
    return SN_OK;
}

/* Reads a preference file: with bd == NULL only checks every row (before anything is
** written, so a malformed row leaves no output behind), else makes their tuples. A last line
** without a newline is read like the others (hand-written files often end so). */
static int pref_file(struct build *bd, const char *path, bool skip_bad, struct sn_err *err)
{
    struct sn_lines *lr = NULL;
    struct sn_pref_row row;
    char where[1200], stem[256];
    uint64_t *counts = bd ? sn_tuples_counts(bd->b) : NULL;
    memset(&row, 0, sizeof row);
    file_stem(path, stem, sizeof stem);
    int rc = sn_lines_open(path, 0, &lr, err);
    while (!rc) {
        const char *line = NULL;
        size_t len = 0, i = 0;
        bool complete = false;
        rc = sn_lines_next(lr, &line, &len, &complete, err);
        if (rc || !line)
            break;
        while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
            i++;
        if (i == len)
            continue;
        uint64_t lineno = sn_lines_lineno(lr);
        snprintf(where, sizeof where, "%s:%" PRIu64, path, lineno);
        if (counts)
            counts[SN_TC_PREF_ROWS]++;
        rc = sn_pref_parse(line, len, where, &row, err);
        if (rc && skip_bad && rc == SN_E_FORMAT) {
            if (counts)
                counts[SN_TC_BAD_LINES]++;
            rc = SN_OK;
        } else if (!rc && bd) {
            rc = pref_tuple(bd, &row, stem, lineno, err);
            bd->prog.trajectories++;
        }
        sn_pref_row_free(&row);
    }
    sn_lines_close(lr);
    return rc;
}

static cJSON *make_settings(const struct sn_build_params *p, char **paths, size_t n,
                            const char *tok_hash, bool any_pref, struct sn_err *err)
{
    cJSON *s = cJSON_CreateObject(), *in = cJSON_AddArrayToObject(s, "inputs");
    char num[32];
    if (!s || !in) {
        cJSON_Delete(s);
        sn_err_set(err, SN_E_NOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        struct stat stb;
        cJSON *e = cJSON_CreateObject();
        if (!e)
            break;
        cJSON_AddStringToObject(e, "path", paths[i]);
        cJSON_AddNumberToObject(e, "bytes", stat(paths[i], &stb) == 0 ? (double)stb.st_size : -1);
        cJSON_AddItemToArray(in, e);
    }
    const struct sn_tuples_params *t = &p->tuples;
    cJSON_AddStringToObject(s, "builder", SN_TUPLES_BUILDER_ID);
    cJSON_AddStringToObject(s, "template_id", SN_TEMPLATE_ID);
    cJSON_AddStringToObject(s, "tokenizer_hash", tok_hash);
    cJSON_AddNumberToObject(s, "max_len", (double)p->max_len);
    cJSON_AddNumberToObject(s, "deflate_level", p->deflate_level);
    cJSON_AddBoolToObject(s, "skip_bad", p->skip_bad);
    cJSON_AddNumberToObject(s, "max_pairs", (double)t->max_pairs);
    cJSON_AddStringToObject(s, "rejected", sn_rejected_from_name(t->rejected));
    cJSON_AddStringToObject(s, "chosen", sn_chosen_from_name(t->chosen));
    cJSON_AddNumberToObject(s, "contrast", t->contrast);
    cJSON_AddNumberToObject(s, "persuasive_correct", t->persuasive_correct);
    snprintf(num, sizeof num, "%" PRIu64, t->seed);
    cJSON_AddStringToObject(s, "seed", num);
    cJSON_AddStringToObject(s, "split_by", sn_split_by_name(t->split_by));
    cJSON_AddNumberToObject(s, "validation_fraction", t->validation_fraction);
    cJSON_AddNumberToObject(s, "test_fraction", t->test_fraction);
    snprintf(num, sizeof num, "%" PRIu64, t->split_seed);
    cJSON_AddStringToObject(s, "split_seed", num);
    cJSON *va = cJSON_AddArrayToObject(s, "validation"), *te = cJSON_AddArrayToObject(s, "test");
    for (size_t i = 0; va && i < t->n_validation_values; i++)
        cJSON_AddItemToArray(va, cJSON_CreateString(t->validation_values[i]));
    for (size_t i = 0; te && i < t->n_test_values; i++)
        cJSON_AddItemToArray(te, cJSON_CreateString(t->test_values[i]));
    cJSON_AddStringToObject(s, "ood", "labels.split=ood");
    cJSON_AddNumberToObject(s, "history_sentences", (double)t->context.history_sentences);
    cJSON_AddNumberToObject(s, "history_chars", (double)t->context.history_chars);
    cJSON_AddBoolToObject(s, "dedup", t->dedup);
    cJSON_AddStringToObject(s, "summary", !t->summarize ? "extractive"
                            : t->summary_method ? t->summary_method : "hook");
    cJSON_AddStringToObject(s, "reference", !t->reference ? "dataset-or-template"
                            : t->reference_method ? t->reference_method : "hook");
    if (any_pref) /* only then, so the settings of a debate build are unchanged */
        cJSON_AddStringToObject(s, "preference_builder", SN_PREF_BUILDER_ID);
    return s;
}

int sn_tuples_build(const struct sn_build_params *p, struct sn_build_report *rep,
                    struct sn_err *err)
{
    struct build bd;
    char **paths = NULL;
    size_t n_paths = 0;
    cJSON *settings = NULL;
    struct sn_buf task = {0};
    memset(&bd, 0, sizeof bd);
    memset(rep, 0, sizeof *rep);
    bd.p = p;
    if (!p->n_inputs || !p->out_dir || !p->tokenizer_path)
        return sn_err_set(err, SN_E_ARG, "build: needs inputs, an output directory and a "
                          "tokenizer");
    if (p->max_len < 2 * SN_TEMPLATE_MIN_RESPONSE || p->max_len > ((size_t)1 << 24))
        return sn_err_set(err, SN_E_ARG, "build: max_len %zu is out of range (%d..16777216)",
                          p->max_len, 2 * SN_TEMPLATE_MIN_RESPONSE);
    size_t n_errors_files = 0;
    int rc = sn_traj_paths(p->inputs, p->n_inputs, &paths, &n_paths, &n_errors_files, err);
    if (!rc && n_errors_files)
        SN_WARN("build: skipping %zu errors-*.jsonl file(s) in the inputs (debates simulate "
                "could not finish; re-run simulate to retry them)", n_errors_files);
    /* Which files are preference data; those are checked whole before anything is written. */
    bool *is_pref = rc ? NULL : sn_calloc(n_paths + 1, sizeof *is_pref), any_pref = false;
    if (!rc && !is_pref)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n_paths && !rc; i++) {
        is_pref[i] = p->format == SN_INPUT_PREFERENCE;
        if (p->format == SN_INPUT_AUTO)
            rc = sn_pref_file_detect(paths[i], &is_pref[i], err);
        if (!rc && is_pref[i])
            rc = pref_file(NULL, paths[i], p->skip_bad, err);
        any_pref |= is_pref[i];
    }
    if (!rc && any_pref && p->tuples.split_by != SN_SPLIT_BY_ITEM &&
        p->tuples.split_by != SN_SPLIT_BY_DATASET)
        rc = sn_err_set(err, SN_E_ARG, "build: split_by = \"%s\": preference rows have only an "
                        "item (their prompt) and a dataset (their file's name); use item or "
                        "dataset", sn_split_by_name(p->tuples.split_by));
    if (!rc)
        rc = sn_tokenizer_open(p->tokenizer_path, &bd.tok, err);
    if (!rc)
        rc = sn_tuples_create(&p->tuples, &bd.b, err);
    if (!rc) {
        settings = make_settings(p, paths, n_paths, sn_tokenizer_hash(bd.tok), any_pref, err);
        if (!settings)
            rc = err->code ? err->code : SN_E_NOMEM;
    }
    if (!rc) {
        struct sn_shard_set_params sp = sn_shard_set_default_params();
        sp.dir = p->out_dir;
        sp.shard_size = p->shard_size ? p->shard_size : 4096;
        sp.writer.deflate_level = p->deflate_level;
        sp.writer.info.tokenizer_hash = sn_tokenizer_hash(bd.tok);
        sp.writer.info.template_id = SN_TEMPLATE_ID;
        sp.writer.info.max_len = (int64_t)p->max_len;
        sp.writer.info.vocab_size = (int64_t)sn_tokenizer_vocab_size(bd.tok);
        sp.settings = settings;
        sp.annotate = annotate;
        sp.user = &bd;
        rc = sn_shard_set_open(&sp, &bd.set, err);
    }
    rep->n_inputs = n_paths;
    if (!rc && sn_shard_set_was_complete(bd.set)) {
        struct sn_manifest *m = NULL;
        rep->was_complete = true;
        rc = sn_manifest_load(p->out_dir, &m, err);
        if (!rc) {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(m->json, "stats");
            for (int k = 0; k < SN_TC_COUNT; k++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(st, sn_tuples_count_name((enum sn_tuples_count)k));
                rep->counts[k] = cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0;
            }
            for (int k = 0; k < SN_SPLIT_COUNT; k++)
                rep->per_split[k] = m->counts[k];
            rep->n_shards = m->n_shards;
        }
        sn_manifest_free(m);
        goto done;
    }
    if (!rc)
        rep->resumed = sn_shard_set_n_shards(bd.set) > 0;
    uint64_t *counts = bd.b ? sn_tuples_counts(bd.b) : NULL;
    bd.prog.counts = counts;
    for (size_t i = 0; i < n_paths && !rc; i++) {
        if (is_pref[i]) {
            rc = pref_file(&bd, paths[i], p->skip_bad, err);
            continue;
        }
        struct sn_traj_reader_params rp = sn_traj_reader_default_params();
        struct sn_traj_reader *r = NULL;
        rp.skip_bad = p->skip_bad;
        rc = sn_traj_reader_open(paths[i], &rp, &r, err);
        while (!rc) {
            struct sn_traj *t = NULL;
            rc = sn_traj_reader_next(r, &t, err);
            if (rc || !t)
                break;
            /* Texts the tokenizer would refuse (invalid UTF-8) and a task that leaves no room
            ** for a response skip the whole trajectory, decided before the split and de-dup so
            ** a resumed build sees the same stream. */
            char where[160];
            if (!sn_traj_utf8_valid(t, where, sizeof where)) {
                if (!p->skip_bad) {
                    rc = sn_err_set(err, SN_E_FORMAT, "%s: trajectory '%s': %s: invalid UTF-8 "
                                    "(--skip-bad skips such trajectories)",
                                    sn_traj_reader_path(r), t->id, where);
                    sn_traj_free(t);
                    break;
                }
                counts[SN_TC_TRAJECTORIES]++;
                counts[SN_TC_BAD_LINES]++;
                bd.prog.trajectories++;
                sn_traj_free(t);
                continue;
            }
            struct sn_prompt pr = {NULL, NULL, NULL, 0};
            size_t fixed = 0;
            sn_buf_reset(&task);
            rc = add_train_question(&bd, t, err);
            if (!rc)
                rc = sn_tuples_task(t, &task, err);
            pr.task = task.data;
            if (!rc)
                rc = sn_template_fixed_tokens(bd.tok, &pr, &fixed, err);
            if (!rc && fixed + SN_TEMPLATE_MIN_RESPONSE > p->max_len) {
                counts[SN_TC_TRAJECTORIES]++;
                counts[SN_TC_TASK_TOO_LONG]++;
            } else if (!rc) {
                rc = sn_tuples_add(bd.b, t, on_tuple, &bd, err);
            }
            bd.prog.trajectories++;
            sn_traj_free(t);
        }
        if (r)
            counts[SN_TC_BAD_LINES] += sn_traj_reader_n_skipped(r);
        sn_traj_reader_close(r);
    }
    if (!rc)
        rc = sn_shard_set_finish(bd.set, err);
    if (!rc) {
        memcpy(rep->counts, counts, sizeof rep->counts);
        for (int k = 0; k < SN_SPLIT_COUNT; k++)
            rep->per_split[k] = sn_shard_set_count(bd.set, (enum sn_split)k);
        rep->n_shards = sn_shard_set_n_shards(bd.set);
    }
done:
    sn_shard_set_close(bd.set);
    sn_tuples_free(bd.b);
    sn_tokenizer_free(bd.tok);
    for (int f = 0; f < SN_FIELD_COUNT; f++)
        sn_ids_free(&bd.ids[f]);
    sn_buf_free(&task);
    sn_strmap_free(&bd.q_keys);
    sn_strmap_free(&bd.qog_keys);
    sn_strmap_free(&bd.pref_hashes);
    sn_buf_free(&bd.pref_ctx);
    sn_free(is_pref);
    cJSON_Delete(settings);
    if (paths)
        sn_paths_free(paths, n_paths);
    return rc;
}
