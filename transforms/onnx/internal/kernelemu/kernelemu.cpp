// The onnx step's kernels (../../kernels.cu, which includes the operators' .cu files) compiled
// for the host, and their launch.
#include "emu.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "../../kernels.cu"

thread_local emu_dim3 blockIdx, threadIdx, blockDim, gridDim;

namespace {

template <typename T> T arg(uint64_t v)
{
    if constexpr (std::is_pointer_v<T>) {
        return reinterpret_cast<T>(static_cast<uintptr_t>(v));
    } else if constexpr (std::is_same_v<T, double>) {
        double d;
        std::memcpy(&d, &v, 8);
        return d;
    } else {
        return static_cast<T>(v);
    }
}

template <typename... A, size_t... I>
void call(void (*f)(A...), const uint64_t *a, std::index_sequence<I...>)
{
    f(arg<A>(a[I])...);
}

// run runs f over grid blocks of block threads, one thread after another. It returns
// the number of parameters f takes (checked by the caller), or -1 if nargs differs.
template <typename... A> int run(void (*f)(A...), long long grid, long long block, const uint64_t *a, int nargs)
{
    if (nargs != (int)sizeof...(A)) return -1;
    gridDim = {(unsigned)grid, 1, 1};
    blockDim = {(unsigned)block, 1, 1};
    for (long long b = 0; b < grid; b++) {
        blockIdx = {(unsigned)b, 0, 0};
        for (long long t = 0; t < block; t++) {
            threadIdx = {(unsigned)t, 0, 0};
            call(f, a, std::index_sequence_for<A...>{});
        }
    }
    return (int)sizeof...(A);
}

} // namespace

#define KERNELS(X)                                                                                                      \
    X(copy_strided) X(fill) X(pad_map) X(gather) X(unary_f32) X(clip_f32) X(binary_f32) X(binary_i64) X(binary_i32)   \
    X(equal_u8) X(where_any) X(not_u8) X(cast) X(reduce_f32) X(softmax_f32) X(layernorm_f32) X(batchnorm_f32)         \
    X(im2col_f32) X(bias_channels_f32) X(conv_epilogue_f32) X(conv_depthwise_f32) X(pool_f32) X(gemm_epilogue_f32)   \
    X(resize_axis_f32) X(col2im_f32) X(groupnorm_f32) X(hardmax_f32) X(shrink_f32) X(argext_f32) X(cumsum_f32) X(trilu)   \
    X(tile) X(topk_f32) X(onehot) X(elements_gs) X(nd_gs) X(roialign_f32) X(quantize_linear) X(dequantize_linear)      \
    X(qconv) X(qmatmul)

extern "C" {

// kernelemu_launch runs kernel name; it returns 0, 1 for an unknown kernel, 2 for a
// wrong number of arguments.
int kernelemu_launch(const char *name, long long grid, long long block, const uint64_t *args, int nargs)
{
#define DISPATCH(k)                                                                                                     \
    if (std::strcmp(name, #k) == 0) return run(k, grid, block, args, nargs) < 0 ? 2 : 0;
    KERNELS(DISPATCH)
#undef DISPATCH
    return 1;
}

// kernelemu_names writes the served kernels' names, space-separated, into buf.
void kernelemu_names(char *buf, int n)
{
    std::string s;
#define NAME(k) s += #k " ";
    KERNELS(NAME)
#undef NAME
    std::strncpy(buf, s.c_str(), n - 1);
    buf[n - 1] = 0;
}
}
