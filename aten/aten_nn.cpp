// aten/aten_nn.cpp: the neural-network pieces (softmax, RMSNorm, RoPE, attention, dropout),
// autograd control and gradient checkpointing of the C API in aten/aten.h. Everything is
// composed of plain differentiable ATen ops, so libtorch's autograd derives the backward
// passes (libtorch 1.13 has no fused scaled_dot_product_attention).
#include "aten/aten_internal.hpp"
#include "aten/aten_attention.hpp"
#include "aten/aten_fused.hpp"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace sn_aten;

static at::Generator &gen_of(struct sn_aten_gen *g)
{
    if (!g)
        throw ArgError("generator is NULL");
    return g->g;
}

// ---- softmax, RMSNorm, RoPE --------------------------------------------------------------

extern "C" int sn_aten_softmax(const struct sn_tensor *t, int dim, struct sn_tensor **out,
                               struct sn_err *err)
{
    return run("softmax", out, err, [&] { return at::softmax(ten(t), dim); });
}

extern "C" int sn_aten_log_softmax(const struct sn_tensor *t, int dim, struct sn_tensor **out,
                                   struct sn_err *err)
{
    return run("log_softmax", out, err, [&] { return at::log_softmax(ten(t), dim); });
}

// HF Qwen2RMSNorm: variance in f32, normalized, cast back, then scaled by the weight.
extern "C" int sn_aten_rms_norm(const struct sn_tensor *x, const struct sn_tensor *w, double eps,
                                struct sn_tensor **out, struct sn_err *err)
{
    return run("rms_norm", out, err, [&] {
        const at::Tensor &xt = ten(x);
        const at::Tensor &wt = ten(w);
        if (xt.dim() < 1 || wt.dim() != 1 || wt.size(0) != xt.size(-1))
            throw ArgError("x (..., D) and w (D) disagree: x has " + std::to_string(xt.dim()) +
                           " dims, last " + std::to_string(xt.dim() ? xt.size(-1) : 0) +
                           ", w has " + std::to_string(wt.dim()) + " dims");
        at::Tensor f = fused::rms_norm(xt, wt, eps);
        if (f.defined())
            return f;
        at::ScalarType in = xt.scalar_type();
        at::Tensor h = in == at::kDouble ? xt : xt.to(at::kFloat);
        at::Tensor var = h.pow(2).mean(-1, /*keepdim=*/true);
        h = h * at::rsqrt(var + eps);
        return wt * h.to(in);
    });
}

static at::Tensor rotate_half(const at::Tensor &x)
{
    int64_t D = x.size(-1);
    if (D % 2)
        throw ArgError("last dim " + std::to_string(D) + " is odd");
    at::Tensor x1 = x.narrow(-1, 0, D / 2);
    at::Tensor x2 = x.narrow(-1, D / 2, D / 2);
    return at::cat({-x2, x1}, -1);
}

extern "C" int sn_aten_rotate_half(const struct sn_tensor *x, struct sn_tensor **out,
                                   struct sn_err *err)
{
    return run("rotate_half", out, err, [&] { return rotate_half(ten(x)); });
}

extern "C" int sn_aten_rope_tables(const struct sn_tensor *pos, int64_t head_dim, double theta,
                                   enum sn_dtype dt, struct sn_tensor **cos,
                                   struct sn_tensor **sin, struct sn_err *err)
{
    if (!cos || !sin)
        return sn_err_set(err, SN_E_ARG, "rope_tables: cos or sin is NULL");
    *sin = nullptr;
    at::Tensor s;
    int rc = run("rope_tables", cos, err, [&] {
        const at::Tensor &p = ten(pos);
        if (head_dim <= 0 || head_dim % 2)
            throw ArgError("head_dim " + std::to_string(head_dim) + " must be even and > 0");
        if (!(theta > 0))
            throw ArgError("theta must be > 0");
        at::ScalarType out_t = to_scalar_type(dt);
        at::ScalarType ct = out_t == at::kDouble ? at::kDouble : at::kFloat;
        at::NoGradGuard ng; // tables are constants
        at::Tensor j = at::arange(0, head_dim, 2, at::TensorOptions().dtype(at::kLong)
                                                      .device(p.device())).to(ct);
        at::Tensor inv_freq = 1.0 / at::pow(theta, j / (double)head_dim); // (D/2)
        at::Tensor ang = p.to(ct).unsqueeze(-1) * inv_freq;               // S + (D/2)
        at::Tensor emb = at::cat({ang, ang}, -1);                         // S + (D)
        s = emb.sin().to(out_t);
        return emb.cos().to(out_t);
    });
    if (rc == SN_OK)
        rc = run("rope_tables", sin, err, [&] { return s; });
    if (rc) {
        sn_tensor_free(*cos);
        *cos = nullptr;
    }
    return rc;
}

extern "C" int sn_aten_apply_rotary(const struct sn_tensor *x, const struct sn_tensor *cos,
                                    const struct sn_tensor *sin, struct sn_tensor **out,
                                    struct sn_err *err)
{
    return run("apply_rotary", out, err, [&] {
        const at::Tensor &xt = ten(x);
        at::Tensor c = ten(cos), s = ten(sin);
        if (xt.dim() != 4)
            throw ArgError("x must be (B,H,T,D), got " + std::to_string(xt.dim()) + " dims");
        if (c.dim() == 3) { // (B,T,D) -> (B,1,T,D): the same angle for every head
            c = c.unsqueeze(1);
            s = s.unsqueeze(1);
        }
        at::Tensor f = fused::apply_rotary(xt, ten(cos), ten(sin));
        if (f.defined())
            return f;
        return xt * c + rotate_half(xt) * s;
    });
}

extern "C" int sn_aten_swiglu(const struct sn_tensor *g, const struct sn_tensor *u,
                              struct sn_tensor **out, struct sn_err *err)
{
    return run("swiglu", out, err, [&] {
        const at::Tensor &gt = ten(g), &ut = ten(u);
        if (!gt.sizes().equals(ut.sizes()))
            throw ArgError("g " + std::string(c10::str(gt.sizes())) + " and u " +
                           c10::str(ut.sizes()) + " differ in shape");
        at::Tensor f = fused::swiglu(gt, ut);
        if (f.defined())
            return f;
        return at::silu(gt) * ut;
    });
}

extern "C" int sn_aten_swiglu_cat(const struct sn_tensor *x, struct sn_tensor **out,
                                  struct sn_err *err)
{
    return run("swiglu_cat", out, err, [&] {
        const at::Tensor &xt = ten(x);
        if (xt.dim() < 1 || xt.size(-1) % 2 != 0)
            throw ArgError("x " + std::string(c10::str(xt.sizes())) +
                           ": want (..., 2I), the gate and up halves side by side");
        at::Tensor f = fused::swiglu_cat(xt);
        if (f.defined())
            return f;
        int64_t I = xt.size(-1) / 2;
        return at::silu(xt.narrow(-1, 0, I)) * xt.narrow(-1, I, I);
    });
}

static at::Tensor repeat_kv(const at::Tensor &x, int64_t n_rep)
{
    if (x.dim() != 4)
        throw ArgError("expected (B,H,T,D), got " + std::to_string(x.dim()) + " dims");
    if (n_rep < 1)
        throw ArgError("n_rep must be >= 1");
    if (n_rep == 1)
        return x;
    int64_t B = x.size(0), H = x.size(1), T = x.size(2), D = x.size(3);
    return x.unsqueeze(2).expand({B, H, n_rep, T, D}).reshape({B, H * n_rep, T, D});
}

extern "C" int sn_aten_repeat_kv(const struct sn_tensor *x, int64_t n_rep,
                                 struct sn_tensor **out, struct sn_err *err)
{
    return run("repeat_kv", out, err, [&] { return repeat_kv(ten(x), n_rep); });
}

// ---- dropout and attention ---------------------------------------------------------------

static at::Tensor dropout(const at::Tensor &x, double p, bool training, struct sn_aten_gen *gen)
{
    if (!(p >= 0.0 && p <= 1.0))
        throw ArgError("p must be in [0, 1]");
    if (!training || p == 0.0)
        return x;
    if (p == 1.0)
        return x * 0.0;
    at::Generator &g = gen_of(gen);
    at::Tensor keep = at::empty(x.sizes(), at::TensorOptions().dtype(at::kFloat));
    // (the op locks the generator itself)
    keep.bernoulli_(1.0 - p, g);
    keep = keep.to(x.device(), x.scalar_type());
    return x * keep * (1.0 / (1.0 - p));
}

extern "C" int sn_aten_dropout(const struct sn_tensor *x, double p, bool training,
                               struct sn_aten_gen *gen, struct sn_tensor **out,
                               struct sn_err *err)
{
    return run("dropout", out, err, [&] { return dropout(ten(x), p, training, gen); });
}

static double lowest(at::ScalarType st)
{
    switch (st) {
    case at::kDouble: return std::numeric_limits<double>::lowest();
    case at::kFloat: return std::numeric_limits<float>::lowest();
    case at::kBFloat16: return (double)std::numeric_limits<c10::BFloat16>::lowest();
    case at::kHalf: return (double)std::numeric_limits<c10::Half>::lowest();
    default: throw ArgError("attention needs a floating dtype");
    }
}

extern "C" int sn_aten_attention(const struct sn_tensor *q, const struct sn_tensor *k,
                                 const struct sn_tensor *v, const struct sn_tensor *key_keep,
                                 bool causal, double scale, double dropout_p,
                                 struct sn_aten_gen *gen, struct sn_tensor **out,
                                 struct sn_err *err)
{
    return run("attention", out, err, [&] {
        const at::Tensor &Q = ten(q), &K = ten(k), &V = ten(v);
        if (Q.dim() != 4 || K.dim() != 4 || V.dim() != 4)
            throw ArgError("q, k, v must be 4-D (B,H,T,D)");
        int64_t B = Q.size(0), Hq = Q.size(1), Tq = Q.size(2), D = Q.size(3);
        int64_t Hkv = K.size(1), Tk = K.size(2);
        if (K.size(0) != B || V.size(0) != B || V.size(1) != Hkv || V.size(2) != Tk ||
            K.size(3) != D)
            throw ArgError("shapes disagree: q " + std::string(c10::str(Q.sizes())) + ", k " +
                           c10::str(K.sizes()) + ", v " + c10::str(V.sizes()));
        if (Hkv <= 0 || Hq % Hkv)
            throw ArgError("query heads " + std::to_string(Hq) +
                           " not a multiple of kv heads " + std::to_string(Hkv));
        if (scale == 0.0)
            scale = 1.0 / std::sqrt((double)D);
        const at::Tensor *keep = nullptr;
        if (key_keep) {
            keep = &key_keep->t;
            if (keep->dim() != 2 || keep->size(0) != B || keep->size(1) != Tk)
                throw ArgError("key_keep must be (B,Tk) = (" + std::to_string(B) + "," +
                               std::to_string(Tk) + "), got " + c10::str(keep->sizes()));
        }
        if (dropout_p == 0.0) {
            at::Tensor f = fused_attention(Q, K, V, keep, causal, scale);
            if (f.defined())
                return f;
        }
        at::Tensor Kr = repeat_kv(K, Hq / Hkv), Vr = repeat_kv(V, Hq / Hkv);
        at::Tensor scores = at::matmul(Q, Kr.transpose(-2, -1)) * scale; // (B,Hq,Tq,Tk)
        at::Tensor allowed;                                               // bool, broadcast
        if (causal) {
            at::TensorOptions lo = at::TensorOptions().dtype(at::kLong).device(Q.device());
            at::Tensor i = at::arange(Tq, lo).unsqueeze(1);
            at::Tensor j = at::arange(Tk, lo).unsqueeze(0);
            allowed = j.le(i + (Tk - Tq)); // (Tq,Tk)
        }
        if (key_keep) {
            const at::Tensor &kk = key_keep->t;
            if (kk.dim() != 2 || kk.size(0) != B || kk.size(1) != Tk)
                throw ArgError("key_keep must be (B,Tk) = (" + std::to_string(B) + "," +
                               std::to_string(Tk) + "), got " + c10::str(kk.sizes()));
            at::Tensor kp = kk.ne(0).view({B, 1, 1, Tk});
            allowed = allowed.defined() ? at::logical_and(allowed, kp) : kp;
        }
        if (allowed.defined())
            scores = scores.masked_fill(allowed.logical_not(), lowest(scores.scalar_type()));
        // Softmax in f32 for half types (as HF eager attention), back to the input dtype.
        at::ScalarType st = Q.scalar_type();
        at::Tensor probs = (st == at::kDouble || st == at::kFloat)
                               ? at::softmax(scores, -1)
                               : at::softmax(scores.to(at::kFloat), -1).to(st);
        probs = dropout(probs, dropout_p, dropout_p > 0.0, gen);
        return at::matmul(probs, Vr); // (B,Hq,Tq,D)
    });
}

extern "C" int sn_aten_attention_spans(const struct sn_tensor *q, const struct sn_tensor *k,
                                       const struct sn_tensor *v, const struct sn_tensor *spans,
                                       double scale, struct sn_tensor **out, struct sn_err *err)
{
    return run("attention_spans", out, err, [&] {
        const at::Tensor &Q = ten(q), &K = ten(k), &V = ten(v), &S = ten(spans);
        if (Q.dim() != 4 || K.dim() != 4 || V.dim() != 4)
            throw ArgError("q, k, v must be 4-D (B,H,T,D)");
        int64_t B = Q.size(0), Hq = Q.size(1), T = Q.size(2), D = Q.size(3), Hkv = K.size(1);
        if (K.size(0) != B || V.size(0) != B || V.size(1) != Hkv || K.size(2) != T ||
            V.size(2) != T || K.size(3) != D)
            throw ArgError("shapes disagree (self-attention needs Tq == Tk): q " +
                           std::string(c10::str(Q.sizes())) + ", k " + c10::str(K.sizes()) +
                           ", v " + c10::str(V.sizes()));
        if (Hkv <= 0 || Hq % Hkv)
            throw ArgError("query heads " + std::to_string(Hq) +
                           " not a multiple of kv heads " + std::to_string(Hkv));
        if (S.dim() != 3 || S.size(0) != B || S.size(1) != T || S.size(2) != 3 ||
            (S.scalar_type() != at::kLong && S.scalar_type() != at::kInt))
            throw ArgError("spans must be (B,T,3) = (" + std::to_string(B) + "," +
                           std::to_string(T) + ",3) I32/I64, got " + c10::str(S.sizes()));
        // checked on the host: the kernel trusts these bounds
        at::Tensor sp = S.to(at::kCPU).to(at::kLong).contiguous();
        const int64_t *p = sp.data_ptr<int64_t>();
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t < T; t++) {
                const int64_t *e = p + (b * T + t) * 3;
                bool ok = e[0] >= 0 && e[0] <= t &&
                          (e[1] == e[2] || (e[1] >= 0 && e[1] < e[2] && e[2] <= e[0]));
                if (!ok)
                    throw ArgError("spans[" + std::to_string(b) + "," + std::to_string(t) +
                                   "] = (" + std::to_string(e[0]) + ", " +
                                   std::to_string(e[1]) + ", " + std::to_string(e[2]) +
                                   "): expected 0 <= start <= t and an empty prefix or "
                                   "0 <= lo < hi <= start");
            }
        if (scale == 0.0)
            scale = 1.0 / std::sqrt((double)D);
        at::Tensor f = fused_attention(Q, K, V, nullptr, true, scale, &sp);
        if (f.defined())
            return f;
        // composed: allowed[b,i,j] = (s_i <= j <= i) or (lo_i <= j < hi_i)
        at::Tensor sd = sp.to(Q.device());
        at::TensorOptions lo = at::TensorOptions().dtype(at::kLong).device(Q.device());
        at::Tensor i = at::arange(T, lo).view({1, T, 1}), j = at::arange(T, lo).view({1, 1, T});
        at::Tensor s0 = sd.select(2, 0).unsqueeze(2), p0 = sd.select(2, 1).unsqueeze(2),
                   p1 = sd.select(2, 2).unsqueeze(2);
        at::Tensor allowed = at::logical_or(at::logical_and(j.ge(s0), j.le(i)),
                                            at::logical_and(j.ge(p0), j.lt(p1)));
        at::Tensor Kr = repeat_kv(K, Hq / Hkv), Vr = repeat_kv(V, Hq / Hkv);
        at::Tensor scores = at::matmul(Q, Kr.transpose(-2, -1)) * scale; // (B,Hq,T,T)
        scores = scores.masked_fill(allowed.unsqueeze(1).logical_not(),
                                    lowest(scores.scalar_type()));
        at::ScalarType st = Q.scalar_type();
        at::Tensor probs = (st == at::kDouble || st == at::kFloat)
                               ? at::softmax(scores, -1)
                               : at::softmax(scores.to(at::kFloat), -1).to(st);
        return at::matmul(probs, Vr);
    });
}

// ---- autograd ----------------------------------------------------------------------------

extern "C" int sn_aten_set_requires_grad(struct sn_tensor *t, bool on, struct sn_err *err)
{
    return guard("set_requires_grad", err, [&] { ten_mut(t).set_requires_grad(on); });
}

extern "C" bool sn_aten_requires_grad(const struct sn_tensor *t)
{
    return t && t->t.defined() && t->t.requires_grad();
}

extern "C" bool sn_aten_is_leaf(const struct sn_tensor *t)
{
    return t && t->t.defined() && t->t.is_leaf();
}

extern "C" int sn_aten_backward(const struct sn_tensor *root, const struct sn_tensor *grad,
                                bool retain_graph, struct sn_err *err)
{
    return guard("backward", err, [&] {
        at::Tensor g;
        if (grad)
            g = grad->t;
        ten(root).backward(g, retain_graph);
    });
}

extern "C" int sn_aten_grad(const struct sn_tensor *t, struct sn_tensor **out,
                            struct sn_err *err)
{
    if (!out)
        return sn_err_set(err, SN_E_ARG, "grad: out is NULL");
    *out = nullptr;
    try {
        const at::Tensor &g = ten(t).grad();
        if (g.defined())
            *out = wrap(g);
        return SN_OK;
    } catch (...) {
        return fail_current("grad", err);
    }
}

extern "C" void sn_aten_zero_grad(struct sn_tensor *t)
{
    if (t && t->t.defined())
        t->t.mutable_grad().reset();
}

extern "C" int sn_aten_set_grad(struct sn_tensor *t, const struct sn_tensor *g,
                                struct sn_err *err)
{
    return guard("set_grad", err, [&] {
        at::Tensor &x = ten_mut(t);
        if (!g) {
            x.mutable_grad().reset();
            return;
        }
        const at::Tensor &gt = g->t;
        if (!gt.sizes().equals(x.sizes()) || gt.scalar_type() != x.scalar_type() ||
            gt.device() != x.device())
            throw ArgError("grad " + std::string(c10::str(gt.sizes())) +
                           " does not match tensor " + c10::str(x.sizes()) +
                           " in shape, dtype or device");
        x.mutable_grad() = gt;
    });
}

extern "C" int sn_aten_retain_grad(struct sn_tensor *t, struct sn_err *err)
{
    return guard("retain_grad", err, [&] { ten_mut(t).retain_grad(); });
}

extern "C" bool sn_aten_no_grad_enter(void)
{
    bool prev = at::GradMode::is_enabled();
    at::GradMode::set_enabled(false);
    return prev;
}

extern "C" void sn_aten_no_grad_exit(bool previous)
{
    at::GradMode::set_enabled(previous);
}

extern "C" bool sn_aten_grad_enabled(void)
{
    return at::GradMode::is_enabled();
}

extern "C" int sn_aten_clip_grad_norm(struct sn_tensor *const *params, size_t n, double max_norm,
                                      double *total_norm, struct sn_err *err)
{
    return guard("clip_grad_norm", err, [&] {
        if (n > 0 && !params)
            throw ArgError("params is NULL");
        at::NoGradGuard ng;
        std::vector<at::Tensor> grads, norms;
        for (size_t i = 0; i < n; i++) {
            const at::Tensor &g = ten(params[i]).grad();
            if (g.defined()) {
                grads.push_back(g);
                norms.push_back(g.norm().to(at::kDouble));
            }
        }
        double total = 0.0;
        if (!norms.empty())
            total = at::stack(norms).norm().item<double>();
        if (total_norm)
            *total_norm = total;
        if (max_norm > 0) {
            double coef = max_norm / (total + 1e-6);
            if (coef < 1.0)
                for (at::Tensor &g : grads)
                    g.mul_(coef);
        }
    });
}

// ---- gradient checkpointing --------------------------------------------------------------
//
// One custom autograd Function. Its tensor inputs are [activations..., params...]; the
// non-tensor arguments (fn, ctx, counts, gen) ride along as integers in saved_data, so the
// node owns no heap state of its own and nothing leaks if backward never runs.
//   forward:  grad mode is off inside Function::apply, fn runs once, nothing is recorded.
//   backward: re-run fn with grad on, on detached copies of the activations (requires_grad
//             as the originals) and the params as fn reaches them through ctx, then
//             torch::autograd::grad(outputs, [activations, params], grad_outputs).
// The generator state (if any) is captured before the forward and swapped in for the
// recompute, so dropout masks match; the generator's current state is put back afterwards.

namespace {

struct CallbackOut {
    std::vector<sn_tensor *> h;
    explicit CallbackOut(size_t n) : h(n, nullptr) {}
    ~CallbackOut()
    {
        for (sn_tensor *t : h)
            sn_tensor_free(t);
    }
};

struct HandleList {
    std::vector<sn_tensor *> h;
    ~HandleList()
    {
        for (sn_tensor *t : h)
            sn_tensor_free(t);
    }
};

std::vector<at::Tensor> call_fn(sn_aten_fn fn, void *ctx, const std::vector<at::Tensor> &in,
                                size_t n_out)
{
    HandleList hin;
    hin.h.reserve(in.size());
    for (const at::Tensor &t : in)
        hin.h.push_back(wrap(t));
    CallbackOut o(n_out);
    struct sn_err e = {};
    int rc = fn(ctx, hin.h.data(), hin.h.size(), o.h.data(), n_out, &e);
    if (rc != SN_OK)
        throw CodedError(rc, std::string("checkpointed function failed: ") +
                                 (e.msg[0] ? e.msg : sn_status_name(rc)));
    std::vector<at::Tensor> r;
    r.reserve(n_out);
    for (size_t i = 0; i < n_out; i++) {
        if (!o.h[i] || !o.h[i]->t.defined())
            throw CodedError(SN_E_ARG, "checkpointed function left output " +
                                           std::to_string(i) + " unset");
        r.push_back(o.h[i]->t);
    }
    return r;
}

struct CheckpointFn : public torch::autograd::Function<CheckpointFn> {
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext *actx,
                                                  at::TensorList all, int64_t fn_bits, int64_t ctx_bits,
                                                  int64_t n_in, int64_t n_out,
                                                  int64_t gen_bits)
    {
        auto fn = reinterpret_cast<sn_aten_fn>(static_cast<intptr_t>(fn_bits));
        void *ctx = reinterpret_cast<void *>(static_cast<intptr_t>(ctx_bits));
        auto *gen = reinterpret_cast<struct sn_aten_gen *>(static_cast<intptr_t>(gen_bits));
        actx->saved_data["fn"] = fn_bits;
        actx->saved_data["ctx"] = ctx_bits;
        actx->saved_data["n_in"] = n_in;
        actx->saved_data["n_out"] = n_out;
        actx->saved_data["gen"] = gen_bits;
        actx->saved_data["autocast"] = (int64_t)autocast_dtype();
        if (gen) {
            std::lock_guard<std::mutex> lock(gen->g.mutex());
            actx->saved_data["gen_state"] = gen->g.get_state();
        }
        actx->save_for_backward(all.vec());
        std::vector<at::Tensor> in(all.begin(), all.begin() + n_in);
        return call_fn(fn, ctx, in, (size_t)n_out);
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *actx,
                                                   torch::autograd::variable_list grad_out)
    {
        auto fn = reinterpret_cast<sn_aten_fn>(
            static_cast<intptr_t>(actx->saved_data["fn"].toInt()));
        void *ctx = reinterpret_cast<void *>(
            static_cast<intptr_t>(actx->saved_data["ctx"].toInt()));
        auto *gen = reinterpret_cast<struct sn_aten_gen *>(
            static_cast<intptr_t>(actx->saved_data["gen"].toInt()));
        size_t n_in = (size_t)actx->saved_data["n_in"].toInt();
        size_t n_out = (size_t)actx->saved_data["n_out"].toInt();
        torch::autograd::variable_list saved = actx->get_saved_variables();
        size_t n_all = saved.size();

        std::vector<at::Tensor> in(n_in);
        for (size_t i = 0; i < n_in; i++) {
            in[i] = saved[i].detach();
            in[i].set_requires_grad(saved[i].requires_grad());
        }
        at::Tensor gen_now;
        if (gen) {
            std::lock_guard<std::mutex> lock(gen->g.mutex());
            gen_now = gen->g.get_state();
            gen->g.set_state(actx->saved_data["gen_state"].toTensor());
        }
        std::vector<at::Tensor> outs;
        // the recompute runs under the forward's mixed-precision setting
        at::ScalarType ac_now = autocast_dtype();
        autocast_dtype() = (at::ScalarType)actx->saved_data["autocast"].toInt();
        try {
            at::AutoGradMode on(true);
            outs = call_fn(fn, ctx, in, n_out);
            autocast_dtype() = ac_now;
        } catch (...) {
            autocast_dtype() = ac_now;
            if (gen) {
                std::lock_guard<std::mutex> lock(gen->g.mutex());
                gen->g.set_state(gen_now);
            }
            throw;
        }
        if (gen) {
            std::lock_guard<std::mutex> lock(gen->g.mutex());
            gen->g.set_state(gen_now);
        }

        torch::autograd::variable_list ys, gys, xs;
        std::vector<size_t> x_at; // which forward input each of xs is
        for (size_t i = 0; i < n_out && i < grad_out.size(); i++)
            if (outs[i].requires_grad() && grad_out[i].defined()) {
                ys.push_back(outs[i]);
                gys.push_back(grad_out[i]);
            }
        for (size_t i = 0; i < n_all; i++) {
            const at::Tensor &x = i < n_in ? in[i] : saved[i];
            if (x.requires_grad()) {
                xs.push_back(x);
                x_at.push_back(i);
            }
        }
        // one slot per forward argument: the tensors, then the 5 integer arguments
        torch::autograd::variable_list grads(n_all + 5);
        if (!ys.empty() && !xs.empty()) {
            torch::autograd::variable_list gx = torch::autograd::grad(
                ys, xs, gys, /*retain_graph=*/false, /*create_graph=*/false,
                /*allow_unused=*/true);
            for (size_t j = 0; j < gx.size(); j++)
                grads[x_at[j]] = gx[j];
        }
        return grads;
    }
};

} // namespace

extern "C" int sn_aten_checkpoint(sn_aten_fn fn, void *ctx, struct sn_tensor *const *inputs,
                                  size_t n_in, struct sn_tensor *const *params, size_t n_params,
                                  struct sn_aten_gen *gen, struct sn_tensor **outputs,
                                  size_t n_out, struct sn_err *err)
{
    if (!fn || !outputs || (n_in && !inputs) || (n_params && !params))
        return sn_err_set(err, SN_E_ARG, "checkpoint: NULL fn, inputs, params or outputs");
    for (size_t i = 0; i < n_out; i++)
        outputs[i] = nullptr;
    return guard("checkpoint", err, [&] {
        torch::autograd::variable_list all;
        bool any_grad = false;
        for (size_t i = 0; i < n_in; i++) {
            all.push_back(ten(inputs[i]));
            any_grad = any_grad || all.back().requires_grad();
        }
        for (size_t i = 0; i < n_params; i++) {
            all.push_back(ten(params[i]));
            any_grad = any_grad || all.back().requires_grad();
        }
        std::vector<at::Tensor> res;
        if (!at::GradMode::is_enabled() || !any_grad) {
            std::vector<at::Tensor> in(all.begin(), all.begin() + n_in);
            res = call_fn(fn, ctx, in, n_out);
        } else {
            // a TensorList (not a vector) so that autograd counts each tensor as an input
            res = CheckpointFn::apply(at::TensorList(all), (int64_t) reinterpret_cast<intptr_t>(fn),
                                      (int64_t) reinterpret_cast<intptr_t>(ctx), (int64_t)n_in,
                                      (int64_t)n_out,
                                      (int64_t) reinterpret_cast<intptr_t>(gen));
        }
        HandleList made;
        for (size_t i = 0; i < n_out; i++)
            made.h.push_back(wrap(res[i]));
        for (size_t i = 0; i < n_out; i++)
            outputs[i] = made.h[i];
        made.h.clear();
    });
}
