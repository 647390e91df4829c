/* cli/cmd_inspect.c: `sentinel inspect` (docs/design.md §1; usage in README.md (CLI reference)).
** What is inside a tuple shard (*.h5), a shard directory / manifest.json, or a trajectory file
** (*.jsonl, *.jsonl.gz), or a GGUF file (export/export.h). Checkpoints and safetensors files
** are recognised and refused
** with exit status 3 (not supported by this build yet). --json prints a machine-readable dump
** (the h5py test compares it with what Python reads from the same shard). */
#include "cli/cli.h"
#include "cli/cmd_inspect_model.h"
#include "cli/recipe_check.h"
#include "shard/shard.h"
#include "data/data.h"
#include "export/export.h"
#include "tokenizer/tokenizer.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
"usage: sentinel inspect FILE [--json] [-n N | --all] [--tokenizer FILE] [--verify]\n"
"\n"
"Shows what is inside FILE, recognised by its content:\n"
"  tuple shard (HDF5, schema sentinel.tuples/1): attributes, counts, token statistics and\n"
"      the first N tuples (texts, metadata, sequence lengths; with --tokenizer the decoded\n"
"      end of each sequence, where the reward is read)\n"
"  shard directory or manifest.json: build settings, counts per split, shards, skip counts\n"
"  trajectory file (*.jsonl, *.jsonl.gz): debates, scenarios, datasets, tasks, and a summary\n"
"      of the first debate (agents, answers per round, final decision)\n"
"  recipe (*.json of recipe sections): checks every section as `sentinel run` does and says\n"
"      what it trains and which Hugging Face names it uses for which sentinel keys\n"
"  GGUF file: header, provenance (base, adapter, LoRA scale, template, max length, tokenizer\n"
"      hash), every key (arrays: type, count, first items) and every tensor (type, shape,\n"
"      offset); the file is read with the strict reader, so a damaged file says where\n"
"  safetensors file: every tensor (dtype, shape) and the parameter count\n"
"  checkpoint directory (sentinel_state.json): step, epoch, data cursor, best so far, the\n"
"      model it holds (PEFT adapter or full HF model) and its files; --verify checks their\n"
"      SHA-256 against sentinel_state.json (trainer_state.json in older checkpoints)\n"
"  training run directory (train_settings.json, latest): settings, checkpoints with latest\n"
"      and best, the last logged step, final metrics; --verify checks the latest checkpoint\n"
"  Hugging Face model or PEFT adapter directory: its config and parameter count\n"
"\n"
"options:\n"
"  --json             machine-readable output (JSON) instead of text\n"
"  -n N               tuples to show from a shard (default 3)\n"
"  --all              every tuple of a shard (with --json: texts, ids and metadata of all)\n"
"  --tokenizer FILE   decode the token sequences of the tuples shown\n"
"  --verify           check the SHA-256 of every shard listed in a manifest, or of every\n"
"                     file of a checkpoint\n"
"  -h, --help         this help\n"
"\n"
"Exit status: 0 ok, 1 failure (unreadable or invalid file, checksum mismatch), 2 usage\n"
"error, 3 a kind of file this build cannot inspect yet.\n");
}

struct opts {
    bool   json, all, verify;
    size_t n;
    const char *tokenizer;
};

static void print_clip(const char *label, const char *s, size_t max)
{
    size_t n = strlen(s), cut = n > max ? max : n;
    while (cut < n && cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    printf("  %-10s ", label);
    for (size_t i = 0; i < cut; i++)
        fputs(s[i] == '\n' ? "\\n" : (char[2]){s[i], 0}, stdout);
    printf("%s\n", cut < n ? " [...]" : "");
}

/* ---- shard -------------------------------------------------------------------------------- */

static cJSON *ids_json(const int32_t *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static int inspect_shard(const char *path, const struct opts *o)
{
    struct sn_err err = {0};
    struct sn_shard_reader *r = NULL;
    struct sn_tokenizer *tok = NULL;
    cJSON *j = NULL, *arr = NULL;
    int status = SN_EXIT_OK;
    if (sn_shard_reader_open(path, NULL, &r, &err))
        return sn_cli_fail("inspect", &err);
    if (o->tokenizer && sn_tokenizer_open(o->tokenizer, &tok, &err)) {
        sn_shard_reader_close(r);
        return sn_cli_fail("inspect", &err);
    }
    const struct sn_shard_info *in = sn_shard_reader_info(r);
    size_t count = sn_shard_reader_count(r), show = o->all ? count : (o->n < count ? o->n : count);
    if (tok && strcmp(sn_tokenizer_hash(tok), in->tokenizer_hash) != 0) {
        fprintf(stderr, "sentinel inspect: warning: %s was built with another tokenizer "
                        "(%.16s…, this one is %.16s…); decoded text may be wrong\n", path,
                in->tokenizer_hash, sn_tokenizer_hash(tok));
    }
    /* token statistics over all tuples (ids are in memory) */
    uint64_t total[SN_FIELD_COUNT] = {0};
    size_t longest[SN_FIELD_COUNT] = {0}, at_max[SN_FIELD_COUNT] = {0};
    for (size_t i = 0; i < count; i++) {
        struct sn_tuple_view v;
        sn_shard_reader_get(r, i, &v, &err);
        for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
            total[f] += v.n_ids[f];
            if (v.n_ids[f] > longest[f])
                longest[f] = v.n_ids[f];
            at_max[f] += (int64_t)v.n_ids[f] == in->max_len;
        }
    }
    if (o->json) {
        j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", "shard");
        cJSON_AddStringToObject(j, "path", path);
        cJSON *at = cJSON_AddObjectToObject(j, "attrs");
        cJSON_AddStringToObject(at, "schema", in->schema);
        cJSON_AddStringToObject(at, "tokenizer_hash", in->tokenizer_hash);
        cJSON_AddStringToObject(at, "template_id", in->template_id);
        cJSON_AddNumberToObject(at, "max_len", (double)in->max_len);
        cJSON_AddNumberToObject(at, "vocab_size", (double)in->vocab_size);
        cJSON_AddNumberToObject(at, "count", (double)in->count);
        cJSON_AddStringToObject(at, "split", sn_split_name(in->split));
        cJSON_AddNumberToObject(at, "shard_index", (double)in->shard_index);
        cJSON *tk = cJSON_AddObjectToObject(j, "tokens");
        for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++)
            cJSON_AddNumberToObject(tk, sn_field_name((enum sn_field)f), (double)total[f]);
        arr = cJSON_AddArrayToObject(j, "tuples");
    } else {
        printf("shard %s\n", path);
        printf("  schema         %s\n  tokenizer_hash %s\n  template_id    %s\n", in->schema,
               in->tokenizer_hash, in->template_id);
        printf("  max_len        %" PRId64 "\n  vocab_size     %" PRId64 "\n  split          %s "
               "(shard %" PRId64 ")\n  count          %zu tuples\n", in->max_len,
               in->vocab_size, sn_split_name(in->split), in->shard_index, count);
        for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++)
            printf("  %-14s %" PRIu64 " tokens, mean %.1f, longest %zu, %zu at max_len\n",
                   sn_field_name((enum sn_field)f), total[f],
                   count ? (double)total[f] / (double)count : 0.0, longest[f], at_max[f]);
    }
    for (size_t i = 0; i < show && !status; i++) {
        struct sn_tuple_view v;
        struct sn_tuple_meta m;
        char *text[SN_FIELD_COUNT] = {0};
        int rc = sn_shard_reader_get(r, i, &v, &err);
        for (int f = 0; f < SN_FIELD_COUNT && !rc; f++)
            rc = sn_shard_reader_text(r, i, (enum sn_field)f, &text[f], &err);
        if (!rc)
            rc = sn_shard_reader_meta(r, i, &m, &err);
        if (rc) {
            status = sn_cli_fail("inspect", &err);
        } else if (o->json) {
            cJSON *t = cJSON_CreateObject(), *tx = cJSON_AddObjectToObject(t, "text");
            cJSON *id = cJSON_AddObjectToObject(t, "ids"), *me = cJSON_AddObjectToObject(t, "meta");
            cJSON_AddNumberToObject(t, "index", (double)i);
            for (int f = 0; f < SN_FIELD_COUNT; f++)
                cJSON_AddStringToObject(tx, sn_field_name((enum sn_field)f), text[f]);
            for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++)
                cJSON_AddItemToObject(id, sn_field_name((enum sn_field)f),
                                      ids_json(v.ids[f], v.n_ids[f]));
            cJSON_AddStringToObject(me, "scenario", m.scenario);
            cJSON_AddStringToObject(me, "dataset", m.dataset);
            cJSON_AddStringToObject(me, "trajectory_id", m.trajectory_id);
            cJSON_AddStringToObject(me, "item_id", m.item_id);
            cJSON_AddNumberToObject(me, "round", m.round);
            cJSON_AddNumberToObject(me, "chosen_agent", m.chosen_agent);
            cJSON_AddNumberToObject(me, "rejected_agent", m.rejected_agent);
            cJSON_AddStringToObject(me, "chosen_role", m.chosen_role);
            cJSON_AddStringToObject(me, "rejected_role", m.rejected_role);
            cJSON_AddStringToObject(me, "rejected_kind", m.rejected_kind);
            cJSON_AddStringToObject(me, "split", sn_split_name(m.split));
            cJSON_AddStringToObject(me, "sha256", m.sha256);
            cJSON *ch = cJSON_AddObjectToObject(me, "cut_history");
            cJSON *cr = cJSON_AddObjectToObject(me, "cut_response");
            for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
                cJSON_AddNumberToObject(ch, sn_field_name((enum sn_field)f), m.cut_history[f]);
                cJSON_AddNumberToObject(cr, sn_field_name((enum sn_field)f), m.cut_response[f]);
            }
            cJSON_AddItemToArray(arr, t);
        } else {
            printf("\ntuple %zu: %s, trajectory %s (%s), round %d; chosen agent %d vs rejected "
                   "agent %d (%s, %s); %s\n", i, m.scenario, m.trajectory_id, m.dataset,
                   m.round, m.chosen_agent, m.rejected_agent, m.rejected_role, m.rejected_kind,
                   sn_split_name(m.split));
            for (int f = 0; f < SN_FIELD_COUNT; f++)
                print_clip(sn_field_name((enum sn_field)f), text[f], 240);
            printf("  tokens     chosen %zu, rejected %zu, reference %zu; history cut %d/%d/%d, "
                   "response cut %d/%d/%d tokens\n", v.n_ids[SN_FIELD_CHOSEN],
                   v.n_ids[SN_FIELD_REJECTED], v.n_ids[SN_FIELD_REFERENCE],
                   m.cut_history[SN_FIELD_CHOSEN], m.cut_history[SN_FIELD_REJECTED],
                   m.cut_history[SN_FIELD_REFERENCE], m.cut_response[SN_FIELD_CHOSEN],
                   m.cut_response[SN_FIELD_REJECTED], m.cut_response[SN_FIELD_REFERENCE]);
            for (int f = SN_FIELD_CHOSEN; tok && f < SN_FIELD_COUNT; f++) {
                char *dec = NULL;
                size_t len = 0;
                size_t from = v.n_ids[f] > 48 ? v.n_ids[f] - 48 : 0;
                struct sn_err e2 = {0};
                if (!sn_tokenizer_decode(tok, v.ids[f] + from, v.n_ids[f] - from, &dec, &len,
                                         &e2)) {
                    char label[32];
                    snprintf(label, sizeof label, "%s end", sn_field_name((enum sn_field)f));
                    printf("  %-10s ...", label);
                    for (size_t q = 0; q < len; q++)
                        fputs(dec[q] == '\n' ? "\\n" : (char[2]){dec[q], 0}, stdout);
                    printf("\n");
                }
                sn_free(dec);
            }
        }
        for (int f = 0; f < SN_FIELD_COUNT; f++)
            sn_free(text[f]);
    }
    if (j && !status) {
        char *s = cJSON_PrintUnformatted(j);
        if (s)
            printf("%s\n", s);
        cJSON_free(s);
    }
    cJSON_Delete(j);
    sn_tokenizer_free(tok);
    sn_shard_reader_close(r);
    return status;
}

/* ---- manifest ----------------------------------------------------------------------------- */

/* Items (dataset/item_id) per split, read from every shard's metadata. shared = items in more
** than one of train, validation, test (a leak; `example` names one); ood_elsewhere = ood items
** that also occur in another split (reported, not an error: an out-of-domain experiment may
** reuse the questions). */
struct split_items {
    int64_t items[SN_SPLIT_COUNT];
    int64_t shared, ood_elsewhere;
    char    example[256];
};

static int count_split_items(const struct sn_manifest *m, struct split_items *si,
                             struct sn_err *err)
{
    struct sn_strmap map = {0};
    char **paths = NULL, key[1024];
    size_t n = 0;
    memset(si, 0, sizeof *si);
    int rc = sn_manifest_paths(m, SN_SPLIT_COUNT, &paths, &n, err);
    for (size_t s = 0; s < n && !rc; s++) {
        struct sn_shard_reader *r = NULL;
        rc = sn_shard_reader_open(paths[s], NULL, &r, err);
        size_t cnt = r ? sn_shard_reader_count(r) : 0;
        for (size_t i = 0; i < cnt && !rc; i++) {
            struct sn_tuple_meta me;
            rc = sn_shard_reader_meta(r, i, &me, err);
            if (rc || (unsigned)me.split >= SN_SPLIT_COUNT)
                break;
            int len = snprintf(key, sizeof key, "%s/%s", me.dataset ? me.dataset : "",
                               me.item_id ? me.item_id : "");
            if (len < 0 || (size_t)len >= sizeof key)
                len = (int)sizeof key - 1;
            rc = sn_strmap_put(&map, key, (size_t)len, 0, NULL, err);
            if (!rc)
                *sn_strmap_find(&map, key, (size_t)len) |= (size_t)1 << me.split;
        }
        if (rc)
            sn_err_wrap(err, "%s", paths[s]);
        sn_shard_reader_close(r);
    }
    const size_t held = (1u << SN_SPLIT_TRAIN) | (1u << SN_SPLIT_VALIDATION) |
                        (1u << SN_SPLIT_TEST);
    for (size_t i = 0; !rc && i < map.cap; i++) {
        if (!map.slots[i].key)
            continue;
        size_t v = map.slots[i].val, h = v & held;
        for (int k = 0; k < SN_SPLIT_COUNT; k++)
            si->items[k] += (v >> k) & 1;
        if (h & (h - 1)) {
            /* the smallest key, so the message does not depend on slot order */
            if (!si->shared++ || strcmp(map.slots[i].key, si->example) < 0)
                snprintf(si->example, sizeof si->example, "%s", map.slots[i].key);
        }
        if ((v >> SN_SPLIT_OOD & 1) && (v & held))
            si->ood_elsewhere++;
    }
    sn_strmap_free(&map);
    if (paths)
        sn_paths_free(paths, n);
    return rc;
}

static int inspect_manifest(const char *path, const struct opts *o)
{
    struct sn_err err = {0};
    struct sn_manifest *m = NULL;
    if (sn_manifest_load(path, &m, &err))
        return sn_cli_fail("inspect", &err);
    int status = SN_EXIT_OK;
    if (o->verify && sn_manifest_verify(m, &err))
        status = sn_cli_fail("inspect", &err);
    struct split_items si;
    bool have_items = false;
    if (!status && m->complete) {
        if (count_split_items(m, &si, &err))
            status = sn_cli_fail("inspect", &err);
        else
            have_items = true;
    }
    if (have_items && o->json) {
        cJSON *it = cJSON_AddObjectToObject(m->json, "split_items");
        for (int k = 0; it && k < SN_SPLIT_COUNT; k++)
            cJSON_AddNumberToObject(it, sn_split_name((enum sn_split)k), (double)si.items[k]);
        if (it) {
            cJSON_AddNumberToObject(it, "shared", (double)si.shared);
            cJSON_AddNumberToObject(it, "ood_also_elsewhere", (double)si.ood_elsewhere);
        }
    }
    if (o->json) {
        char *s = cJSON_Print(m->json);
        if (s)
            printf("%s\n", s);
        cJSON_free(s);
    } else {
        const cJSON *j = m->json;
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(j, "tokenizer_hash");
        const cJSON *tp = cJSON_GetObjectItemCaseSensitive(j, "template_id");
        const cJSON *ml = cJSON_GetObjectItemCaseSensitive(j, "max_len");
        printf("manifest %s/%s: %s\n", m->dir, SN_MANIFEST_NAME,
               m->complete ? "complete" : "INCOMPLETE (a build is running or was interrupted)");
        printf("  tokenizer_hash %s\n  template_id    %s\n  max_len        %.0f\n",
               cJSON_IsString(tk) ? tk->valuestring : "?",
               cJSON_IsString(tp) ? tp->valuestring : "?",
               cJSON_IsNumber(ml) ? ml->valuedouble : 0.0);
        printf("  tuples         %" PRId64 " train, %" PRId64 " validation, %" PRId64 " test, "
               "%" PRId64 " ood in %zu shards\n", m->counts[SN_SPLIT_TRAIN],
               m->counts[SN_SPLIT_VALIDATION], m->counts[SN_SPLIT_TEST], m->counts[SN_SPLIT_OOD],
               m->n_shards);
        const cJSON *set = cJSON_GetObjectItemCaseSensitive(j, "settings");
        const cJSON *sb = cJSON_GetObjectItemCaseSensitive(set, "split_by");
        if (have_items) {
            printf("  items          %" PRId64 " train, %" PRId64 " validation, %" PRId64 " test, "
                   "%" PRId64 " ood (split by %s)\n", si.items[SN_SPLIT_TRAIN],
                   si.items[SN_SPLIT_VALIDATION], si.items[SN_SPLIT_TEST], si.items[SN_SPLIT_OOD],
                   cJSON_IsString(sb) ? sb->valuestring : "trajectory (an older build)");
            if (!si.shared)
                printf("  no item is shared by train, validation and test\n");
            if (si.ood_elsewhere)
                printf("  %" PRId64 " ood item(s) also occur in another split (the same "
                       "question under an in-domain experiment)\n", si.ood_elsewhere);
        }
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "stats"), *e;
        if (cJSON_IsObject(st)) {
            printf("  stats         ");
            cJSON_ArrayForEach(e, st) printf(" %s %.0f", e->string, e->valuedouble);
            printf("\n");
        }
        for (size_t i = 0; i < m->n_shards; i++)
            printf("  %-24s %-10s %8" PRId64 " tuples  sha256 %.16s…\n", m->shards[i].file,
                   sn_split_name(m->shards[i].split), m->shards[i].count, m->shards[i].sha256);
        if (o->verify && !status)
            printf("  verified: every shard matches its SHA-256\n");
    }
    if (have_items && si.shared) {
        /* split_by model, scenario or experiment hold out values that share questions by
        ** design: a warning; an item or dataset split must never share one: an error */
        const cJSON *set = cJSON_GetObjectItemCaseSensitive(m->json, "settings");
        const cJSON *sb = cJSON_GetObjectItemCaseSensitive(set, "split_by");
        bool by_value = cJSON_IsString(sb) && strcmp(sb->valuestring, "item") &&
                        strcmp(sb->valuestring, "dataset");
        if (by_value) {
            fprintf(stderr, "sentinel inspect: WARNING: %" PRId64 " item(s) occur in more than "
                    "one of train, validation and test (e.g. %s): split by %s, the held-out "
                    "splits share questions with train\n", si.shared, si.example,
                    sb->valuestring);
        } else {
            fprintf(stderr, "sentinel inspect: ERROR: %" PRId64 " item(s) occur in more than "
                    "one of train, validation and test (e.g. %s): held-out numbers from these "
                    "shards are not honest\n", si.shared, si.example);
            status = SN_EXIT_FAIL;
        }
    }
    sn_manifest_free(m);
    return status;
}

/* ---- trajectories ------------------------------------------------------------------------- */

struct tally {
    char  **keys;
    size_t *n;
    size_t  len;
};

static void tally_add(struct tally *t, const char *key)
{
    key = key ? key : "(null)";
    for (size_t i = 0; i < t->len; i++)
        if (!strcmp(t->keys[i], key)) {
            t->n[i]++;
            return;
        }
    char **k = realloc(t->keys, (t->len + 1) * sizeof *k);
    size_t *n = realloc(t->n, (t->len + 1) * sizeof *n);
    if (k)
        t->keys = k;
    if (n)
        t->n = n;
    if (!k || !n || !(t->keys[t->len] = strdup(key)))
        return;
    t->n[t->len++] = 1;
}

static void tally_free(struct tally *t)
{
    for (size_t i = 0; i < t->len; i++)
        free(t->keys[i]);
    free(t->keys);
    free(t->n);
}

static cJSON *tally_json(const struct tally *t)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < t->len; i++)
        cJSON_AddNumberToObject(o, t->keys[i], (double)t->n[i]);
    return o;
}

static void tally_print(const char *label, const struct tally *t)
{
    printf("  %-12s", label);
    for (size_t i = 0; i < t->len; i++)
        printf(" %s %zu%s", t->keys[i], t->n[i], i + 1 < t->len ? "," : "");
    printf("\n");
}

static cJSON *debate_json(const struct sn_traj *t)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "id", t->id);
    cJSON_AddStringToObject(d, "scenario", t->scenario);
    cJSON_AddStringToObject(d, "dataset", t->dataset);
    cJSON_AddStringToObject(d, "question", t->question);
    cJSON_AddStringToObject(d, "gold", t->gold);
    if (t->adversarial_target)
        cJSON_AddStringToObject(d, "adversarial_target", t->adversarial_target);
    cJSON *ag = cJSON_AddArrayToObject(d, "roles");
    for (size_t i = 0; ag && i < t->n_agents; i++)
        cJSON_AddItemToArray(ag, cJSON_CreateString(sn_role_name(t->agents[i].role)));
    cJSON *rs = cJSON_AddArrayToObject(d, "answers");
    for (size_t r = 0; rs && r < t->n_rounds; r++) {
        cJSON *row = cJSON_CreateArray();
        for (size_t k = 0; row && k < t->rounds[r].n_msgs; k++) {
            const struct sn_traj_msg *m = &t->rounds[r].msgs[k];
            cJSON_AddItemToArray(row, m->answer ? cJSON_CreateString(m->answer)
                                                : cJSON_CreateNull());
        }
        cJSON_AddItemToArray(rs, row);
    }
    if (t->final.answer)
        cJSON_AddStringToObject(d, "final_answer", t->final.answer);
    cJSON_AddBoolToObject(d, "final_correct", t->final.correct);
    return d;
}

static int inspect_trajectories(const char *path, const struct opts *o)
{
    struct sn_err err = {0};
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    struct sn_traj_reader *r = NULL;
    struct tally scen = {0}, data = {0}, task = {0}, exp = {0};
    struct sn_traj *first = NULL;
    uint64_t n = 0, correct = 0, rounds = 0, msgs = 0;
    rp.skip_bad = true;
    if (sn_traj_reader_open(path, &rp, &r, &err))
        return sn_cli_fail("inspect", &err);
    int rc;
    /* Reported, not silently taken: texts with invalid UTF-8 (named by field) and debate ids
    ** seen before (counted once, both lines named). */
    struct sn_strmap seen = {0};
    uint64_t n_utf8 = 0, n_dups = 0;
    for (;;) {
        struct sn_traj *t = NULL;
        rc = sn_traj_reader_next(r, &t, &err);
        if (rc || !t)
            break;
        uint64_t line = sn_traj_reader_lineno(r);
        char where[160];
        bool added = false;
        if (!sn_traj_utf8_valid(t, where, sizeof where)) {
            if (n_utf8++ < 10)
                SN_WARN("%s:%llu: trajectory '%s': %s: invalid UTF-8", path,
                        (unsigned long long)line, t->id, where);
        } else if ((rc = sn_strmap_put(&seen, t->id, strlen(t->id), (size_t)line, &added,
                                       &err))) {
            sn_traj_free(t);
            break;
        } else if (!added) {
            if (n_dups++ < 10)
                SN_WARN("duplicate debate id '%s': %s:%zu and %s:%llu; counted once", t->id,
                        path, *sn_strmap_find(&seen, t->id, strlen(t->id)), path,
                        (unsigned long long)line);
            sn_traj_free(t);
            continue;
        }
        n++;
        correct += t->final.correct;
        rounds += t->n_rounds;
        for (size_t k = 0; k < t->n_rounds; k++)
            msgs += t->rounds[k].n_msgs;
        tally_add(&scen, t->scenario);
        tally_add(&data, t->dataset);
        tally_add(&task, t->task_name);
        tally_add(&exp, t->experiment);
        if (!first)
            first = t;
        else
            sn_traj_free(t);
    }
    sn_strmap_free(&seen);
    int status = rc ? sn_cli_fail("inspect", &err) : SN_EXIT_OK;
    uint64_t bad = sn_traj_reader_n_skipped(r);
    if (!status && o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", "trajectories");
        cJSON_AddStringToObject(j, "path", path);
        cJSON_AddNumberToObject(j, "count", (double)n);
        cJSON_AddNumberToObject(j, "bad_lines", (double)bad);
        cJSON_AddNumberToObject(j, "invalid_utf8", (double)n_utf8);
        cJSON_AddNumberToObject(j, "duplicate_ids", (double)n_dups);
        cJSON_AddNumberToObject(j, "final_correct", (double)correct);
        cJSON_AddItemToObject(j, "scenarios", tally_json(&scen));
        cJSON_AddItemToObject(j, "datasets", tally_json(&data));
        cJSON_AddItemToObject(j, "tasks", tally_json(&task));
        cJSON_AddItemToObject(j, "experiments", tally_json(&exp));
        if (first)
            cJSON_AddItemToObject(j, "first", debate_json(first));
        char *s = cJSON_Print(j);
        if (s)
            printf("%s\n", s);
        cJSON_free(s);
        cJSON_Delete(j);
    } else if (!status) {
        printf("trajectories %s (%s)\n", path, SN_TRAJ_SCHEMA);
        printf("  debates      %" PRIu64 " (%" PRIu64 " malformed lines skipped), %" PRIu64
               " rounds, %" PRIu64 " messages; final answer correct in %" PRIu64 "\n", n, bad,
               rounds, msgs, correct);
        if (n_utf8 || n_dups)
            printf("  problems     %" PRIu64 " with invalid UTF-8, %" PRIu64 " duplicate ids "
                   "(counted once)\n", n_utf8, n_dups);
        tally_print("scenarios", &scen);
        tally_print("datasets", &data);
        tally_print("tasks", &task);
        tally_print("experiments", &exp);
        if (bad)
            printf("  first bad    %s\n", sn_traj_reader_first_skip(r));
        if (first) {
            const struct sn_traj *t = first;
            printf("\nfirst debate %s: %s on %s/%s, %s, %zu agents, topology %s\n", t->id,
                   t->scenario, t->dataset, t->item_id, t->strategy, t->n_agents,
                   t->topology_name);
            print_clip("question", t->question, 200);
            for (size_t i = 0; i < t->n_options; i++) {
                char label[16];
                snprintf(label, sizeof label, "  %c.", i < 26 ? (char)('A' + i) : '?');
                print_clip(label, t->options[i], 100);
            }
            printf("  gold       %s%s%s\n", t->gold,
                   t->adversarial_target ? ", adversarial target " : "",
                   t->adversarial_target ? t->adversarial_target : "");
            printf("  agents    ");
            for (size_t i = 0; i < t->n_agents; i++)
                printf(" %zu:%s", i, sn_role_name(t->agents[i].role));
            printf("\n");
            for (size_t k = 0; k < t->n_rounds; k++) {
                printf("  round %-4zu", k + 1);
                for (size_t q = 0; q < t->rounds[k].n_msgs; q++) {
                    const struct sn_traj_msg *m = &t->rounds[k].msgs[q];
                    printf(" %d:%s%s", m->agent, m->answer ? m->answer : "?",
                           m->tampered ? "(tampered)" : "");
                }
                printf("\n");
            }
            printf("  final      %s (%s, %s)\n", t->final.answer ? t->final.answer : "none",
                   t->final.rule ? t->final.rule : "?", t->final.correct ? "correct" : "wrong");
        }
    }
    sn_traj_free(first);
    tally_free(&scen);
    tally_free(&data);
    tally_free(&task);
    tally_free(&exp);
    sn_traj_reader_close(r);
    return status;
}

/* ---- GGUF --------------------------------------------------------------------------------- */

static int inspect_gguf(const char *path, const struct opts *o)
{
    struct sn_gguf *g = NULL;
    struct sn_err err = {0};
    struct sn_buf b = {0};
    if (sn_gguf_open(path, &g, &err))
        return sn_cli_fail("inspect", &err);
    uint64_t n_params = 0, n_bytes = 0;
    for (size_t i = 0; i < sn_gguf_n_tensors(g); i++) {
        n_params += sn_gguf_tensor(g, i)->n_elements;
        n_bytes += sn_gguf_tensor(g, i)->nbytes;
    }
    int rc = SN_OK;
    if (o->json) {
        cJSON *j = cJSON_CreateObject(), *keys = cJSON_CreateObject(), *ts = cJSON_CreateArray();
        cJSON_AddStringToObject(j, "file", path);
        cJSON_AddStringToObject(j, "kind", "gguf");
        cJSON_AddNumberToObject(j, "version", sn_gguf_version(g));
        cJSON_AddNumberToObject(j, "alignment", sn_gguf_alignment(g));
        cJSON_AddNumberToObject(j, "n_params", (double)n_params);
        for (size_t i = 0; !rc && i < sn_gguf_n_kv(g); i++) {
            sn_buf_reset(&b);
            rc = sn_gguf_kv_describe(g, i, &b, &err);
            const char *eq = rc ? NULL : strstr(b.data, " = ");
            if (eq)
                cJSON_AddStringToObject(keys, sn_gguf_key(g, i), eq + 3);
        }
        for (size_t i = 0; i < sn_gguf_n_tensors(g); i++) {
            const struct sn_gguf_tensor *t = sn_gguf_tensor(g, i);
            cJSON *x = cJSON_CreateObject(), *ne = cJSON_CreateArray();
            cJSON_AddStringToObject(x, "name", t->name);
            cJSON_AddStringToObject(x, "type", sn_ggml_type_name(t->type));
            for (int d = 0; d < t->n_dims; d++)
                cJSON_AddItemToArray(ne, cJSON_CreateNumber((double)t->ne[d]));
            cJSON_AddItemToObject(x, "ne", ne);
            cJSON_AddNumberToObject(x, "offset", (double)t->offset);
            cJSON_AddItemToArray(ts, x);
        }
        cJSON_AddItemToObject(j, "keys", keys);
        cJSON_AddItemToObject(j, "tensors", ts);
        char *txt = cJSON_Print(j);
        if (txt)
            printf("%s\n", txt);
        free(txt);
        cJSON_Delete(j);
    } else {
        const char *arch = NULL, *name = NULL, *base = NULL, *adapter = NULL, *tmpl = NULL;
        const char *hash = NULL;
        uint64_t max_len = 0;
        double scale = 0;
        sn_gguf_get_str(g, "general.architecture", false, "?", &arch, &err);
        sn_gguf_get_str(g, "general.name", false, "?", &name, &err);
        sn_gguf_get_str(g, SN_GGUF_KEY_BASE, false, "-", &base, &err);
        sn_gguf_get_str(g, SN_GGUF_KEY_ADAPTER, false, "-", &adapter, &err);
        sn_gguf_get_str(g, SN_GGUF_KEY_TEMPLATE, false, "-", &tmpl, &err);
        sn_gguf_get_str(g, SN_GGUF_KEY_TOK_HASH, false, "-", &hash, &err);
        sn_gguf_get_u64(g, SN_GGUF_KEY_MAX_LEN, false, 0, &max_len, &err);
        sn_gguf_get_f64(g, SN_GGUF_KEY_LORA, false, 0, &scale, &err);
        sn_err_clear(&err);
        printf("%s: GGUF v%u, alignment %u, %zu keys, %zu tensors, %" PRIu64 " parameters "
               "(%.1f MB of data)\n", path, sn_gguf_version(g), sn_gguf_alignment(g),
               sn_gguf_n_kv(g), sn_gguf_n_tensors(g), n_params, (double)n_bytes / 1e6);
        const char *gtype = NULL, *atype = NULL;
        double alpha = 0;
        sn_gguf_get_str(g, "general.type", false, "model", &gtype, &err);
        sn_gguf_get_str(g, "adapter.type", false, "?", &atype, &err);
        sn_gguf_get_f64(g, "adapter.lora.alpha", false, 0, &alpha, &err);
        sn_err_clear(&err);
        if (!strcmp(gtype, "adapter")) /* llama.cpp's LoRA convention (docs/formats.md) */
            printf("adapter:    %s for %s '%s', alpha %g (applied over a --head-as-logit base "
                   "GGUF; not scored on its own)\n", atype, arch, name, alpha);
        else
            printf("model:      %s '%s'\n", arch, name);
        printf("provenance: base %s, adapter %s, LoRA scale %g\n", base, adapter, scale);
        printf("scoring:    template %s, max_len %" PRIu64 ", head %s, tokenizer sha256 %s\n",
               tmpl, max_len, sn_gguf_find(g, SN_GGUF_KEY_HEAD) >= 0 ? "sentinel.score.weight"
                                                                    : "none", hash);
        if (strcmp(gtype, "adapter")) {   /* what `sentinel score --detector` would run here */
            char kern[512];
            if (sn_detector_kernels_plan(NULL, kern, sizeof kern, &err) == SN_OK)
                printf("kernels:    %s\n", kern);
            else
                printf("kernels:    %s\n", err.msg);
            sn_err_clear(&err);
        }
        printf("\nkeys:\n");
        for (size_t i = 0; !rc && i < sn_gguf_n_kv(g); i++) {
            sn_buf_reset(&b);
            if (!(rc = sn_gguf_kv_describe(g, i, &b, &err)))
                printf("  %s\n", b.data);
        }
        printf("\ntensors:\n");
        for (size_t i = 0; i < sn_gguf_n_tensors(g); i++) {
            const struct sn_gguf_tensor *t = sn_gguf_tensor(g, i);
            char shape[96];
            int k = snprintf(shape, sizeof shape, "{%" PRIu64, t->ne[0]);
            for (int d = 1; d < t->n_dims && k > 0 && (size_t)k < sizeof shape; d++)
                k += snprintf(shape + k, sizeof shape - (size_t)k, ", %" PRIu64, t->ne[d]);
            if (k > 0 && (size_t)k < sizeof shape)
                snprintf(shape + k, sizeof shape - (size_t)k, "}");
            printf("  %-28s %-4s %-16s offset %" PRIu64 "\n", t->name,
                   sn_ggml_type_name(t->type), shape, t->offset);
        }
    }
    sn_buf_free(&b);
    sn_gguf_close(g);
    return rc ? sn_cli_fail("inspect", &err) : SN_EXIT_OK;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

enum kind { K_SHARD, K_MANIFEST, K_TRAJ, K_GGUF, K_SAFETENSORS, K_CHECKPOINT, K_UNKNOWN };

static enum kind sniff(const char *path)
{
    if (sn_path_is_dir(path)) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, SN_MANIFEST_NAME);
        if (sn_path_exists(p))
            return K_MANIFEST;
        static const char *const model_files[] = {"sentinel_state.json", "trainer_state.json",
                                                  "train_settings.json",
                                                  "latest", "adapter_config.json",
                                                  "config.json", NULL};
        for (int i = 0; model_files[i]; i++) {
            snprintf(p, sizeof p, "%s/%s", path, model_files[i]);
            if (sn_path_exists(p))
                return K_CHECKPOINT;
        }
        return K_UNKNOWN;
    }
    unsigned char b[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return K_UNKNOWN;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (n >= 8 && !memcmp(b, "\x89HDF\r\n\x1a\n", 8))
        return K_SHARD;
    if (n >= 4 && !memcmp(b, "GGUF", 4))
        return K_GGUF;
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
        return K_TRAJ;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strcmp(base, SN_MANIFEST_NAME))
        return K_MANIFEST;
    if (n >= 9 && b[8] == '{' && b[6] == 0 && b[7] == 0)
        return K_SAFETENSORS; /* u64 little-endian header size, then the JSON header */
    size_t i = 0;
    while (i < n && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t'))
        i++;
    if (i < n && b[i] == '{')
        return K_TRAJ;
    return K_UNKNOWN;
}

/* A recipe: a *.json file holding one JSON object whose keys are all recipe sections
** (docs/formats.md "Recipe"); anything else that starts with '{' is read as trajectories. */
static bool is_recipe(const char *path)
{
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".json"))
        return false;
    struct sn_err err = {0};
    cJSON *r = NULL;
    if (sn_recipe_load(path, NULL, 0, &r, &err))
        return false;
    cJSON_Delete(r);
    return true;
}

int sn_cmd_inspect(int argc, char **argv)
{
    static const struct option lo[] = {
        {"json", no_argument, NULL, 'j'}, {"all", no_argument, NULL, 'a'},
        {"tokenizer", required_argument, NULL, 'T'}, {"verify", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    struct opts o = {false, false, false, 3, NULL};
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":n:h", lo, NULL)) != -1) {
        switch (c) {
        case 'j': o.json = true; break;
        case 'a': o.all = true; break;
        case 'v': o.verify = true; break;
        case 'T': o.tokenizer = optarg; break;
        case 'n': {
            uint64_t v;
            if (!sn_parse_u64(optarg, strlen(optarg), 0, SIZE_MAX, &v))
                return sn_cli_usage_error("inspect", "-n '%s': expected a count (0..%zu)",
                                          optarg, (size_t)SIZE_MAX);
            o.n = (size_t)v;
            break;
        }
        case 'h':
            usage(stdout);
            return SN_EXIT_OK;
        case ':':
            return sn_cli_usage_error("inspect", "option '%s' needs a value", argv[optind - 1]);
        default:
            return sn_cli_bad_option("inspect", argv[optind - 1], lo);
        }
    }
    if (optind + 1 != argc)
        return sn_cli_usage_error("inspect", optind == argc ? "FILE is required"
                                                            : "one FILE at a time");
    const char *path = argv[optind];
    if (!sn_path_exists(path)) {
        fprintf(stderr, "sentinel inspect: %s: no such file or directory\n", path);
        return SN_EXIT_FAIL;
    }
    switch (sniff(path)) {
    case K_SHARD: return inspect_shard(path, &o);
    case K_MANIFEST: return inspect_manifest(path, &o);
    case K_TRAJ:
        if (is_recipe(path)) /* a .json object of recipe sections: docs/run.md */
            return sn_cli_inspect_recipe(path);
        return inspect_trajectories(path, &o);
    case K_GGUF: return inspect_gguf(path, &o);
    case K_SAFETENSORS: return sn_inspect_safetensors(path, o.json);
    case K_CHECKPOINT: return sn_inspect_model_dir(path, o.json, o.verify);
    default:
        fprintf(stderr, "sentinel inspect: %s: not a shard (HDF5), manifest, trajectory file "
                        "(JSON Lines, plain or gzip), GGUF or safetensors file, checkpoint, "
                        "training run or model directory\n", path);
        return SN_EXIT_FAIL;
    }
}
