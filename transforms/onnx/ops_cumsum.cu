// CumSum's kernel (ops_cumsum.go, launched by ops_cumsum_gpu.go).

#include "kernels.cuh"

// cumsum_f32: x viewed as outer x len x inner; thread (o, k) writes the running sums of
// x[o, :, k] in double, each rounded, exclusive leaving the element out of its sum,
// reverse from the end.
extern "C" __global__ void cumsum_f32(const float *x, float *y, long long outer, long long len, long long inner,
                                      long long exclusive, long long reverse)
{
    GRID_LOOP(t, outer * inner)
    {
        long long o = t / inner, k = t - o * inner;
        long long base = o * len * inner + k;
        double acc = 0;
        for (long long s = 0; s < len; s++) {
            long long j = reverse ? len - 1 - s : s;
            double v = x[base + j * inner];
            if (exclusive) {
                y[base + j * inner] = (float)acc;
                acc += v;
            } else {
                acc += v;
                y[base + j * inner] = (float)acc;
            }
        }
    }
}
