/* data/tuples.h: placeholder; its owner fills it in. */
#ifndef SN_DATA_TUPLES_H
#define SN_DATA_TUPLES_H
#include "common/common.h"
#endif
