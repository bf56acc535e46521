// ArgMax and ArgMin's kernel (ops_argmax.go, launched by ops_argmax_gpu.go).

#include "kernels.cuh"

// argext_f32: x viewed as outer x len x inner; y[o, k] is the int64 index of the
// extreme of x[o, :, k] (the smallest for mn, the last of equals for last; NaN is the
// extreme), one thread each, as ops_argmax.go's argExt.
extern "C" __global__ void argext_f32(const float *x, long long *y, long long outer, long long len, long long inner,
                                      long long mn, long long last)
{
    GRID_LOOP(t, outer * inner)
    {
        long long o = t / inner, k = t - o * inner;
        const float *p = x + o * len * inner + k;
        float b = p[0];
        long long bi = 0;
        for (long long j = 1; j < len; j++) {
            float v = p[j * inner];
            bool take;
            if (v != v) {
                take = b == b || last;
            } else if (b != b) {
                take = false;
            } else if (mn) {
                take = v < b || (last && v == b);
            } else {
                take = v > b || (last && v == b);
            }
            if (take) {
                b = v;
                bi = j;
            }
        }
        y[t] = bi;
    }
}
