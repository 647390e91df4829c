// aten/aten_dist.cpp: data-parallel collectives over c10d (docs/design.md §3, aten/aten.h
// "distributed"). Rank 0 hosts a TCPStore at MASTER_ADDR:MASTER_PORT; every rank joins a
// ProcessGroupGloo (CPU) or, when libtorch has it and the device is CUDA, ProcessGroupNCCL.
// A world of one opens nothing and every collective is a no-op.
#include "aten/aten_internal.hpp"

// SN_HAVE_C10D_GLOO / SN_HAVE_C10D_NCCL are set by CMakeLists.txt when the libtorch's header
// for that backend compiles here. Not USE_C10D_*: a PyTorch wheel's CMake config defines those
// for every user whether or not it ships the headers they need (Gloo's, for one).
#ifdef SN_HAVE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef SN_HAVE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace sn_aten;

struct sn_dist {
    int rank = 0, world = 1, local_rank = 0;
    std::string backend = "none";
    c10::intrusive_ptr<c10d::Store> store;
#ifdef SN_HAVE_C10D_GLOO
    c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#ifdef SN_HAVE_C10D_NCCL
    c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
    std::chrono::milliseconds timeout{300000};
};

extern "C" struct sn_dist_params sn_dist_default_params(void)
{
    struct sn_dist_params p;
    p.device.type = SN_DEVICE_CPU;
    p.device.index = 0;
    p.timeout_s = 0;
    p.backend = SN_DIST_BACKEND_AUTO;
    p.open_single = false;
    return p;
}

extern "C" bool sn_aten_dist_backend_built(enum sn_dist_backend b)
{
#ifdef SN_HAVE_C10D_GLOO
    if (b == SN_DIST_BACKEND_GLOO)
        return true;
#endif
#ifdef SN_HAVE_C10D_NCCL
    if (b == SN_DIST_BACKEND_NCCL)
        return true;
#endif
    (void)b;
    return false;
}

// Strict integer from the environment: false if unset; throws ArgError if malformed.
static bool env_int(const char *name, int *out)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return false;
    char *end = nullptr;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < 0 || v > INT_MAX)
        throw ArgError(std::string("environment variable ") + name + "='" + s +
                       "': expected a non-negative integer");
    *out = (int)v;
    return true;
}

extern "C" int sn_aten_dist_init_env(const struct sn_dist_params *params, struct sn_dist **out,
                                     struct sn_err *err)
{
    if (!out)
        return sn_err_set(err, SN_E_ARG, "dist_init_env: out is NULL");
    *out = nullptr;
    int rank = 0, world = 1, local = -1, port = -1;
    const char *addr = nullptr;
    try {
        if (env_int("WORLD_SIZE", &world)) { // torchrun / torch.distributed.launch
            if (!env_int("RANK", &rank))
                throw ArgError("WORLD_SIZE is set but RANK is not");
            env_int("LOCAL_RANK", &local);
        } else if (env_int("SLURM_NTASKS", &world)) {
            if (!env_int("SLURM_PROCID", &rank))
                throw ArgError("SLURM_NTASKS is set but SLURM_PROCID is not");
            env_int("SLURM_LOCALID", &local);
        } else {
            world = 1;
            rank = 0;
        }
        if (local < 0)
            local = rank;
        addr = getenv("MASTER_ADDR");
        if (!env_int("MASTER_PORT", &port) && world > 1)
            throw ArgError("WORLD_SIZE " + std::to_string(world) +
                           " > 1 needs MASTER_PORT (and MASTER_ADDR, default 127.0.0.1)");
    } catch (...) {
        return fail_current("dist_init_env", err);
    }
    struct sn_dist_params p = params ? *params : sn_dist_default_params();
    if (p.backend != SN_DIST_BACKEND_AUTO && port > 0)
        p.open_single = true; // a named backend under a launcher: as torchrun --nproc 1
    return sn_aten_dist_init(rank, world, local, addr ? addr : "127.0.0.1", port, &p, out, err);
}

static bool is_loopback(const std::string &a)
{
    return a == "localhost" || a.rfind("127.", 0) == 0 || a == "::1";
}

extern "C" int sn_aten_dist_init(int rank, int world_size, int local_rank,
                                 const char *master_addr, int master_port,
                                 const struct sn_dist_params *params, struct sn_dist **out,
                                 struct sn_err *err)
{
    if (!out)
        return sn_err_set(err, SN_E_ARG, "dist_init: out is NULL");
    *out = nullptr;
    struct sn_dist_params p = params ? *params : sn_dist_default_params();
    if (world_size < 1 || rank < 0 || rank >= world_size)
        return sn_err_set(err, SN_E_ARG, "dist_init: rank %d not in [0, world size %d)", rank,
                          world_size);
    sn_dist *d = nullptr;
    try {
        d = new sn_dist;
        d->rank = rank;
        d->world = world_size;
        d->local_rank = local_rank < 0 ? rank : local_rank;
        d->timeout = std::chrono::milliseconds(1000LL * (p.timeout_s > 0 ? p.timeout_s : 300));
        if (world_size > 1 || p.open_single) {
            if (!master_addr || !*master_addr)
                throw ArgError("MASTER_ADDR is empty");
            if (master_port <= 0 || master_port > 65535)
                throw ArgError("MASTER_PORT " + std::to_string(master_port) +
                               " not in [1, 65535]");
            bool cuda = p.device.type == SN_DEVICE_CUDA;
            enum sn_dist_backend b = p.backend;
            if (b == SN_DIST_BACKEND_AUTO)
                b = cuda ? SN_DIST_BACKEND_NCCL : SN_DIST_BACKEND_GLOO;
            if (b == SN_DIST_BACKEND_NCCL && !cuda)
                throw ArgError("backend nccl needs a CUDA device");
            if (!sn_aten_dist_backend_built(b))
                throw CodedError(SN_E_UNSUPPORTED,
                                 b == SN_DIST_BACKEND_NCCL
                                     ? "CUDA collectives over NCCL need a libtorch built with "
                                       "NCCL and nccl.h when sentinel is configured "
                                       "(docs/aten.md); use backend gloo or a CPU device"
                                     : "this build has no Gloo backend (the libtorch's c10d "
                                       "Gloo headers were not found when it was configured; "
                                       "docs/aten.md)");
            c10d::TCPStoreOptions so;
            so.port = (std::uint16_t)master_port;
            so.isServer = rank == 0;
            so.numWorkers = (size_t)world_size;
            so.waitWorkers = true;
            so.timeout = d->timeout;
            d->store = c10::make_intrusive<c10d::TCPStore>(std::string(master_addr), so);
#ifdef SN_HAVE_C10D_GLOO
            if (b == SN_DIST_BACKEND_GLOO) {
                // On a CUDA device Gloo reduces the CUDA tensors itself (staged through host
                // memory), which is what lets several ranks share one GPU.
                auto o = c10d::ProcessGroupGloo::Options::create(d->timeout);
                const char *ifname = getenv("GLOO_SOCKET_IFNAME");
                if (ifname && *ifname)
                    o->devices.push_back(
                        c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
                else if (is_loopback(master_addr))
                    o->devices.push_back(
                        c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
                else
                    o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
                d->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(d->store, rank,
                                                                      world_size, o);
                d->backend = "gloo";
            }
#endif
#ifdef SN_HAVE_C10D_NCCL
            if (b == SN_DIST_BACKEND_NCCL) {
                auto o = c10d::ProcessGroupNCCL::Options::create();
                o->timeout = d->timeout;
                d->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(d->store, rank,
                                                                      world_size, o);
                d->backend = "nccl";
            }
#endif
        }
        *out = d;
        return SN_OK;
    } catch (...) {
        delete d;
        int rc = fail_current("dist_init", err);
        sn_err_wrap(err, "rank %d of %d, master %s:%d", rank, world_size,
                    master_addr ? master_addr : "(null)", master_port);
        return rc;
    }
}

extern "C" void sn_aten_dist_free(struct sn_dist *d)
{
    if (!d)
        return;
    try {
#ifdef SN_HAVE_C10D_GLOO
        d->gloo.reset(); // the group before the store it talks through
#endif
#ifdef SN_HAVE_C10D_NCCL
        d->nccl.reset();
#endif
        d->store.reset();
    } catch (...) {
    }
    delete d;
}

extern "C" int sn_aten_dist_rank(const struct sn_dist *d)
{
    return d ? d->rank : 0;
}

extern "C" int sn_aten_dist_world_size(const struct sn_dist *d)
{
    return d ? d->world : 1;
}

extern "C" int sn_aten_dist_local_rank(const struct sn_dist *d)
{
    return d ? d->local_rank : 0;
}

extern "C" const char *sn_aten_dist_backend(const struct sn_dist *d)
{
    return d ? d->backend.c_str() : "none";
}

// Calls f(pg) with the live process group, or returns false for a world of one. A generic
// lambda, because in libtorch 2.x ProcessGroupGloo/NCCL derive from c10d::Backend rather than
// c10d::ProcessGroup; both spell allreduce/broadcast/barrier the same way.
template <class F>
static bool with_group(struct sn_dist *d, F &&f)
{
    if (!d)
        throw ArgError("dist handle is NULL");
#ifdef SN_HAVE_C10D_NCCL
    if (d->nccl) {
        f(d->nccl.get());
        return true;
    }
#endif
#ifdef SN_HAVE_C10D_GLOO
    if (d->gloo) {
        f(d->gloo.get());
        return true;
    }
#endif
    (void)f;
    return false;
}

static c10d::ReduceOp reduce_op(enum sn_reduce op)
{
    switch (op) {
    case SN_REDUCE_SUM:
    case SN_REDUCE_AVG: return c10d::ReduceOp::SUM; // Gloo has no AVG: SUM, then divide
    case SN_REDUCE_MAX: return c10d::ReduceOp::MAX;
    case SN_REDUCE_MIN: return c10d::ReduceOp::MIN;
    default: throw ArgError("unknown reduce op " + std::to_string((int)op));
    }
}

// All-reduces one contiguous tensor in place.
static void reduce_one(struct sn_dist *d, at::Tensor &t, enum sn_reduce op)
{
    if (!d)
        throw ArgError("dist handle is NULL");
    c10d::ReduceOp rop = reduce_op(op);
    if (op == SN_REDUCE_AVG && !at::isFloatingType(t.scalar_type()))
        throw ArgError("AVG needs a floating-point tensor");
    if (!t.is_contiguous())
        throw ArgError("tensor must be contiguous");
    at::NoGradGuard ng;
    bool ran = with_group(d, [&](auto *pg) {
        std::vector<at::Tensor> v{t};
        c10d::AllreduceOptions o;
        o.reduceOp = rop;
        o.timeout = d->timeout;
        pg->allreduce(v, o)->wait();
    });
    if (ran && op == SN_REDUCE_AVG)
        t.div_((double)d->world);
}

extern "C" int sn_aten_dist_all_reduce(struct sn_dist *d, struct sn_tensor *t,
                                       enum sn_reduce op, struct sn_err *err)
{
    return guard("dist_all_reduce", err, [&] { reduce_one(d, ten_mut(t), op); });
}

extern "C" int sn_aten_dist_all_reduce_many(struct sn_dist *d, struct sn_tensor *const *ts,
                                            size_t n, enum sn_reduce op, struct sn_err *err)
{
    return guard("dist_all_reduce_many", err, [&] {
        if (n > 0 && !ts)
            throw ArgError("tensor array is NULL");
        if (n == 0)
            return;
        std::vector<at::Tensor> v;
        for (size_t i = 0; i < n; i++)
            v.push_back(ten(ts[i]));
        bool same = true;
        for (const at::Tensor &x : v)
            same = same && x.scalar_type() == v[0].scalar_type() && x.device() == v[0].device();
        bool live = with_group(d, [](auto *) {});
        if (!live || !same) { // a world of one, or mixed dtypes: one call each
            for (at::Tensor &x : v) {
                at::Tensor c = x.is_contiguous() ? x : x.contiguous();
                reduce_one(d, c, op);
                if (!c.is_same(x)) {
                    at::NoGradGuard ng;
                    x.copy_(c);
                }
            }
            return;
        }
        // One flat buffer: one collective instead of n (gradients of a whole model).
        at::NoGradGuard ng;
        std::vector<at::Tensor> flat;
        for (const at::Tensor &x : v)
            flat.push_back(x.reshape({-1}));
        at::Tensor buf = at::cat(flat);
        reduce_one(d, buf, op);
        int64_t off = 0;
        for (at::Tensor &x : v) {
            x.copy_(buf.narrow(0, off, x.numel()).view(x.sizes()));
            off += x.numel();
        }
    });
}

extern "C" int sn_aten_dist_broadcast(struct sn_dist *d, struct sn_tensor *t, int root,
                                      struct sn_err *err)
{
    return guard("dist_broadcast", err, [&] {
        at::Tensor &x = ten_mut(t);
        if (!d)
            throw ArgError("dist handle is NULL");
        if (root < 0 || root >= d->world)
            throw ArgError("root " + std::to_string(root) + " not in [0, " +
                           std::to_string(d->world) + ")");
        if (!x.is_contiguous())
            throw ArgError("tensor must be contiguous");
        at::NoGradGuard ng;
        with_group(d, [&](auto *pg) {
            std::vector<at::Tensor> v{x};
            c10d::BroadcastOptions o;
            o.rootRank = root;
            o.timeout = d->timeout;
            pg->broadcast(v, o)->wait();
        });
    });
}

extern "C" int sn_aten_dist_barrier(struct sn_dist *d, struct sn_err *err)
{
    return guard("dist_barrier", err, [&] {
        with_group(d, [&](auto *pg) {
            c10d::BarrierOptions o;
            o.timeout = d->timeout;
            pg->barrier(o)->wait();
        });
    });
}
