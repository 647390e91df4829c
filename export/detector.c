/* export/detector.c: the runtime detector (export.h): R(response ⊕ context) from a qwen2 GGUF,
** pure C + OpenBLAS + kernels/ (docs/design.md §3, §4 "Reward model").
**
** Weights stay in the file's type, in the file's memory map (read-only, shared with every
** process that maps the same file): F32 matrices go to an f32 GEMM as they are (kernels/sgemm.c
** where the CPU has AVX-512F, else OpenBLAS's sgemm); F16, BF16 and Q8_0 matrices are
** multiplied through kernels/ (tiles converted to f32 for that GEMM, BF16 dot products, or for
** Q8_0 on request int8 dot products), chosen at open from the CPU's features (docs/export.md
** "Weight formats and kernels"). Activations, norms, RoPE, attention and the head are f32.
**
** Forward (Hugging Face Qwen2Model, the same math as train/model.c):
**   x = token_embd[ids]
**   per layer: a = RMSNorm(x) ⊙ attn_norm;  q = a Wqᵀ + bq,  k = a Wkᵀ + bk,  v = a Wvᵀ + bv;
**              RoPE (rotate-half, NEOX in llama.cpp's words) on q and k at absolute positions;
**              causal GQA attention (KV head = head / (H / Hkv)), softmax(q kᵀ / sqrt(Dh)) v;
**              x += o Woᵀ;  m = RMSNorm(x) ⊙ ffn_norm;  x += (silu(m Wgᵀ) ⊙ m Wuᵀ) Wdᵀ
**   reward = head · (RMSNorm(x[last]) ⊙ output_norm)
** RMSNorm(x) = x / sqrt(mean(x²) + eps). The RoPE tables are computed in float as HF and
** train/ do (inv_freq = 1 / theta^(2j/Dh), angle = pos · inv_freq), so positions far from 0
** round the same way.
**
** Keys and values of every position go into a per-layer cache, so a call can run only the
** tokens after a prefix already computed: score_shared runs the prefix the renderings of one
** context share once, then each response's own tokens. All scratch is sized once at open from
** the hyper-parameters and max_tokens (table in scratch_layout); the forward never allocates. */
/* sched_getaffinity (the CPUs OpenBLAS would use) and dladdr (which OpenBLAS is called) */
#define _GNU_SOURCE
#include "export/export_internal.h"

#include "kernels/kernels.h"
#include "tokenizer/template.h"
#include "tokenizer/tokenizer.h"

#include <cblas.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert((int)SN_GGML_F32 == (int)SN_KERN_F32 && (int)SN_GGML_F16 == (int)SN_KERN_F16 &&
               (int)SN_GGML_Q8_0 == (int)SN_KERN_Q8_0 &&
               (int)SN_GGML_BF16 == (int)SN_KERN_BF16 && SN_Q8_0_BLOCK == SN_KERN_Q8_0_BLOCK,
               "kernels/ numbers ggml's types as export/");

/* A matrix W (out, in) in its file's type: borrowed from the memory map, or owned when the
** file left it misaligned for its element type. */
struct wmat {
    int         type;      /* enum sn_ggml_type */
    const void *data;
    int64_t     out, in;
};

struct layer {
    const float *attn_norm, *bq, *bk, *bv, *ffn_norm;    /* f32 vectors */
    struct wmat wq, wk, wv, wo;                          /* wq (E, E), wk/wv (Ekv, E), wo (E, E) */
    struct wmat wg, wu, wd;                              /* wg/wu (F, E), wd (E, F) */
};

/* Floats of the f32 tile that F16/Q8_0 matrices (and BF16 ones without dot products) are
** converted into, a block of whole rows at a time (8 MiB: the rows of a tile are many enough
** for the sgemm to run near its peak, and the conversion is ~1/n of the product's work). */
#define TILE_FLOATS ((size_t)2 << 20)
#define TILE_MIN_ROWS 16
/* At most this many threads share a product of our own kernels (dots, sgemms): their job
** table lives on the caller's stack. */
#define JOBS_MAX 64

struct sn_detector {
    struct sn_qwen2_hparams h;
    int      n_threads;         /* OpenBLAS threads of every forward (n_threads 0 resolved) */
    int64_t  T;                 /* max tokens per sequence */
    struct sn_tokenizer *tok;
    char    *system;
    size_t   max_len;           /* the template's truncation length (<= T) */
    struct sn_gguf *file;       /* the file, mapped read-only: the weights live in it */
    struct wmat emb;            /* (V, E) */
    struct layer *layers;
    const float *out_norm;      /* (E) */
    float   *head;              /* (E) */
    void   **owned;             /* weight buffers of our own (head, misaligned tensors) */
    size_t   n_owned;
    struct sn_kern_cpu cpu;
    int      isa;               /* kernels/ ISA of conversions (and of BF16 dot products) */
    bool     dot;               /* BF16 and Q8_0 matrices by BF16 dot products, else f32 tiles */
    bool     dot_hw;            /* ... with vdpbf16ps */
    size_t   tile_floats;       /* size of wt (0: no matrix goes by f32 tiles) */
    size_t   tile_bf16;         /* size of wb (0: no Q8_0 matrix goes by BF16 dot products) */
    bool     q8dot;             /* Q8_0 matrices by int8 dot products (kernels/q8.c) */
    int      q8isa;             /* ... with this kernels/ path (sn_kern_q8_isa) */
    size_t   scratch_bytes;
    float   *scratch;
    float   *x, *a, *q, *att, *g, *u, *s, *kc, *vc, *rc, *rs, *hid, *wt;
    uint16_t *xb;               /* (T, max(E, F)) activations as BF16, for dot products */
    uint16_t *wb;               /* tile_bf16: rows of a Q8_0 matrix as BF16 */
    void    *q8buf;             /* q8dot: the block below (xq, xs, xc, wq, ws) */
    int8_t  *xq, *wq;           /* activations as Q8_0 (T, max(E, F)); a tile of W's rows */
    float   *xs, *ws;           /* their scales, one per group of 4 */
    int32_t *xc;                /* the activations' VNNI corrections (kernels/kernels.h) */
    bool     sgemm;             /* F32 matrices and f32 tiles by kernels/sgemm.c, not OpenBLAS */
    float   *sg;                /* its packing scratch, sn_kern_sgemm_scratch() per thread */
    char     kernels[512];      /* the choice, in words (sn_detector_kernels) */
    struct sn_ids ids;
};

struct sn_detector_params sn_detector_default_params(void)
{
    struct sn_detector_params p = {0};
    return p;
}

const struct sn_tokenizer *sn_detector_tokenizer(const struct sn_detector *d) { return d->tok; }
int sn_detector_n_threads(const struct sn_detector *d) { return d->n_threads; }

/* ---- threads (docs/export.md "Reproducibility") --------------------------------------------
** OpenBLAS's sgemm splits a product among its threads, and with some of its kernels (Haswell's,
** chosen on AVX2 machines or by OPENBLAS_CORETYPE=Haswell) the split decides which elements go
** through the micro-kernel's edge paths, which round differently: the same product differs in
** the last bits between 1 and 2 threads. So the thread count is part of the result, and it is
** fixed per detector: resolved once at open, applied before each forward, since OpenBLAS keeps
** one count per process that anything else (another detector) may have changed. */

/* CPUs this process may run on: what OpenBLAS counts for its own default. */
static int cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* n_threads = 0: OpenBLAS's own default rule, read from the environment (never from OpenBLAS's
** current count, which depends on what the process did before): OPENBLAS_NUM_THREADS, else
** GOTO_NUM_THREADS, else OMP_NUM_THREADS, else one per available CPU; at most one per CPU. */
static int default_threads(void)
{
    static const char *const vars[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                       "OMP_NUM_THREADS"};
    int cpus = cpus_available();
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        char *end = NULL;
        long n = v ? strtol(v, &end, 10) : 0;
        if (v && end != v && n > 0)
            return n < cpus ? (int)n : cpus;
    }
    return cpus;
}

static void use_threads(const struct sn_detector *d)
{
    if (openblas_get_num_threads() != d->n_threads)
        openblas_set_num_threads(d->n_threads);
}

/* The thread count reaches the sgemm that computes only when both functions come from one
** OpenBLAS: a process can hold two copies (libtorch brings libblas.so.3 beside
** libopenblas.so.0), and a copy loaded first wins each symbol. */
static void check_blas_origin(const char *path)
{
    union { void (*f)(int); void *p; } set = {openblas_set_num_threads};
    union { void (*f)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                      blasint, blasint, float, const float *, blasint, const float *, blasint,
                      float, float *, blasint);
            void *p; } gemm = {cblas_sgemm};
    Dl_info a, b;
    if (dladdr(set.p, &a) && dladdr(gemm.p, &b) && a.dli_fname && b.dli_fname &&
        strcmp(a.dli_fname, b.dli_fname))
        sn_log(SN_LOG_WARN, "%s: cblas_sgemm comes from %s but openblas_set_num_threads from %s: "
               "n_threads cannot reach the sgemm, whose own thread count decides the last bits "
               "of each score (docs/export.md \"Reproducibility\")", path, b.dli_fname,
               a.dli_fname);
}
int sn_detector_n_embd(const struct sn_detector *d) { return (int)d->h.n_embd; }

void sn_detector_free(struct sn_detector *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_owned; i++)
        sn_free(d->owned[i]);
    sn_free(d->owned);
    sn_free(d->layers);
    sn_free(d->scratch);
    sn_free(d->xb);
    sn_free(d->q8buf);
    sn_free(d->sg);
    sn_gguf_close(d->file);
    sn_free(d->system);
    sn_ids_free(&d->ids);
    sn_tokenizer_free(d->tok);
    sn_free(d);
}

/* Element alignment a tensor's data needs where we read it in place (uint16_t, float). */
static size_t elem_align(int type)
{
    return type == SN_GGML_F32 ? 4 : type == SN_GGML_Q8_0 ? 1 : 2;
}

/* A tensor of the file, checked finite, in its own type: in place in the memory map when its
** bytes are aligned for the type (always, with GGUF's default general.alignment of 32), else
** copied into memory of d's. Shapes were checked by the reader against the hyper-parameters;
** optional tensors may be absent (*out = NULL). */
static int tensor(struct sn_detector *d, const char *name, bool optional,
                  const struct sn_gguf_tensor **tt, const void **out, struct sn_err *err)
{
    *out = NULL;
    const struct sn_gguf_tensor *t = sn_gguf_find_tensor(d->file, name);
    *tt = t;
    if (!t)
        return optional ? SN_OK : sn_err_set(err, SN_E_FORMAT, "missing tensor '%s'", name);
    size_t bad;
    if (!sn_kern_all_finite(t->type, t->data, (size_t)t->n_elements, &bad))
        return sn_err_set(err, SN_E_FORMAT, "tensor '%s': element %zu is not finite", name, bad);
    if ((uintptr_t)t->data % elem_align(t->type) == 0) {
        *out = t->data;
        return SN_OK;
    }
    void *copy = sn_malloc((size_t)t->nbytes + 1);
    if (!copy)
        return sn_err_set(err, SN_E_NOMEM, "out of memory for tensor '%s' (%" PRIu64 " bytes)",
                          name, t->nbytes);
    memcpy(copy, t->data, (size_t)t->nbytes);
    d->owned[d->n_owned++] = copy;
    *out = copy;
    return SN_OK;
}

/* A 1-D tensor (norm weight, bias) as f32: in place when the file has it as F32, else
** converted into memory of d's (E or Ekv floats: small). */
static int load_vec(struct sn_detector *d, const char *name, bool optional,
                    const float **out, struct sn_err *err)
{
    const struct sn_gguf_tensor *t;
    const void *p;
    *out = NULL;
    int rc = tensor(d, name, optional, &t, &p, err);
    if (rc || !p)
        return rc;
    if (t->type == SN_GGML_F32) {
        *out = p;
        return SN_OK;
    }
    float *f = sn_malloc((size_t)t->n_elements * sizeof *f);
    if (!f)
        return sn_err_set(err, SN_E_NOMEM, "out of memory for tensor '%s'", name);
    d->owned[d->n_owned++] = f;
    sn_kern_rows_to_f32(SN_KERN_PORTABLE, t->type, p, (size_t)t->n_elements, 0, 1, f);
    *out = f;
    return SN_OK;
}

/* A matrix (ne {in, out}) in its file's type. */
static int load_mat(struct sn_detector *d, const char *name, struct wmat *w, struct sn_err *err)
{
    const struct sn_gguf_tensor *t;
    int rc = tensor(d, name, false, &t, &w->data, err);
    if (rc)
        return rc;
    w->type = t->type;
    w->in = (int64_t)t->ne[0];
    w->out = (int64_t)t->ne[1];
    return SN_OK;
}

/* Scratch: one block, carved in this order (T = max tokens).
**   x    T·E       residual stream (T, E)
**   a    T·E       normed input of a block (T, E)
**   q    T·E       queries (T, H, Dh)
**   att  T·E       attention output (T, H, Dh)
**   g    T·F       gate, then silu(gate) ⊙ up (T, F)
**   u    T·F       up (T, F)
**   s    T·T       scores of one head (n, P)
**   kc   L·T·Ekv   key cache (L, T, Hkv, Dh)
**   vc   L·T·Ekv   value cache (L, T, Hkv, Dh)
**   rc   T·Dh/2    RoPE cos (T, Dh/2)
**   rs   T·Dh/2    RoPE sin (T, Dh/2)
**   hid  E         final-norm state of the last token
**   wt   tile      f32 rows of the matrix being multiplied (tile_floats: 0 when every matrix
**                  is F32 or BF16 by dot products, else max(TILE_FLOATS, 16 rows of F))
** and, when matrices go by BF16 dot products, in a block of uint16:
**   xb   T·max(E, F)  activations rounded to BF16
**   wb   tile_bf16    rows of the Q8_0 matrix being multiplied, as BF16 (when there is one)
** and, when Q8_0 matrices go by int8 dot products (X = T·max(E, F), R = TILE_FLOATS elements):
**   xs, ws  X/4, R/4 floats; xc X/4 int32; xq, wq X, R int8: the activations quantized to
**           Q8_0 and a tile of W's rows unpacked (kernels/kernels.h)
** and, when f32 products go by kernels/sgemm.c, sg: sn_kern_sgemm_scratch() floats per thread
** (2.1 MiB each; allocated at open once n_threads is resolved). */
static int scratch_layout(struct sn_detector *d, struct sn_err *err)
{
    const size_t T = (size_t)d->T, E = (size_t)d->h.n_embd, F = (size_t)d->h.n_ff;
    const size_t L = (size_t)d->h.n_layer, Ekv = (size_t)(d->h.n_head_kv * d->h.head_dim);
    const size_t half = (size_t)d->h.head_dim / 2;
    const size_t sizes[] = {T * E, T * E, T * E, T * E, T * F, T * F, T * T, L * T * Ekv,
                            L * T * Ekv, T * half, T * half, E, d->tile_floats};
    float **ptrs[] = {&d->x, &d->a, &d->q, &d->att, &d->g, &d->u, &d->s, &d->kc, &d->vc,
                      &d->rc, &d->rs, &d->hid, &d->wt};
    _Static_assert(sizeof sizes / sizeof *sizes == sizeof ptrs / sizeof *ptrs, "scratch table");
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        total += sizes[i];   /* T <= 2^24 and the hparams are capped by the reader */
    size_t bytes;
    if (!sn_mul_ok(total, sizeof(float), &bytes) || !(d->scratch = sn_malloc(bytes)))
        return sn_err_set(err, SN_E_NOMEM, "detector: out of memory for %zu scratch floats "
                          "(max_tokens %zu); lower max_tokens", total, T);
    d->scratch_bytes = bytes;
    if (d->dot) {
        const size_t xn = T * (E > F ? E : F);
        if (!(d->xb = sn_malloc((xn + d->tile_bf16) * sizeof *d->xb)))
            return sn_err_set(err, SN_E_NOMEM, "detector: out of memory for %zu BF16 "
                              "activations (max_tokens %zu); lower max_tokens", xn, T);
        d->wb = d->tile_bf16 ? d->xb + xn : NULL;
        d->scratch_bytes += (xn + d->tile_bf16) * sizeof *d->xb;
    }
    if (d->q8dot) {
        const size_t xn = T * (E > F ? E : F), g = (xn + 3) / 4, R = TILE_FLOATS;
        const size_t b = 2 * g * 4 + R + xn + R;
        if (!(d->q8buf = sn_malloc(b)))
            return sn_err_set(err, SN_E_NOMEM, "detector: out of memory for %zu int8 "
                              "activations (max_tokens %zu); lower max_tokens", xn, T);
        d->xs = d->q8buf;
        d->ws = d->xs + g;
        d->xc = (int32_t *)(void *)(d->ws + R / 4);
        d->xq = (int8_t *)(d->xc + g);
        d->wq = d->xq + xn;
        d->scratch_bytes += b;
    }
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *ptrs[i] = d->scratch + off;
        off += sizes[i];
    }
    /* RoPE tables, in float as HF: inv_freq_j = 1 / theta^(2j / Dh), angle = pos · inv_freq */
    for (size_t j = 0; j < half; j++) {
        float ex = (float)(2 * j) / (float)d->h.head_dim;
        float inv = 1.0f / powf((float)d->h.theta, ex);
        for (size_t t = 0; t < T; t++) {
            float ang = (float)t * inv;
            d->rc[t * half + j] = cosf(ang);
            d->rs[t * half + j] = sinf(ang);
        }
    }
    return SN_OK;
}

/* ---- kernels (docs/export.md "Weight formats and kernels") ----------------------------------
** spec (params.kernels, else the environment's SENTINEL_KERNELS, else "auto"): an ISA of
** kernels/ ("auto" = the widest this CPU runs, "portable", "avx2", "avx512"), optionally
** followed by "+dot" or "+tile", how BF16 and Q8_0 matrices are multiplied (default: BF16 dot
** products where the CPU has AVX512-BF16, f32 tiles into the sgemm otherwise), or "+int8":
** Q8_0 by int8 dot products (AVX512-VNNI, AVX2 or portable: sn_kern_q8_isa), BF16 as by
** default; and optionally "+blas": F32 matrices and f32 tiles by OpenBLAS's sgemm, which is
** the default only where the ISA is not avx512 (kernels/sgemm.c's AVX-512F kernel otherwise:
** faster than OpenBLAS's kernels as the environment picks them, and its bits do not depend on
** the thread count). Asking for what the CPU lacks is an error. */
static bool has_type(const struct sn_detector *d, int type)
{
    if (d->emb.type == type)
        return true;
    for (int64_t l = 0; l < d->h.n_layer; l++) {
        const struct layer *ly = &d->layers[l];
        const struct wmat *m[] = {&ly->wq, &ly->wk, &ly->wv, &ly->wo, &ly->wg, &ly->wu, &ly->wd};
        for (size_t k = 0; k < sizeof m / sizeof *m; k++)
            if (m[k]->type == type)
                return true;
    }
    return false;
}

/* What spec asks of this CPU, and the choice in words. */
struct kplan {
    struct sn_kern_cpu cpu;
    int  isa;
    bool dot, dot_hw;     /* BF16 and Q8_0 by BF16 dot products; in hardware */
    bool q8dot;           /* Q8_0 by int8 dot products instead (BF16 as `dot` says) */
    int  q8isa;
    bool sgemm;           /* F32 and f32 tiles by kernels/sgemm.c (else OpenBLAS) */
    char text[512];
};

static int plan(const char *spec, const char *path, struct kplan *k, struct sn_err *err)
{
    if (!spec || !*spec)
        spec = getenv("SENTINEL_KERNELS");
    if (!spec || !*spec)
        spec = "auto";
    char isa[32], how[8] = "";
    bool blas = false;
    const char *plus = strchr(spec, '+');
    size_t n = plus ? (size_t)(plus - spec) : strlen(spec);
    if (n >= sizeof isa)
        return sn_err_set(err, SN_E_ARG, "%s: kernels '%s': expected auto, portable, avx2 or "
                          "avx512, optionally with +dot, +tile or +int8 and +blas", path, spec);
    memcpy(isa, spec, n);
    isa[n] = '\0';
    while (plus) {   /* the modifiers: at most one of dot, tile, int8; blas */
        const char *m = plus + 1;
        plus = strchr(m, '+');
        const size_t mn = plus ? (size_t)(plus - m) : strlen(m);
        if (mn == 4 && !strncmp(m, "blas", 4) && !blas) {
            blas = true;
            continue;
        }
        if (*how || mn == 0 || mn >= sizeof how)
            return sn_err_set(err, SN_E_ARG, "%s: kernels '%s': expected at most one of +dot, "
                              "+tile, +int8 and at most one +blas", path, spec);
        memcpy(how, m, mn);
        how[mn] = '\0';
    }
    sn_kern_cpu_detect(&k->cpu);
    char f[256];
    sn_kern_cpu_describe(&k->cpu, f, sizeof f);
    if (!strcmp(isa, "auto")) {
        k->isa = sn_kern_isa_best(&k->cpu);
    } else if (sn_kern_isa_parse(isa, &k->isa, err)) {
        return sn_err_wrap(err, "%s: SENTINEL_KERNELS or the kernels parameter", path);
    } else if (!sn_kern_isa_supported(&k->cpu, k->isa)) {
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: kernels '%s': this CPU lacks them (it "
                          "has: %s)", path, isa, f);
    }
    if (*how && strcmp(how, "dot") && strcmp(how, "tile") && strcmp(how, "int8"))
        return sn_err_set(err, SN_E_ARG, "%s: kernels '%s': '+%s' is none of +dot, +tile, "
                          "+int8, +blas", path, spec, how);
    k->dot_hw = sn_kern_bf16_dot_hw(&k->cpu, k->isa);
    k->q8dot = !strcmp(how, "int8");
    k->dot = *how && !k->q8dot ? !strcmp(how, "dot") : k->dot_hw;
    k->q8isa = sn_kern_q8_isa(&k->cpu, k->isa);
    k->sgemm = !blas && sn_kern_sgemm_hw(&k->cpu, k->isa);
    const char *in = sn_kern_isa_name(k->isa);
    const char *f32 = k->sgemm ? "avx512f sgemm (kernels/sgemm.c)" : "OpenBLAS sgemm";
    static const char *const q8how[SN_KERN_ISA_COUNT] = {
        "portable", "avx2 vpmaddubsw", "avx512_vnni vpdpbusd"};
    if (k->q8dot)
        snprintf(k->text, sizeof k->text, "cpu: %s; kernels: %s; F32 by %s; F16%s "
                 "by f32 tiles (%s conversion) + that sgemm; %sQ8_0 by int8 dot products (%s; "
                 "activations quantized to Q8_0)", f, in, f32, k->dot ? "" : ", BF16", in,
                 k->dot ? (k->dot_hw ? "BF16 by BF16 dot products (avx512_bf16 vdpbf16ps); "
                                     : "BF16 by BF16 dot products (portable); ") : "",
                 q8how[k->q8isa]);
    else if (k->dot)
        snprintf(k->text, sizeof k->text, "cpu: %s; kernels: %s; F32 by %s; F16 by "
                 "f32 tiles (%s conversion) + that sgemm; BF16 and Q8_0 by BF16 dot products (%s; "
                 "Q8_0 rows as BF16 tiles)", f, in, f32, in,
                 k->dot_hw ? "avx512_bf16 vdpbf16ps" : "portable");
    else
        snprintf(k->text, sizeof k->text, "cpu: %s; kernels: %s; F32 by %s; F16, "
                 "BF16, Q8_0 by f32 tiles (%s conversion) + that sgemm", f, in, f32, in);
    return SN_OK;
}

int sn_detector_kernels_plan(const char *spec, char *out, size_t cap, struct sn_err *err)
{
    struct kplan k;
    int rc = plan(spec, "detector", &k, err);
    if (!rc)
        snprintf(out, cap, "%s", k.text);
    return rc;
}

static int choose_kernels(struct sn_detector *d, const char *spec, const char *path,
                          struct sn_err *err)
{
    struct kplan k;
    int rc = plan(spec, path, &k, err);
    if (rc)
        return rc;
    d->cpu = k.cpu;
    d->isa = k.isa;
    d->dot_hw = k.dot_hw;
    const bool bf16 = has_type(d, SN_GGML_BF16), q8 = has_type(d, SN_GGML_Q8_0);
    d->q8dot = q8 && k.q8dot;
    d->q8isa = k.q8isa;
    d->sgemm = k.sgemm;
    d->dot = (bf16 || (q8 && !d->q8dot)) && k.dot;
    const size_t widest = (size_t)(d->h.n_embd > d->h.n_ff ? d->h.n_embd : d->h.n_ff);
    const size_t tile = TILE_FLOATS > TILE_MIN_ROWS * widest ? TILE_FLOATS
                                                              : TILE_MIN_ROWS * widest;
    if (has_type(d, SN_GGML_F16) || (bf16 && !d->dot) || (q8 && !d->dot && !d->q8dot))
        d->tile_floats = tile;
    if (q8 && d->dot && !d->q8dot)
        d->tile_bf16 = tile;
    snprintf(d->kernels, sizeof d->kernels, "%s", k.text);
    return SN_OK;
}

const char *sn_detector_kernels(const struct sn_detector *d) { return d->kernels; }
size_t sn_detector_scratch_bytes(const struct sn_detector *d) { return d->scratch_bytes; }

static int tokenizer_from(const struct sn_gguf *g, struct sn_tokenizer **out, struct sn_err *err)
{
    struct sn_tokenizer_vocab v = {0};
    const char *model = NULL, *pre = NULL, *hash = NULL;
    size_t n_types = 0;
    const size_t *lens = NULL;
    int rc = sn_gguf_get_str(g, "tokenizer.ggml.model", true, NULL, &model, err);
    if (!rc && strcmp(model, "gpt2"))
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "tokenizer.ggml.model is '%s' (only 'gpt2', a "
                        "byte-level BPE, is supported)", model);
    if (!rc)
        rc = sn_gguf_get_arr_str(g, "tokenizer.ggml.tokens", &v.tokens, &lens, &v.n_tokens, err);
    if (!rc && sn_gguf_find(g, "tokenizer.ggml.token_type") >= 0)
        rc = sn_gguf_get_arr_i32(g, "tokenizer.ggml.token_type", &v.types, &n_types, err);
    if (!rc && v.types && n_types != v.n_tokens)
        rc = sn_err_set(err, SN_E_FORMAT, "tokenizer.ggml.token_type has %zu entries for %zu "
                        "tokens", n_types, v.n_tokens);
    if (!rc)
        rc = sn_gguf_get_arr_str(g, "tokenizer.ggml.merges", &v.merges, NULL, &v.n_merges, err);
    if (!rc)
        rc = sn_gguf_get_str(g, "tokenizer.ggml.pre", false, "default", &pre, err);
    if (!rc)
        rc = sn_gguf_get_bool(g, SN_GGUF_KEY_TOK_NFC, false, false, &v.nfc, err);
    if (!rc)
        rc = sn_gguf_get_str(g, SN_GGUF_KEY_TOK_HASH, false, NULL, &hash, err);
    if (rc)
        return rc;
    v.token_lens = lens;
    v.pre = pre;
    v.hash = hash;
    return sn_tokenizer_create(&v, out, err);
}

int sn_gguf_open_tokenizer(const char *path, struct sn_tokenizer **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_gguf *g = NULL;
    int rc = sn_gguf_open(path, &g, err);
    if (!rc && (rc = tokenizer_from(g, out, err)))
        sn_err_wrap(err, "%s", path);
    sn_gguf_close(g);
    return rc;
}

int sn_detector_open(const char *path, const struct sn_detector_params *p,
                     struct sn_detector **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_detector_params dp = p ? *p : sn_detector_default_params();
    if (dp.n_threads < 0 || dp.n_threads > SN_DETECTOR_MAX_THREADS)
        return sn_err_set(err, SN_E_ARG, "detector: n_threads %d outside [0, %d] (0 = "
                          "OpenBLAS's default rule)", dp.n_threads, SN_DETECTOR_MAX_THREADS);
    struct sn_gguf *g = NULL;
    int rc = sn_gguf_open(path, &g, err);
    if (rc)
        return rc;
    struct sn_detector *d = sn_calloc(1, sizeof *d);
    const char *arch = NULL, *system = NULL, *tmpl = NULL;
    uint64_t max_len = 0;
    if (!d) {
        sn_gguf_close(g);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    }
    d->file = g;   /* closed with d */
    if ((rc = sn_gguf_get_str(g, "general.architecture", true, NULL, &arch, err)))
        goto fail;
    if (strcmp(arch, "qwen2")) {
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: general.architecture is '%s' (only qwen2)",
                        path, arch);
        goto fail;
    }
    const char *gtype = NULL;
    if ((rc = sn_gguf_get_str(g, "general.type", false, NULL, &gtype, err)))
        goto fail;
    if (gtype && !strcmp(gtype, "adapter")) {
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: a LoRA adapter GGUF (general.type adapter), "
                        "not a model: score the merged GGUF (`sentinel export` without "
                        "--adapter-only), or apply the adapter in llama.cpp over its base", path);
        goto fail;
    }
    if ((rc = sn_qwen2_hparams_read(g, &d->h, err)) ||
        (rc = sn_gguf_get_str(g, SN_GGUF_KEY_TEMPLATE, false, SN_TEMPLATE_ID, &tmpl, err)) ||
        (rc = sn_gguf_get_str(g, SN_GGUF_KEY_SYSTEM, false, SN_TEMPLATE_SYSTEM, &system, err)) ||
        (rc = sn_gguf_get_u64(g, SN_GGUF_KEY_MAX_LEN, false, 1024, &max_len, err)))
        goto fail;
    if (strcmp(tmpl, SN_TEMPLATE_ID)) {
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: prompt template '%s' (this build renders "
                        "only '%s')", path, tmpl, SN_TEMPLATE_ID);
        goto fail;
    }
    if (sn_gguf_find(g, SN_GGUF_KEY_HEAD) < 0) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no reward head (key %s); was it written by "
                        "`sentinel export`?", path, SN_GGUF_KEY_HEAD);
        goto fail;
    }
    d->T = dp.max_tokens > 0 ? dp.max_tokens : (int64_t)max_len;
    if (d->T < 1 || d->T > d->h.n_ctx) {
        rc = sn_err_set(err, SN_E_ARG, "%s: max_tokens %" PRId64 " outside [1, context length "
                        "%" PRId64 "]", path, d->T, d->h.n_ctx);
        goto fail;
    }
    d->max_len = max_len && (int64_t)max_len < d->T ? (size_t)max_len : (size_t)d->T;
    if (!(d->system = sn_strdup(system))) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    if ((rc = tokenizer_from(g, &d->tok, err))) {
        sn_err_wrap(err, "%s", path);
        goto fail;
    }
    const int64_t L = d->h.n_layer;
    d->owned = sn_calloc(sn_gguf_n_tensors(g) + 2, sizeof *d->owned);
    d->layers = sn_calloc((size_t)L, sizeof *d->layers);
    d->head = sn_malloc((size_t)d->h.n_embd * sizeof *d->head);
    if (!d->owned || !d->layers || !d->head) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    d->owned[d->n_owned++] = d->head;
    const float *hv;
    size_t hn;
    if ((rc = sn_gguf_get_arr_f32(g, SN_GGUF_KEY_HEAD, &hv, &hn, err)))
        goto fail;
    memcpy(d->head, hv, hn * sizeof *hv);  /* hn == E: checked by the reader */
    if ((rc = load_mat(d, "token_embd.weight", &d->emb, err)) ||
        (rc = load_vec(d, "output_norm.weight", false, &d->out_norm, err)))
        goto fail_wrap;
    for (int64_t l = 0; l < L; l++) {
        struct layer *ly = &d->layers[l];
        struct { const char *n; const float **dst; bool opt; } v[] = {
            {"attn_norm.weight", &ly->attn_norm, false}, {"attn_q.bias", &ly->bq, true},
            {"attn_k.bias", &ly->bk, true},              {"attn_v.bias", &ly->bv, true},
            {"ffn_norm.weight", &ly->ffn_norm, false},
        };
        struct { const char *n; struct wmat *dst; } m[] = {
            {"attn_q.weight", &ly->wq},   {"attn_k.weight", &ly->wk},
            {"attn_v.weight", &ly->wv},   {"attn_output.weight", &ly->wo},
            {"ffn_gate.weight", &ly->wg}, {"ffn_up.weight", &ly->wu},
            {"ffn_down.weight", &ly->wd},
        };
        char nm[96];
        for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
            snprintf(nm, sizeof nm, "blk.%" PRId64 ".%s", l, v[k].n);
            if ((rc = load_vec(d, nm, v[k].opt, v[k].dst, err)))
                goto fail_wrap;
        }
        for (size_t k = 0; k < sizeof m / sizeof *m; k++) {
            snprintf(nm, sizeof nm, "blk.%" PRId64 ".%s", l, m[k].n);
            if ((rc = load_mat(d, nm, m[k].dst, err)))
                goto fail_wrap;
        }
    }
    if ((rc = choose_kernels(d, dp.kernels, path, err)) || (rc = scratch_layout(d, err)))
        goto fail;
    d->n_threads = dp.n_threads > 0 ? dp.n_threads : default_threads();
    use_threads(d);
    d->n_threads = openblas_get_num_threads();  /* what OpenBLAS took (it caps the count) */
    if (d->sgemm) {   /* kernels/sgemm.c's packing scratch, one per thread of linear() */
        const int nt = d->n_threads < JOBS_MAX ? d->n_threads : JOBS_MAX;
        const size_t sg = (size_t)nt * sn_kern_sgemm_scratch();
        if (!(d->sg = sn_malloc(sg * sizeof *d->sg))) {
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory for %zu floats of sgemm scratch "
                            "(%d threads)", path, sg, nt);
            goto fail;
        }
        d->scratch_bytes += sg * sizeof *d->sg;
    }
    check_blas_origin(path);
    *out = d;
    return SN_OK;
fail_wrap:
    sn_err_wrap(err, "%s", path);
fail:
    sn_detector_free(d);
    return rc;
}

/* ---- forward ------------------------------------------------------------------------------ */

/* y (n, D) = RMSNorm(x) ⊙ w, per row. */
static void rmsnorm(float *y, const float *x, const float *w, int64_t n, int64_t D, double eps)
{
    for (int64_t t = 0; t < n; t++) {
        const float *xr = x + t * D;
        float *yr = y + t * D;
        float ss = 0.0f;  /* f32 as HF: x.pow(2).mean(-1) */
        for (int64_t i = 0; i < D; i++)
            ss += xr[i] * xr[i];
        float r = 1.0f / sqrtf(ss / (float)D + (float)eps);
        for (int64_t i = 0; i < D; i++)
            yr[i] = w[i] * (xr[i] * r);
    }
}

/* Runs fn on each of nt jobs (of `size` bytes each, from jobs), one per thread: the caller's
** thread runs the first, and any that a thread could not be made for. */
static void run_jobs(void *(*fn)(void *), void *jobs, size_t size, int nt)
{
    pthread_t tid[JOBS_MAX];
    int started = 1;
    for (; started < nt; started++)
        if (pthread_create(&tid[started], NULL, fn, (char *)jobs + (size_t)started * size))
            break;   /* no thread: this one does the rest below */
    fn(jobs);
    for (int i = started; i < nt; i++)
        fn((char *)jobs + (size_t)i * size);
    for (int i = 1; i < started; i++)
        pthread_join(tid[i], NULL);
}

/* How many threads share `blocks` blocks of outputs: n_threads, at most one per block. */
static int share_threads(const struct sn_detector *d, int64_t blocks)
{
    int nt = d->n_threads < JOBS_MAX ? d->n_threads : JOBS_MAX;
    nt = nt < blocks ? nt : (int)blocks;
    return nt < 1 ? 1 : nt;
}

/* BF16 (or int8) dot products on n_threads threads, outputs split in blocks of 4: each thread
** converts its rows of a Q8_0 tile to BF16 (into wb; or unpacks them into wq, ws) and
** multiplies them. kernels/bf16.c and kernels/q8.c compute each output whole, in a fixed
** order, so the split does not change any bit. */
struct dot_job {
    const struct sn_detector *d;
    const struct wmat *W;
    float *y;
    int64_t ldy, n, r0, o0, o1;   /* tile from row r0; this job's rows [o0, o1) */
    bool accumulate;
};

static void *dot_run(void *arg)
{
    const struct dot_job *j = arg;
    const struct sn_detector *d = j->d;
    const size_t in = (size_t)j->W->in, m = (size_t)(j->o1 - j->o0);
    const uint16_t *rows;
    if (m == 0)
        return NULL;
    if (d->q8dot && j->W->type == SN_GGML_Q8_0) {
        const size_t off = (size_t)(j->o0 - j->r0);
        int8_t *wq = d->wq + off * in;
        float *ws = d->ws + off * in / 4;
        sn_kern_q8_unpack(j->W->data, in, (size_t)j->o0, (size_t)j->o1, wq, ws);
        sn_kern_q8_gemm(d->q8isa, d->xq, d->xs, d->xc, wq, ws, j->y + j->o0, (size_t)j->ldy,
                        (size_t)j->n, in, 0, m, j->accumulate);
        return NULL;
    }
    if (j->W->type == SN_GGML_BF16) {
        rows = (const uint16_t *)j->W->data + (size_t)j->o0 * in;
    } else {
        uint16_t *dst = d->wb + (size_t)(j->o0 - j->r0) * in;
        sn_kern_rows_to_bf16(d->isa, j->W->type, j->W->data, in, (size_t)j->o0, (size_t)j->o1,
                             dst);
        rows = dst;
    }
    sn_kern_bf16_gemm(d->dot_hw, d->xb, rows, j->y + j->o0, (size_t)j->ldy, (size_t)j->n, in,
                      0, m, j->accumulate);
    return NULL;
}

/* Outputs [r0, r1) of y (n, out) by dot products, x already in d->xb. */
static void dots(const struct sn_detector *d, float *y, int64_t ldy, const struct wmat *W,
                 int64_t n, int64_t r0, int64_t r1, bool accumulate)
{
    struct dot_job jobs[JOBS_MAX];
    const int64_t blocks = (r1 - r0 + 3) / 4;
    const int nt = share_threads(d, blocks);
    for (int i = 0; i < nt; i++) {
        int64_t a = r0 + blocks * i / nt * 4, b = r0 + blocks * (i + 1) / nt * 4;
        jobs[i] = (struct dot_job){d, W, y, ldy, n, r0, a, b < r1 ? b : r1, accumulate};
    }
    run_jobs(dot_run, jobs, sizeof *jobs, nt);
}

/* f32 products by kernels/sgemm.c on n_threads threads, outputs split in blocks of its panel
** width (32), each thread with its own packing scratch. Each output is one thread's chain of
** FMAs in a fixed order (kernels/kernels.h), so the split does not change any bit. */
#define SG_BLOCK 32
struct sg_job {
    const float *x, *W;
    float *y, *scratch;
    int64_t ldy, n, in, o0, o1;
    bool accumulate;
};

static void *sg_run(void *arg)
{
    const struct sg_job *j = arg;
    sn_kern_sgemm(true, j->x, j->W, j->y, (size_t)j->ldy, (size_t)j->n, (size_t)j->in,
                  (size_t)j->o0, (size_t)j->o1, j->accumulate, j->scratch);
    return NULL;
}

/* y (n, out) (+)= x (n, in) · Wᵀ for an f32 W (out, in): ours or OpenBLAS's (d->sgemm). */
static void sgemm(const struct sn_detector *d, float *y, int64_t ldy, const float *x,
                  const float *W, int64_t n, int64_t in, int64_t out, bool accumulate)
{
    if (!d->sgemm) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)out, (int)in, 1.0f,
                    x, (int)in, W, (int)in, accumulate ? 1.0f : 0.0f, y, (int)ldy);
        return;
    }
    struct sg_job jobs[JOBS_MAX];
    const int64_t blocks = (out + SG_BLOCK - 1) / SG_BLOCK;
    const int nt = share_threads(d, blocks);
    for (int i = 0; i < nt; i++) {
        int64_t a = blocks * i / nt * SG_BLOCK, b = blocks * (i + 1) / nt * SG_BLOCK;
        jobs[i] = (struct sg_job){x, W, y, d->sg + (size_t)i * sn_kern_sgemm_scratch(), ldy, n,
                                  in, a, b < out ? b : out, accumulate};
    }
    run_jobs(sg_run, jobs, sizeof *jobs, nt);
}

/* y (n, out) = x (n, in) Wᵀ (+ b) (+ y when accumulate): W is (out, in) row-major in its
** file's type. F32 goes to the sgemm (ours or OpenBLAS's: sgemm above) as it is; BF16 and
** Q8_0 by BF16 dot products when chosen (Q8_0 a tile of rows at a time); otherwise a tile of
** whole rows at a time, converted to f32 into d->wt, then the sgemm on the tile's columns of
** y. */
static void linear(const struct sn_detector *d, float *y, int64_t ldy, const float *x,
                   const struct wmat *W, const float *b, int64_t n, bool accumulate)
{
    const int64_t in = W->in, out = W->out;
    if (W->type == SN_GGML_F32) {
        sgemm(d, y, ldy, x, W->data, n, in, out, accumulate);
    } else if (d->q8dot && W->type == SN_GGML_Q8_0) {
        sn_kern_q8_quantize(x, (size_t)n, (size_t)in, d->xq, d->xs, d->xc);
        int64_t rows = (int64_t)(TILE_FLOATS / (size_t)in);
        rows = rows >= out ? out : rows / TILE_MIN_ROWS * TILE_MIN_ROWS;
        for (int64_t r0 = 0; r0 < out; r0 += rows)
            dots(d, y, ldy, W, n, r0, r0 + rows < out ? r0 + rows : out, accumulate);
    } else if (d->dot && (W->type == SN_GGML_BF16 || W->type == SN_GGML_Q8_0)) {
        sn_kern_to_bf16(d->isa, x, (size_t)(n * in), d->xb);
        int64_t rows = W->type == SN_GGML_BF16 ? out : (int64_t)(d->tile_bf16 / (size_t)in);
        rows = rows >= out ? out : rows / TILE_MIN_ROWS * TILE_MIN_ROWS;
        for (int64_t r0 = 0; r0 < out; r0 += rows)
            dots(d, y, ldy, W, n, r0, r0 + rows < out ? r0 + rows : out, accumulate);
    } else {
        int64_t rows = (int64_t)(d->tile_floats / (size_t)in);
        rows = rows >= out ? out : rows / TILE_MIN_ROWS * TILE_MIN_ROWS;
        for (int64_t r0 = 0; r0 < out; r0 += rows) {
            const int64_t r1 = r0 + rows < out ? r0 + rows : out;
            sn_kern_rows_to_f32(d->isa, W->type, W->data, (size_t)in, (size_t)r0, (size_t)r1,
                                d->wt);
            sgemm(d, y + r0, ldy, x, d->wt, n, in, r1 - r0, accumulate);
        }
    }
    if (b)
        for (int64_t t = 0; t < n; t++)
            for (int64_t i = 0; i < out; i++)
                y[t * ldy + i] += b[i];
}

/* Rotate-half RoPE on n rows of nh heads (row stride ld), positions p0.. */
static void rope(const struct sn_detector *d, float *x, int64_t ld, int64_t n, int64_t nh,
                 int64_t p0)
{
    const int64_t Dh = d->h.head_dim, half = Dh / 2;
    for (int64_t t = 0; t < n; t++) {
        const float *c = d->rc + (p0 + t) * half, *s = d->rs + (p0 + t) * half;
        for (int64_t h = 0; h < nh; h++) {
            float *v = x + t * ld + h * Dh;
            for (int64_t j = 0; j < half; j++) {
                float a = v[j], b = v[j + half];
                v[j] = a * c[j] - b * s[j];
                v[j + half] = b * c[j] + a * s[j];
            }
        }
    }
}

/* Runs tokens ids[0..n) at positions p0..p0+n-1 over a cache holding positions [0, p0).
** When hidden is set, it receives the final-norm state of the last token. In the last layer
** only what is needed is computed: keys and values of every token (for later calls), and the
** query, attention and MLP of the last token alone (none at all when hidden is NULL: a
** shared prefix is only needed for its cache). */
static void forward(struct sn_detector *d, const int32_t *ids, int64_t n, int64_t p0,
                    float *hidden)
{
    const int64_t E = d->h.n_embd, F = d->h.n_ff, H = d->h.n_head, Hkv = d->h.n_head_kv;
    const int64_t Dh = d->h.head_dim, Ekv = Hkv * Dh, T = d->T, P = p0 + n;
    const float scale = 1.0f / sqrtf((float)Dh);
    for (int64_t t = 0; t < n; t++)
        sn_kern_rows_to_f32(d->isa, d->emb.type, d->emb.data, (size_t)E, (size_t)ids[t],
                            (size_t)ids[t] + 1, d->x + t * E);
    for (int64_t l = 0; l < d->h.n_layer; l++) {
        const struct layer *ly = &d->layers[l];
        const bool last_layer = l == d->h.n_layer - 1;
        float *kc = d->kc + l * T * Ekv, *vc = d->vc + l * T * Ekv;
        rmsnorm(d->a, d->x, ly->attn_norm, n, E, d->h.eps);
        linear(d, kc + p0 * Ekv, Ekv, d->a, &ly->wk, ly->bk, n, false);
        linear(d, vc + p0 * Ekv, Ekv, d->a, &ly->wv, ly->bv, n, false);
        rope(d, kc + p0 * Ekv, Ekv, n, Hkv, p0);
        if (last_layer && !hidden)
            break;
        /* rows r0..n-1 go on: all of them, or the last one in the last layer */
        const int64_t r0 = last_layer ? n - 1 : 0, m = n - r0;
        float *x = d->x + r0 * E;
        linear(d, d->q, E, d->a + r0 * E, &ly->wq, ly->bq, m, false);
        rope(d, d->q, E, m, H, p0 + r0);
        for (int64_t h = 0; h < H; h++) {
            const int64_t kh = h / (H / Hkv);
            /* s (m, P) = q_h (m, Dh) k_hᵀ (Dh, P) / sqrt(Dh) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)P, (int)Dh, scale,
                        d->q + h * Dh, (int)E, kc + kh * Dh, (int)Ekv, 0.0f, d->s, (int)P);
            for (int64_t t = 0; t < m; t++) {
                float *sr = d->s + t * P;
                const int64_t last = p0 + r0 + t;   /* causal: keys 0..last */
                float mx = sr[0];
                for (int64_t j = 1; j <= last; j++)
                    mx = sr[j] > mx ? sr[j] : mx;
                float sum = 0.0f;
                for (int64_t j = 0; j <= last; j++) {
                    sr[j] = expf(sr[j] - mx);
                    sum += sr[j];
                }
                float inv = 1.0f / sum;
                for (int64_t j = 0; j <= last; j++)
                    sr[j] *= inv;
                for (int64_t j = last + 1; j < P; j++)
                    sr[j] = 0.0f;
            }
            /* att_h (m, Dh) = s (m, P) v_h (P, Dh) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)Dh, (int)P, 1.0f,
                        d->s, (int)P, vc + kh * Dh, (int)Ekv, 0.0f, d->att + h * Dh, (int)E);
        }
        linear(d, x, E, d->att, &ly->wo, NULL, m, true);
        rmsnorm(d->a, x, ly->ffn_norm, m, E, d->h.eps);
        linear(d, d->g, F, d->a, &ly->wg, NULL, m, false);
        linear(d, d->u, F, d->a, &ly->wu, NULL, m, false);
        for (int64_t i = 0; i < m * F; i++) {
            float z = d->g[i];
            d->g[i] = z / (1.0f + expf(-z)) * d->u[i];
        }
        linear(d, x, E, d->g, &ly->wd, NULL, m, true);
    }
    if (hidden)
        rmsnorm(hidden, d->x + (n - 1) * E, d->out_norm, 1, E, d->h.eps);
}

static float head_dot(const struct sn_detector *d, const float *hid)
{
    double acc = 0.0;
    for (int64_t i = 0; i < d->h.n_embd; i++)
        acc += (double)d->head[i] * hid[i];
    return (float)acc;
}

static int check_ids(const struct sn_detector *d, const int32_t *ids, size_t n,
                     struct sn_err *err)
{
    if (n < 1 || (int64_t)n > d->T)
        return sn_err_set(err, SN_E_ARG, "detector: %zu tokens (expected 1..%" PRId64 "; "
                          "max_tokens)", n, d->T);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= d->h.n_vocab)
            return sn_err_set(err, SN_E_ARG, "detector: token %zu has id %d, outside the "
                              "vocabulary [0, %" PRId64 ")", i, (int)ids[i], d->h.n_vocab);
    return SN_OK;
}

int sn_detector_score_ids(struct sn_detector *d, const int32_t *ids, size_t n, float *score,
                          float *hidden, struct sn_err *err)
{
    int rc = check_ids(d, ids, n, err);
    if (rc)
        return rc;
    use_threads(d);
    forward(d, ids, (int64_t)n, 0, d->hid);
    *score = head_dot(d, d->hid);
    if (hidden)
        memcpy(hidden, d->hid, (size_t)d->h.n_embd * sizeof *hidden);
    return SN_OK;
}

static int encode(struct sn_detector *d, const char *context, const char *response,
                  struct sn_ids *ids, struct sn_err *err)
{
    struct sn_prompt pr = {0};
    pr.system = d->system;
    pr.task = context ? context : "";
    return sn_template_encode(d->tok, &pr, response ? response : "", d->max_len, ids, NULL,
                              NULL, err);
}

int sn_detector_score_prompt(struct sn_detector *d, const char *task,
                             const char *const *history, size_t n_history,
                             const char *const *responses, size_t n, float *scores,
                             struct sn_err *err)
{
    struct sn_prompt pr = {0};
    pr.system = d->system;
    pr.task = task ? task : "";
    pr.history = history;
    pr.n_history = n_history;
    for (size_t i = 0; i < n; i++) {
        int rc = sn_template_encode(d->tok, &pr, responses[i] ? responses[i] : "", d->max_len,
                                    &d->ids, NULL, NULL, err);
        if (!rc)
            rc = sn_detector_score_ids(d, d->ids.v, d->ids.n, &scores[i], NULL, err);
        if (rc)
            return sn_err_wrap(err, "response %zu", i);
    }
    return SN_OK;
}

int sn_detector_score(struct sn_detector *d, const char *context, const char *response,
                      float *score, struct sn_err *err)
{
    int rc = encode(d, context, response, &d->ids, err);
    if (!rc)
        rc = sn_detector_score_ids(d, d->ids.v, d->ids.n, score, NULL, err);
    return rc;
}

int sn_detector_score_batch(struct sn_detector *d, const char *const *contexts,
                            const char *const *responses, size_t n, float *scores,
                            struct sn_err *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = sn_detector_score(d, contexts[i], responses[i], &scores[i], err);
        if (rc)
            return sn_err_wrap(err, "pair %zu", i);
    }
    return SN_OK;
}

int sn_detector_score_shared(struct sn_detector *d, const char *context,
                             const char *const *responses, size_t n, float *scores,
                             struct sn_err *err)
{
    if (n == 0)
        return SN_OK;
    struct sn_ids *all = sn_calloc(n, sizeof *all);
    if (!all)
        return sn_err_set(err, SN_E_NOMEM, "detector: out of memory");
    int rc = SN_OK;
    size_t prefix = SIZE_MAX;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = encode(d, context, responses[i], &all[i], err);
        if (!rc)
            rc = check_ids(d, all[i].v, all[i].n, err);
        if (rc) {
            sn_err_wrap(err, "response %zu", i);
            break;
        }
        /* the shared prefix leaves every sequence at least one token of its own */
        size_t lim = all[i].n - 1, k = 0;
        if (i == 0) {
            prefix = lim;
        } else {
            while (k < prefix && k < lim && all[i].v[k] == all[0].v[k])
                k++;
            prefix = k;
        }
    }
    if (!rc) {
        use_threads(d);
        if (prefix > 0)
            forward(d, all[0].v, (int64_t)prefix, 0, NULL);
        for (size_t i = 0; i < n; i++) {
            forward(d, all[i].v + prefix, (int64_t)(all[i].n - prefix), (int64_t)prefix, d->hid);
            scores[i] = head_dot(d, d->hid);
        }
    }
    for (size_t i = 0; i < n; i++)
        sn_ids_free(&all[i]);
    sn_free(all);
    return rc;
}
