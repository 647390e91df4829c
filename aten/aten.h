/* aten/aten.h: placeholder; the aten helper replaces it with the C API over libtorch. */
#ifndef SN_ATEN_H
#define SN_ATEN_H
#include "common/common.h"
#endif
