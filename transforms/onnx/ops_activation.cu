// Clip's kernel (ops_activation.go, launched by ops_activation_gpu.go).

#include "kernels.cuh"

// clip_f32: y = min(hi, max(x, lo)); the bounds are lo and hi, or the one float at lop
// and hip where those are not null. A NaN bound makes every output NaN; a NaN input stays
// NaN.
extern "C" __global__ void clip_f32(const float *x, float *y, long long n, double lo, double hi, const float *lop,
                                    const float *hip)
{
    float l = lop ? *lop : (float)lo, h = hip ? *hip : (float)hi;
    float nan = l != l ? l : h;
    bool nanBound = l != l || h != h;
    GRID_LOOP(i, n)
    {
        float v = x[i];
        if (nanBound) {
            v = nan;
        } else {
            if (v < l) v = l;
            if (v > h) v = h;
        }
        y[i] = v;
    }
}
