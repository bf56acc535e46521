// The unary math operators' and the activations' kernel (ops_math.go and
// ops_activation.go, launched by ops_math_gpu.go).

#include "kernels.cuh"

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
};

__device__ __forceinline__ float clamp01(float v) { return v < 0 ? 0 : (v > 1 ? 1 : v); }

// unary_f32: y = op(x) over n float32s; alpha and beta are the activations' attributes.
extern "C" __global__ void unary_f32(long long op, const float *x, float *y, long long n, double alpha, double beta)
{
    float a = (float)alpha, b = (float)beta;
    GRID_LOOP(i, n)
    {
        float v = x[i];
        double d = (double)v;
        float r;
        switch (op) {
        case UN_SQRT: r = sqrtf(v); break;
        case UN_EXP: r = (float)exp(d); break;
        case UN_LOG: r = (float)log(d); break;
        case UN_NEG: r = -v; break;
        case UN_ABS: r = fabsf(v); break;
        case UN_RECIPROCAL: r = 1.0f / v; break;
        case UN_TANH: r = (float)tanh(d); break;
        case UN_SIGMOID: r = (float)(1.0 / (1.0 + exp(-d))); break;
        case UN_ERF: r = (float)erf(d); break;
        case UN_RELU: r = v != v ? v : (v > 0 ? v : 0.0f); break;
        case UN_LEAKY_RELU: r = v != v ? v : (v > 0 ? v : (v < 0 ? a * v : 0.0f)); break;
        case UN_HARD_SIGMOID: r = v != v ? v : clamp01(a * v + b); break;
        case UN_HARD_SWISH: r = v != v ? v : v * clamp01(v * a + b); break;
        case UN_ELU: r = v < 0 ? (float)((double)a * expm1(d)) : v; break;
        default: r = v;
        }
        y[i] = r;
    }
}
