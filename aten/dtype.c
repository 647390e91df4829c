/* aten/dtype.c: names and sizes of the tensor element types, and the c10d backends' names
** (aten/dtype.h). */
#include "aten/dtype.h"

#include <string.h>

const char *sn_dtype_name(enum sn_dtype dt)
{
    static const char *const names[] = {"f32", "f64", "bf16", "f16", "i32", "i64", "bool", "u8"};
    _Static_assert(sizeof names / sizeof names[0] == SN_DTYPE_COUNT, "names out of sync");
    return (unsigned)dt < SN_DTYPE_COUNT ? names[dt] : "?";
}

size_t sn_dtype_size(enum sn_dtype dt)
{
    static const size_t sizes[] = {4, 8, 2, 2, 4, 8, 1, 1};
    _Static_assert(sizeof sizes / sizeof sizes[0] == SN_DTYPE_COUNT, "sizes out of sync");
    return (unsigned)dt < SN_DTYPE_COUNT ? sizes[dt] : 0;
}

int sn_aten_dist_backend_parse(const char *s, enum sn_dist_backend *out, struct sn_err *err)
{
    static const char *const names[] = {"auto", "gloo", "nccl"}; /* enum sn_dist_backend order */
    for (size_t k = 0; s && out && k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(s, names[k])) {
            *out = (enum sn_dist_backend)k;
            return SN_OK;
        }
    return sn_err_set(err, SN_E_ARG, "dist backend '%s': expected 'auto', 'gloo' or 'nccl'",
                      s ? s : "(null)");
}
