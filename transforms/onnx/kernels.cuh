// kernels.cuh: what the kernels of kernels.cu share (every .cu file it includes includes
// this first): the grid-stride loop, the parameter lists of shapes (MAXR dimensions or 3
// spatial axes, each a separate long long) and the offset of a broadcast operand.

#pragma once

#include <math.h>

#define MAXR 6
#define GRID_LOOP(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

#define P6(n) long long n##0, long long n##1, long long n##2, long long n##3, long long n##4, long long n##5
#define A6(n) {n##0, n##1, n##2, n##3, n##4, n##5}

typedef unsigned char u8;

// offset maps the linear index i of a row-major block of dims (rank of them) to the
// element offset of an operand with strides st.
__device__ __forceinline__ long long offset(long long i, long long rank, const long long *dims, const long long *st)
{
    long long off = 0;
    for (long long d = rank - 1; d >= 0; d--) {
        long long n = dims[d];
        long long q = i / n;
        off += (i - q * n) * st[d];
        i = q;
    }
    return off;
}

// Convolution and pooling take 3 spatial axes (1-D and 2-D lead with axes of size 1),
// each list of them as 3 separate long longs.
#define P3(n) long long n##0, long long n##1, long long n##2
#define A3(n) {n##0, n##1, n##2}

// Unary operations (ops_math.go's unOp, in its order).
enum {
    UN_SQRT,
    UN_EXP,
    UN_LOG,
    UN_NEG,
    UN_ABS,
    UN_RECIPROCAL,
    UN_TANH,
    UN_SIGMOID,
    UN_ERF,
    UN_RELU,
    UN_LEAKY_RELU,
    UN_HARD_SIGMOID,
    UN_HARD_SWISH,
    UN_ELU,
    UN_FLOOR,
    UN_CEIL,
    UN_ROUND,
    UN_SIN,
    UN_COS,
    UN_SOFTPLUS,
    UN_SOFTSIGN,
    UN_SELU,
    UN_CELU,
    UN_THRESHOLDED_RELU,
    UN_MISH,
    UN_GELU,
    UN_GELU_TANH,
};

// softplus is log(1 + e^x) without overflow (ops_unary.go's softplus).
__device__ __forceinline__ double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

__device__ __forceinline__ float clamp01(float v) { return v < 0 ? 0 : (v > 1 ? 1 : v); }

// unary_op is op(v), a and b the activations' attributes: unary_f32's operation, and the
// activation of a fused Conv's epilogue (conv_epilogue_f32), so that both compute the same.
__device__ __forceinline__ float unary_op(long long op, float v, float a, float b)
{
    double d = (double)v;
    switch (op) {
    case UN_SQRT: return sqrtf(v);
    case UN_EXP: return (float)exp(d);
    case UN_LOG: return (float)log(d);
    case UN_NEG: return -v;
    case UN_ABS: return fabsf(v);
    case UN_RECIPROCAL: return 1.0f / v;
    case UN_TANH: return (float)tanh(d);
    case UN_SIGMOID: return (float)(1.0 / (1.0 + exp(-d)));
    case UN_ERF: return (float)erf(d);
    case UN_RELU: return v != v ? v : (v > 0 ? v : 0.0f);
    case UN_LEAKY_RELU: return v != v ? v : (v > 0 ? v : (v < 0 ? a * v : 0.0f));
    case UN_HARD_SIGMOID: return v != v ? v : clamp01(a * v + b);
    case UN_HARD_SWISH: return v != v ? v : v * clamp01(v * a + b);
    case UN_ELU: return v < 0 ? (float)((double)a * expm1(d)) : v;
    case UN_FLOOR: return (float)floor(d);
    case UN_CEIL: return (float)ceil(d);
    case UN_ROUND: return (float)rint(d);
    case UN_SIN: return (float)sin(d);
    case UN_COS: return (float)cos(d);
    case UN_SOFTPLUS: return (float)softplus(d);
    case UN_SOFTSIGN: return (float)(d / (1 + fabs(d)));
    case UN_SELU: return (float)((double)b * (d > 0 ? d : (double)a * expm1(d)));
    case UN_CELU: return v != v ? v : (float)((d > 0 ? d : 0) + (d < 0 ? (double)a * expm1(d / (double)a) : 0));
    case UN_THRESHOLDED_RELU: return v != v ? v : (v > a ? v : 0.0f);
    case UN_MISH: return (float)(d * tanh(softplus(d)));
    case UN_GELU: return (float)(0.5 * d * (1 + erf(d * 0.70710678118654752440)));
    case UN_GELU_TANH:
        return (float)(0.5 * d * (1 + tanh(0.79788456080286535588 * (d + 0.044715 * d * d * d))));
    default: return v;
    }
}
