/* kernels/convert.c: rows of a weight matrix in its file's type -> f32 (the `tile` kernels of
** kernels/kernels.h), and the finiteness check of a tensor without converting it.
** Every ISA computes the same bits: F16 and BF16 widen exactly, and Q8_0's x = d · q is one
** f32 product of exact operands in every path (ggml's dequantize_row_q8_0). */
#include "kernels/kernels.h"


#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SN_KERN_X86 1
#endif

#define Q8_BYTES (2 + SN_KERN_Q8_0_BLOCK)

size_t sn_kern_row_bytes(int type, size_t in)
{
    switch (type) {
    case SN_KERN_F32: return in * 4;
    case SN_KERN_F16:
    case SN_KERN_BF16: return in * 2;
    case SN_KERN_Q8_0: return in / SN_KERN_Q8_0_BLOCK * Q8_BYTES;
    default: return 0;
    }
}

static uint16_t ld16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

bool sn_kern_all_finite(int type, const void *data, size_t n, size_t *bad)
{
    const uint8_t *p = data;
    switch (type) {
    case SN_KERN_F32:
        for (size_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            if ((u & 0x7f800000u) == 0x7f800000u) {
                *bad = i;
                return false;
            }
        }
        return true;
    case SN_KERN_F16:
    case SN_KERN_BF16: {
        const uint16_t m = type == SN_KERN_F16 ? 0x7c00u : 0x7f80u;
        for (size_t i = 0; i < n; i++)
            if ((ld16(p + 2 * i) & m) == m) {
                *bad = i;
                return false;
            }
        return true;
    }
    case SN_KERN_Q8_0:
        for (size_t b = 0; b < n / SN_KERN_Q8_0_BLOCK; b++)
            if ((ld16(p + b * Q8_BYTES) & 0x7c00u) == 0x7c00u) {
                *bad = b * SN_KERN_Q8_0_BLOCK;
                return false;
            }
        return true;
    default:
        *bad = 0;
        return false;
    }
}

/* ---- portable ----------------------------------------------------------------------------- */

static void row_portable(int type, const uint8_t *p, size_t in, float *dst)
{
    switch (type) {
    case SN_KERN_F32:
        memcpy(dst, p, in * 4);
        break;
    case SN_KERN_F16:
        for (size_t i = 0; i < in; i++)
            dst[i] = sn_f16_to_f32(ld16(p + 2 * i));
        break;
    case SN_KERN_BF16:
        for (size_t i = 0; i < in; i++) {
            uint32_t u = (uint32_t)ld16(p + 2 * i) << 16;
            memcpy(&dst[i], &u, 4);
        }
        break;
    case SN_KERN_Q8_0:
        for (size_t b = 0; b < in / SN_KERN_Q8_0_BLOCK; b++) {
            const uint8_t *blk = p + b * Q8_BYTES;
            const float d = sn_f16_to_f32(ld16(blk));
            for (int j = 0; j < SN_KERN_Q8_0_BLOCK; j++)
                dst[b * SN_KERN_Q8_0_BLOCK + j] = d * (float)(int8_t)blk[2 + j];
        }
        break;
    default:
        break;
    }
}

#ifdef SN_KERN_X86
/* ---- AVX2 (+ F16C) ------------------------------------------------------------------------ */

__attribute__((target("avx2,fma,f16c")))
static void row_avx2(int type, const uint8_t *p, size_t in, float *dst)
{
    size_t i = 0;
    switch (type) {
    case SN_KERN_F16:
        for (; i + 8 <= in; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const void *)(p + 2 * i))));
        break;
    case SN_KERN_BF16:
        for (; i + 8 <= in; i += 8) {
            __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)(p + 2 * i)));
            _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
        }
        break;
    case SN_KERN_Q8_0:
        for (size_t b = 0; b < in / SN_KERN_Q8_0_BLOCK; b++) {
            const uint8_t *blk = p + b * Q8_BYTES;
            const __m256 d = _mm256_set1_ps(_cvtsh_ss(ld16(blk)));
            for (int j = 0; j < SN_KERN_Q8_0_BLOCK; j += 8) {
                __m128i q = _mm_loadl_epi64((const void *)(blk + 2 + j));
                __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
                _mm256_storeu_ps(dst + b * SN_KERN_Q8_0_BLOCK + j, _mm256_mul_ps(d, v));
            }
        }
        return;
    default:
        break;
    }
    row_portable(type, p + sn_kern_row_bytes(type, i), in - i, dst + i);
}

/* ---- AVX-512 ------------------------------------------------------------------------------ */

__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
static void row_avx512(int type, const uint8_t *p, size_t in, float *dst)
{
    size_t i = 0;
    switch (type) {
    case SN_KERN_F16:
        for (; i + 16 <= in; i += 16)
            _mm512_storeu_ps(dst + i,
                             _mm512_cvtph_ps(_mm256_loadu_si256((const void *)(p + 2 * i))));
        break;
    case SN_KERN_BF16:
        for (; i + 16 <= in; i += 16) {
            __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *)(p + 2 * i)));
            _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
        }
        break;
    case SN_KERN_Q8_0:
        for (size_t b = 0; b < in / SN_KERN_Q8_0_BLOCK; b++) {
            const uint8_t *blk = p + b * Q8_BYTES;
            const __m512 d = _mm512_set1_ps(_cvtsh_ss(ld16(blk)));
            for (int j = 0; j < SN_KERN_Q8_0_BLOCK; j += 16) {
                __m128i q = _mm_loadu_si128((const void *)(blk + 2 + j));
                __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
                _mm512_storeu_ps(dst + b * SN_KERN_Q8_0_BLOCK + j, _mm512_mul_ps(d, v));
            }
        }
        return;
    default:
        break;
    }
    row_portable(type, p + sn_kern_row_bytes(type, i), in - i, dst + i);
}
#endif

void sn_kern_rows_to_f32(int isa, int type, const void *W, size_t in, size_t r0, size_t r1,
                         float *dst)
{
    const size_t rb = sn_kern_row_bytes(type, in);
    const uint8_t *p = (const uint8_t *)W + r0 * rb;
    for (size_t r = r0; r < r1; r++, p += rb, dst += in) {
#ifdef SN_KERN_X86
        if (isa == SN_KERN_AVX512) {
            row_avx512(type, p, in, dst);
            continue;
        }
        if (isa == SN_KERN_AVX2) {
            row_avx2(type, p, in, dst);
            continue;
        }
#else
        (void)isa;
#endif
        row_portable(type, p, in, dst);
    }
}
