/* aten/aten.h: the C API over libtorch (ATen tensors, autograd, c10d). docs/design.md §3.
**
** aten/ is the project's only C++. Nothing of C++ crosses this header: tensors are opaque
** handles, every call catches every exception and reports it through struct sn_err.
**
** OWNERSHIP (read this first)
**  - A `struct sn_tensor *` is a handle to one at::Tensor (reference-counted inside libtorch).
**  - Every function that returns a tensor through `struct sn_tensor **out` returns a NEW handle
**    that the caller frees exactly once with sn_tensor_free() (NULL is fine). On failure *out
**    is NULL and nothing needs freeing. Views (reshape, transpose, narrow, ...) are new handles
**    that share storage with their input; freeing either handle never invalidates the other.
**  - Tensor arguments are BORROWED: the call neither frees nor keeps the caller's handle (it
**    may keep the underlying tensor alive internally, e.g. autograd graphs, that is invisible).
**  - In-place functions (name ends in `_`) modify the tensor behind the handle they get.
**  - sn_aten_grad() returns a handle that ALIASES the gradient: in-place ops on it (all-reduce,
**    scaling for clipping) change the parameter's .grad itself.
**  - Pointers returned by sn_tensor_data_ptr() are borrowed: valid while some handle to that
**    tensor (or a view of its storage) is alive and nothing resizes it.
**  - Tensor-valued inputs must be non-NULL unless the doc says "NULL ok".
**
** ERRORS: functions return enum sn_status (common/common.h) and fill `err` (may be NULL):
**   SN_E_BACKEND  libtorch raised (c10::Error, std::exception): the message is libtorch's
**                 first line, prefixed with the op name ("matmul: mat1 and mat2 shapes ...")
**   SN_E_NOMEM    std::bad_alloc
**   SN_E_ARG      bad argument detected before calling libtorch (NULL, bad dtype, ...)
**   SN_E_IO       file errors (save_raw/load_raw)
**   SN_E_UNSUPPORTED  e.g. CUDA or NCCL asked for on a libtorch built without them
** Query functions (sn_tensor_ndim, ...) cannot fail and take no err.
**
** THREADS: handles are not synchronized; use one handle from one thread at a time. Grad mode
** (sn_aten_no_grad_enter) is per thread, as in libtorch.
**
** Works with Debian's libtorch 1.13 (CPU) and libtorch 2.x (CPU or CUDA); see docs/aten.md.
*/
#ifndef SN_ATEN_H
#define SN_ATEN_H
#ifdef __cplusplus
extern "C" { /* common/common.h has no linkage block of its own */
#endif
#include "common/common.h"
#include "aten/dtype.h"

/* ---- types -------------------------------------------------------------------------------- */

struct sn_tensor;   /* opaque: one at::Tensor */
struct sn_aten_gen; /* opaque: a seeded random generator (at::Generator) */
struct sn_dist;     /* opaque: a c10d process group (+ its store) */

enum sn_device_type { SN_DEVICE_CPU, SN_DEVICE_CUDA };
struct sn_device {
    enum sn_device_type type;
    int                 index; /* CUDA ordinal; 0 (ignored) for CPU */
};
#define SN_CPU ((struct sn_device){SN_DEVICE_CPU, 0})
/* "cpu", "cuda", "cuda:N". SN_E_ARG on anything else; SN_E_UNSUPPORTED if CUDA is not usable. */
int  sn_aten_device_parse(const char *s, struct sn_device *dev, struct sn_err *err);
/* Writes "cpu" or "cuda:N" into buf (always NUL-terminated). Returns buf. */
char *sn_aten_device_name(struct sn_device dev, char *buf, size_t n);

/* ---- runtime ------------------------------------------------------------------------------ */

const char *sn_aten_version(void);          /* libtorch version, e.g. "1.13.1" (static string) */
bool sn_aten_cuda_available(void);
int  sn_aten_cuda_device_count(void);
int  sn_aten_cuda_synchronize(struct sn_err *err); /* no-op without CUDA */
/* libtorch's deterministic-algorithms switch (torch.use_deterministic_algorithms): on CUDA,
** ops without a deterministic kernel then fail instead of running a nondeterministic one, and
** cuBLAS needs CUBLAS_WORKSPACE_CONFIG=:4096:8 (or :16:8) in the environment before its
** first use. The CPU kernels are deterministic either way. */
int  sn_aten_set_deterministic(bool on, struct sn_err *err);
void sn_aten_set_num_threads(int n);        /* intra-op threads; n <= 0 leaves it unchanged */
int  sn_aten_get_num_threads(void);
/* Seeds libtorch's own default generators (CPU and CUDA). Our ops that draw random numbers
** take an explicit struct sn_aten_gen instead; this only matters for code that does not. */
void sn_aten_manual_seed(uint64_t seed);
/* Which BLAS library libtorch uses in this process (from /proc/self/maps): the path of a mapped
** file named like libblas (preferred: what Debian's libtorch links), then MKL, then OpenBLAS or
** BLIS, written into buf (NUL-terminated; "" and false if none or not Linux). Benchmarks print
** it so ratios are never taken across two BLAS builds. */
bool sn_aten_blas_library(char *buf, size_t n);

/* ---- generators --------------------------------------------------------------------------- */

/* A generator seeded with `seed` (libtorch's CPU mt19937). Free with sn_aten_gen_free (NULL
** ok). Numbers are always drawn on the CPU (in f32, f64 for F64 targets) and then converted
** and copied to the target device, so one seed gives the same values on every device and
** dtype; dev is only validated. Same seed => same stream of numbers. */
int  sn_aten_gen_create(uint64_t seed, struct sn_device dev, struct sn_aten_gen **out,
                        struct sn_err *err);
void sn_aten_gen_free(struct sn_aten_gen *gen);
int  sn_aten_gen_seed(struct sn_aten_gen *gen, uint64_t seed, struct sn_err *err);
/* Full state (for exact resume): a new uint8 CPU tensor; set_state restores it. */
int  sn_aten_gen_get_state(struct sn_aten_gen *gen, struct sn_tensor **out, struct sn_err *err);
int  sn_aten_gen_set_state(struct sn_aten_gen *gen, const struct sn_tensor *state,
                           struct sn_err *err);

/* ---- handles and queries ------------------------------------------------------------------ */

void sn_tensor_free(struct sn_tensor *t); /* NULL is fine */
/* A second handle to the same tensor (same storage, same autograd identity); free both. */
int  sn_tensor_alias(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);

int              sn_tensor_ndim(const struct sn_tensor *t);
int64_t          sn_tensor_size(const struct sn_tensor *t, int dim); /* dim < 0 counts from
                                                                     ** the end; -1 if out of
                                                                     ** range */
/* Copies min(ndim, max) sizes into shape; returns ndim. */
int              sn_tensor_shape(const struct sn_tensor *t, int64_t *shape, int max);
int64_t          sn_tensor_numel(const struct sn_tensor *t);
enum sn_dtype    sn_tensor_dtype(const struct sn_tensor *t); /* SN_DTYPE_COUNT if other */
struct sn_device sn_tensor_device(const struct sn_tensor *t);
bool             sn_tensor_is_contiguous(const struct sn_tensor *t);
bool             sn_tensor_defined(const struct sn_tensor *t); /* false for an undefined */
size_t           sn_tensor_nbytes(const struct sn_tensor *t); /* numel * element size */
/* Borrowed pointer to the first element of a contiguous CPU tensor; NULL otherwise
** (CUDA, non-contiguous, undefined). See OWNERSHIP for how long it stays valid. */
void            *sn_tensor_data_ptr(struct sn_tensor *t);
/* "f32[2, 3] cpu requires_grad" into buf (debugging / messages). Returns buf. */
char            *sn_tensor_describe(const struct sn_tensor *t, char *buf, size_t n);

/* ---- creation ----------------------------------------------------------------------------- */
/* shape: ndim sizes (ndim 0 = a scalar tensor, shape may then be NULL). */

int sn_aten_empty(const int64_t *shape, int ndim, enum sn_dtype dt, struct sn_device dev,
                  struct sn_tensor **out, struct sn_err *err);
int sn_aten_zeros(const int64_t *shape, int ndim, enum sn_dtype dt, struct sn_device dev,
                  struct sn_tensor **out, struct sn_err *err);
int sn_aten_ones(const int64_t *shape, int ndim, enum sn_dtype dt, struct sn_device dev,
                 struct sn_tensor **out, struct sn_err *err);
int sn_aten_full(const int64_t *shape, int ndim, double value, enum sn_dtype dt,
                 struct sn_device dev, struct sn_tensor **out, struct sn_err *err);
/* Copies numel(shape) elements of type host_dt from `data` (row-major, native byte order;
** BF16/F16 as raw 16-bit patterns, BOOL as bytes) and converts them to dt on dev. */
int sn_aten_from_host(const void *data, enum sn_dtype host_dt, const int64_t *shape, int ndim,
                      enum sn_dtype dt, struct sn_device dev, struct sn_tensor **out,
                      struct sn_err *err);
/* [start, end) step `step`, 1-D. */
int sn_aten_arange(double start, double end, double step, enum sn_dtype dt,
                   struct sn_device dev, struct sn_tensor **out, struct sn_err *err);
/* Random tensors drawn from gen (required, on the same device type as dev). */
int sn_aten_rand(const int64_t *shape, int ndim, enum sn_dtype dt, struct sn_device dev,
                 struct sn_aten_gen *gen, struct sn_tensor **out, struct sn_err *err); /* U[0,1) */
int sn_aten_randn(const int64_t *shape, int ndim, enum sn_dtype dt, struct sn_device dev,
                  struct sn_aten_gen *gen, struct sn_tensor **out, struct sn_err *err); /* N(0,1) */
int sn_aten_uniform(const int64_t *shape, int ndim, double lo, double hi, enum sn_dtype dt,
                    struct sn_device dev, struct sn_aten_gen *gen, struct sn_tensor **out,
                    struct sn_err *err);
/* In place, under no-grad: t ~ U[lo, hi) / N(mean, std). */
int sn_aten_uniform_(struct sn_tensor *t, double lo, double hi, struct sn_aten_gen *gen,
                     struct sn_err *err);
int sn_aten_normal_(struct sn_tensor *t, double mean, double std, struct sn_aten_gen *gen,
                    struct sn_err *err);
/* torch.nn.init.kaiming_uniform_(t, a) with fan_in = size(1) * prod(size(2..)) for a weight
** stored (out, in, ...): bound = sqrt(6 / ((1 + a²) fan_in)); nn.Linear uses a = sqrt(5),
** which gives bound = 1/sqrt(fan_in). In place, under no-grad. */
int sn_aten_kaiming_uniform_(struct sn_tensor *t, double a, struct sn_aten_gen *gen,
                             struct sn_err *err);

/* ---- conversion and copies ---------------------------------------------------------------- */

int sn_aten_to_dtype(const struct sn_tensor *t, enum sn_dtype dt, struct sn_tensor **out,
                     struct sn_err *err);                         /* differentiable */
int sn_aten_to_device(const struct sn_tensor *t, struct sn_device dev, struct sn_tensor **out,
                      struct sn_err *err);                        /* differentiable */
int sn_aten_clone(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
/* Same storage, cut from the autograd graph (requires_grad false). */
int sn_aten_detach(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_contiguous(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);

/* ---- views and shape ---------------------------------------------------------------------- */
/* dims may be negative (count from the end), as in PyTorch. One size in reshape/view may be -1. */

int sn_aten_reshape(const struct sn_tensor *t, const int64_t *shape, int ndim,
                    struct sn_tensor **out, struct sn_err *err);
int sn_aten_view(const struct sn_tensor *t, const int64_t *shape, int ndim,
                 struct sn_tensor **out, struct sn_err *err); /* fails if not viewable */
int sn_aten_transpose(const struct sn_tensor *t, int d0, int d1, struct sn_tensor **out,
                      struct sn_err *err);
int sn_aten_permute(const struct sn_tensor *t, const int *dims, int ndim,
                    struct sn_tensor **out, struct sn_err *err);
/* Elements [start, start + len) along dim. */
int sn_aten_narrow(const struct sn_tensor *t, int dim, int64_t start, int64_t len,
                   struct sn_tensor **out, struct sn_err *err);
/* Python t[..., start:end:step, ...] along dim (end clamped to the size). */
int sn_aten_slice(const struct sn_tensor *t, int dim, int64_t start, int64_t end, int64_t step,
                  struct sn_tensor **out, struct sn_err *err);
/* Like t[..., index, ...]: removes dim. */
int sn_aten_select(const struct sn_tensor *t, int dim, int64_t index, struct sn_tensor **out,
                   struct sn_err *err);
int sn_aten_unsqueeze(const struct sn_tensor *t, int dim, struct sn_tensor **out,
                      struct sn_err *err);
int sn_aten_squeeze(const struct sn_tensor *t, int dim, struct sn_tensor **out,
                    struct sn_err *err); /* dim of size 1 only; else a view of t unchanged */
/* Broadcast view to shape (-1 keeps a size). */
int sn_aten_expand(const struct sn_tensor *t, const int64_t *shape, int ndim,
                   struct sn_tensor **out, struct sn_err *err);
int sn_aten_flatten(const struct sn_tensor *t, int start_dim, int end_dim,
                    struct sn_tensor **out, struct sn_err *err);
int sn_aten_cat(struct sn_tensor *const *ts, size_t n, int dim, struct sn_tensor **out,
                struct sn_err *err);
int sn_aten_stack(struct sn_tensor *const *ts, size_t n, int dim, struct sn_tensor **out,
                  struct sn_err *err);

/* ---- elementwise (broadcasting, differentiable) ------------------------------------------ */

int sn_aten_add(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
                struct sn_err *err);
int sn_aten_sub(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
                struct sn_err *err);
int sn_aten_mul(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
                struct sn_err *err);
int sn_aten_div(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
                struct sn_err *err);
int sn_aten_maximum(const struct sn_tensor *a, const struct sn_tensor *b,
                    struct sn_tensor **out, struct sn_err *err);
int sn_aten_add_scalar(const struct sn_tensor *t, double s, struct sn_tensor **out,
                       struct sn_err *err);
int sn_aten_mul_scalar(const struct sn_tensor *t, double s, struct sn_tensor **out,
                       struct sn_err *err);
int sn_aten_pow_scalar(const struct sn_tensor *t, double e, struct sn_tensor **out,
                       struct sn_err *err);
int sn_aten_neg(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_abs(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_exp(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_log(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_sqrt(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_rsqrt(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_tanh(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_sigmoid(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_silu(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
/* The Qwen2 MLP gate: silu(g) * u, g and u of the same shape (one fused pass on the CPU). */
int sn_aten_swiglu(const struct sn_tensor *g, const struct sn_tensor *u, struct sn_tensor **out,
                   struct sn_err *err);
/* The same gate on one fused gate|up product: x (..., 2I) = [g | u] -> silu(g) * u (..., I);
** the gradient comes back as one (..., 2I) tensor. */
int sn_aten_swiglu_cat(const struct sn_tensor *x, struct sn_tensor **out, struct sn_err *err);
/* log σ(x), computed stably (no -inf below x ≈ -88 in f32). */
int sn_aten_logsigmoid(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_relu(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
/* Clamp to [lo, hi]; pass -INFINITY / INFINITY for "no bound". */
int sn_aten_clamp(const struct sn_tensor *t, double lo, double hi, struct sn_tensor **out,
                  struct sn_err *err);
/* cond ? a : b, elementwise, broadcasting; cond is BOOL. */
int sn_aten_where(const struct sn_tensor *cond, const struct sn_tensor *a,
                  const struct sn_tensor *b, struct sn_tensor **out, struct sn_err *err);
/* Where mask (BOOL, broadcast to t) is true, value; else t. */
int sn_aten_masked_fill(const struct sn_tensor *t, const struct sn_tensor *mask, double value,
                        struct sn_tensor **out, struct sn_err *err);

/* Comparisons: BOOL results, not differentiable. */
int sn_aten_gt(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
               struct sn_err *err);
int sn_aten_lt(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
               struct sn_err *err);
int sn_aten_eq(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
               struct sn_err *err);
int sn_aten_ne(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
               struct sn_err *err);
int sn_aten_gt_scalar(const struct sn_tensor *t, double s, struct sn_tensor **out,
                      struct sn_err *err);
int sn_aten_eq_scalar(const struct sn_tensor *t, double s, struct sn_tensor **out,
                      struct sn_err *err);
int sn_aten_logical_not(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_logical_and(const struct sn_tensor *a, const struct sn_tensor *b,
                        struct sn_tensor **out, struct sn_err *err);

/* ---- reductions --------------------------------------------------------------------------- */

int sn_aten_sum_all(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_mean_all(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_sum(const struct sn_tensor *t, int dim, bool keepdim, struct sn_tensor **out,
                struct sn_err *err);
int sn_aten_mean(const struct sn_tensor *t, int dim, bool keepdim, struct sn_tensor **out,
                 struct sn_err *err);
/* Max over dim: values (differentiable) and, if indices != NULL, their I64 positions. */
int sn_aten_max(const struct sn_tensor *t, int dim, bool keepdim, struct sn_tensor **values,
                struct sn_tensor **indices, struct sn_err *err);
int sn_aten_max_all(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
int sn_aten_argmax(const struct sn_tensor *t, int dim, bool keepdim, struct sn_tensor **out,
                   struct sn_err *err); /* I64 */
/* L2 norm of all elements (scalar tensor, differentiable). */
int sn_aten_norm(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
/* *ok = every element finite (no NaN/Inf). Not differentiable; syncs with the device. */
int sn_aten_all_finite(const struct sn_tensor *t, bool *ok, struct sn_err *err);
/* *out = max |a - b| over all elements, as a double (a, b broadcast). Tests and checks. */
int sn_aten_max_abs_diff(const struct sn_tensor *a, const struct sn_tensor *b, double *out,
                         struct sn_err *err);

/* ---- linear algebra ----------------------------------------------------------------------- */

int sn_aten_matmul(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
                   struct sn_err *err);   /* torch.matmul semantics (batched, broadcasting) */
int sn_aten_bmm(const struct sn_tensor *a, const struct sn_tensor *b, struct sn_tensor **out,
                struct sn_err *err);      /* (B,n,k) x (B,k,m) */
/* y = x Wᵀ + bias, x (..., in), W (out, in) as PyTorch stores it, bias (out) or NULL. */
int sn_aten_linear(const struct sn_tensor *x, const struct sn_tensor *w,
                   const struct sn_tensor *bias, struct sn_tensor **out, struct sn_err *err);
/* y + alpha · x wᵀ in one BLAS call (beta = 1 accumulation): x (..., in), w (out, in),
** y (..., out) with x's leading dims. The LoRA update B(A x)·s without a separate scale and
** add pass (and without their backward passes). */
int sn_aten_add_linear(const struct sn_tensor *y, const struct sn_tensor *x,
                       const struct sn_tensor *w, double alpha, struct sn_tensor **out,
                       struct sn_err *err);

/* Mixed precision for the calling thread ("autocast" with f32 master weights; docs/train.md,
** "bf16"): while set to BF16 (or F16), sn_aten_linear and sn_aten_add_linear with f32
** operands cast them to that dtype, multiply there (libtorch's GEMM accumulates in f32) and
** cast the product back to f32; add_linear adds it to y in f32, so residual streams stay f32.
** Every other op (norms, RoPE, attention, softmax, the loss) runs in the operands' dtype as
** usual. Gradients flow back through the casts, so f32 parameters get f32 gradients. F32 = off
** (the default); f64 operands are never cast. enter returns the previous setting for exit:
**   enum sn_dtype prev = sn_aten_autocast_enter(SN_DTYPE_BF16); ...; sn_aten_autocast_exit(prev);
** sn_aten_checkpoint records the setting at forward and recomputes under it. */
enum sn_dtype sn_aten_autocast_enter(enum sn_dtype dt);
void          sn_aten_autocast_exit(enum sn_dtype previous);
enum sn_dtype sn_aten_autocast_get(void);

/* ---- indexing ----------------------------------------------------------------------------- */

/* Rows of table (V, D) picked by ids (any shape, I64 or I32): out has shape ids.shape + (D).
** Differentiable w.r.t. table (the gradient scatters-adds into the picked rows). */
int sn_aten_embedding(const struct sn_tensor *table, const struct sn_tensor *ids,
                      struct sn_tensor **out, struct sn_err *err);
/* torch.index_select: entries of t at index (1-D, I64 or I32) along dim. */
int sn_aten_index_select(const struct sn_tensor *t, int dim, const struct sn_tensor *index,
                         struct sn_tensor **out, struct sn_err *err);
/* torch.gather: out[i][j][k] = t[i][index[i][j][k]][k] for dim 1, etc.; index I64 with the
** same ndim as t. Last-token rows of h (B,T,D) at positions p (B): index = p viewed (B,1,1)
** expanded to (B,1,D), dim 1 -> (B,1,D). */
int sn_aten_gather(const struct sn_tensor *t, int dim, const struct sn_tensor *index,
                   struct sn_tensor **out, struct sn_err *err);

/* ---- neural-network pieces (all differentiable, plain ATen ops) -------------------------- */

int sn_aten_softmax(const struct sn_tensor *t, int dim, struct sn_tensor **out,
                    struct sn_err *err);
int sn_aten_log_softmax(const struct sn_tensor *t, int dim, struct sn_tensor **out,
                        struct sn_err *err);
/* RMSNorm as Qwen2/Llama define it (HF Qwen2RMSNorm): h = float(x) (f64 stays f64);
** y = w * cast_back(h * rsqrt(mean(h², last dim) + eps)). x (..., D), w (D). */
int sn_aten_rms_norm(const struct sn_tensor *x, const struct sn_tensor *w, double eps,
                     struct sn_tensor **out, struct sn_err *err);
/* rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]) along the last dim (D even). */
int sn_aten_rotate_half(const struct sn_tensor *x, struct sn_tensor **out, struct sn_err *err);
/* RoPE tables in the rotate-half layout (HF Qwen2RotaryEmbedding): for position p and
** j < D/2, inv_freq_j = theta^(-2j/D), angle = p * inv_freq_j, and
** cos[..., j] = cos[..., j + D/2] = cos(angle) (same for sin). pos: I64/I32 positions of any
** shape S (e.g. (B,T) or (T)); *cos, *sin: S + (D), dtype dt. Angles computed in f32 (as HF)
** unless dt is F64. */
int sn_aten_rope_tables(const struct sn_tensor *pos, int64_t head_dim, double theta,
                        enum sn_dtype dt, struct sn_tensor **cos, struct sn_tensor **sin,
                        struct sn_err *err);
/* x * cos + rotate_half(x) * sin. x (B,H,T,D); cos, sin (T,D) or (B,T,D) (then broadcast
** over heads). */
int sn_aten_apply_rotary(const struct sn_tensor *x, const struct sn_tensor *cos,
                         const struct sn_tensor *sin, struct sn_tensor **out,
                         struct sn_err *err);
/* GQA helper: (B,Hkv,T,D) -> (B,Hkv*n_rep,T,D), head h of the result is head h / n_rep. */
int sn_aten_repeat_kv(const struct sn_tensor *x, int64_t n_rep, struct sn_tensor **out,
                      struct sn_err *err);

/* Scaled-dot-product attention: out = softmax(Q Kᵀ · scale + M) V, per batch and head.
** q (B,Hq,Tq,D); k, v (B,Hkv,Tk,D) with Hq a multiple of Hkv (GQA: query head h uses kv head
** h / (Hq/Hkv)). scale 0 means 1/sqrt(D).
** M: causal (if set) masks key j for query i when j > i + (Tk - Tq); key_keep (NULL ok) is
** (B,Tk) BOOL/integer, nonzero = a real token, zero = padding never attended to.
** Masked scores get the dtype's lowest finite value (not -inf, as HF does), so a query row
** whose keys are all masked (a left-padding position) yields a finite uniform average instead
** of NaN; such rows should be ignored by the caller.
** dropout_p > 0 applies dropout to the attention probabilities with gen (required then); use
** 0 at evaluation. Output (B,Hq,Tq,D), differentiable w.r.t. q, k, v. */
int sn_aten_attention(const struct sn_tensor *q, const struct sn_tensor *k,
                      const struct sn_tensor *v, const struct sn_tensor *key_keep, bool causal,
                      double scale, double dropout_p, struct sn_aten_gen *gen,
                      struct sn_tensor **out, struct sn_err *err);
/* Causal self-attention over PACKED rows (padding-free batches, shared-prefix scoring;
** docs/train.md, packed batches): q (B,Hq,T,D), k, v (B,Hkv,T,D) as above (Tq == Tk == T), and
** spans (B,T,3) I32/I64 saying which keys token t of row b sees:
**     its own segment, causally:  keys j with spans[b,t,0] <= j <= t
**     a shared prefix (optional): keys j with spans[b,t,1] <= j < spans[b,t,2]
** required: 0 <= spans[b,t,0] <= t and either lo == hi (no prefix) or 0 <= lo < hi <=
** spans[b,t,0]. Several sequences in one row: each token's segment starts at its sequence's
** first token (a block-diagonal causal mask). Responses scored against one encoded context:
** the context tokens form one segment, each response its own segment with the context as
** prefix. Every row sees at least itself, so no row is empty. Positions (RoPE) are the
** caller's business: restart them per sequence. SN_E_ARG names the first bad entry.
** Differentiable w.r.t. q, k, v; the fused CPU kernel for f32/f64, composed ops otherwise. */
int sn_aten_attention_spans(const struct sn_tensor *q, const struct sn_tensor *k,
                            const struct sn_tensor *v, const struct sn_tensor *spans,
                            double scale, struct sn_tensor **out, struct sn_err *err);
/* Inverted dropout: training ? x * bernoulli(1-p) / (1-p) : x (a new handle to x). */
int sn_aten_dropout(const struct sn_tensor *x, double p, bool training, struct sn_aten_gen *gen,
                    struct sn_tensor **out, struct sn_err *err);

/* ---- in place (for optimizers and loading; see sn_aten_no_grad_enter) -------------------- */
/* In-place ops on a leaf that requires grad fail (as in PyTorch) unless grad mode is off. */

int sn_aten_copy_(struct sn_tensor *dst, const struct sn_tensor *src, struct sn_err *err);
int sn_aten_fill_(struct sn_tensor *t, double value, struct sn_err *err);
int sn_aten_zero_(struct sn_tensor *t, struct sn_err *err);
/* t += alpha * other */
int sn_aten_add_(struct sn_tensor *t, const struct sn_tensor *other, double alpha,
                 struct sn_err *err);
int sn_aten_add_scalar_(struct sn_tensor *t, double s, struct sn_err *err); /* t += s */
int sn_aten_mul_(struct sn_tensor *t, const struct sn_tensor *other, struct sn_err *err);
int sn_aten_mul_scalar_(struct sn_tensor *t, double s, struct sn_err *err); /* t *= s */
/* t += value * a * b */
int sn_aten_addcmul_(struct sn_tensor *t, const struct sn_tensor *a, const struct sn_tensor *b,
                     double value, struct sn_err *err);
/* t += value * a / b */
int sn_aten_addcdiv_(struct sn_tensor *t, const struct sn_tensor *a, const struct sn_tensor *b,
                     double value, struct sn_err *err);
/* t += w * (end - t) */
int sn_aten_lerp_(struct sn_tensor *t, const struct sn_tensor *end, double w,
                  struct sn_err *err);
int sn_aten_sqrt_(struct sn_tensor *t, struct sn_err *err);

/* ---- autograd ----------------------------------------------------------------------------- */

int  sn_aten_set_requires_grad(struct sn_tensor *t, bool on, struct sn_err *err);
bool sn_aten_requires_grad(const struct sn_tensor *t);
bool sn_aten_is_leaf(const struct sn_tensor *t);
/* Backpropagates from `root`. grad NULL requires a single-element root (gradient 1); else
** grad has root's shape. retain_graph keeps the graph for a second backward. Gradients
** accumulate (+=) into the .grad of leaves that require grad. */
int  sn_aten_backward(const struct sn_tensor *root, const struct sn_tensor *grad,
                      bool retain_graph, struct sn_err *err);
/* *out = a handle aliasing t's .grad, or NULL (SN_OK) when t has none yet. */
int  sn_aten_grad(const struct sn_tensor *t, struct sn_tensor **out, struct sn_err *err);
/* Drops t's .grad (set_to_none, like optimizer.zero_grad()). Cannot fail. */
void sn_aten_zero_grad(struct sn_tensor *t);
/* Replaces t's .grad with g (same shape/dtype/device; NULL = none). */
int  sn_aten_set_grad(struct sn_tensor *t, const struct sn_tensor *g, struct sn_err *err);
/* Non-leaf t keeps its .grad after backward (torch retain_grad). */
int  sn_aten_retain_grad(struct sn_tensor *t, struct sn_err *err);
/* Grad mode for the calling thread. enter turns it off and returns the previous state, which
** exit restores:  bool g = sn_aten_no_grad_enter(); ...; sn_aten_no_grad_exit(g);
** Nest them like brackets. */
bool sn_aten_no_grad_enter(void);
void sn_aten_no_grad_exit(bool previous);
bool sn_aten_grad_enabled(void);
/* torch.nn.utils.clip_grad_norm_: total = ‖concat of the .grad of params‖₂ (params without
** grad are skipped); if total > max_norm, every grad is scaled by max_norm / (total + 1e-6).
** *total_norm (NULL ok) gets the norm before clipping. max_norm <= 0: only measure. */
int  sn_aten_clip_grad_norm(struct sn_tensor *const *params, size_t n, double max_norm,
                            double *total_norm, struct sn_err *err);

/* ---- gradient checkpointing --------------------------------------------------------------- */

/* The segment to checkpoint. It reads in[0..n_in) (borrowed) and any tensors it reaches via
** ctx, and must store exactly n_out NEW handles in out[] (ownership passes to the caller of
** the callback; out[] arrives all NULL). On error it returns non-zero; handles it already
** stored in out[] are freed by the caller (so never leave a freed pointer there). It must be
** a pure function of its inputs, params and gen state: it runs twice (forward, then again in
** backward), and ctx (and what it points to) must stay valid until backward has run. */
typedef int (*sn_aten_fn)(void *ctx, struct sn_tensor *const *in, size_t n_in,
                          struct sn_tensor **out, size_t n_out, struct sn_err *err);

/* Runs fn(ctx, inputs) without keeping its activations; backward re-runs it with grad
** enabled and backpropagates through the recomputation (torch.utils.checkpoint, reentrant
** style, implemented as one custom torch::autograd::Function).
**  - inputs: the activations fed to fn (fn sees detached copies that require grad exactly
**    when the originals do; their gradients flow back to the originals).
**  - params: EVERY tensor that fn reads through ctx and that requires grad (weights, LoRA
**    factors). They become inputs of the checkpoint node, so the outputs require grad even
**    when no activation does (a frozen embedding feeding LoRA layers), and backward computes
**    their gradients with torch::autograd::grad and hands them to the outer graph: leaves
**    get .grad accumulated once, non-leaves propagate further. A tensor requiring grad that
**    fn uses but that is not listed here gets NO gradient from this segment.
**  - gen (NULL ok): the generator fn draws from (dropout); its state is saved before the
**    forward and restored for the recompute, so both runs see the same random numbers.
** outputs: n_out new handles (free each). Under no-grad (or when nothing requires grad) fn is
** simply called once. An error in the recompute makes sn_aten_backward fail with fn's
** status and message. */
int sn_aten_checkpoint(sn_aten_fn fn, void *ctx, struct sn_tensor *const *inputs, size_t n_in,
                       struct sn_tensor *const *params, size_t n_params,
                       struct sn_aten_gen *gen, struct sn_tensor **outputs, size_t n_out,
                       struct sn_err *err);

/* ---- host I/O ----------------------------------------------------------------------------- */

/* Copies all n elements of t (n must equal numel) into dst as host_dt (F32, F64, I32, I64,
** BF16/F16 raw bits, BOOL/U8 bytes), converting on the way; any device, any layout. */
int sn_aten_to_host(const struct sn_tensor *t, void *dst, enum sn_dtype host_dt, size_t n,
                    struct sn_err *err);
/* Value of a single-element tensor. */
int sn_aten_item_f64(const struct sn_tensor *t, double *out, struct sn_err *err);
int sn_aten_item_i64(const struct sn_tensor *t, int64_t *out, struct sn_err *err);
/* Raw bytes only (numel * element size, row-major, native byte order, no header): dtype and
** shape are the caller's business (safetensors lives in common/). save writes atomically
** (sn_atomic_*); load checks the file holds exactly numel(shape) * size(dt) bytes. */
int sn_aten_save_raw(const struct sn_tensor *t, const char *path, struct sn_err *err);
int sn_aten_write_raw(const struct sn_tensor *t, FILE *f, struct sn_err *err);
int sn_aten_load_raw(const char *path, const int64_t *shape, int ndim, enum sn_dtype dt,
                     struct sn_device dev, struct sn_tensor **out, struct sn_err *err);

/* ---- distributed (c10d) ------------------------------------------------------------------- */

/* Where the rank comes from, first match wins:
**   torchrun:  RANK, WORLD_SIZE, LOCAL_RANK (default RANK), MASTER_ADDR, MASTER_PORT
**   Slurm:     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, + MASTER_ADDR, MASTER_PORT
**   nothing:   a world of 1 (rank 0); collectives are no-ops and no socket is opened.
** MASTER_ADDR defaults to 127.0.0.1; MASTER_PORT is required when WORLD_SIZE > 1. Rank 0
** hosts the TCPStore. Backend (AUTO): Gloo on CPU; NCCL when the device is CUDA. GLOO on a
** CUDA device all-reduces CUDA tensors through Gloo (several ranks on one GPU, where NCCL
** refuses two ranks per device); NCCL needs a CUDA device. A backend this build lacks (Gloo
** headers or NCCL absent from the libtorch it was built against) is SN_E_UNSUPPORTED.
** sn_aten_dist_init_env opens a backend named (not AUTO) for a world of one too when the
** launcher's MASTER_PORT is set, as torchrun --nproc-per-node 1 does (open_single below). */
struct sn_dist_params {
    struct sn_device     device;    /* where collective tensors live */
    int                  timeout_s; /* store connect + collectives; 0 = 300 */
    enum sn_dist_backend backend;   /* AUTO (default); aten/dtype.h names and parses it */
    bool                 open_single; /* open the backend for a world of one too (as torchrun
                                      ** --nproc-per-node 1 does), so one device exercises it;
                                      ** false: a world of one opens nothing */
};
/* Whether this build can open a group of that backend (false for AUTO). */
bool sn_aten_dist_backend_built(enum sn_dist_backend b);
struct sn_dist_params sn_dist_default_params(void);
int  sn_aten_dist_init_env(const struct sn_dist_params *params, struct sn_dist **out,
                           struct sn_err *err);
/* Explicit form (tests, custom launchers). */
int  sn_aten_dist_init(int rank, int world_size, int local_rank, const char *master_addr,
                       int master_port, const struct sn_dist_params *params,
                       struct sn_dist **out, struct sn_err *err);
void sn_aten_dist_free(struct sn_dist *d); /* NULL ok */
int  sn_aten_dist_rank(const struct sn_dist *d);
int  sn_aten_dist_world_size(const struct sn_dist *d);
int  sn_aten_dist_local_rank(const struct sn_dist *d);
const char *sn_aten_dist_backend(const struct sn_dist *d); /* "none", "gloo", "nccl" */

enum sn_reduce { SN_REDUCE_SUM, SN_REDUCE_AVG, SN_REDUCE_MAX, SN_REDUCE_MIN };
/* In place on t (contiguous, on the group's device), identical shape on every rank.
** AVG = SUM then divide by world size (floating dtypes only). Synchronous. */
int sn_aten_dist_all_reduce(struct sn_dist *d, struct sn_tensor *t, enum sn_reduce op,
                            struct sn_err *err);
/* Same for many tensors (e.g. all gradients) in one flattened collective. */
int sn_aten_dist_all_reduce_many(struct sn_dist *d, struct sn_tensor *const *ts, size_t n,
                                 enum sn_reduce op, struct sn_err *err);
/* t on every rank becomes root's t. */
int sn_aten_dist_broadcast(struct sn_dist *d, struct sn_tensor *t, int root, struct sn_err *err);
int sn_aten_dist_barrier(struct sn_dist *d, struct sn_err *err);

#ifdef __cplusplus
}
#endif
#endif
