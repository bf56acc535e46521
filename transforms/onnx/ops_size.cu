// Shrink's kernel (ops_size.go, launched by ops_size_gpu.go).

#include "kernels.cuh"

// shrink_f32: y = x + bias where x < -lambd, x - bias where x > lambd, else 0 (in double).
extern "C" __global__ void shrink_f32(const float *x, float *y, long long n, double lambd, double bias)
{
    GRID_LOOP(i, n)
    {
        double v = x[i];
        y[i] = (float)(v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0));
    }
}
