/* data/shard.h: placeholder; its owner fills it in. */
#ifndef SN_DATA_SHARD_H
#define SN_DATA_SHARD_H
#include "common/common.h"
#endif
