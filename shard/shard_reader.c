/* shard/shard_reader.c: random access to one shard, every count checked against the limits of
** shard/shard_internal.h (shard/shard.h). */
#include "shard/shard_internal.h"

#include <inttypes.h>
#include <string.h>

struct sn_shard_reader_params sn_shard_reader_default_params(void)
{
    struct sn_shard_reader_params p;
    memset(&p, 0, sizeof p);
    return p;
}

void sn_shard_reader_close(struct sn_shard_reader *r)
{
    if (!r)
        return;
    if (r->file >= 0)
        H5Fclose(r->file);
    for (int f = 0; f < SN_FIELD_COUNT; f++) {
        sn_free(r->ids[f]);
        sn_free(r->off[f]);
    }
    for (int i = 0; i < S_COUNT; i++)
        sn_free(r->meta_str[i]);
    sn_free(r->schema);
    sn_free(r->tok_hash);
    sn_free(r->template_id);
    sn_free(r->split);
    sn_free(r->path);
    sn_free(r);
}

/* Reads and checks the root attributes against params (the identity check). */
static int read_info(struct sn_shard_reader *r, const struct sn_shard_reader_params *p,
                     struct sn_err *err)
{
    const char *path = r->path;
    int rc = sn_h5_attr_read_str(r->file, "schema", &r->schema, path, err);
    if (rc)
        return rc;
    if (strcmp(r->schema, SN_SHARD_SCHEMA) != 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: foreign schema '%s' (this sentinel reads '%s')",
                          path, r->schema, SN_SHARD_SCHEMA);
    int64_t count;
    if ((rc = sn_h5_attr_read_str(r->file, "tokenizer_hash", &r->tok_hash, path, err)) ||
        (rc = sn_h5_attr_read_str(r->file, "template_id", &r->template_id, path, err)) ||
        (rc = sn_h5_attr_read_str(r->file, "split", &r->split, path, err)) ||
        (rc = sn_h5_attr_read_i64(r->file, "max_len", &r->info.max_len, path, err)) ||
        (rc = sn_h5_attr_read_i64(r->file, "vocab_size", &r->info.vocab_size, path, err)) ||
        (rc = sn_h5_attr_read_i64(r->file, "count", &count, path, err)) ||
        (rc = sn_h5_attr_read_i64(r->file, "shard_index", &r->info.shard_index, path, err)))
        return rc;
    if ((rc = sn_split_parse(r->split, &r->info.split, err)))
        return sn_err_wrap(err, "%s: attribute 'split'", path);
    if (count < 0 || count > MAX_COUNT_LIMIT)
        return sn_err_set(err, SN_E_FORMAT, "%s: attribute 'count' = %" PRId64 " is out of range",
                          path, count);
    if (r->info.max_len <= 0 || r->info.max_len > MAX_LEN_LIMIT)
        return sn_err_set(err, SN_E_FORMAT, "%s: attribute 'max_len' = %" PRId64 " is out of "
                          "range (1..%" PRId64 ")", path, r->info.max_len, MAX_LEN_LIMIT);
    if (r->info.vocab_size <= 0 || r->info.vocab_size > INT32_MAX)
        return sn_err_set(err, SN_E_FORMAT, "%s: attribute 'vocab_size' = %" PRId64 " is out of "
                          "range", path, r->info.vocab_size);
    if (p && p->tokenizer_hash && strcmp(p->tokenizer_hash, r->tok_hash) != 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: built with another tokenizer: tokenizer_hash "
                          "'%.16s…' differs from the tokenizer's '%.16s…'; rebuild the shards "
                          "with this tokenizer or use the one they were built with", path,
                          r->tok_hash, p->tokenizer_hash);
    if (p && p->template_id && strcmp(p->template_id, r->template_id) != 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: rendered with template '%s', expected '%s'",
                          path, r->template_id, p->template_id);
    if (p && p->max_len > 0 && r->info.max_len > p->max_len)
        return sn_err_set(err, SN_E_FORMAT, "%s: max_len %" PRId64 " exceeds the %" PRId64
                          " this run accepts", path, r->info.max_len, p->max_len);
    r->count = (size_t)count;
    r->info.schema = r->schema;
    r->info.tokenizer_hash = r->tok_hash;
    r->info.template_id = r->template_id;
    r->info.count = count;
    return SN_OK;
}

static int open_file(const char *path, hid_t *file, struct sn_err *err)
{
    *file = -1;
    if (!sn_path_exists(path))
        return sn_err_set(err, SN_E_IO, "%s: no such file", path);
    if (H5Fis_hdf5(path) <= 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: not an HDF5 file", path);
    *file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*file < 0)
        return sn_h5_fail(err, path, "open");
    return SN_OK;
}

static int load_field(struct sn_shard_reader *r, int f, struct sn_err *err)
{
    const char *path = r->path;
    char name[64];
    hsize_t len = 0;
    hid_t ds;
    snprintf(name, sizeof name, "offsets/%s", sn_shard_field_names[f]);
    int rc = sn_h5_ds_open_1d(r->file, name, H5T_INTEGER, &len, &ds, path, err);
    if (rc)
        return rc;
    if (len != (hsize_t)r->count + 1) {
        H5Dclose(ds);
        return sn_err_set(err, SN_E_FORMAT, "%s: '/%s' has %" PRIu64 " entries, expected count + "
                          "1 = %zu", path, name, (uint64_t)len, r->count + 1);
    }
    r->off[f] = sn_malloc((r->count + 1) * sizeof(int64_t));
    if (!r->off[f]) {
        H5Dclose(ds);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    }
    if (H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, r->off[f]) < 0)
        rc = sn_h5_fail(err, path, name);
    H5Dclose(ds);
    if (rc)
        return rc;
    const int64_t *o = r->off[f];
    if (o[0] != 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: '/%s'[0] = %" PRId64 ", expected 0", path, name,
                          o[0]);
    for (size_t i = 0; i < r->count; i++)
        if (o[i + 1] < o[i] || o[i + 1] - o[i] > r->info.max_len)
            return sn_err_set(err, SN_E_FORMAT, "%s: '/%s': tuple %zu spans [%" PRId64 ", %" PRId64
                              "): decreasing or longer than max_len %" PRId64, path, name, i,
                              o[i], o[i + 1], r->info.max_len);
    uint64_t total = (uint64_t)o[r->count];
    if (total * sizeof(int32_t) > MAX_IDS_BYTES)
        return sn_err_set(err, SN_E_FORMAT, "%s: '/%s' claims %" PRIu64 " ids; too large", path,
                          name, total);
    snprintf(name, sizeof name, "ids/%s", sn_shard_field_names[f]);
    rc = sn_h5_ds_open_1d(r->file, name, H5T_INTEGER, &len, &ds, path, err);
    if (rc)
        return rc;
    if (len != total) {
        H5Dclose(ds);
        return sn_err_set(err, SN_E_FORMAT, "%s: '/%s' has %" PRIu64 " ids but the offsets end at "
                          "%" PRIu64, path, name, (uint64_t)len, total);
    }
    r->ids[f] = sn_malloc((size_t)(total ? total : 1) * sizeof(int32_t));
    if (!r->ids[f]) {
        H5Dclose(ds);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory for %" PRIu64 " ids", path, total);
    }
    if (total && H5Dread(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, r->ids[f]) < 0)
        rc = sn_h5_fail(err, path, name);
    H5Dclose(ds);
    if (rc)
        return rc;
    r->n_ids[f] = (size_t)total;
    for (size_t j = 0; j < total; j++)
        if (r->ids[f][j] < 0 || r->ids[f][j] >= r->info.vocab_size)
            return sn_err_set(err, SN_E_FORMAT, "%s: '/%s'[%zu] = %" PRId32 " is outside the "
                              "vocabulary [0, %" PRId64 ")", path, name, j, r->ids[f][j],
                              r->info.vocab_size);
    return SN_OK;
}

int sn_shard_reader_open_ex(const char *path, const struct sn_shard_reader_params *params,
                            bool load_ids, struct sn_shard_reader **out, struct sn_err *err)
{
    *out = NULL;
    sn_h5_quiet();
    struct sn_shard_reader *r = sn_calloc(1, sizeof *r);
    if (!r)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    r->file = -1;
    r->path = sn_strdup(path);
    int rc = r->path ? SN_OK : sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    if (!rc)
        rc = open_file(path, &r->file, err);
    if (!rc)
        rc = read_info(r, params, err);
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT && !rc && load_ids; f++)
        rc = load_field(r, f, err);
    if (rc) {
        sn_shard_reader_close(r);
        return rc;
    }
    *out = r;
    return SN_OK;
}

int sn_shard_reader_open(const char *path, const struct sn_shard_reader_params *params,
                         struct sn_shard_reader **out, struct sn_err *err)
{
    return sn_shard_reader_open_ex(path, params, true, out, err);
}

size_t sn_shard_reader_count(const struct sn_shard_reader *r)
{
    return r->count;
}

const struct sn_shard_info *sn_shard_reader_info(const struct sn_shard_reader *r)
{
    return &r->info;
}

int sn_shard_reader_get(struct sn_shard_reader *r, size_t i, struct sn_tuple_view *view,
                        struct sn_err *err)
{
    if (i >= r->count)
        return sn_err_set(err, SN_E_ARG, "%s: tuple %zu out of range (count %zu)", r->path, i,
                          r->count);
    view->ids[SN_FIELD_CONTEXT] = NULL;
    view->n_ids[SN_FIELD_CONTEXT] = 0;
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        view->ids[f] = r->ids[f] + r->off[f][i];
        view->n_ids[f] = (size_t)(r->off[f][i + 1] - r->off[f][i]);
    }
    return SN_OK;
}

int sn_shard_reader_text(struct sn_shard_reader *r, size_t i, enum sn_field f, char **text,
                         struct sn_err *err)
{
    *text = NULL;
    if (i >= r->count || (unsigned)f >= SN_FIELD_COUNT)
        return sn_err_set(err, SN_E_ARG, "%s: tuple %zu out of range (count %zu)", r->path, i,
                          r->count);
    sn_h5_quiet();
    return sn_h5_ds_read_str_at(r->file, sn_shard_str_cols[S_CONTEXT + f], r->count, i, text, r->path, err);
}

int sn_shard_reader_meta(struct sn_shard_reader *r, size_t i, struct sn_tuple_meta *m,
                         struct sn_err *err)
{
    memset(m, 0, sizeof *m);
    if (i >= r->count)
        return sn_err_set(err, SN_E_ARG, "%s: tuple %zu out of range (count %zu)", r->path, i,
                          r->count);
    sn_h5_quiet();
    int rc = SN_OK;
    for (int c = S_SCENARIO; c < S_COUNT && !rc; c++) {
        sn_free(r->meta_str[c]);
        r->meta_str[c] = NULL;
        rc = sn_h5_ds_read_str_at(r->file, sn_shard_str_cols[c], r->count, i, &r->meta_str[c], r->path, err);
    }
    int32_t iv[I_COUNT] = {0};
    for (int c = 0; c < I_COUNT && !rc; c++)
        rc = sn_h5_ds_read_i32_at(r->file, sn_shard_int_cols[c], r->count, i, &iv[c], r->path, err);
    if (rc)
        return rc;
    m->scenario = r->meta_str[S_SCENARIO];
    m->dataset = r->meta_str[S_DATASET];
    m->trajectory_id = r->meta_str[S_TRAJ];
    m->item_id = r->meta_str[S_ITEM];
    m->chosen_role = r->meta_str[S_CH_ROLE];
    m->rejected_role = r->meta_str[S_REJ_ROLE];
    m->rejected_kind = r->meta_str[S_REJ_KIND];
    m->sha256 = r->meta_str[S_SHA];
    rc = sn_split_parse(r->meta_str[S_SPLIT], &m->split, err);
    if (rc)
        return sn_err_wrap(err, "%s: tuple %zu: meta/split", r->path, i);
    m->round = iv[I_ROUND];
    m->chosen_agent = iv[I_CH_AGENT];
    m->rejected_agent = iv[I_REJ_AGENT];
    m->cut_history[SN_FIELD_CHOSEN] = iv[I_CUTH_CH];
    m->cut_history[SN_FIELD_REJECTED] = iv[I_CUTH_REJ];
    m->cut_history[SN_FIELD_REFERENCE] = iv[I_CUTH_REF];
    m->cut_response[SN_FIELD_CHOSEN] = iv[I_CUTR_CH];
    m->cut_response[SN_FIELD_REJECTED] = iv[I_CUTR_REJ];
    m->cut_response[SN_FIELD_REFERENCE] = iv[I_CUTR_REF];
    return SN_OK;
}
