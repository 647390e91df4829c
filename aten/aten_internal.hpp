// aten/aten_internal.hpp: what the aten/ translation units share (C++ only, never included by
// C code). Handles, dtype/device mapping, and the exception barrier every extern "C" entry
// point goes through (docs/design.md §7: no C++ exception crosses the C API).
#ifndef SN_ATEN_INTERNAL_HPP
#define SN_ATEN_INTERNAL_HPP

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h> // at::NoGradGuard: ATen.h no longer brings it in libtorch 2.x
#include <new>
#include <stdexcept>
#include <string>

#include "aten/aten.h"

struct sn_tensor {
    at::Tensor t;
};
struct sn_aten_gen {
    at::Generator g; // always a CPU generator: random numbers are drawn on the CPU and copied
};

namespace sn_aten {

// Argument errors found before libtorch is called: mapped to SN_E_ARG.
struct ArgError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// An error that already carries a status code (e.g. from a C callback): code kept as is.
struct CodedError : std::runtime_error {
    int code;
    CodedError(int c, const std::string &m) : std::runtime_error(m), code(c) {}
};

inline const at::Tensor &ten(const sn_tensor *h)
{
    if (!h)
        throw ArgError("tensor argument is NULL");
    return h->t;
}
inline at::Tensor &ten_mut(sn_tensor *h)
{
    if (!h)
        throw ArgError("tensor argument is NULL");
    return h->t;
}
inline sn_tensor *wrap(at::Tensor t)
{
    return new sn_tensor{std::move(t)};
}

at::ScalarType to_scalar_type(int dt); // throws ArgError for an unknown value
int from_scalar_type(at::ScalarType st); // SN_DTYPE_COUNT for others
at::Device to_device(struct sn_device d);
at::IntArrayRef shape_ref(const int64_t *shape, int ndim);

// Mixed-precision GEMMs of the calling thread (sn_aten_autocast_enter): kFloat = off.
at::ScalarType &autocast_dtype();

// One line out of a libtorch message: newlines become "; ", the C++ stack trace is dropped.
std::string one_line(const char *what);
// The catch blocks shared by every entry point; returns the status set in err.
int fail_current(const char *op, struct sn_err *err);

// Runs f() (returning an at::Tensor) and stores a new handle in *out.
template <class F>
int run(const char *op, sn_tensor **out, struct sn_err *err, F &&f)
{
    if (!out)
        return sn_err_set(err, SN_E_ARG, "%s: out is NULL", op);
    *out = nullptr;
    try {
        at::Tensor r = f();
        *out = wrap(std::move(r));
        return SN_OK;
    } catch (...) {
        return fail_current(op, err);
    }
}
// Runs f() (void) behind the exception barrier.
template <class F>
int guard(const char *op, struct sn_err *err, F &&f)
{
    try {
        f();
        return SN_OK;
    } catch (...) {
        return fail_current(op, err);
    }
}

} // namespace sn_aten
#endif
