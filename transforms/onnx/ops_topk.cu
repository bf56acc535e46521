// TopK's kernel (ops_topk.go, launched by ops_topk_gpu.go).

#include "kernels.cuh"

// topk_before: a comes strictly before b (larger, or smaller with smallest; NaN is the
// largest), as ops_topk.go's topKBefore.
__device__ __forceinline__ bool topk_before(float a, float b, long long smallest)
{
    bool an = a != a, bn = b != b;
    if (an || bn) return an != bn && (an != (smallest != 0));
    return smallest ? a < b : a > b;
}

// topk_f32: x viewed as outer x len x inner; thread (o, j, c) counts the elements of its
// row x[o, :, c] that come before x[o, j, c] (by value, then index) and, when that rank
// is below k, writes the value and j there.
extern "C" __global__ void topk_f32(const float *x, float *v, long long *idx, long long outer, long long len,
                                    long long inner, long long k, long long smallest)
{
    GRID_LOOP(t, outer * len * inner)
    {
        long long c = t % inner, j = (t / inner) % len, o = t / (inner * len);
        const float *row = x + o * len * inner + c;
        float me = row[j * inner];
        long long rank = 0;
        for (long long i = 0; i < len && rank < k; i++) {
            float w = row[i * inner];
            if (topk_before(w, me, smallest) || (i < j && !topk_before(me, w, smallest))) rank++;
        }
        if (rank < k) {
            long long at = (o * k + rank) * inner + c;
            v[at] = me;
            idx[at] = j;
        }
    }
}
