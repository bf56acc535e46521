// Gemm's epilogue (ops_matmul.go, launched by ops_matmul_gpu.go; Mean's division uses it
// too). The products themselves are cuBLAS calls.

#include "kernels.cuh"

// gemm_epilogue_f32: y (m x n, holding A B) = alpha*y + beta*c, c read at strides scm, scn
// (0 where it broadcasts); c may be null (no C, or beta 0).
extern "C" __global__ void gemm_epilogue_f32(float *y, const float *c, long long m, long long n, double alpha,
                                             double beta, long long scm, long long scn)
{
    float a = (float)alpha, b = (float)beta;
    GRID_LOOP(i, m * n)
    {
        float v = a * y[i];
        if (c) {
            long long r = i / n, k = i - r * n;
            v += b * c[r * scm + k * scn];
        }
        y[i] = v;
    }
}
