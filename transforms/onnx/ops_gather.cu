// Gather's kernel (ops_gather.go, launched by ops_gather_gpu.go).

#include "kernels.cuh"

// gather: out[o, j, k] = data[o, idx[j], k] over outer x nidx x inner (inner in elements
// of esize bytes); idx holds int64 (idx64 != 0) or int32 indices, negative ones counted
// from the end. An index out of range writes zeros and sets *bad (the plan then runs the
// batch on the CPU, for its error).
extern "C" __global__ void gather(char *out, const char *data, const void *idx, long long esize, long long outer,
                                  long long axis_len, long long inner, long long nidx, long long idx64,
                                  unsigned int *bad)
{
    long long n = outer * nidx * inner;
    GRID_LOOP(i, n)
    {
        long long k = i % inner;
        long long j = (i / inner) % nidx;
        long long o = i / (inner * nidx);
        long long v = idx64 ? ((const long long *)idx)[j] : (long long)((const int *)idx)[j];
        if (v < 0) v += axis_len;
        bool ok = v >= 0 && v < axis_len;
        if (!ok) {
            *bad = 1;
            v = 0;
        }
        long long s = (o * axis_len + v) * inner + k;
        switch (esize) {
        case 1: ((u8 *)out)[i] = ok ? ((const u8 *)data)[s] : 0; break;
        case 2: ((unsigned short *)out)[i] = ok ? ((const unsigned short *)data)[s] : 0; break;
        case 4: ((unsigned int *)out)[i] = ok ? ((const unsigned int *)data)[s] : 0; break;
        case 8: ((unsigned long long *)out)[i] = ok ? ((const unsigned long long *)data)[s] : 0; break;
        }
    }
}
