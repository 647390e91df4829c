/* aten/dtype.h: the names aten/ takes that code without libtorch must read too, apart from
** aten/aten.h: the element types of its tensors (a recipe's train.dtype, docs/train.md) and the
** c10d backends (train.dist_backend) (docs/design.md §3, library aten_dtype). */
#ifndef SN_ATEN_DTYPE_H
#define SN_ATEN_DTYPE_H
#ifdef __cplusplus
extern "C" { /* common/common.h has no linkage block of its own */
#endif
#include "common/common.h"

enum sn_dtype {
    SN_DTYPE_F32,
    SN_DTYPE_F64,
    SN_DTYPE_BF16,
    SN_DTYPE_F16,
    SN_DTYPE_I32,
    SN_DTYPE_I64,
    SN_DTYPE_BOOL, /* one byte per element, 0 or 1 */
    SN_DTYPE_U8,
    SN_DTYPE_COUNT /* append above; never renumber */
};
const char *sn_dtype_name(enum sn_dtype dt);  /* "f32", "bf16", ...; "?" if out of range */
size_t      sn_dtype_size(enum sn_dtype dt);  /* bytes per element; 0 if out of range */

/* The collectives of several processes (aten/aten.h "distributed"). */
enum sn_dist_backend { SN_DIST_BACKEND_AUTO, SN_DIST_BACKEND_GLOO, SN_DIST_BACKEND_NCCL };
/* "auto", "gloo", "nccl" -> *out; SN_E_ARG otherwise (the message names the choices). */
int sn_aten_dist_backend_parse(const char *s, enum sn_dist_backend *out, struct sn_err *err);

#ifdef __cplusplus
}
#endif
#endif /* SN_ATEN_DTYPE_H */
