/* common/base.h: the part of common/ that crosses the runtime library's boundary (docs/api.md):
** the error type every call fills, the growing text buffer the context helpers append to, and
** the seed derivation that gives a debate its tie seed. libsentinel_detector installs this
** header; the rest of common/ (common/common.h, which includes this one) stays inside sentinel.
**
** Ownership: a struct sn_buf is the caller's; zero-initialise it, and release what the library
** appended with sn_buf_free. Nothing here allocates except through a buffer. */
#ifndef SN_COMMON_BASE_H
#define SN_COMMON_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------------------------- */

enum sn_status {
    SN_OK = 0,
    SN_E_ARG,       /* bad argument or option (usage error) */
    SN_E_IO,        /* a file or socket operation failed */
    SN_E_FORMAT,    /* input does not follow its format */
    SN_E_NOMEM,     /* allocation failed or a size limit was hit */
    SN_E_BACKEND,   /* libtorch, HDF5, libcurl or an LLM endpoint failed */
    SN_E_CANCELLED, /* stopped by a signal or a callback */
    SN_E_UNSUPPORTED, /* valid request this build or version cannot do */
    SN_STATUS_COUNT /* append above; never renumber */
};

struct sn_err {
    int  code;
    char msg[512]; /* one line, no trailing newline */
};

/* Record a failure and return its code. The first failure wins (it is the root cause): a later
** call on an err that already holds one keeps the old message. err may be NULL. A scorer
** callback (defense/defense.h) reports its own failure with it. */
int sn_err_set(struct sn_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sn_err_clear(struct sn_err *err);
const char *sn_status_name(int code); /* its name; "unknown status" outside the enum */

/* ---- text buffers ------------------------------------------------------------------------- */

/* A growing byte buffer with a ceiling (docs/design.md §7). Always NUL-terminated after a
** successful append, so text can be used as a C string. max 0 = 1 GiB. */
struct sn_buf {
    char  *data;
    size_t len, cap, max;
};
void sn_buf_reset(struct sn_buf *b); /* len = 0, keeps memory */
void sn_buf_free(struct sn_buf *b);  /* back to the zero state */

/* ---- seeds -------------------------------------------------------------------------------- */

/* A seed derived from a parent seed and a label, so streams for items/agents are independent
** of the order they are drawn in. `sentinel eval --seed S` gives debate ID the tie seed
** sn_seed_derive(S, ID, 0) (docs/agents.md "The sentinel"). */
uint64_t sn_seed_derive(uint64_t seed, const char *label, uint64_t index);

#ifdef __cplusplus
}
#endif
#endif /* SN_COMMON_BASE_H */
