/* kernels/kernels.h: the CPU kernels of the runtime detector over weights kept in the file's
** format (docs/export.md "Weight formats and kernels"; formats: docs/formats.md#gguf).
**
** A matrix W (out, in) is stored row-major in one of ggml's types (the numbering of
** enum sn_ggml_type, export/export.h): F32; F16 and BF16 (one 16-bit value per element);
** Q8_0 (per row, in / 32 blocks of an f16 scale d and 32 int8 q, x = d · q; 34 bytes). The
** kernels compute y (n, out) = x (n, in) · Wᵀ for an f32 activation x in these ways:
**   - tile: rows [r0, r1) of W converted to f32 into the caller's scratch, which the caller
**     feeds to an f32 GEMM (sgemm below, or OpenBLAS's, in export/). Conversion is exact
**     (F16, BF16) or one f32 product d · q per element (Q8_0), so every ISA gives the same
**     bits.
**   - dot (BF16 only): x rounded to BF16 (round to nearest even) and BF16 dot products
**     accumulated in f32 (AVX512-BF16 `vdpbf16ps` where the CPU has it; a portable path with
**     the same lane layout and summation order otherwise). Each output is one thread's
**     dot product over the whole row in a fixed order, so the bits do not depend on how many
**     threads share the work.
**   - int8 (Q8_0 only): x quantized to Q8_0 per block of 32 as ggml does, and int8 dot products
**     per group of 4 scaled and accumulated in 16 f32 lanes (kernels/q8.c: AVX512-VNNI
**     `vpdpbusd`, AVX2 `vpmaddubsw`, or portable; all three give the same bits, and each output
**     is one thread's).
**   - sgemm (f32: F32 matrices, and the tiles above): kernels/sgemm.c, an AVX-512F GEMM
**     (packed, cache-blocked panels, a 14 x 32 register block of FMAs) where the CPU has it,
**     which the detector uses by default there in place of OpenBLAS's sgemm (faster than the
**     kernels OpenBLAS runs as the environment picks them, e.g. OPENBLAS_CORETYPE=Haswell on an
**     AVX-512 CPU: docs/export.md "Weight formats and kernels"); a portable path otherwise.
**     Each output is one chain of FMAs in increasing k, so both paths give the same bits and a
**     thread's share of the outputs does not change them.
**
** Q8_0 (and BF16, as they are) also go to the dot kernels where the CPU has AVX512-BF16: a tile
** of rows converted to BF16 (every q of a block is exact in BF16; d · q is rounded to 8
** significant bits, below Q8_0's own step of d / 2 = max|x| / 254 relative to the block).
**
** CPU features are read with cpuid (__builtin_cpu_supports); each vector function is compiled
** for its own target (__attribute__((target))), so the build needs no -march and a binary runs
** on any x86-64 (other architectures get the portable paths). No state: every function takes
** what it needs; callers keep their choice in their own handle. Thread-safe. */
#ifndef SN_KERNELS_H
#define SN_KERNELS_H
#include "common/common.h"

/* Weight types, ggml's numbering (append-only, on disk in GGUF). */
enum sn_kern_type { SN_KERN_F32 = 0, SN_KERN_F16 = 1, SN_KERN_Q8_0 = 8, SN_KERN_BF16 = 30 };
#define SN_KERN_Q8_0_BLOCK 32

/* Instruction sets of the conversion and dot kernels, widest last (append-only). */
enum sn_kern_isa { SN_KERN_PORTABLE, SN_KERN_AVX2, SN_KERN_AVX512, SN_KERN_ISA_COUNT };

/* What the CPU running this process offers (false everywhere off x86-64). */
struct sn_kern_cpu {
    bool avx2, fma, f16c;                  /* AVX2 path: all three */
    bool avx512f, avx512bw, avx512vl;      /* AVX512 path: all three */
    bool avx512bf16, avx512vnni;
};
void sn_kern_cpu_detect(struct sn_kern_cpu *cpu);
/* "avx2 fma f16c avx512f ..." of the features present (at most `cap` bytes with the NUL). */
void sn_kern_cpu_describe(const struct sn_kern_cpu *cpu, char *out, size_t cap);

const char *sn_kern_isa_name(int isa);   /* "portable", "avx2", "avx512"; "?" otherwise */
/* The ISA named by s ("portable", "avx2", "avx512"); SN_E_ARG naming the choices otherwise. */
int  sn_kern_isa_parse(const char *s, int *isa, struct sn_err *err);
bool sn_kern_isa_supported(const struct sn_kern_cpu *cpu, int isa);
int  sn_kern_isa_best(const struct sn_kern_cpu *cpu);
/* Whether `dot` products of BF16 rows run in hardware with this ISA on this CPU. */
bool sn_kern_bf16_dot_hw(const struct sn_kern_cpu *cpu, int isa);

/* Bytes of one row of `in` elements (in a multiple of 32 for Q8_0); 0 for an unknown type. */
size_t sn_kern_row_bytes(int type, size_t in);
/* Whether every element of n (a multiple of 32 for Q8_0) is finite; *bad = the first that is
** not (for Q8_0, the first element of a block whose scale is not finite). */
bool sn_kern_all_finite(int type, const void *data, size_t n, size_t *bad);

/* Rows [r0, r1) of W (type, `in` per row) as f32 into dst ((r1 - r0), in), with the given ISA
** (which the CPU must support: sn_kern_isa_supported). Same bits for every ISA. */
void sn_kern_rows_to_f32(int isa, int type, const void *W, size_t in, size_t r0, size_t r1,
                         float *dst);

/* Rows [r0, r1) of W (type) rounded to BF16 into dst ((r1 - r0), in): the f32 values of
** sn_kern_rows_to_f32, rounded to nearest even as sn_kern_to_bf16 does. Same bits for every ISA. */
void sn_kern_rows_to_bf16(int isa, int type, const void *W, size_t in, size_t r0, size_t r1,
                          uint16_t *dst);

/* BF16 dot products (see the file comment). xb (n, in) is x rounded to BF16 by
** sn_kern_to_bf16 (same bits for every ISA); W (out, in) BF16; y (n, out) with row stride ldy;
** outputs [o0, o1) only (a thread's share); accumulate adds to y instead of overwriting it.
** hw: vdpbf16ps (only where sn_kern_bf16_dot_hw is true), else the portable path. */
void sn_kern_to_bf16(int isa, const float *x, size_t n, uint16_t *xb);
void sn_kern_bf16_gemm(bool hw, const uint16_t *xb, const uint16_t *W, float *y, size_t ldy,
                       size_t n, size_t in, size_t o0, size_t o1, bool accumulate);

/* Q8_0 by int8 dot products (kernels/q8.c: the arithmetic, the same bits in every path).
** x (n, in), in a multiple of 32, is quantized per block of 32 as ggml's q8_0 (d = max|x| / 127
** in f32, q = round(x / d)) into xq (n, in), xs (n, in / 4: each group of 4 elements' block
** scale) and xc (n, in / 4: -128 · the group's Σ q, for the VNNI path); rows [r0, r1) of a
** Q8_0 matrix W are unpacked into wq ((r1 - r0), in) and ws ((r1 - r0), in / 4) the same way.
** sn_kern_q8_gemm: y (n, out) with row stride ldy, outputs [o0, o1) of wq's rows (a thread's
** share), accumulate adds to y. isa: from sn_kern_q8_isa (AVX512 = AVX512-VNNI `vpdpbusd`,
** AVX2 = `vpmaddubsw`, else portable). */
int  sn_kern_q8_isa(const struct sn_kern_cpu *cpu, int isa);
void sn_kern_q8_quantize(const float *x, size_t n, size_t in, int8_t *xq, float *xs,
                         int32_t *xc);
void sn_kern_q8_unpack(const void *W, size_t in, size_t r0, size_t r1, int8_t *wq, float *ws);
void sn_kern_q8_gemm(int isa, const int8_t *xq, const float *xs, const int32_t *xc,
                     const int8_t *wq, const float *ws, float *y, size_t ldy, size_t n,
                     size_t in, size_t o0, size_t o1, bool accumulate);

/* f32 products (kernels/sgemm.c): y (n, out) = x (n, in) · Wᵀ, W (out, in) row-major, y with
** row stride ldy, outputs [o0, o1) only (a thread's share), accumulate adds x · Wᵀ to y. Each
** output is one chain of fused multiply-adds in increasing k from 0 (or from y when
** accumulating), so its bits depend neither on the split of outputs nor on the path.
** hw: the AVX-512F kernel (only where sn_kern_sgemm_hw is true), which needs scratch of
** sn_kern_sgemm_scratch() floats (one per concurrent call; 2.1 MiB); else the portable path
** (scratch unused, may be NULL), with the same bits. */
bool   sn_kern_sgemm_hw(const struct sn_kern_cpu *cpu, int isa);
size_t sn_kern_sgemm_scratch(void);
void   sn_kern_sgemm(bool hw, const float *x, const float *W, float *y, size_t ldy, size_t n,
                     size_t in, size_t o0, size_t o1, bool accumulate, float *scratch);

#endif
