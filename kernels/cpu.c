/* kernels/cpu.c: which instruction sets this CPU offers, and the names of the kernels' ISAs
** (kernels/kernels.h). cpuid through __builtin_cpu_supports, so the answer is the running
** CPU's and not the build machine's. */
#include "kernels/kernels.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define SN_KERN_X86 1
#endif

void sn_kern_cpu_detect(struct sn_kern_cpu *cpu)
{
    memset(cpu, 0, sizeof *cpu);
#ifdef SN_KERN_X86
    __builtin_cpu_init();
    cpu->avx2 = __builtin_cpu_supports("avx2");
    cpu->fma = __builtin_cpu_supports("fma");
    cpu->f16c = __builtin_cpu_supports("f16c");
    cpu->avx512f = __builtin_cpu_supports("avx512f");
    cpu->avx512bw = __builtin_cpu_supports("avx512bw");
    cpu->avx512vl = __builtin_cpu_supports("avx512vl");
    cpu->avx512bf16 = __builtin_cpu_supports("avx512bf16");
    cpu->avx512vnni = __builtin_cpu_supports("avx512vnni");
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
