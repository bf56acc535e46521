// InstanceNormalization's and GroupNormalization's kernel (ops_instnorm.go, launched by
// ops_instnorm_gpu.go).

#include "kernels.cuh"

// groupnorm_f32: x is items (image, group) of per channels of inner values each; one thread
// normalises an item by its mean and biased variance (in double), then scales and shifts
// each channel by scale and bias at the channel (perch 1) or at the group (perch 0).
extern "C" __global__ void groupnorm_f32(const float *x, const float *scale, const float *bias, float *y,
                                         long long items, long long groups, long long per, long long inner,
                                         long long perch, double eps)
{
    GRID_LOOP(t, items)
    {
        long long g = t % groups, size = per * inner;
        const float *p = x + t * size;
        float *q = y + t * size;
        double s = 0;
        for (long long i = 0; i < size; i++) s += p[i];
        double mu = s / (double)size, v = 0;
        for (long long i = 0; i < size; i++) {
            double d = p[i] - mu;
            v += d * d;
        }
        double inv = 1.0 / sqrt(v / (double)size + eps);
        for (long long j = 0; j < per; j++) {
            long long c = perch ? g * per + j : g;
            double a = (double)scale[c] * inv, b = bias[c];
            for (long long i = j * inner; i < (j + 1) * inner; i++) q[i] = (float)(((double)p[i] - mu) * a + b);
        }
    }
}
