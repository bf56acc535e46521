// Hardmax's kernel (ops_hardmax.go, launched by ops_hardmax_gpu.go).

#include "kernels.cuh"

// hardmax_f32: x viewed as outer x len x inner; one thread per (o, k) writes 1 at the first
// maximum of x[o, :, k] (NaN is no maximum unless all are: then the first) and 0 elsewhere.
extern "C" __global__ void hardmax_f32(const float *x, float *y, long long outer, long long len, long long inner)
{
    GRID_LOOP(t, outer * inner)
    {
        long long o = t / inner, k = t - o * inner;
        const float *p = x + o * len * inner + k;
        float *q = y + o * len * inner + k;
        long long best = -1;
        for (long long j = 0; j < len; j++) {
            float v = p[j * inner];
            if (v != v) continue;
            if (best < 0 || v > p[best * inner]) best = j;
        }
        if (best < 0) best = 0;
        for (long long j = 0; j < len; j++) q[j * inner] = j == best ? 1.0f : 0.0f;
    }
}
