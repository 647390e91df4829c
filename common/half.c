/* common/half.c: 16-bit float conversions (IEEE half and bfloat16) shared by the safetensors
** files (hf/) and the GGUF reader and writer (export/); declared in common/common.h. */
#include "common/common.h"

#include <math.h>
#include <string.h>

static float bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

float sn_bf16_to_f32(uint16_t h) { return bits_to_f32((uint32_t)h << 16); }

uint16_t sn_f32_to_bf16(float f)
{
    uint32_t u = f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a quiet NaN */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float sn_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f)
        return bits_to_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return bits_to_f32(sign);
        /* subnormal: value = man * 2^-24 exactly */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t sn_f32_to_f16(float f)
{
    uint32_t u = f32_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7e00u; /* NaN */
    if (a >= 0x477ff000u)      /* >= 65520 rounds to inf */
        return sign | 0x7c00u;
    if (a < 0x38800000u) { /* below the smallest normal half (2^-14): subnormal or zero */
        float v = bits_to_f32(a) * 16777216.0f; /* scale by 2^24: value in units of 2^-24 */
        return sign | (uint16_t)nearbyintf(v);   /* default rounding mode: nearest even */
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
    return sign | (uint16_t)(r >> 13);
}
