/* eval/detect_ngram_data.c: what the n-gram baseline trains on (docs/eval.md "Baselines",
** "ngram"), read from a shard set and the trajectories it was built from:
**   roles  (default) every message of every trajectory the build put in the train split,
**          labelled by its sender's role: honest = trusted, adversary = not; each distinct
**          AITM-rewritten copy of a message is not trusted either (the copy a receiver got;
**          what `sentinel eval` scores as adversarial). The trajectories are the manifest's
**          settings.inputs (or those given where they are now), their split the rule the
**          manifest's settings record (sn_tuples_split_from_settings), so debates that gave no
**          tuple (attack-free ones) count too. Validation groups: the question's content key.
**   tuples the train split's tuple texts: each distinct chosen text trusted, each distinct
**          rejected text not (the earlier baseline's data; misled honest agents are among the
**          rejected). Validation groups: "<dataset>/<item id>".
** Either way debates named in `exclude` (the evaluated ones) are left out of fitting and
** validation alike. The model itself is eval/detect_ngram.c. */
#include "eval/detect_internal.h"

#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "tuples/tuples.h"
#include "shard/shard.h"

static const char *const labels_names[] = {"roles", "tuples"};
_Static_assert(sizeof labels_names / sizeof labels_names[0] == SN_NGRAM_LABELS_COUNT, "labels");

const char *sn_ngram_labels_name(enum sn_ngram_labels l)
{
    return (unsigned)l < SN_NGRAM_LABELS_COUNT ? labels_names[l] : "?";
}

int sn_ngram_labels_parse(const char *s, enum sn_ngram_labels *out, struct sn_err *err)
{
    for (int k = 0; k < SN_NGRAM_LABELS_COUNT; k++)
        if (s && !strcmp(s, labels_names[k])) {
            *out = (enum sn_ngram_labels)k;
            return SN_OK;
        }
    return sn_err_set(err, SN_E_ARG, "n-gram training data '%s': expected roles or tuples",
                      s ? s : "");
}

/* the training texts, their labels and validation groups (interned: texts share them) */
struct texts {
    char **text;
    bool  *label;
    size_t *group;     /* index into gname */
    size_t n, cap;
    struct sn_strmap gmap, seen; /* group -> index; "label:text" seen (tuples: distinct) */
    char **gname;
    size_t n_g, cap_g;
};

static void texts_free(struct texts *c)
{
    for (size_t i = 0; i < c->n; i++)
        sn_free(c->text[i]);
    sn_free(c->text);
    sn_free(c->label);
    sn_free(c->group);
    sn_free(c->gname); /* the names are gmap's keys */
    sn_strmap_free(&c->gmap);
    sn_strmap_free(&c->seen);
    memset(c, 0, sizeof *c);
}

static int texts_add(struct texts *c, const char *text, bool label, const char *group,
                     struct sn_err *err)
{
    bool added = false;
    int rc = sn_strmap_put(&c->gmap, group, strlen(group), c->n_g, &added, err);
    if (rc)
        return rc;
    if (added) {
        if (c->n_g == c->cap_g) {
            size_t cap = c->cap_g ? 2 * c->cap_g : 256;
            char **g = sn_realloc(c->gname, cap * sizeof *g);
            if (!g)
                return sn_err_set(err, SN_E_NOMEM, "out of memory");
            c->gname = g;
            c->cap_g = cap;
        }
        c->n_g++; /* gname is filled from gmap's keys before use (they move as gmap grows) */
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1024;
        char **t = sn_realloc(c->text, cap * sizeof *t);
        if (t)
            c->text = t;
        bool *l = t ? sn_realloc(c->label, cap * sizeof *l) : NULL;
        if (l)
            c->label = l;
        size_t *g = l ? sn_realloc(c->group, cap * sizeof *g) : NULL;
        if (!g)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        c->group = g;
        c->cap = cap;
    }
    char *copy = sn_strdup(text);
    if (!copy)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    c->text[c->n] = copy;
    c->label[c->n] = label;
    c->group[c->n] = *sn_strmap_find(&c->gmap, group, strlen(group));
    c->n++;
    return SN_OK;
}

/* ---- roles: the train split's trajectories -------------------------------------------------- */

struct roles {
    struct texts *c;
    const struct sn_tuples_params *tp;
    const struct sn_strmap *exclude;
    struct sn_strmap train_ids; /* every train-split trajectory read, excluded ones too */
    size_t n_excluded;
};

static int add_trajectory(struct roles *R, const struct sn_traj *t, struct sn_err *err)
{
    if (sn_tuples_split(t, R->tp) != SN_SPLIT_TRAIN)
        return SN_OK;
    int rc = sn_strmap_put(&R->train_ids, t->id, strlen(t->id), 0, NULL, err);
    if (rc)
        return rc;
    if (R->exclude && sn_strmap_has(R->exclude, t->id, strlen(t->id))) {
        R->n_excluded++;
        return SN_OK;
    }
    char q[65], qog[65];
    if ((rc = sn_question_keys(t, q, qog, err)))
        return rc;
    for (size_t r = 0; !rc && r < t->n_rounds; r++) {
        const struct sn_traj_round *R0 = &t->rounds[r];
        for (size_t k = 0; !rc && k < R0->n_msgs; k++) {
            const struct sn_traj_msg *m = &R0->msgs[k];
            enum sn_role role = t->agents[m->agent].role;
            if (role == SN_ROLE_INTERCEPTOR || !m->text)
                continue;
            if (m->text[0])
                rc = texts_add(R->c, m->text, role == SN_ROLE_HONEST, q, err);
            /* the rewritten copies receivers got instead (AITM), each distinct one once */
            for (size_t d = 0; !rc && d < m->n_deliveries; d++) {
                const char *x = m->deliveries[d].text;
                bool dup = !x || !x[0] || !strcmp(x, m->text);
                for (size_t e = 0; !dup && e < d; e++)
                    dup = m->deliveries[e].text && !strcmp(m->deliveries[e].text, x);
                if (!dup)
                    rc = texts_add(R->c, x, false, q, err);
            }
        }
    }
    return rc;
}

/* the tuples' trajectory ids that the trajectories read do not hold: a check that the
** trajectories are the ones the build read */
struct missing {
    const struct sn_strmap *have;
    size_t n;
    char first[128];
    struct sn_strmap seen;
};

static int check_tuple(void *ctx, struct sn_shard_reader *r, size_t i, struct sn_err *err)
{
    struct missing *M = ctx;
    struct sn_tuple_meta m;
    int rc = sn_shard_reader_meta(r, i, &m, err);
    if (rc || !m.trajectory_id)
        return rc;
    size_t len = strlen(m.trajectory_id);
    bool added = false;
    if (sn_strmap_has(M->have, m.trajectory_id, len))
        return SN_OK;
    rc = sn_strmap_put(&M->seen, m.trajectory_id, len, 0, &added, err);
    if (!rc && added && M->n++ == 0)
        snprintf(M->first, sizeof M->first, "%s", m.trajectory_id);
    return rc;
}

static int read_roles(const char *dir, const struct sn_ngram_data *d, struct texts *c,
                      size_t *n_traj, size_t *n_excluded, struct sn_err *err)
{
    struct sn_manifest *man = NULL;
    struct sn_tuples_params tp = sn_tuples_default_params();
    struct roles R = {.c = c, .tp = &tp, .exclude = d->exclude};
    char **paths = NULL;
    size_t n_paths = 0;
    bool lists = false;
    int rc = sn_manifest_load(dir, &man, err);
    const cJSON *set = man ? cJSON_GetObjectItemCaseSensitive(man->json, "settings") : NULL;
    if (!rc) {
        rc = sn_tuples_split_from_settings(set, &tp, err);
        if (rc)
            sn_err_wrap(err, "%s", dir);
        lists = !rc;
    }
    if (!rc && d->n_trajectories) {
        rc = sn_traj_paths(d->trajectories, d->n_trajectories, &paths, &n_paths, NULL, err);
    } else if (!rc) {
        /* the build's inputs, as it recorded them; each must still have its recorded size */
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(set, "inputs"), *e;
        size_t n = cJSON_IsArray(in) ? (size_t)cJSON_GetArraySize(in) : 0;
        paths = sn_calloc(n ? n : 1, sizeof *paths);
        if (!paths)
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        if (!rc && !n)
            rc = sn_err_set(err, SN_E_FORMAT, "%s: the manifest's settings.inputs names no "
                            "trajectory file; give --train-trajectories PATH", dir);
        const cJSON *arr = cJSON_IsArray(in) ? in : NULL;
        cJSON_ArrayForEach(e, arr) {
            if (rc)
                break;
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "path");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bytes");
            struct stat st;
            if (!cJSON_IsString(p) || !cJSON_IsNumber(b)) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: settings.inputs[%zu]: expected {path, "
                                "bytes}", dir, n_paths);
            } else if (stat(p->valuestring, &st) != 0) {
                rc = sn_err_set(err, SN_E_IO, "%s: the build's input %s is not there (from "
                                "this directory); give --train-trajectories PATH where the "
                                "trajectories are now", dir, p->valuestring);
            } else if ((double)st.st_size != b->valuedouble) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: the build's input %s has %lld bytes, "
                                "the build read %.0f: it changed since; give "
                                "--train-trajectories PATH with the trajectories it was built "
                                "from", dir, p->valuestring, (long long)st.st_size,
                                b->valuedouble);
            } else if (!(paths[n_paths] = sn_strdup(p->valuestring))) {
                rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            } else {
                n_paths++;
            }
        }
    }
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    rp.skip_bad = d->skip_bad;
    for (size_t f = 0; !rc && f < n_paths; f++) {
        struct sn_traj_reader *r = NULL;
        rc = sn_traj_reader_open(paths[f], &rp, &r, err);
        while (!rc) {
            struct sn_traj *t = NULL;
            rc = sn_traj_reader_next(r, &t, err);
            if (rc || !t)
                break;
            /* what the build skipped as invalid UTF-8 it did not train on either */
            char where[160];
            if (sn_traj_utf8_valid(t, where, sizeof where))
                rc = add_trajectory(&R, t, err);
            if (rc)
                sn_err_wrap(err, "%s: trajectory %s", paths[f], t->id);
            sn_traj_free(t);
        }
        sn_traj_reader_close(r);
    }
    if (!rc) {
        struct missing M = {.have = &R.train_ids};
        rc = sn_detect_each_train_tuple(dir, "ngram baseline", check_tuple, &M, err);
        sn_strmap_free(&M.seen);
        if (!rc && M.n)
            rc = sn_err_set(err, SN_E_ARG, "ngram baseline: the train split of %s holds tuples "
                            "of %zu trajectories that are not among the train-split "
                            "trajectories read (e.g. '%s'): give --train-trajectories PATH with "
                            "the trajectories the shards were built from", dir, M.n, M.first);
    }
    *n_traj = R.train_ids.n;
    *n_excluded = R.n_excluded;
    sn_strmap_free(&R.train_ids);
    if (lists)
        sn_tuples_split_lists_free(&tp);
    sn_paths_free(paths, n_paths);
    sn_manifest_free(man);
    return rc;
}

/* ---- tuples: the train split's chosen and rejected texts ---------------------------------- */

struct tuples_ctx {
    struct texts *c;
    const struct sn_strmap *exclude;
    struct sn_strmap traj, excluded;
    struct sn_buf key, group;
};

static int collect_tuple(void *ctx, struct sn_shard_reader *r, size_t i, struct sn_err *err)
{
    struct tuples_ctx *T = ctx;
    struct sn_tuple_meta m;
    int rc = sn_shard_reader_meta(r, i, &m, err);
    const char *tid = m.trajectory_id ? m.trajectory_id : "";
    if (!rc)
        rc = sn_strmap_put(&T->traj, tid, strlen(tid), 0, NULL, err);
    if (rc)
        return rc;
    if (T->exclude && sn_strmap_has(T->exclude, tid, strlen(tid)))
        return sn_strmap_put(&T->excluded, tid, strlen(tid), 0, NULL, err);
    sn_buf_reset(&T->group);
    rc = sn_buf_printf(&T->group, err, "%s/%s", m.dataset ? m.dataset : "",
                       m.item_id ? m.item_id : "");
    /* a chosen message pairs with many rejected ones: each distinct (text, label) once, so
    ** texts are not weighted by the size of their round */
    for (int f = SN_FIELD_CHOSEN; !rc && f <= SN_FIELD_REJECTED; f++) {
        char *text = NULL;
        bool added = false;
        rc = sn_shard_reader_text(r, i, (enum sn_field)f, &text, err);
        sn_buf_reset(&T->key);
        if (!rc)
            rc = sn_buf_printf(&T->key, err, "%d:%s", f, text);
        if (!rc)
            rc = sn_strmap_put(&T->c->seen, T->key.data, T->key.len, 0, &added, err);
        if (!rc && added && text[0])
            rc = texts_add(T->c, text, f == SN_FIELD_CHOSEN, T->group.data, err);
        sn_free(text);
    }
    return rc;
}

static int read_tuples(const char *dir, const struct sn_ngram_data *d, struct texts *c,
                       size_t *n_traj, size_t *n_excluded, struct sn_err *err)
{
    struct tuples_ctx T = {.c = c, .exclude = d->exclude};
    int rc = sn_detect_each_train_tuple(dir, "ngram baseline", collect_tuple, &T, err);
    *n_traj = T.traj.n;
    *n_excluded = T.excluded.n;
    sn_strmap_free(&T.traj);
    sn_strmap_free(&T.excluded);
    sn_buf_free(&T.key);
    sn_buf_free(&T.group);
    return rc;
}

int sn_ngram_train_data(const struct sn_ngram_params *p, const struct sn_ngram_data *d,
                        struct sn_ngram **out, struct sn_err *err)
{
    *out = NULL;
    if (!d->shards_dir)
        return sn_err_set(err, SN_E_ARG, "ngram baseline: no shard set");
    if ((unsigned)d->labels >= SN_NGRAM_LABELS_COUNT)
        return sn_err_set(err, SN_E_ARG, "ngram baseline: unknown training data %d",
                          (int)d->labels);
    if (d->n_trajectories && d->labels != SN_NGRAM_ROLES)
        return sn_err_set(err, SN_E_ARG, "ngram baseline: trajectories are read for role "
                          "labels only (the tuple texts are in the shards)");
    struct texts c = {0};
    size_t n_traj = 0, n_excluded = 0;
    int rc = d->labels == SN_NGRAM_ROLES
                 ? read_roles(d->shards_dir, d, &c, &n_traj, &n_excluded, err)
                 : read_tuples(d->shards_dir, d, &c, &n_traj, &n_excluded, err);
    if (!rc && c.n == 0)
        rc = sn_err_set(err, SN_E_ARG, "ngram baseline: no training text in the train split of "
                        "%s (%zu trajectories, %zu of them evaluated debates, left out)",
                        d->shards_dir, n_traj, n_excluded);
    const char **groups = NULL;
    if (!rc) {
        /* the group names are gmap's keys, looked up by their index */
        for (size_t i = 0; i < c.gmap.cap; i++)
            if (c.gmap.slots[i].key)
                c.gname[c.gmap.slots[i].val] = c.gmap.slots[i].key;
        groups = sn_malloc(c.n * sizeof *groups);
        if (!groups)
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        for (size_t i = 0; !rc && i < c.n; i++)
            groups[i] = c.gname[c.group[i]];
    }
    if (!rc)
        rc = sn_ngram_select(p, (const char *const *)c.text, c.label, groups, c.n, out, err);
    if (rc)
        sn_err_wrap(err, "ngram baseline (%s)", sn_ngram_labels_name(d->labels));
    if (!rc) {
        struct sn_ngram_info *in = sn_ngram_info_mut(*out);
        in->labels = d->labels;
        in->n_trajectories = n_traj;
        in->n_excluded = n_excluded;
    }
    sn_free(groups);
    texts_free(&c);
    return rc;
}
