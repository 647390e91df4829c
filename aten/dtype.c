/* aten/dtype.c: names and sizes of the tensor element types (aten/dtype.h). */
#include "aten/dtype.h"

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
