/* kernels/kernels_internal.h: what the kernels' files share and callers do not need. */
#ifndef SN_KERNELS_INTERNAL_H
#define SN_KERNELS_INTERNAL_H
#include "kernels/kernels.h"

/* The sum of a dot product's 16 f32 lanes in the order of the vector paths (kernels/bf16.c,
** kernels/q8.c): (l0..7 + l8..15), then halves, then (l0 + l2) + (l1 + l3). */
static inline float sn_kern_lanes_sum(const float acc[16])
{
    float s8[8], s4[4];
    for (int i = 0; i < 8; i++)
        s8[i] = acc[i] + acc[i + 8];
    for (int i = 0; i < 4; i++)
        s4[i] = s8[i] + s8[i + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

#endif
