/* aten/dtype.h: the element types of aten/ tensors, apart from aten/aten.h so that code
** which only names a dtype (a recipe's train.dtype, docs/train.md) needs no libtorch
** (docs/design.md §3, library aten_dtype). */
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

#ifdef __cplusplus
}
#endif
#endif /* SN_ATEN_DTYPE_H */
