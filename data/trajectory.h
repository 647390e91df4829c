/* data/trajectory.h: placeholder; its owner fills it in. */
#ifndef SN_DATA_TRAJECTORY_H
#define SN_DATA_TRAJECTORY_H
#include "common/common.h"
#endif
