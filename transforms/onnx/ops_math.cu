// The unary math operators' and the activations' kernel (ops_math.go and
// ops_activation.go, launched by ops_math_gpu.go); the operations are kernels.cuh's
// unary_op, which a fused Conv's epilogue (ops_conv.cu) shares.

#include "kernels.cuh"

// unary_f32: y = op(x) over n float32s; alpha and beta are the activations' attributes.
extern "C" __global__ void unary_f32(long long op, const float *x, float *y, long long n, double alpha, double beta)
{
    float a = (float)alpha, b = (float)beta;
    GRID_LOOP(i, n) { y[i] = unary_op(op, x[i], a, b); }
}
