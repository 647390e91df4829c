// aten/aten_tensor.cpp: tensor handles, creation, views, elementwise ops, reductions, linear
// algebra, indexing, in-place updates, host I/O and runtime queries of the C API in aten/aten.h.
// Every entry point is extern "C" and goes through sn_aten::run/guard (aten_internal.hpp), so
// no exception reaches C.
#include "aten/aten_internal.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/csrc/api/include/torch/cuda.h>
#include <torch/csrc/api/include/torch/version.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace sn_aten;

// ---- shared helpers ----------------------------------------------------------------------

namespace sn_aten {

at::ScalarType to_scalar_type(int dt)
{
    switch (dt) {
    case SN_DTYPE_F32: return at::kFloat;
    case SN_DTYPE_F64: return at::kDouble;
    case SN_DTYPE_BF16: return at::kBFloat16;
    case SN_DTYPE_F16: return at::kHalf;
    case SN_DTYPE_I32: return at::kInt;
    case SN_DTYPE_I64: return at::kLong;
    case SN_DTYPE_BOOL: return at::kBool;
    case SN_DTYPE_U8: return at::kByte;
    default: throw ArgError("unknown dtype " + std::to_string(dt));
    }
}

int from_scalar_type(at::ScalarType st)
{
    switch (st) {
    case at::kFloat: return SN_DTYPE_F32;
    case at::kDouble: return SN_DTYPE_F64;
    case at::kBFloat16: return SN_DTYPE_BF16;
    case at::kHalf: return SN_DTYPE_F16;
    case at::kInt: return SN_DTYPE_I32;
    case at::kLong: return SN_DTYPE_I64;
    case at::kBool: return SN_DTYPE_BOOL;
    case at::kByte: return SN_DTYPE_U8;
    default: return SN_DTYPE_COUNT;
    }
}

at::Device to_device(struct sn_device d)
{
    if (d.type == SN_DEVICE_CPU)
        return at::Device(at::kCPU);
    if (d.type == SN_DEVICE_CUDA) {
        if (!at::hasCUDA())
            throw CodedError(SN_E_UNSUPPORTED, "CUDA device requested but this libtorch has "
                                               "no usable CUDA");
        if (d.index < 0 || d.index > 127)
            throw ArgError("bad CUDA device index " + std::to_string(d.index));
        return at::Device(at::kCUDA, (c10::DeviceIndex)d.index);
    }
    throw ArgError("unknown device type " + std::to_string((int)d.type));
}

at::IntArrayRef shape_ref(const int64_t *shape, int ndim)
{
    if (ndim < 0 || ndim > 64)
        throw ArgError("ndim " + std::to_string(ndim) + " out of range [0, 64]");
    if (ndim > 0 && !shape)
        throw ArgError("shape is NULL with ndim " + std::to_string(ndim));
    return at::IntArrayRef(shape, (size_t)ndim);
}

std::string one_line(const char *what)
{
    std::string s(what ? what : "");
    // libtorch appends "Exception raised from ..." with a C++ stack when built with it.
    size_t cut = s.find("Exception raised from");
    if (cut != std::string::npos)
        s.resize(cut);
    std::string r;
    for (char c : s) {
        if (c == '\n' || c == '\r') {
            if (!r.empty() && r.back() != ' ')
                r += "; ";
        } else {
            r += c;
        }
    }
    while (!r.empty() && (r.back() == ' ' || r.back() == ';'))
        r.pop_back();
    return r;
}

int fail_current(const char *op, struct sn_err *err)
{
    try {
        throw;
    } catch (const std::bad_alloc &) {
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", op);
    } catch (const ArgError &e) {
        return sn_err_set(err, SN_E_ARG, "%s: %s", op, e.what());
    } catch (const CodedError &e) {
        return sn_err_set(err, e.code, "%s: %s", op, e.what());
    } catch (const c10::Error &e) {
        return sn_err_set(err, SN_E_BACKEND, "%s: %s", op,
                          one_line(e.what_without_backtrace()).c_str());
    } catch (const std::exception &e) {
        return sn_err_set(err, SN_E_BACKEND, "%s: %s", op, one_line(e.what()).c_str());
    } catch (...) {
        return sn_err_set(err, SN_E_BACKEND, "%s: unknown exception", op);
    }
}

} // namespace sn_aten

static at::TensorOptions opts(int dt, struct sn_device dev)
{
    return at::TensorOptions().dtype(to_scalar_type(dt)).device(to_device(dev));
}

static at::Generator &gen_of(struct sn_aten_gen *g)
{
    if (!g)
        throw ArgError("generator is NULL");
    return g->g;
}

// Random numbers are drawn on the CPU in f32 (f64 for F64) and then converted and moved, so
// one seed gives the same values whatever the target dtype's precision or device.
static at::ScalarType draw_type(at::ScalarType st)
{
    return st == at::kDouble ? at::kDouble : at::kFloat;
}

// ---- dtype, device, runtime --------------------------------------------------------------

extern "C" int sn_aten_device_parse(const char *s, struct sn_device *dev, struct sn_err *err)
{
    if (!s || !dev)
        return sn_err_set(err, SN_E_ARG, "device: NULL argument");
    if (strcmp(s, "cpu") == 0) {
        *dev = {SN_DEVICE_CPU, 0};
        return SN_OK;
    }
    int idx = 0;
    if (strncmp(s, "cuda", 4) == 0 && (s[4] == '\0' || s[4] == ':')) {
        if (s[4] == ':') {
            char *end = nullptr;
            errno = 0;
            long v = strtol(s + 5, &end, 10);
            if (end == s + 5 || *end || errno || v < 0 || v > 127)
                return sn_err_set(err, SN_E_ARG, "device '%s': expected cuda:N with N a device "
                                                 "ordinal", s);
            idx = (int)v;
        }
        if (!sn_aten_cuda_available())
            return sn_err_set(err, SN_E_UNSUPPORTED, "device '%s': this libtorch (%s) has no "
                              "usable CUDA; use 'cpu'", s, sn_aten_version());
        if (idx >= sn_aten_cuda_device_count())
            return sn_err_set(err, SN_E_ARG, "device '%s': only %d CUDA device(s)", s,
                              sn_aten_cuda_device_count());
        *dev = {SN_DEVICE_CUDA, idx};
        return SN_OK;
    }
    return sn_err_set(err, SN_E_ARG, "device '%s': expected 'cpu', 'cuda' or 'cuda:N'", s);
}

extern "C" char *sn_aten_device_name(struct sn_device dev, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    if (dev.type == SN_DEVICE_CUDA)
        snprintf(buf, n, "cuda:%d", dev.index);
    else
        snprintf(buf, n, "cpu");
    return buf;
}

extern "C" const char *sn_aten_version(void)
{
    return TORCH_VERSION;
}

// CUDA queries through the C++ frontend (torch::cuda), whose spelling is the same in 1.13 and
// 2.x; at::detail::getCUDAHooks() changed its interface between them.
extern "C" bool sn_aten_cuda_available(void)
{
    try {
        return at::hasCUDA() && torch::cuda::device_count() > 0;
    } catch (...) {
        return false;
    }
}

extern "C" int sn_aten_cuda_device_count(void)
{
    try {
        return at::hasCUDA() ? (int)torch::cuda::device_count() : 0;
    } catch (...) {
        return 0;
    }
}

extern "C" int sn_aten_cuda_synchronize(struct sn_err *err)
{
    return guard("cuda_synchronize", err, [&] {
        if (sn_aten_cuda_available())
            torch::cuda::synchronize(); // the current device's streams
    });
}

extern "C" int sn_aten_set_deterministic(bool on, struct sn_err *err)
{
    return guard("set_deterministic", err,
                 [&] { at::globalContext().setDeterministicAlgorithms(on, false); });
}

extern "C" void sn_aten_set_num_threads(int n)
{
    if (n > 0) {
        try {
            at::set_num_threads(n);
        } catch (...) {
        }
    }
}

extern "C" int sn_aten_get_num_threads(void)
{
    return at::get_num_threads();
}

extern "C" void sn_aten_manual_seed(uint64_t seed)
{
    try {
        at::manual_seed(seed);
    } catch (...) {
    }
}

// libtorch links libblas.so.3 (whatever the system's alternative points at) or MKL; a process
// may map OpenBLAS a second time for its own cblas calls. So the name libtorch actually uses
// wins: libblas first, then MKL, then OpenBLAS/BLIS by their own names.
extern "C" bool sn_aten_blas_library(char *buf, size_t n)
{
    if (!buf || n == 0)
        return false;
    buf[0] = '\0';
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    static const char *const keys[] = {"libblas", "mkl_rt", "libmkl", "openblas", "blis"};
    const int n_keys = (int)(sizeof keys / sizeof keys[0]);
    int best = n_keys;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (!path)
            continue;
        path[strcspn(path, "\n")] = '\0';
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        for (int k = 0; k < best; k++) {
            if (strstr(base, keys[k])) {
                snprintf(buf, n, "%s", path);
                best = k;
                break;
            }
        }
    }
    fclose(f);
    return best < n_keys;
}

// ---- generators --------------------------------------------------------------------------

extern "C" int sn_aten_gen_create(uint64_t seed, struct sn_device dev, struct sn_aten_gen **out,
                                  struct sn_err *err)
{
    if (!out)
        return sn_err_set(err, SN_E_ARG, "gen_create: out is NULL");
    *out = nullptr;
    try {
        (void)to_device(dev); // validates; numbers are drawn on the CPU for every device
        *out = new sn_aten_gen{at::make_generator<at::CPUGeneratorImpl>(seed)};
        return SN_OK;
    } catch (...) {
        return fail_current("gen_create", err);
    }
}

extern "C" void sn_aten_gen_free(struct sn_aten_gen *gen)
{
    delete gen;
}

extern "C" int sn_aten_gen_seed(struct sn_aten_gen *gen, uint64_t seed, struct sn_err *err)
{
    return guard("gen_seed", err, [&] {
        at::Generator &g = gen_of(gen);
        std::lock_guard<std::mutex> lock(g.mutex());
        g.set_current_seed(seed);
    });
}

extern "C" int sn_aten_gen_get_state(struct sn_aten_gen *gen, struct sn_tensor **out,
                                     struct sn_err *err)
{
    return run("gen_get_state", out, err, [&] {
        at::Generator &g = gen_of(gen);
        std::lock_guard<std::mutex> lock(g.mutex());
        return g.get_state();
    });
}

extern "C" int sn_aten_gen_set_state(struct sn_aten_gen *gen, const struct sn_tensor *state,
                                     struct sn_err *err)
{
    return guard("gen_set_state", err, [&] {
        at::Generator &g = gen_of(gen);
        const at::Tensor &s = ten(state);
        std::lock_guard<std::mutex> lock(g.mutex());
        g.set_state(s);
    });
}

// ---- handles and queries -----------------------------------------------------------------

extern "C" void sn_tensor_free(struct sn_tensor *t)
{
    delete t;
}

extern "C" int sn_tensor_alias(const struct sn_tensor *t, struct sn_tensor **out,
                               struct sn_err *err)
{
    return run("alias", out, err, [&] { return ten(t); });
}

extern "C" int sn_tensor_ndim(const struct sn_tensor *t)
{
    return t && t->t.defined() ? (int)t->t.dim() : 0;
}

extern "C" int64_t sn_tensor_size(const struct sn_tensor *t, int dim)
{
    if (!t || !t->t.defined())
        return -1;
    int64_t nd = t->t.dim();
    int64_t d = dim < 0 ? dim + nd : dim;
    return d >= 0 && d < nd ? t->t.size(d) : -1;
}

extern "C" int sn_tensor_shape(const struct sn_tensor *t, int64_t *shape, int max)
{
    int nd = sn_tensor_ndim(t);
    for (int i = 0; i < nd && i < max && shape; i++)
        shape[i] = t->t.size(i);
    return nd;
}

extern "C" int64_t sn_tensor_numel(const struct sn_tensor *t)
{
    return t && t->t.defined() ? t->t.numel() : 0;
}

extern "C" enum sn_dtype sn_tensor_dtype(const struct sn_tensor *t)
{
    if (!t || !t->t.defined())
        return SN_DTYPE_COUNT;
    return (enum sn_dtype)from_scalar_type(t->t.scalar_type());
}

extern "C" struct sn_device sn_tensor_device(const struct sn_tensor *t)
{
    struct sn_device d = {SN_DEVICE_CPU, 0};
    if (t && t->t.defined() && t->t.is_cuda()) {
        d.type = SN_DEVICE_CUDA;
        d.index = t->t.get_device();
    }
    return d;
}

extern "C" bool sn_tensor_is_contiguous(const struct sn_tensor *t)
{
    return t && t->t.defined() && t->t.is_contiguous();
}

extern "C" bool sn_tensor_defined(const struct sn_tensor *t)
{
    return t && t->t.defined();
}

extern "C" size_t sn_tensor_nbytes(const struct sn_tensor *t)
{
    return t && t->t.defined() ? (size_t)t->t.numel() * t->t.element_size() : 0;
}

extern "C" void *sn_tensor_data_ptr(struct sn_tensor *t)
{
    if (!t || !t->t.defined() || !t->t.is_cpu() || !t->t.is_contiguous())
        return nullptr;
    return t->t.data_ptr();
}

extern "C" char *sn_tensor_describe(const struct sn_tensor *t, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    if (!t || !t->t.defined()) {
        snprintf(buf, n, "%s", t ? "undefined" : "NULL");
        return buf;
    }
    std::string s = sn_dtype_name(sn_tensor_dtype(t));
    s += "[";
    for (int64_t i = 0; i < t->t.dim(); i++)
        s += (i ? ", " : "") + std::to_string(t->t.size(i));
    s += "] ";
    char dn[32];
    s += sn_aten_device_name(sn_tensor_device(t), dn, sizeof dn);
    if (t->t.requires_grad())
        s += " requires_grad";
    snprintf(buf, n, "%s", s.c_str());
    return buf;
}

// ---- creation ----------------------------------------------------------------------------

extern "C" int sn_aten_empty(const int64_t *shape, int ndim, enum sn_dtype dt,
                             struct sn_device dev, struct sn_tensor **out, struct sn_err *err)
{
    return run("empty", out, err, [&] { return at::empty(shape_ref(shape, ndim), opts(dt, dev)); });
}

extern "C" int sn_aten_zeros(const int64_t *shape, int ndim, enum sn_dtype dt,
                             struct sn_device dev, struct sn_tensor **out, struct sn_err *err)
{
    return run("zeros", out, err, [&] { return at::zeros(shape_ref(shape, ndim), opts(dt, dev)); });
}

extern "C" int sn_aten_ones(const int64_t *shape, int ndim, enum sn_dtype dt,
                            struct sn_device dev, struct sn_tensor **out, struct sn_err *err)
{
    return run("ones", out, err, [&] { return at::ones(shape_ref(shape, ndim), opts(dt, dev)); });
}

extern "C" int sn_aten_full(const int64_t *shape, int ndim, double value, enum sn_dtype dt,
                            struct sn_device dev, struct sn_tensor **out, struct sn_err *err)
{
    return run("full", out, err,
               [&] { return at::full(shape_ref(shape, ndim), value, opts(dt, dev)); });
}

extern "C" int sn_aten_from_host(const void *data, enum sn_dtype host_dt, const int64_t *shape,
                                 int ndim, enum sn_dtype dt, struct sn_device dev,
                                 struct sn_tensor **out, struct sn_err *err)
{
    return run("from_host", out, err, [&] {
        at::IntArrayRef s = shape_ref(shape, ndim);
        for (int64_t v : s)
            if (v < 0)
                throw ArgError("negative size in shape");
        int64_t n = c10::multiply_integers(s);
        if (!data && n > 0)
            throw ArgError("data is NULL");
        at::Tensor src = at::from_blob(const_cast<void *>(data), s,
                                       at::TensorOptions().dtype(to_scalar_type(host_dt)));
        // copy = true: the result never aliases the caller's buffer.
        return src.to(opts(dt, dev), /*non_blocking=*/false, /*copy=*/true);
    });
}

extern "C" int sn_aten_arange(double start, double end, double step, enum sn_dtype dt,
                              struct sn_device dev, struct sn_tensor **out, struct sn_err *err)
{
    return run("arange", out, err, [&] { return at::arange(start, end, step, opts(dt, dev)); });
}

// Draws in the generator's own dtype (draw_type), then converts, so a seed gives the same
// numbers whatever dtype and device are asked for. fill(r, g) does the draw; the op locks the
// generator itself.
template <typename Fill>
static int draw(const char *name, const int64_t *shape, int ndim, enum sn_dtype dt,
                struct sn_device dev, struct sn_aten_gen *gen, struct sn_tensor **out,
                struct sn_err *err, Fill fill)
{
    return run(name, out, err, [&] {
        at::TensorOptions o = opts(dt, dev);
        at::Generator &g = gen_of(gen);
        at::Tensor r = at::empty(shape_ref(shape, ndim), at::TensorOptions().dtype(
                                                             draw_type(o.dtype().toScalarType())));
        fill(r, g);
        return r.to(o);
    });
}

extern "C" int sn_aten_rand(const int64_t *shape, int ndim, enum sn_dtype dt,
                            struct sn_device dev, struct sn_aten_gen *gen,
                            struct sn_tensor **out, struct sn_err *err)
{
    return draw("rand", shape, ndim, dt, dev, gen, out, err,
                [](at::Tensor &r, at::Generator &g) { r.uniform_(0.0, 1.0, g); });
}

extern "C" int sn_aten_randn(const int64_t *shape, int ndim, enum sn_dtype dt,
                             struct sn_device dev, struct sn_aten_gen *gen,
                             struct sn_tensor **out, struct sn_err *err)
{
    return draw("randn", shape, ndim, dt, dev, gen, out, err,
                [](at::Tensor &r, at::Generator &g) { r.normal_(0.0, 1.0, g); });
}

extern "C" int sn_aten_uniform(const int64_t *shape, int ndim, double lo, double hi,
                               enum sn_dtype dt, struct sn_device dev, struct sn_aten_gen *gen,
                               struct sn_tensor **out, struct sn_err *err)
{
    return run("uniform", out, err, [&] {
        if (!(lo <= hi))
            throw ArgError("lo > hi");
        at::TensorOptions o = opts(dt, dev);
        at::Generator &g = gen_of(gen);
        at::Tensor r = at::empty(shape_ref(shape, ndim), at::TensorOptions().dtype(
                                                             draw_type(o.dtype().toScalarType())));
        // (the op locks the generator itself)
        r.uniform_(lo, hi, g);
        return r.to(o);
    });
}

// Fills t (any device) under no-grad with values drawn on the CPU by fill(r, g).
template <class F>
static void fill_random(at::Tensor &t, struct sn_aten_gen *gen, F &&fill)
{
    at::Generator &g = gen_of(gen);
    at::NoGradGuard ng;
    at::Tensor r = at::empty(t.sizes(), at::TensorOptions().dtype(draw_type(t.scalar_type())));
    // (the op locks the generator itself)
    fill(r, g);
    t.copy_(r);
}

extern "C" int sn_aten_uniform_(struct sn_tensor *t, double lo, double hi,
                                struct sn_aten_gen *gen, struct sn_err *err)
{
    return guard("uniform_", err, [&] {
        if (!(lo <= hi))
            throw ArgError("lo > hi");
        fill_random(ten_mut(t), gen, [&](at::Tensor &r, at::Generator &g) { r.uniform_(lo, hi, g); });
    });
}

extern "C" int sn_aten_normal_(struct sn_tensor *t, double mean, double std,
                               struct sn_aten_gen *gen, struct sn_err *err)
{
    return guard("normal_", err, [&] {
        if (!(std >= 0))
            throw ArgError("std < 0");
        fill_random(ten_mut(t), gen,
                    [&](at::Tensor &r, at::Generator &g) { r.normal_(mean, std, g); });
    });
}

extern "C" int sn_aten_kaiming_uniform_(struct sn_tensor *t, double a, struct sn_aten_gen *gen,
                                        struct sn_err *err)
{
    return guard("kaiming_uniform_", err, [&] {
        at::Tensor &x = ten_mut(t);
        if (x.dim() < 2)
            throw ArgError("needs a weight with at least 2 dims (out, in, ...), got " +
                           std::to_string(x.dim()));
        int64_t fan_in = x.numel() / x.size(0);
        if (fan_in <= 0)
            throw ArgError("fan_in is 0");
        // torch.nn.init: gain = sqrt(2 / (1 + a²)), bound = gain * sqrt(3 / fan_in).
        double bound = std::sqrt(6.0 / ((1.0 + a * a) * (double)fan_in));
        fill_random(x, gen, [&](at::Tensor &r, at::Generator &g) { r.uniform_(-bound, bound, g); });
    });
}

// ---- conversion and copies ---------------------------------------------------------------

extern "C" int sn_aten_to_dtype(const struct sn_tensor *t, enum sn_dtype dt,
                                struct sn_tensor **out, struct sn_err *err)
{
    return run("to_dtype", out, err, [&] { return ten(t).to(to_scalar_type(dt)); });
}

extern "C" int sn_aten_to_device(const struct sn_tensor *t, struct sn_device dev,
                                 struct sn_tensor **out, struct sn_err *err)
{
    return run("to_device", out, err, [&] { return ten(t).to(to_device(dev)); });
}

extern "C" int sn_aten_clone(const struct sn_tensor *t, struct sn_tensor **out,
                             struct sn_err *err)
{
    return run("clone", out, err, [&] { return ten(t).clone(); });
}

extern "C" int sn_aten_detach(const struct sn_tensor *t, struct sn_tensor **out,
                              struct sn_err *err)
{
    return run("detach", out, err, [&] { return ten(t).detach(); });
}

extern "C" int sn_aten_contiguous(const struct sn_tensor *t, struct sn_tensor **out,
                                  struct sn_err *err)
{
    return run("contiguous", out, err, [&] { return ten(t).contiguous(); });
}

// ---- views and shape ---------------------------------------------------------------------

extern "C" int sn_aten_reshape(const struct sn_tensor *t, const int64_t *shape, int ndim,
                               struct sn_tensor **out, struct sn_err *err)
{
    return run("reshape", out, err, [&] { return ten(t).reshape(shape_ref(shape, ndim)); });
}

extern "C" int sn_aten_view(const struct sn_tensor *t, const int64_t *shape, int ndim,
                            struct sn_tensor **out, struct sn_err *err)
{
    return run("view", out, err, [&] { return ten(t).view(shape_ref(shape, ndim)); });
}

extern "C" int sn_aten_transpose(const struct sn_tensor *t, int d0, int d1,
                                 struct sn_tensor **out, struct sn_err *err)
{
    return run("transpose", out, err, [&] { return ten(t).transpose(d0, d1); });
}

extern "C" int sn_aten_permute(const struct sn_tensor *t, const int *dims, int ndim,
                               struct sn_tensor **out, struct sn_err *err)
{
    return run("permute", out, err, [&] {
        if (ndim < 0 || (ndim > 0 && !dims))
            throw ArgError("bad dims");
        std::vector<int64_t> d(dims, dims + ndim);
        return ten(t).permute(d);
    });
}

extern "C" int sn_aten_narrow(const struct sn_tensor *t, int dim, int64_t start, int64_t len,
                              struct sn_tensor **out, struct sn_err *err)
{
    return run("narrow", out, err, [&] { return ten(t).narrow(dim, start, len); });
}

extern "C" int sn_aten_slice(const struct sn_tensor *t, int dim, int64_t start, int64_t end,
                             int64_t step, struct sn_tensor **out, struct sn_err *err)
{
    return run("slice", out, err, [&] { return ten(t).slice(dim, start, end, step); });
}

extern "C" int sn_aten_select(const struct sn_tensor *t, int dim, int64_t index,
                              struct sn_tensor **out, struct sn_err *err)
{
    return run("select", out, err, [&] { return ten(t).select(dim, index); });
}

extern "C" int sn_aten_unsqueeze(const struct sn_tensor *t, int dim, struct sn_tensor **out,
                                 struct sn_err *err)
{
    return run("unsqueeze", out, err, [&] { return ten(t).unsqueeze(dim); });
}

extern "C" int sn_aten_squeeze(const struct sn_tensor *t, int dim, struct sn_tensor **out,
                               struct sn_err *err)
{
    return run("squeeze", out, err, [&] { return ten(t).squeeze(dim); });
}

extern "C" int sn_aten_expand(const struct sn_tensor *t, const int64_t *shape, int ndim,
                              struct sn_tensor **out, struct sn_err *err)
{
    return run("expand", out, err, [&] { return ten(t).expand(shape_ref(shape, ndim)); });
}

extern "C" int sn_aten_flatten(const struct sn_tensor *t, int start_dim, int end_dim,
                               struct sn_tensor **out, struct sn_err *err)
{
    return run("flatten", out, err, [&] { return ten(t).flatten(start_dim, end_dim); });
}

static std::vector<at::Tensor> tensor_list(struct sn_tensor *const *ts, size_t n)
{
    if (n > 0 && !ts)
        throw ArgError("tensor array is NULL");
    std::vector<at::Tensor> v;
    v.reserve(n);
    for (size_t i = 0; i < n; i++)
        v.push_back(ten(ts[i]));
    return v;
}

extern "C" int sn_aten_cat(struct sn_tensor *const *ts, size_t n, int dim, struct sn_tensor **out,
                           struct sn_err *err)
{
    return run("cat", out, err, [&] { return at::cat(tensor_list(ts, n), dim); });
}

extern "C" int sn_aten_stack(struct sn_tensor *const *ts, size_t n, int dim,
                             struct sn_tensor **out, struct sn_err *err)
{
    return run("stack", out, err, [&] { return at::stack(tensor_list(ts, n), dim); });
}

// ---- elementwise -------------------------------------------------------------------------

#define SN_BINARY(name, expr)                                                                  \
    extern "C" int sn_aten_##name(const struct sn_tensor *a_, const struct sn_tensor *b_,      \
                                  struct sn_tensor **out, struct sn_err *err)                  \
    {                                                                                          \
        return run(#name, out, err, [&] {                                                      \
            const at::Tensor &a = ten(a_);                                                     \
            const at::Tensor &b = ten(b_);                                                     \
            return expr;                                                                       \
        });                                                                                    \
    }
#define SN_UNARY(name, expr)                                                                   \
    extern "C" int sn_aten_##name(const struct sn_tensor *t_, struct sn_tensor **out,          \
                                  struct sn_err *err)                                          \
    {                                                                                          \
        return run(#name, out, err, [&] {                                                      \
            const at::Tensor &x = ten(t_);                                                     \
            return expr;                                                                       \
        });                                                                                    \
    }
#define SN_SCALAR(name, expr)                                                                  \
    extern "C" int sn_aten_##name(const struct sn_tensor *t_, double s, struct sn_tensor **out,\
                                  struct sn_err *err)                                          \
    {                                                                                          \
        return run(#name, out, err, [&] {                                                      \
            const at::Tensor &x = ten(t_);                                                     \
            return expr;                                                                       \
        });                                                                                    \
    }

SN_BINARY(add, at::add(a, b))
SN_BINARY(sub, at::sub(a, b))
SN_BINARY(mul, at::mul(a, b))
SN_BINARY(div, at::div(a, b))
SN_BINARY(maximum, at::maximum(a, b))
SN_BINARY(gt, at::gt(a, b))
SN_BINARY(lt, at::lt(a, b))
SN_BINARY(eq, at::eq(a, b))
SN_BINARY(ne, at::ne(a, b))
SN_BINARY(logical_and, at::logical_and(a, b))
SN_BINARY(matmul, at::matmul(a, b))
SN_BINARY(bmm, at::bmm(a, b))

SN_SCALAR(add_scalar, at::add(x, s))
SN_SCALAR(mul_scalar, at::mul(x, s))
SN_SCALAR(pow_scalar, at::pow(x, s))
SN_SCALAR(gt_scalar, at::gt(x, s))
SN_SCALAR(eq_scalar, at::eq(x, s))

SN_UNARY(neg, at::neg(x))
SN_UNARY(abs, at::abs(x))
SN_UNARY(exp, at::exp(x))
SN_UNARY(log, at::log(x))
SN_UNARY(sqrt, at::sqrt(x))
SN_UNARY(rsqrt, at::rsqrt(x))
SN_UNARY(tanh, at::tanh(x))
SN_UNARY(sigmoid, at::sigmoid(x))
SN_UNARY(silu, at::silu(x))
SN_UNARY(logsigmoid, at::log_sigmoid(x))
SN_UNARY(relu, at::relu(x))
SN_UNARY(logical_not, at::logical_not(x))
SN_UNARY(sum_all, x.sum())
SN_UNARY(mean_all, x.mean())
SN_UNARY(max_all, x.max())
SN_UNARY(norm, x.norm())

extern "C" int sn_aten_clamp(const struct sn_tensor *t, double lo, double hi,
                             struct sn_tensor **out, struct sn_err *err)
{
    return run("clamp", out, err, [&] {
        if (std::isnan(lo) || std::isnan(hi))
            throw ArgError("NaN bound");
        c10::optional<at::Scalar> mn, mx;
        if (!std::isinf(lo) || lo > 0)
            mn = lo;
        if (!std::isinf(hi) || hi < 0)
            mx = hi;
        if (!mn && !mx)
            return ten(t).clone();
        return at::clamp(ten(t), mn, mx);
    });
}

extern "C" int sn_aten_where(const struct sn_tensor *cond, const struct sn_tensor *a,
                             const struct sn_tensor *b, struct sn_tensor **out,
                             struct sn_err *err)
{
    return run("where", out, err, [&] { return at::where(ten(cond), ten(a), ten(b)); });
}

extern "C" int sn_aten_masked_fill(const struct sn_tensor *t, const struct sn_tensor *mask,
                                   double value, struct sn_tensor **out, struct sn_err *err)
{
    return run("masked_fill", out, err, [&] { return ten(t).masked_fill(ten(mask), value); });
}

// ---- reductions --------------------------------------------------------------------------

extern "C" int sn_aten_sum(const struct sn_tensor *t, int dim, bool keepdim,
                           struct sn_tensor **out, struct sn_err *err)
{
    return run("sum", out, err, [&] { return ten(t).sum(dim, keepdim); });
}

extern "C" int sn_aten_mean(const struct sn_tensor *t, int dim, bool keepdim,
                            struct sn_tensor **out, struct sn_err *err)
{
    return run("mean", out, err, [&] { return ten(t).mean(dim, keepdim); });
}

extern "C" int sn_aten_max(const struct sn_tensor *t, int dim, bool keepdim,
                           struct sn_tensor **values, struct sn_tensor **indices,
                           struct sn_err *err)
{
    if (indices)
        *indices = nullptr;
    at::Tensor idx;
    int rc = run("max", values, err, [&] {
        auto r = ten(t).max(dim, keepdim);
        idx = std::get<1>(r);
        return std::get<0>(r);
    });
    if (rc == SN_OK && indices) {
        rc = run("max", indices, err, [&] { return idx; });
        if (rc) {
            sn_tensor_free(*values);
            *values = nullptr;
        }
    }
    return rc;
}

extern "C" int sn_aten_argmax(const struct sn_tensor *t, int dim, bool keepdim,
                              struct sn_tensor **out, struct sn_err *err)
{
    return run("argmax", out, err, [&] { return ten(t).argmax(dim, keepdim); });
}

extern "C" int sn_aten_all_finite(const struct sn_tensor *t, bool *ok, struct sn_err *err)
{
    return guard("all_finite", err, [&] {
        if (!ok)
            throw ArgError("ok is NULL");
        const at::Tensor &x = ten(t);
        *ok = x.numel() == 0 || at::isfinite(x).all().item<bool>();
    });
}

extern "C" int sn_aten_max_abs_diff(const struct sn_tensor *a, const struct sn_tensor *b,
                                    double *out, struct sn_err *err)
{
    return guard("max_abs_diff", err, [&] {
        if (!out)
            throw ArgError("out is NULL");
        at::NoGradGuard ng;
        at::Tensor d = (ten(a).to(at::kDouble) - ten(b).to(at::kDouble)).abs();
        *out = d.numel() == 0 ? 0.0 : d.max().item<double>();
    });
}

// ---- linear algebra and indexing ---------------------------------------------------------

at::ScalarType &sn_aten::autocast_dtype()
{
    static thread_local at::ScalarType dt = at::kFloat;
    return dt;
}

extern "C" enum sn_dtype sn_aten_autocast_enter(enum sn_dtype dt)
{
    enum sn_dtype prev = sn_aten_autocast_get();
    autocast_dtype() = dt == SN_DTYPE_BF16 ? at::kBFloat16 : dt == SN_DTYPE_F16 ? at::kHalf
                                                                               : at::kFloat;
    return prev;
}

extern "C" void sn_aten_autocast_exit(enum sn_dtype previous)
{
    (void)sn_aten_autocast_enter(previous);
}

extern "C" enum sn_dtype sn_aten_autocast_get(void)
{
    at::ScalarType st = autocast_dtype();
    return st == at::kBFloat16 ? SN_DTYPE_BF16 : st == at::kHalf ? SN_DTYPE_F16 : SN_DTYPE_F32;
}

// The dtype a GEMM of these f32 operands runs in under autocast (kFloat: as they are).
static at::ScalarType gemm_dtype(const at::Tensor &x, const at::Tensor &w)
{
    at::ScalarType lp = autocast_dtype();
    if (lp == at::kFloat || x.scalar_type() != at::kFloat || w.scalar_type() != at::kFloat)
        return at::kFloat;
    return lp;
}

extern "C" int sn_aten_linear(const struct sn_tensor *x, const struct sn_tensor *w,
                              const struct sn_tensor *bias, struct sn_tensor **out,
                              struct sn_err *err)
{
    return run("linear", out, err, [&] {
        c10::optional<at::Tensor> b;
        if (bias)
            b = bias->t;
        const at::Tensor &X = ten(x), &W = ten(w);
        at::ScalarType lp = gemm_dtype(X, W);
        if (lp == at::kFloat)
            return at::linear(X, W, b);
        if (b)
            b = b->to(lp);
        return at::linear(X.to(lp), W.to(lp), b).to(at::kFloat);
    });
}

extern "C" int sn_aten_add_linear(const struct sn_tensor *y, const struct sn_tensor *x,
                                  const struct sn_tensor *w, double alpha,
                                  struct sn_tensor **out, struct sn_err *err)
{
    return run("add_linear", out, err, [&] {
        const at::Tensor &Y = ten(y), &X = ten(x), &W = ten(w);
        if (W.dim() != 2 || X.dim() < 1 || Y.dim() != X.dim() || X.size(-1) != W.size(1) ||
            Y.size(-1) != W.size(0) || !Y.sizes().slice(0, Y.dim() - 1).equals(
                                           X.sizes().slice(0, X.dim() - 1)))
            throw ArgError("shapes disagree: y " + std::string(c10::str(Y.sizes())) + ", x " +
                           c10::str(X.sizes()) + ", w " + c10::str(W.sizes()) +
                           " (want y (..., out), x (..., in), w (out, in))");
        at::ScalarType lp = gemm_dtype(X, W);
        if (lp != at::kFloat && Y.scalar_type() == at::kFloat) {
            at::Tensor p = at::mm(X.reshape({-1, X.size(-1)}).to(lp), W.t().to(lp));
            return Y.add(p.to(at::kFloat).view(Y.sizes()), alpha);
        }
        at::Tensor r = at::addmm(Y.reshape({-1, Y.size(-1)}), X.reshape({-1, X.size(-1)}),
                                 W.t(), 1.0, alpha);
        return r.view(Y.sizes());
    });
}

extern "C" int sn_aten_embedding(const struct sn_tensor *table, const struct sn_tensor *ids,
                                 struct sn_tensor **out, struct sn_err *err)
{
    return run("embedding", out, err, [&] {
        const at::Tensor &w = ten(table);
        if (w.dim() != 2)
            throw ArgError("table must be 2-D (V, D), got " + std::to_string(w.dim()) + " dims");
        return at::embedding(w, ten(ids));
    });
}

extern "C" int sn_aten_index_select(const struct sn_tensor *t, int dim,
                                    const struct sn_tensor *index, struct sn_tensor **out,
                                    struct sn_err *err)
{
    return run("index_select", out, err, [&] { return at::index_select(ten(t), dim, ten(index)); });
}

extern "C" int sn_aten_gather(const struct sn_tensor *t, int dim, const struct sn_tensor *index,
                              struct sn_tensor **out, struct sn_err *err)
{
    return run("gather", out, err, [&] { return at::gather(ten(t), dim, ten(index)); });
}

// ---- in place ----------------------------------------------------------------------------

extern "C" int sn_aten_copy_(struct sn_tensor *dst, const struct sn_tensor *src,
                             struct sn_err *err)
{
    return guard("copy_", err, [&] { ten_mut(dst).copy_(ten(src)); });
}

extern "C" int sn_aten_fill_(struct sn_tensor *t, double value, struct sn_err *err)
{
    return guard("fill_", err, [&] { ten_mut(t).fill_(value); });
}

extern "C" int sn_aten_zero_(struct sn_tensor *t, struct sn_err *err)
{
    return guard("zero_", err, [&] { ten_mut(t).zero_(); });
}

extern "C" int sn_aten_add_(struct sn_tensor *t, const struct sn_tensor *other, double alpha,
                            struct sn_err *err)
{
    return guard("add_", err, [&] { ten_mut(t).add_(ten(other), alpha); });
}

extern "C" int sn_aten_add_scalar_(struct sn_tensor *t, double s, struct sn_err *err)
{
    return guard("add_scalar_", err, [&] { ten_mut(t).add_(s); });
}

extern "C" int sn_aten_mul_(struct sn_tensor *t, const struct sn_tensor *other,
                            struct sn_err *err)
{
    return guard("mul_", err, [&] { ten_mut(t).mul_(ten(other)); });
}

extern "C" int sn_aten_mul_scalar_(struct sn_tensor *t, double s, struct sn_err *err)
{
    return guard("mul_scalar_", err, [&] { ten_mut(t).mul_(s); });
}

extern "C" int sn_aten_addcmul_(struct sn_tensor *t, const struct sn_tensor *a,
                                const struct sn_tensor *b, double value, struct sn_err *err)
{
    return guard("addcmul_", err, [&] { ten_mut(t).addcmul_(ten(a), ten(b), value); });
}

extern "C" int sn_aten_addcdiv_(struct sn_tensor *t, const struct sn_tensor *a,
                                const struct sn_tensor *b, double value, struct sn_err *err)
{
    return guard("addcdiv_", err, [&] { ten_mut(t).addcdiv_(ten(a), ten(b), value); });
}

extern "C" int sn_aten_lerp_(struct sn_tensor *t, const struct sn_tensor *end, double w,
                             struct sn_err *err)
{
    return guard("lerp_", err, [&] { ten_mut(t).lerp_(ten(end), w); });
}

extern "C" int sn_aten_sqrt_(struct sn_tensor *t, struct sn_err *err)
{
    return guard("sqrt_", err, [&] { ten_mut(t).sqrt_(); });
}

// ---- host I/O ----------------------------------------------------------------------------

extern "C" int sn_aten_to_host(const struct sn_tensor *t, void *dst, enum sn_dtype host_dt,
                               size_t n, struct sn_err *err)
{
    return guard("to_host", err, [&] {
        const at::Tensor &x = ten(t);
        if ((size_t)x.numel() != n)
            throw ArgError("destination holds " + std::to_string(n) + " elements, tensor has " +
                           std::to_string(x.numel()));
        if (n == 0)
            return;
        if (!dst)
            throw ArgError("dst is NULL");
        at::NoGradGuard ng;
        at::Tensor h = x.detach().to(at::kCPU, to_scalar_type(host_dt)).contiguous();
        memcpy(dst, h.data_ptr(), n * h.element_size());
    });
}

extern "C" int sn_aten_item_f64(const struct sn_tensor *t, double *out, struct sn_err *err)
{
    return guard("item_f64", err, [&] {
        if (!out)
            throw ArgError("out is NULL");
        *out = ten(t).item<double>();
    });
}

extern "C" int sn_aten_item_i64(const struct sn_tensor *t, int64_t *out, struct sn_err *err)
{
    return guard("item_i64", err, [&] {
        if (!out)
            throw ArgError("out is NULL");
        *out = ten(t).item<int64_t>();
    });
}

static at::Tensor host_bytes(const at::Tensor &x)
{
    at::NoGradGuard ng;
    return x.detach().to(at::kCPU).contiguous();
}

extern "C" int sn_aten_write_raw(const struct sn_tensor *t, FILE *f, struct sn_err *err)
{
    return guard("write_raw", err, [&] {
        if (!f)
            throw ArgError("FILE is NULL");
        at::Tensor h = host_bytes(ten(t));
        size_t nb = (size_t)h.numel() * h.element_size();
        if (nb && fwrite(h.data_ptr(), 1, nb, f) != nb)
            throw CodedError(SN_E_IO, std::string("write failed: ") + strerror(errno));
    });
}

extern "C" int sn_aten_save_raw(const struct sn_tensor *t, const char *path, struct sn_err *err)
{
    if (!path)
        return sn_err_set(err, SN_E_ARG, "save_raw: path is NULL");
    struct sn_atomic_file *af = nullptr;
    int rc = sn_atomic_open(path, &af, err);
    if (rc)
        return rc;
    rc = sn_aten_write_raw(t, sn_atomic_stream(af), err);
    if (rc) {
        sn_atomic_abort(af);
        return sn_err_wrap(err, "%s", path);
    }
    return sn_atomic_commit(af, err);
}

extern "C" int sn_aten_load_raw(const char *path, const int64_t *shape, int ndim,
                                enum sn_dtype dt, struct sn_device dev, struct sn_tensor **out,
                                struct sn_err *err)
{
    FILE *f = nullptr;
    int rc = run("load_raw", out, err, [&] {
        if (!path)
            throw ArgError("path is NULL");
        at::Tensor h = at::empty(shape_ref(shape, ndim), at::TensorOptions().dtype(
                                                              to_scalar_type(dt)));
        size_t nb = (size_t)h.numel() * h.element_size();
        f = fopen(path, "rb");
        if (!f)
            throw CodedError(SN_E_IO, std::string(path) + ": " + strerror(errno));
        if (fseeko(f, 0, SEEK_END) != 0)
            throw CodedError(SN_E_IO, std::string(path) + ": cannot seek");
        off_t size = ftello(f);
        if (size < 0 || (uint64_t)size != (uint64_t)nb)
            throw CodedError(SN_E_FORMAT, std::string(path) + ": holds " +
                                              std::to_string((long long)size) +
                                              " bytes, expected " + std::to_string(nb) + " (" +
                                              std::to_string(h.numel()) + " x " +
                                              sn_dtype_name(dt) + ")");
        rewind(f);
        if (nb && fread(h.data_ptr(), 1, nb, f) != nb)
            throw CodedError(SN_E_IO, std::string(path) + ": short read");
        return h.to(to_device(dev));
    });
    if (f)
        fclose(f);
    return rc;
}
