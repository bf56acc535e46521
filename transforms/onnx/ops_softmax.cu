// Softmax's and LogSoftmax's kernel (ops_softmax.go, launched by ops_softmax_gpu.go).

#include "kernels.cuh"

// softmax_f32: y[o, :, k] = softmax (or log-softmax, when lg) of x[o, :, k] over len, x
// viewed as outer x len x inner; one thread per (o, k), sums in double.
extern "C" __global__ void softmax_f32(const float *x, float *y, long long outer, long long len, long long inner,
                                       long long lg)
{
    GRID_LOOP(t, outer * inner)
    {
        long long o = t / inner, k = t - o * inner;
        const float *p = x + o * len * inner + k;
        float *q = y + o * len * inner + k;
        float m = -INFINITY;
        for (long long j = 0; j < len; j++) m = fmaxf(m, p[j * inner]);
        double sum = 0;
        for (long long j = 0; j < len; j++) sum += exp((double)p[j * inner] - (double)m);
        if (lg) {
            double ls = log(sum);
            for (long long j = 0; j < len; j++) q[j * inner] = (float)((double)p[j * inner] - (double)m - ls);
        } else {
            for (long long j = 0; j < len; j++) q[j * inner] = (float)(exp((double)p[j * inner] - (double)m) / sum);
        }
    }
}
