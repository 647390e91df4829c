/* kernels/cpu.c: which instruction sets this CPU offers, and the names of the kernels' ISAs
** (kernels/kernels.h). Read with cpuid (the running CPU's answer, not the build machine's), and
** counted only where the OS saves the vector registers (XCR0 through xgetbv): Intel SDM vol. 1
** §13.3 and §15.2 ("Detection of AVX-512 ... support"). <cpuid.h> rather than
** __builtin_cpu_supports, whose feature names differ between compilers and versions. */
#include "kernels/kernels.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define SN_KERN_X86 1

static uint64_t xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}
#endif

void sn_kern_cpu_detect(struct sn_kern_cpu *cpu)
{
    memset(cpu, 0, sizeof *cpu);
#ifdef SN_KERN_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))   /* OSXSAVE */
        return;
    const uint64_t x = xcr0();
    const bool ymm = (x & 0x6) == 0x6, zmm = (x & 0xe6) == 0xe6;   /* SSE, AVX; + opmask, ZMM */
    const bool avx = ymm && (c & (1u << 28));
    cpu->fma = avx && (c & (1u << 12));
    cpu->f16c = avx && (c & (1u << 29));
    if (!avx || __get_cpuid_max(0, NULL) < 7)
        return;
    __cpuid_count(7, 0, a, b, c, d);
    cpu->avx2 = b & (1u << 5);
    cpu->avx512f = zmm && (b & (1u << 16));
    cpu->avx512bw = cpu->avx512f && (b & (1u << 30));
    cpu->avx512vl = cpu->avx512f && (b & (1u << 31));
    cpu->avx512vnni = cpu->avx512f && (c & (1u << 11));
    __cpuid_count(7, 1, a, b, c, d);
    cpu->avx512bf16 = cpu->avx512f && (a & (1u << 5));
#endif
}

void sn_kern_cpu_describe(const struct sn_kern_cpu *cpu, char *out, size_t cap)
{
    const struct { bool on; const char *name; } f[] = {
        {cpu->avx2, "avx2"},         {cpu->fma, "fma"},           {cpu->f16c, "f16c"},
        {cpu->avx512f, "avx512f"},   {cpu->avx512bw, "avx512bw"}, {cpu->avx512vl, "avx512vl"},
        {cpu->avx512bf16, "avx512_bf16"}, {cpu->avx512vnni, "avx512_vnni"},
    };
    size_t len = 0;
    if (cap)
        out[0] = '\0';
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
        if (!f[i].on)
            continue;
        int k = snprintf(out + len, cap > len ? cap - len : 0, "%s%s", len ? " " : "", f[i].name);
        if (k < 0 || (size_t)k >= (cap > len ? cap - len : 0))
            return;
        len += (size_t)k;
    }
    if (!len)
        snprintf(out, cap, "none of the vector extensions the kernels use");
}

static const char *const isa_names[] = {"portable", "avx2", "avx512"};
_Static_assert(sizeof isa_names / sizeof isa_names[0] == SN_KERN_ISA_COUNT, "isa names");

const char *sn_kern_isa_name(int isa)
{
    return isa >= 0 && isa < SN_KERN_ISA_COUNT ? isa_names[isa] : "?";
}

int sn_kern_isa_parse(const char *s, int *isa, struct sn_err *err)
{
    for (int i = 0; i < SN_KERN_ISA_COUNT; i++)
        if (s && !strcmp(s, isa_names[i])) {
            *isa = i;
            return SN_OK;
        }
    return sn_err_set(err, SN_E_ARG, "kernels '%s': expected portable, avx2 or avx512",
                      s ? s : "(null)");
}

bool sn_kern_isa_supported(const struct sn_kern_cpu *cpu, int isa)
{
    switch (isa) {
    case SN_KERN_PORTABLE: return true;
    case SN_KERN_AVX2: return cpu->avx2 && cpu->fma && cpu->f16c;
    case SN_KERN_AVX512:
        return cpu->avx2 && cpu->fma && cpu->f16c && cpu->avx512f && cpu->avx512bw &&
               cpu->avx512vl;
    default: return false;
    }
}

int sn_kern_isa_best(const struct sn_kern_cpu *cpu)
{
    int best = SN_KERN_PORTABLE;
    for (int i = 0; i < SN_KERN_ISA_COUNT; i++)
        if (sn_kern_isa_supported(cpu, i))
            best = i;
    return best;
}

bool sn_kern_bf16_dot_hw(const struct sn_kern_cpu *cpu, int isa)
{
    return isa == SN_KERN_AVX512 && sn_kern_isa_supported(cpu, isa) && cpu->avx512bf16;
}
