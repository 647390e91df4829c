/* train/trainer_tb.c: TensorBoard event files beside metrics.jsonl (train.report_to
** "tensorboard"; docs/train.md "Logging", layout in docs/formats.md "TensorBoard event file").
** Every metrics.jsonl line becomes one Event at its step holding one Summary.Value per number
** of the line, so TensorBoard (or anything that reads its files, `wandb sync` included) shows
** the same scalars as metrics.jsonl.
**
** The file is a sequence of records: uint64 length (little endian), masked CRC-32C of those 8
** bytes, the data, masked CRC-32C of the data; mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8.
** The data is a protobuf `Event`, encoded by hand with the three wire types it needs (varint,
** 64-bit, length-delimited) and 32-bit for the float: Event {1 wall_time double, 2 step
** int64, 3 file_version string, 5 summary Summary}; Summary {1 value repeated Value};
** Value {1 tag string, 2 simple_value float}. The first record holds file_version
** "brain.Event:2". */
#include "train/trainer_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), bitwise: the records are small and
** written once per logged step. */
static uint32_t crc32c(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
}

static uint32_t masked_crc(const uint8_t *p, size_t n)
{
    uint32_t c = crc32c(p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* ---- protobuf wire format ------------------------------------------------------------------- */

static int put_varint(struct sn_buf *b, uint64_t v, struct sn_err *err)
{
    uint8_t x[10];
    size_t n = 0;
    do {
        x[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            x[n] |= 0x80;
        n++;
    } while (v);
    return sn_buf_append(b, x, n, err);
}

static int put_le(struct sn_buf *b, uint64_t v, size_t n, struct sn_err *err)
{
    uint8_t x[8];
    for (size_t i = 0; i < n; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    return sn_buf_append(b, x, n, err);
}

/* key = field << 3 | wire type (0 varint, 1 64-bit, 2 length-delimited, 5 32-bit) */
static int put_key(struct sn_buf *b, unsigned field, unsigned wire, struct sn_err *err)
{
    return put_varint(b, (uint64_t)field << 3 | wire, err);
}

static int put_bytes(struct sn_buf *b, unsigned field, const void *p, size_t n,
                     struct sn_err *err)
{
    int rc = put_key(b, field, 2, err);
    if (!rc)
        rc = put_varint(b, n, err);
    if (!rc)
        rc = sn_buf_append(b, p, n, err);
    return rc;
}

static int put_double(struct sn_buf *b, unsigned field, double v, struct sn_err *err)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    int rc = put_key(b, field, 1, err);
    return rc ? rc : put_le(b, u, 8, err);
}

static int put_float(struct sn_buf *b, unsigned field, float v, struct sn_err *err)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    int rc = put_key(b, field, 5, err);
    return rc ? rc : put_le(b, u, 4, err);
}

/* ---- records -------------------------------------------------------------------------------- */

static int write_record(struct sn_trainer *t, const struct sn_buf *ev, struct sn_err *err)
{
    uint8_t hdr[8];
    for (int i = 0; i < 8; i++)
        hdr[i] = (uint8_t)((uint64_t)ev->len >> (8 * i));
    uint32_t c1 = masked_crc(hdr, 8), c2 = masked_crc((const uint8_t *)ev->data, ev->len);
    uint8_t b1[4], b2[4];
    for (int i = 0; i < 4; i++) {
        b1[i] = (uint8_t)(c1 >> (8 * i));
        b2[i] = (uint8_t)(c2 >> (8 * i));
    }
    if (fwrite(hdr, 1, 8, t->tb) != 8 || fwrite(b1, 1, 4, t->tb) != 4 ||
        fwrite(ev->data, 1, ev->len, t->tb) != ev->len || fwrite(b2, 1, 4, t->tb) != 4 ||
        fflush(t->tb))
        return sn_err_set(err, SN_E_IO, "%s: write failed: %s", t->tb_path, strerror(errno));
    return SN_OK;
}

static double wall_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* OUT/runs/events.out.tfevents.<seconds>.<host>, TensorBoard's name, created on first use
** with its file_version record. A resumed run starts a new file (TensorBoard reads every
** file of the directory). */
static int tb_open(struct sn_trainer *t, struct sn_err *err)
{
    char dir[PATH_MAX], host[256] = "localhost";
    int rc = SN_OK, k = snprintf(dir, sizeof dir, "%s/runs", t->out);
    if (k < 0 || (size_t)k >= sizeof dir)
        return sn_err_set(err, SN_E_ARG, "path too long: %s/runs", t->out);
    if ((rc = sn_mkdirs(dir, err)))
        return rc;
    if (gethostname(host, sizeof host - 1))
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    double now = wall_time();
    k = snprintf(t->tb_path, sizeof t->tb_path, "%s/events.out.tfevents.%lld.%s", dir,
                 (long long)now, host);
    if (k < 0 || (size_t)k >= sizeof t->tb_path)
        return sn_err_set(err, SN_E_ARG, "path too long: %s/events.out.tfevents...", dir);
    t->tb = fopen(t->tb_path, "ab");
    if (!t->tb)
        return sn_err_set(err, SN_E_IO, "%s: %s", t->tb_path, strerror(errno));
    struct sn_buf ev = {0};
    static const char ver[] = "brain.Event:2";
    rc = put_double(&ev, 1, now, err);
    if (!rc)
        rc = put_bytes(&ev, 3, ver, sizeof ver - 1, err);
    if (!rc)
        rc = write_record(t, &ev, err);
    sn_buf_free(&ev);
    return rc;
}

/* The tag of a metrics.jsonl key: HF's TensorBoard callback names, "eval/<name>" for an
** "eval_" key and "train/<name>" for the others. */
static void tag_of(const char *key, char *buf, size_t n)
{
    if (!strncmp(key, "eval_", 5))
        snprintf(buf, n, "eval/%s", key + 5);
    else
        snprintf(buf, n, "train/%s", key);
}

int sn_trainer_tb_log(struct sn_trainer *t, const cJSON *o, struct sn_err *err)
{
    if (!t->p.tensorboard || t->rank != 0)
        return SN_OK;
    int rc = t->tb ? SN_OK : tb_open(t, err);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "step");
    if (rc || !cJSON_IsNumber(st))
        return rc;
    struct sn_buf sum = {0}, val = {0}, ev = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, o) {
        char tag[160];
        /* the step is the Event's; a null is a value that was not finite: no point */
        if (!strcmp(e->string, "step") || !cJSON_IsNumber(e))
            continue;
        tag_of(e->string, tag, sizeof tag);
        val.len = 0;
        if ((rc = put_bytes(&val, 1, tag, strlen(tag), err)) ||
            (rc = put_float(&val, 2, (float)e->valuedouble, err)) ||
            (rc = put_bytes(&sum, 1, val.data, val.len, err)))
            break;
    }
    if (!rc)
        rc = put_double(&ev, 1, wall_time(), err);
    if (!rc)
        rc = put_key(&ev, 2, 0, err);
    if (!rc)
        rc = put_varint(&ev, (uint64_t)(int64_t)st->valuedouble, err);
    if (!rc)
        rc = put_bytes(&ev, 5, sum.len ? sum.data : "", sum.len, err);
    if (!rc)
        rc = write_record(t, &ev, err);
    sn_buf_free(&sum);
    sn_buf_free(&val);
    sn_buf_free(&ev);
    return rc;
}

void sn_trainer_tb_close(struct sn_trainer *t)
{
    if (t->tb)
        fclose(t->tb);
    t->tb = NULL;
}
