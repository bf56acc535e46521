// OneHot's kernel (ops_onehot.go, launched by ops_onehot_gpu.go).

#include "kernels.cuh"

// onehot: y (outer x depth x inner elements of size bytes: 1, 2, 4 or 8) is values[1]
// where the index of (o, c), idx[o * inner + c] (int64, negative counted from depth), is
// the middle coordinate d, else values[0].
extern "C" __global__ void onehot(const long long *idx, const void *values, void *y, long long outer,
                                  long long depth, long long inner, long long size)
{
    GRID_LOOP(t, outer * depth * inner)
    {
        long long c = t % inner, d = (t / inner) % depth, o = t / (inner * depth);
        long long v = idx[o * inner + c];
        if (v < 0) v += depth;
        long long w = v == d ? 1 : 0;
        switch (size) {
        case 1: ((u8 *)y)[t] = ((const u8 *)values)[w]; break;
        case 2: ((unsigned short *)y)[t] = ((const unsigned short *)values)[w]; break;
        case 4: ((unsigned int *)y)[t] = ((const unsigned int *)values)[w]; break;
        default: ((unsigned long long *)y)[t] = ((const unsigned long long *)values)[w]; break;
        }
    }
}
