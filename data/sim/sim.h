/* data/sim/sim.h: placeholder; its owner fills it in. */
#ifndef SN_DATA_SIM_SIM_H
#define SN_DATA_SIM_SIM_H
#include "common/common.h"
#endif
