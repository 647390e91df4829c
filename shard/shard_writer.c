/* shard/shard_writer.c: writes one shard, buffered in memory and committed atomically
** (shard/shard.h; layout in docs/formats.md). */
#include "shard/shard_internal.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

static int strcol_push(struct strcol *c, const char *s, struct sn_err *err)
{
    if (!s)
        s = "";
    int rc = sn_shard_grow((void **)&c->off, &c->cap, c->n + 1, sizeof *c->off, err);
    if (rc)
        return rc;
    c->off[c->n] = c->bytes.len;
    rc = sn_buf_append(&c->bytes, s, strlen(s) + 1, err);
    if (!rc)
        c->n++;
    return rc;
}

struct sn_shard_writer_params sn_shard_writer_default_params(void)
{
    struct sn_shard_writer_params p;
    memset(&p, 0, sizeof p);
    p.deflate_level = 1;
    p.chunk_tuples = 1024;
    p.chunk_ids = 65536;
    return p;
}

void sn_shard_writer_abort(struct sn_shard_writer *w)
{
    if (!w)
        return;
    for (int i = 0; i < S_COUNT; i++) {
        sn_buf_free(&w->s[i].bytes);
        sn_free(w->s[i].off);
    }
    for (int i = 0; i < I_COUNT; i++)
        sn_free(w->icol[i]);
    for (int f = 0; f < SN_FIELD_COUNT; f++) {
        sn_free(w->ids[f]);
        sn_free(w->off[f]);
    }
    sn_free(w->tok_hash);
    sn_free(w->template_id);
    sn_free(w->path);
    sn_free(w);
}

int sn_shard_writer_create(const char *path, const struct sn_shard_writer_params *params,
                           struct sn_shard_writer **out, struct sn_err *err)
{
    *out = NULL;
    const struct sn_shard_info *in = &params->info;
    if (!in->tokenizer_hash || !in->template_id)
        return sn_err_set(err, SN_E_ARG, "%s: shard needs a tokenizer hash and a template id",
                          path);
    if (in->max_len <= 0 || in->max_len > MAX_LEN_LIMIT || in->vocab_size <= 0 ||
        in->vocab_size > INT32_MAX || (unsigned)in->split >= SN_SPLIT_COUNT)
        return sn_err_set(err, SN_E_ARG, "%s: bad shard parameters (max_len %" PRId64
                          ", vocab_size %" PRId64 ")", path, in->max_len, in->vocab_size);
    struct sn_shard_writer *w = sn_calloc(1, sizeof *w);
    if (!w)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    w->p = *params;
    if (w->p.deflate_level < 0 || w->p.deflate_level > 9)
        w->p.deflate_level = 1;
    if (!w->p.chunk_tuples)
        w->p.chunk_tuples = 1024;
    if (!w->p.chunk_ids)
        w->p.chunk_ids = 65536;
    w->path = sn_strdup(path);
    w->tok_hash = sn_strdup(in->tokenizer_hash);
    w->template_id = sn_strdup(in->template_id);
    int rc = SN_OK;
    if (!w->path || !w->tok_hash || !w->template_id)
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    for (int f = 0; f < SN_FIELD_COUNT && !rc; f++) {
        rc = sn_shard_grow((void **)&w->off[f], &w->cap_off[f], 1, sizeof(int64_t), err);
        if (!rc)
            w->off[f][0] = 0;
    }
    if (rc) {
        sn_shard_writer_abort(w);
        return rc;
    }
    w->p.info.tokenizer_hash = w->tok_hash;
    w->p.info.template_id = w->template_id;
    *out = w;
    return SN_OK;
}

size_t sn_shard_writer_count(const struct sn_shard_writer *w)
{
    return w->count;
}

int sn_shard_writer_add(struct sn_shard_writer *w, const struct sn_shard_tuple *t,
                        struct sn_err *err)
{
    const struct sn_tuple_meta *m = &t->meta;
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        if (t->n_ids[f] > (size_t)w->p.info.max_len)
            return sn_err_set(err, SN_E_ARG, "%s: tuple %zu: %s sequence has %zu ids, more than "
                              "max_len %" PRId64, w->path, w->count, sn_shard_field_names[f], t->n_ids[f],
                              w->p.info.max_len);
        for (size_t j = 0; j < t->n_ids[f]; j++)
            if (t->ids[f][j] < 0 || t->ids[f][j] >= w->p.info.vocab_size)
                return sn_err_set(err, SN_E_ARG, "%s: tuple %zu: %s id %" PRId32 " at %zu is "
                                  "outside [0, %" PRId64 ")", w->path, w->count, sn_shard_field_names[f],
                                  t->ids[f][j], j, w->p.info.vocab_size);
    }
    if ((unsigned)m->split >= SN_SPLIT_COUNT)
        return sn_err_set(err, SN_E_ARG, "%s: tuple %zu: bad split", w->path, w->count);
    if (w->count >= (size_t)MAX_COUNT_LIMIT)
        return sn_err_set(err, SN_E_ARG, "%s: too many tuples in one shard", w->path);
    const char *sv[S_COUNT] = {
        t->text[SN_FIELD_CONTEXT], t->text[SN_FIELD_CHOSEN], t->text[SN_FIELD_REJECTED],
        t->text[SN_FIELD_REFERENCE], m->scenario, m->dataset, m->trajectory_id, m->item_id,
        m->chosen_role, m->rejected_role, m->rejected_kind, sn_shard_split_names[m->split], m->sha256};
    int32_t iv[I_COUNT] = {
        m->round, m->chosen_agent, m->rejected_agent,
        m->cut_history[SN_FIELD_CHOSEN], m->cut_history[SN_FIELD_REJECTED],
        m->cut_history[SN_FIELD_REFERENCE], m->cut_response[SN_FIELD_CHOSEN],
        m->cut_response[SN_FIELD_REJECTED], m->cut_response[SN_FIELD_REFERENCE]};
    int rc = SN_OK;
    /* Reserve everything first so a failure leaves the writer unchanged (columns aligned). */
    for (int i = 0; i < I_COUNT && !rc; i++)
        rc = sn_shard_grow((void **)&w->icol[i], &w->icap[i], w->count + 1, sizeof(int32_t), err);
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT && !rc; f++) {
        rc = sn_shard_grow((void **)&w->off[f], &w->cap_off[f], w->count + 2, sizeof(int64_t), err);
        if (!rc)
            rc = sn_shard_grow((void **)&w->ids[f], &w->cap_ids[f], w->n_ids[f] + t->n_ids[f] + 1,
                      sizeof(int32_t), err);
    }
    size_t saved_len[S_COUNT];
    for (int i = 0; i < S_COUNT; i++)
        saved_len[i] = w->s[i].bytes.len;
    for (int i = 0; i < S_COUNT && !rc; i++)
        rc = strcol_push(&w->s[i], sv[i], err);
    if (rc) {
        for (int i = 0; i < S_COUNT; i++) {
            w->s[i].n = w->count;
            w->s[i].bytes.len = saved_len[i];
        }
        return sn_err_wrap(err, "%s", w->path);
    }
    for (int i = 0; i < I_COUNT; i++)
        w->icol[i][w->count] = iv[i];
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        if (t->n_ids[f])
            memcpy(w->ids[f] + w->n_ids[f], t->ids[f], t->n_ids[f] * sizeof(int32_t));
        w->n_ids[f] += t->n_ids[f];
        w->off[f][w->count + 1] = (int64_t)w->n_ids[f];
    }
    w->count++;
    return SN_OK;
}

/* The shard is built by HDF5 in memory (the "core" driver without a backing store) and its
** image is then written by sn_atomic_write, whose every write, fsync and close is checked and
** which removes its temp file on failure. HDF5 never writes to disk itself: when its own
** H5Fclose failed on a full disk, the file stayed half-closed in HDF5's tables and the library's
** exit handler crashed on it. The image is *image (sn_free), its size *n. */
static int write_file(struct sn_shard_writer *w, const char *tmp, void **image, size_t *n_image,
                      struct sn_err *err)
{
    const struct sn_shard_info *in = &w->p.info;
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), gcpl = H5Pcreate(H5P_GROUP_CREATE), file = -1;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hid_t st = sn_h5_vlen_str_type();
    const char **ptrs = NULL;
    int rc = SN_OK;
    *image = NULL;
    *n_image = 0;
    if (fcpl < 0 || gcpl < 0 || fapl < 0 || st < 0 || H5Pset_obj_track_times(gcpl, 0) < 0 ||
        H5Pset_fapl_core(fapl, (size_t)1 << 20, 0) < 0) {
        rc = sn_h5_fail(err, tmp, "property lists");
        goto done;
    }
    /* The root group's object header follows the fcpl; no timestamps there either. */
    H5Pset_obj_track_times(fcpl, 0);
    file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl);
    if (file < 0) {
        rc = sn_h5_fail(err, tmp, "create");
        goto done;
    }
    if ((rc = sn_h5_attr_write_str(file, "schema", SN_SHARD_SCHEMA, tmp, err)) ||
        (rc = sn_h5_attr_write_str(file, "tokenizer_hash", in->tokenizer_hash, tmp, err)) ||
        (rc = sn_h5_attr_write_str(file, "template_id", in->template_id, tmp, err)) ||
        (rc = sn_h5_attr_write_i64(file, "max_len", in->max_len, tmp, err)) ||
        (rc = sn_h5_attr_write_i64(file, "vocab_size", in->vocab_size, tmp, err)) ||
        (rc = sn_h5_attr_write_i64(file, "count", (int64_t)w->count, tmp, err)) ||
        (rc = sn_h5_attr_write_str(file, "split", sn_shard_split_names[in->split], tmp, err)) ||
        (rc = sn_h5_attr_write_i64(file, "shard_index", in->shard_index, tmp, err)))
        goto done;
    for (size_t g = 0; g < sizeof sn_shard_groups / sizeof sn_shard_groups[0]; g++) {
        hid_t gid = H5Gcreate2(file, sn_shard_groups[g], H5P_DEFAULT, gcpl, H5P_DEFAULT);
        if (gid < 0) {
            rc = sn_h5_fail(err, tmp, sn_shard_groups[g]);
            goto done;
        }
        H5Gclose(gid);
    }
    ptrs = sn_malloc((w->count ? w->count : 1) * sizeof *ptrs);
    if (!ptrs) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", tmp);
        goto done;
    }
    for (int c = 0; c < S_COUNT; c++) {
        for (size_t i = 0; i < w->count; i++)
            ptrs[i] = w->s[c].bytes.data + w->s[c].off[i];
        rc = sn_h5_ds_write(file, sn_shard_str_cols[c], st, st, w->count, ptrs, w->p.chunk_tuples,
                      w->p.deflate_level, tmp, err);
        if (rc)
            goto done;
    }
    for (int c = 0; c < I_COUNT; c++) {
        rc = sn_h5_ds_write(file, sn_shard_int_cols[c], H5T_STD_I32LE, H5T_NATIVE_INT32, w->count, w->icol[c],
                      w->p.chunk_tuples, w->p.deflate_level, tmp, err);
        if (rc)
            goto done;
    }
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        char name[64];
        snprintf(name, sizeof name, "ids/%s", sn_shard_field_names[f]);
        rc = sn_h5_ds_write(file, name, H5T_STD_I32LE, H5T_NATIVE_INT32, w->n_ids[f], w->ids[f],
                      w->p.chunk_ids, w->p.deflate_level, tmp, err);
        if (rc)
            goto done;
        snprintf(name, sizeof name, "offsets/%s", sn_shard_field_names[f]);
        rc = sn_h5_ds_write(file, name, H5T_STD_I64LE, H5T_NATIVE_INT64, w->count + 1, w->off[f],
                      w->p.chunk_tuples, w->p.deflate_level, tmp, err);
        if (rc)
            goto done;
    }
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) {
        rc = sn_h5_fail(err, tmp, "flush");
        goto done;
    }
    ssize_t size = H5Fget_file_image(file, NULL, 0);
    if (size <= 0) {
        rc = sn_h5_fail(err, tmp, "file image");
        goto done;
    }
    *image = sn_malloc((size_t)size);
    if (!*image) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory for a %zd-byte shard", tmp, size);
        goto done;
    }
    if (H5Fget_file_image(file, *image, (size_t)size) != size) {
        rc = sn_h5_fail(err, tmp, "file image");
        goto done;
    }
    *n_image = (size_t)size;
done:
    sn_free(ptrs);
    if (file >= 0 && H5Fclose(file) < 0 && !rc)
        rc = sn_h5_fail(err, tmp, "close");
    if (rc) {
        sn_free(*image);
        *image = NULL;
        *n_image = 0;
    }
    if (fapl >= 0)
        H5Pclose(fapl);
    if (st >= 0)
        H5Tclose(st);
    if (gcpl >= 0)
        H5Pclose(gcpl);
    if (fcpl >= 0)
        H5Pclose(fcpl);
    return rc;
}

int sn_shard_writer_commit(struct sn_shard_writer *w, char sha256_hex[65], struct sn_err *err)
{
    sn_h5_quiet();
    void *image = NULL;
    size_t n = 0;
    int rc = write_file(w, w->path, &image, &n, err);
    if (!rc && sha256_hex)
        sn_sha256_hex(image, n, sha256_hex); /* the very bytes that go to disk */
    if (!rc)
        rc = sn_atomic_write(w->path, image, n, err); /* temp, fsync, rename; temp removed on
                                                      ** failure (a full disk names ENOSPC) */
    sn_free(image);
    sn_shard_writer_abort(w);
    return rc;
}
