// aten/bench/overhead_ref.cpp: the C++ baseline for bench/bench_aten_overhead.c: the same ATen
// calls on the same shapes, made directly (no C API, no handle). It is linked into the C
// benchmark (bench/aten.cmake) so the two are timed in alternating batches in one process,
// which keeps a shared, loaded machine from favouring either side. Lives under aten/ because
// C++ is allowed only there.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <chrono>

namespace {
struct Inputs {
    at::Tensor a16, b16, a256, b256;
    Inputs()
    {
        at::Generator g = at::make_generator<at::CPUGeneratorImpl>(1);
        a16 = at::empty({16}).uniform_(0, 1, g);
        b16 = at::empty({16}).uniform_(0, 1, g);
        a256 = at::empty({256, 256}).uniform_(0, 1, g);
        b256 = at::empty({256, 256}).uniform_(0, 1, g);
    }
};
Inputs &inputs()
{
    static Inputs in;
    return in;
}

template <class F>
double batch_ns(F &&f, int iters)
{
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++)
        f(); // the result is destroyed each iteration, like the C caller's sn_tensor_free
    std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    return dt.count() / iters * 1e9;
}
} // namespace

// One batch of `iters` calls; returns ns per call. op: 0 add16, 1 mul16, 2 matmul256.
// Returns -1 for an unknown op or if libtorch throws.
extern "C" double sn_bench_ref_batch(int op, int iters)
{
    try {
        Inputs &in = inputs();
        switch (op) {
        case 0: return batch_ns([&] { at::Tensor y = at::add(in.a16, in.b16); }, iters);
        case 1: return batch_ns([&] { at::Tensor y = at::mul(in.a16, in.b16); }, iters);
        case 2: return batch_ns([&] { at::Tensor y = at::matmul(in.a256, in.b256); }, iters);
        default: return -1;
        }
    } catch (...) {
        return -1;
    }
}
